"""One turn, read once (#61): the shapes a stranger's agent broke, each sync and async.

1. A call to a tool that does not exist (ToolNode's "is not a valid tool") is the model's own
   slip, no part of what the person asked: never answered as not done.
2. A turn whose earlier replies another middleware removed reads one request as one part.
3. A middleware that empties the step keeps the turn and its budgets.
6. No step of stock's is spent: at every ``recursion_limit`` a run ends as stock
   ``create_agent``'s does (the same answer, or the same ``GraphRecursionError``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, RemoveMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from soa_graphs import hand_built, has_middleware, modes, needs_langchain, noop_hooks, user
from soa_graphs import invoke as run
from stop_on_artifact import StopRouter, completed, transient
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


class Trim:
    """``before_model`` middlewares that remove messages every round, before the stop's."""

    @staticmethod
    def replies() -> Any:
        """Remove every reply that issued calls; keep their results."""
        from langchain.agents.middleware import AgentMiddleware

        class TrimReplies(AgentMiddleware):
            def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
                issued = [m for m in state["messages"] if isinstance(m, AIMessage) and m.tool_calls]
                return {"messages": [RemoveMessage(id=str(m.id)) for m in issued]} or None

        return TrimReplies()

    @staticmethod
    def failures() -> Any:
        """Remove the last exchange (the reply and its results) when every result is transient."""
        from langchain.agents.middleware import AgentMiddleware

        class DropFailed(AgentMiddleware):
            def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
                messages = state["messages"]
                if not isinstance(messages[-1], ToolMessage):
                    return None
                reply = next(m for m in reversed(messages) if isinstance(m, AIMessage))
                step = messages[messages.index(reply) :]
                if any("transient" not in m.content for m in step[1:]):
                    return None
                return {"messages": [RemoveMessage(id=str(m.id)) for m in step]}

        return DropFailed()


def outcomes(*said: str) -> BaseTool:
    """A ``kb`` tool whose n-th call is ``said[n]`` (the last repeating): transient or not."""
    calls: list[str] = []

    def kb(query: str) -> tuple[str, dict[str, Any]]:
        calls.append(query)
        if said[min(len(calls), len(said)) - 1] == "transient":
            return "kb is busy (transient)", transient()
        return "Refunds within 30 days.", completed()

    return StructuredTool.from_function(
        kb, name="kb", description="Look up.", response_format="content_and_artifact"
    )


def again(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
    """Ask ``kb`` the same question every round, with a new call id."""
    return AIMessage("", tool_calls=[tool_call("kb", {"query": "refunds"}, f"c{len(messages)}")])


@needs_langchain
@modes
async def test_a_trimmed_turn_reads_one_request_as_one_part(mode: str) -> None:
    done = agent(again, [outcomes("transient", "transient", "completed")], Trim.replies())
    result = await run(done, user("Refunds?"), mode)
    assert_stopped(result, "completed")
    assert result["messages"][-1].content == "Refunds within 30 days."
    busy = agent(again, [outcomes("transient")], Trim.replies())
    result = await run(busy, user("Refunds?"), mode)
    decision = assert_stopped(result, "retry_budget")
    assert len(decision["unsettled"]) == 1
    said = result["messages"][-1].content.split("\n\n---\n\n")
    assert said[0].startswith("**Not done: this request (`kb`)**") and len(said) == 2


@needs_langchain
@modes
async def test_a_middleware_that_empties_the_step_keeps_the_turn_and_its_budgets(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    busy = agent(again, [outcomes("transient")], Trim.failures())
    with caplog.at_level(logging.WARNING, logger="stop_on_artifact"):
        result = await run(busy, user("Refunds?"), mode, {"recursion_limit": 60})
    assert_stopped(result, "model_call_limit")  # never GraphRecursionError
    assert sum(isinstance(m, AIMessage) for m in result["messages"]) == 1  # the answer alone
    assert not [r for r in caplog.records if "this turn's start" in r.getMessage()]


def lookup_plain(query: str) -> str:
    """Look up."""
    return f"Notes about {query}."


async def outcome(agent: Any, mode: str, limit: int) -> tuple[Any, ...]:
    """How a run at ``limit`` ends: ``("raised",)``, or the answer and the model calls."""
    from langgraph.errors import GraphRecursionError
    from soa_graphs import model_calls

    try:
        result = await run(agent, user("Refunds?"), mode, {"recursion_limit": limit})
    except GraphRecursionError:
        return ("raised",)
    return result["messages"][-1].content, model_calls(result)


def others(kind: str) -> list[Any]:
    """Other middleware beside the stop: none, a before_model hook, an after_agent hook."""
    before, after = noop_hooks()
    chosen: dict[str, list[Any]] = {"alone": [], "before": [before], "after": [after]}
    return chosen[kind]


@needs_langchain
@modes
@pytest.mark.parametrize("kind", ["alone", "before", "after"])
async def test_at_every_step_limit_a_run_ends_as_stocks_does(kind: str, mode: str) -> None:
    from langchain.agents import create_agent
    from stop_on_artifact import StopOnArtifactMiddleware
    from stop_on_artifact.testing import call_then_answer

    plain = StructuredTool.from_function(lookup_plain, name="lookup")
    stops = forced_tool("lookup", "completed")

    def built(tool: BaseTool, stop: bool) -> Any:
        model = ScriptedChatModel(script=call_then_answer("lookup"))
        middleware = [*others(kind), *([StopOnArtifactMiddleware()] if stop else [])]
        return create_agent(model, [tool], middleware=middleware)

    ended = []
    for limit in range(1, 10):
        stock = await outcome(built(plain, False), mode, limit)
        assert await outcome(built(plain, True), mode, limit) == stock, limit  # plain: stock's
        stopped = await outcome(built(stops, True), mode, limit)  # a stop: the same steps
        assert (stopped == ("raised",)) is (stock == ("raised",)), limit
        if stopped != ("raised",):
            assert stopped == ("# Refunds?\n\nThe page about Refunds?.", 1), limit
            ended.append(limit)
    assert ended and ended[0] == {"alone": 4, "before": 6, "after": 5}[kind], ended
