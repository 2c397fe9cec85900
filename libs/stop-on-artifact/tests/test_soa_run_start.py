"""Issue #54: a turn begins where the run begins, and a user message a tool adds is no new turn.

The agent as a parent graph's node after a planner's ``AIMessage``, after a supervisor's
handoff, on any history ending in an ``AIMessage``; a tool that hands the model an image as a
``HumanMessage`` after its ``ToolMessage``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import count
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import Command
from soa_graphs import hand_built, invoke, modes, needs_langchain
from stop_on_artifact import StopRouter, completed, transient
from stop_on_artifact.testing import ScriptedChatModel, forced_tool, tool_call

IMAGE = {"type": "image", "url": "https://example.com/chart.png"}


def always_calls(calls: list[int]) -> ScriptedChatModel:
    """A model that calls the first bound tool on every call, counted in ``calls``."""
    ids = count()

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        calls.append(1)
        return AIMessage("", tool_calls=[tool_call(tools[0], {"query": "q"}, f"c{next(ids)}")])

    return ScriptedChatModel(script=script)


def agent_of(tools: list[Any], calls: list[int], **settings: Any) -> Any:
    from langchain.agents import create_agent
    from stop_on_artifact import StopOnArtifactMiddleware

    middleware = [StopOnArtifactMiddleware(**settings)]
    return create_agent(always_calls(calls), tools, middleware=middleware)


async def run(graph: Any, mode: str, messages: list[Any]) -> dict[str, Any]:
    return dict(await invoke(graph, {"messages": messages}, mode, {"recursion_limit": 200}))


def planner(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage("Plan: look it up, then answer.")]}


def handoff(state: MessagesState) -> dict[str, Any]:
    call = {"name": "transfer_to_researcher", "args": {}, "id": "h1", "type": "tool_call"}
    done = ToolMessage("Transferred to researcher", tool_call_id="h1")
    return {"messages": [AIMessage("", tool_calls=[call]), done]}


def parent(first: Any, agent: Any) -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node("first", first)
    graph.add_node("agent", agent)
    graph.add_edge(START, "first")
    graph.add_edge("first", "agent")
    return graph.compile()


ASKED = [HumanMessage("Find the figure.")]
SHAPES: dict[str, Callable[[Any], tuple[Any, list[Any]]]] = {
    "after a planner": lambda agent: (parent(planner, agent), ASKED),
    "after a handoff": lambda agent: (parent(handoff, agent), ASKED),
    "on a reply": lambda agent: (agent, [*ASKED, AIMessage("Let me check.")]),
}


@pytest.mark.parametrize("kind", ["router", pytest.param("middleware", marks=needs_langchain)])
@pytest.mark.parametrize("shape", list(SHAPES))
@modes
async def test_a_run_that_begins_on_no_user_message_stops(kind: str, shape: str, mode: str) -> None:
    calls: list[int] = []
    tools = [forced_tool("search", "completed")]
    if kind == "router":
        agent = hand_built(always_calls(calls), tools, StopRouter())
    else:
        agent = agent_of(tools, calls)
    graph, messages = SHAPES[shape](agent)
    result = await run(graph, mode, messages)
    assert calls == [1]
    answer = result["messages"][-1]
    result_text = next(m for m in result["messages"] if isinstance(m, ToolMessage) and m.artifact)
    assert isinstance(answer, AIMessage) and not answer.tool_calls
    assert str(result_text.content) in str(answer.content)  # the stop answers, verbatim


def with_image(outcome: Any) -> Any:
    @tool
    def chart(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Draw a chart."""
        result = ToolMessage("drawn", artifact=outcome(), tool_call_id=tool_call_id, name="chart")
        return Command(update={"messages": [result, HumanMessage([IMAGE])]})

    return chart


@needs_langchain
@modes
async def test_a_completed_tool_that_adds_an_image_stops(mode: str) -> None:
    calls: list[int] = []
    agent = agent_of([with_image(lambda: completed())], calls)
    result = await run(agent, mode, list(ASKED))
    assert calls == [1]
    assert result["stop_decision"]["rule"] == "completed"
    assert "drawn" in str(result["messages"][-1].content)


@needs_langchain
@pytest.mark.parametrize(
    ("outcome", "settings", "rule", "expected"),
    [
        (lambda: None, {"max_model_calls": 4}, "model_call_limit", 4),
        (lambda: transient(), {"max_retries": 2}, "retry_budget", 3),
    ],
    ids=["plain", "transient"],
)
@modes
async def test_a_tool_that_adds_an_image_keeps_the_budgets(
    outcome: Any, settings: dict[str, int], rule: str, expected: int, mode: str
) -> None:
    calls: list[int] = []
    agent = agent_of([with_image(outcome)], calls, **settings)
    result = await run(agent, mode, list(ASKED))
    assert result["stop_decision"]["rule"] == rule
    assert len(calls) == expected


def test_a_record_whose_anchor_was_trimmed_away_is_still_the_turns() -> None:
    from stop_on_artifact._record import is_current

    record = {"turn": "p1", "settings": {}}  # the run began after a planner's reply
    kept = [HumanMessage("q", id="h0"), AIMessage("", id="r1"), ToolMessage("x", tool_call_id="c")]
    assert is_current(record, kept)  # the planner's reply was trimmed: the rest is this turn
    later = [*kept, AIMessage("answer", id="a1"), HumanMessage("next", id="h2")]
    assert not is_current(record, later)  # a new question after it is a new turn


# --- a model that reuses call ids (some OpenAI-compatible servers send call_0 every time) ------


def reused_ids(tools: Sequence[dict[str, Any]] | None = None) -> ScriptedChatModel:
    """Call the first tool with ``call_0`` on every reply."""

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        return AIMessage("", tool_calls=[tool_call(tools[0], {"query": "q"}, "call_0")])

    return ScriptedChatModel(script=script)


def flaky_then_fine() -> Any:
    """Transient on its first call of each question, then completed."""
    seen: list[int] = []

    @tool(response_format="content_and_artifact")
    def flaky(query: str) -> tuple[str, dict[str, Any]]:
        """Look it up."""
        seen.append(1)
        if len(seen) % 2:
            return "Busy.", transient()
        return "Refunds: within 30 days.", completed()

    return flaky


@needs_langchain
@modes
async def test_a_retry_that_reuses_the_call_id_answers_with_its_own_result(mode: str) -> None:
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from stop_on_artifact import StopOnArtifactMiddleware

    agent = create_agent(
        reused_ids(),
        [flaky_then_fine()],
        middleware=[StopOnArtifactMiddleware()],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": f"reuse-{mode}"}}
    for question in ("Refunds?", "Refunds again?"):  # across turns too: call_0 every time
        state: Any = {"messages": [HumanMessage(question)]}
        if mode == "async":
            result = await agent.ainvoke(state, config)
        else:
            result = agent.invoke(state, config)
        assert result["stop_decision"]["rule"] == "completed"
        assert result["messages"][-1].content == "Refunds: within 30 days."  # never "Not done"


@needs_langchain
@modes
async def test_transients_under_one_reused_id_are_counted_per_reply(mode: str) -> None:
    calls: list[int] = []

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        calls.append(1)
        return AIMessage("", tool_calls=[tool_call(tools[0], {"query": "q"}, "call_0")])

    from langchain.agents import create_agent
    from stop_on_artifact import StopOnArtifactMiddleware

    agent = create_agent(
        ScriptedChatModel(script=script),
        [forced_tool("search", "transient")],
        middleware=[StopOnArtifactMiddleware(max_retries=2, max_model_calls=20)],
    )
    result = await run(agent, mode, [HumanMessage("q")])
    assert result["stop_decision"]["rule"] == "retry_budget"
    assert len(calls) == 3  # three transients under one id: the budget of two is spent


def two_calls(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
    """Call both bound tools in one reply."""
    calls = [tool_call(t, {"query": "q"}, f"c{n}") for n, t in enumerate(tools)]
    return AIMessage("", tool_calls=calls)


@pytest.mark.parametrize("kind", ["router", pytest.param("middleware", marks=needs_langchain)])
@modes
async def test_after_a_handoff_the_parts_are_this_runs_own(kind: str, mode: str) -> None:
    tools = [forced_tool("search", "completed"), forced_tool("lookup", "transient")]
    model = ScriptedChatModel(script=two_calls)
    if kind == "router":
        agent = hand_built(model, tools, StopRouter(parallel_policy="any"))
    else:
        from langchain.agents import create_agent
        from stop_on_artifact import StopOnArtifactMiddleware

        stop = StopOnArtifactMiddleware(parallel_policy="any")
        agent = create_agent(model, tools, middleware=[stop])
    result = await run(parent(handoff, agent), mode, list(ASKED))
    answer = str(result["messages"][-1].content)
    assert "part 2 of 2" in answer and "of 3" not in answer  # the handoff is no part of it
