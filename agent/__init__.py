"""The deployable demo of per-call tool stopping, built on the ``stop_on_artifact`` library.

The core (artifact, ``decide()``, router, middleware, harness) is the library in
``libs/stop-on-artifact``; nothing of it lives here.

- :mod:`agent.graphs`: the ``legacy`` and ``middleware`` graphs ``langgraph.json`` serves;
- :mod:`agent.tools`, :mod:`agent.models`, :mod:`agent.policy`, :mod:`agent.context`: the
  demo app (knowledge base and checkout, the offline model, the spend cap, the context);
- :mod:`agent.tracing`, :mod:`agent.auth`, :mod:`agent.http`: LangSmith metadata, access;

The CLI, the check matrix and the server launchers are repository tooling: the top-level
``client`` package, outside this one, so never in the wheel ``langgraph.json`` deploys.
Nothing here imports it.
"""
