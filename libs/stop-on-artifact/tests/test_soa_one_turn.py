"""One turn, read once (#61): the shapes a stranger's agent broke, each sync and async.

1. A call to a tool that does not exist (ToolNode's "is not a valid tool") is the model's own
   slip, no part of what the person asked: never answered as not done.
2. A turn whose earlier replies another middleware removed reads one request as one part.
3. A middleware that empties the step keeps the turn and its budgets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool
from soa_graphs import hand_built, has_middleware, modes, user
from soa_graphs import invoke as run
from stop_on_artifact import StopRouter
from stop_on_artifact.testing import ScriptedChatModel, assert_stopped, forced_tool, tool_call


def misnamed(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
    """Call ``lookup_kb`` (no such tool), then ``lookup``; then answer in text."""
    asked = sum(isinstance(m, AIMessage) for m in messages)
    if asked < 2:
        name = "lookup_kb" if asked == 0 else "lookup"
        return AIMessage("", tool_calls=[tool_call(name, {"query": "refunds"}, f"c{asked}")])
    return AIMessage("The model answered.")


def agent(script: Any, tools: Sequence[BaseTool], *before: Any, graph: str = "middleware") -> Any:
    model = ScriptedChatModel(script=script)
    if graph == "router":
        return hand_built(model, tools, StopRouter())
    from langchain.agents import create_agent
    from stop_on_artifact import StopOnArtifactMiddleware

    return create_agent(model, list(tools), middleware=[*before, StopOnArtifactMiddleware()])


@modes
async def test_a_call_of_a_tool_that_does_not_exist_is_no_part(mode: str) -> None:
    for graph in ("middleware", "router") if has_middleware() else ("router",):
        lookup = forced_tool("lookup", "completed")
        result = await run(agent(misnamed, [lookup], graph=graph), user("Refunds?"), mode)
        decision = assert_stopped(result, "completed")
        assert result["messages"][-1].content == "# refunds\n\nThe page about refunds."
        assert (decision["answer_from"], decision["unsettled"]) == (["c1"], [])
        assert decision["saved"]["model_calls"] == 1
