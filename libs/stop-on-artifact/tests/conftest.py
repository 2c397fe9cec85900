"""Shared fixtures of the library suite: each agent test runs on both kinds of agent.

``router`` (a hand-built ``StateGraph``) runs everywhere; ``middleware`` (``create_agent``)
needs langchain 1.x, the ``[langchain]`` extra. Where it is missing (the langgraph 0.6.6
environment), a ``middleware`` test is not skipped: it becomes a check that importing the
middleware fails with a message naming the extra.
"""

from __future__ import annotations

import pytest
from soa_graphs import has_middleware


@pytest.fixture(params=["router", "middleware"])
def kind(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name == "middleware" and not has_middleware():
        with pytest.raises(ImportError, match=r"stop-on-artifact\[langchain\]"):
            import stop_on_artifact._middleware  # noqa: F401
        pytest.skip("langchain 1.x is not installed here: the middleware's ImportError was checked")
    return name
