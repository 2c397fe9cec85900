"""Per-call tool stopping for LangGraph agents, decided from the tool's artifact.

- :mod:`stop_on_artifact`: the reusable core (artifact, ``decide()``, middleware, router);
- :mod:`agent.graphs`: the ``legacy`` and ``middleware`` graphs ``langgraph.json`` serves;
- :mod:`agent.tools`, :mod:`agent.models`, :mod:`agent.policy`, :mod:`agent.context`: the
  demo app (knowledge base and checkout, the offline model, the spend cap, the context);
- :mod:`agent.tracing`, :mod:`agent.auth`, :mod:`agent.http`: LangSmith metadata, access;
- :mod:`agent.client`: the CLI, the check matrix and the server launchers (never imported
  by the graphs).
"""
