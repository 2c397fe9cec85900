"""The two graphs ``langgraph.json`` serves, on one artifact contract.

- :mod:`agent.graphs.legacy`: a hand-built ``StateGraph`` (agent, tools, finalize);
- :mod:`agent.graphs.middleware`: ``create_agent`` with ``StopOnArtifactMiddleware``.
"""
