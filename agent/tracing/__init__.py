"""LangSmith tracing: stop decisions as run metadata, a redacting client, the allowlist.

- :mod:`agent.tracing.metadata`: the ``stop_*`` metadata on the deciding, tool and root runs;
- :mod:`agent.tracing.client`: the client every trace goes through (``configure_tracing``);
- :mod:`agent.tracing.redaction`: what that client hides from inputs, outputs and errors;
- :mod:`agent.tracing.allowlist`: which artifact fields and metadata may leave the process.
"""
