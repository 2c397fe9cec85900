"""One scenario matrix on the four ways in: the router in a hand-built ``StateGraph``, the
router in a functional-API ``@entrypoint``, the middleware in ``create_agent`` and in
``create_deep_agent``.

Each scenario states the decision it ends with (action, rule, reason), the model calls of
the turn and the final answer; every path must reach exactly that, and the same decision as
the hand-built graph (tool-call ids compared by their position: deepagents puts its system
prompt in the model's messages, so the scripted model numbers its calls differently there).
The router paths run everywhere, langgraph 0.6.6 included; ``middleware`` needs langchain 1.x
(where it is missing, the middleware's ImportError is checked instead) and ``deep`` needs
deepagents too.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt
from soa_graphs import (
    ANSWERED,
    assert_answer_is_settled_content,
    build,
    forced_result,
    has_middleware,
    model_calls,
    retry_line,
    stop_decision,
    user,
)
from stop_on_artifact import StopSettings, completed
from stop_on_artifact.testing import (
    ANSWER_SEPARATOR,
    RETRY_BUDGET_MESSAGE,
    ScriptedChatModel,
    assert_model_calls,
    assert_stopped,
    call_then_answer,
    forced_tool,
)

PATHS = ("router", "functional", "middleware", "deep")
PAGE, _ = forced_result("success", "store")
NOTHING, _ = forced_result("fatal", "store")


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    if name in ("middleware", "deep") and not has_middleware():
        with pytest.raises(ImportError, match=r"stop-on-artifact\[langchain\]"):
            import stop_on_artifact._middleware  # noqa: F401
        pytest.skip("langchain 1.x is not installed here: the middleware's ImportError was checked")
    if name == "deep" and importlib.util.find_spec("deepagents") is None:
        pytest.skip("deepagents is not installed here")
    return name


@dataclass(frozen=True)
class Scenario:
    """A forced run of ``search`` and what every path must end with."""

    name: str
    outcomes: Any
    decision: tuple[str, str, str]
    """The last decision's action, rule and reason."""
    calls: int
    """Model calls in the turn."""
    answer: str
    """The final message's text; a retry-budget stop checks its closing line instead."""
    parallel: int = 1
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def hard(self) -> bool:
        return self.answer != ANSWERED


SCENARIOS = [
    Scenario("success", "success", ("stop", "completed", "completed"), 1, PAGE),
    Scenario(
        "transient_then_success",
        ["transient", "success"],
        ("stop", "completed", "completed"),
        2,
        PAGE,
    ),
    Scenario("fatal", "fatal", ("stop", "fatal", "fatal"), 1, NOTHING),
    Scenario(
        "retry_budget",
        "transient",
        ("stop", "retry_budget", "transient"),
        2,
        RETRY_BUDGET_MESSAGE,
        settings={"max_retries": 1},
    ),
    Scenario(
        "polish",
        "success",
        ("stop", "completed", "completed"),
        2,
        ANSWERED,
        settings={"stop_mode": "polish"},
    ),
    Scenario(
        "never",
        "success",
        ("continue", "stop_mode_never", "completed"),
        2,
        ANSWERED,
        settings={"stop_mode": "never"},
    ),
    Scenario(
        "two_calls_one_step",
        ["success", "transient", "success"],
        ("stop", "completed", "completed"),
        2,
        PAGE,  # the same page twice is said once
        parallel=2,
    ),
    Scenario(
        "two_calls_any",
        ["fatal", "success"],
        ("stop", "fatal", "fatal"),
        1,
        NOTHING + ANSWER_SEPARATOR + PAGE,  # both settled parts, in the order called
        parallel=2,
        settings={"parallel_policy": "any"},
    ),
]


def agent(path: str, scenario: Scenario, **options: Any) -> Any:
    model = ScriptedChatModel(script=call_then_answer("search", calls=scenario.parallel))
    tools = [forced_tool("search", scenario.outcomes)]
    return build(path, model, tools, settings=StopSettings(**scenario.settings), **options)


def normalized(decision: Mapping[str, Any], messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """The decision with each tool-call id replaced by its position among the thread's calls.

    ``saved`` keeps its model calls: its tokens are each path's own estimate, from its last
    model call's usage (deepagents' system prompt makes its calls read more).
    """
    ids = [c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
    position = {call_id: f"call#{n}" for n, call_id in enumerate(ids)}
    saved = {"saved": decision["saved"]["model_calls"]} if "saved" in decision else {}
    return {
        **decision,
        **saved,
        "tool_call_id": position.get(decision.get("tool_call_id") or "", None),
        "answer_from": [position[i] for i in decision["answer_from"]],
        "unsettled": [position[i] for i in decision["unsettled"]],
    }


@dataclass(frozen=True)
class Seen:
    """What one run ended with, comparable across paths."""

    decision: dict[str, Any]
    calls: int
    answer: str


def seen(result: Mapping[str, Any]) -> Seen:
    messages = result["messages"]
    decision = normalized(stop_decision(result), messages)
    return Seen(decision, model_calls(messages), messages[-1].content)


def check(scenario: Scenario, result: Mapping[str, Any]) -> None:
    decision = stop_decision(result)
    assert (decision["action"], decision["rule"], decision["reason"]) == scenario.decision
    assert_model_calls(result, scenario.calls)
    answer = result["messages"][-1].content
    if scenario.answer == RETRY_BUDGET_MESSAGE:
        assert answer.endswith(ANSWER_SEPARATOR + retry_line("search", 2))
    else:
        assert answer == scenario.answer
    if scenario.hard:
        assert_stopped(result, scenario.decision[1])
        assert_answer_is_settled_content(result)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_every_path_ends_a_scenario_as_the_hand_built_graph_does(
    path: str, scenario: Scenario
) -> None:
    result = agent(path, scenario).invoke(user("store"))
    check(scenario, result)
    assert seen(result) == seen(agent("router", scenario).invoke(user("store")))


@pytest.mark.parametrize("scenario", SCENARIOS[1:3], ids=[s.name for s in SCENARIOS[1:3]])
async def test_every_path_ends_a_scenario_the_same_way_async(path: str, scenario: Scenario) -> None:
    result = await agent(path, scenario).ainvoke(user("store"))
    check(scenario, result)
    assert seen(result) == seen(agent("router", scenario).invoke(user("store")))


def two_turns(path: str) -> Mapping[str, Any]:
    scenario = SCENARIOS[2]  # fatal
    graph = agent(path, scenario, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    first = graph.invoke(user("first"), config)
    assert_stopped(first, "fatal")
    second: Mapping[str, Any] = graph.invoke(user("second"), config)
    return second


def test_a_second_turn_on_one_thread_decides_afresh_on_every_path(path: str) -> None:
    second = two_turns(path)
    assert_stopped(second, "fatal")
    assert_model_calls(second, 1)  # this turn's: the first turn's call is not counted
    assert second["messages"][-1].content == forced_result("fatal", "second")[0]
    humans = [m.content for m in second["messages"] if isinstance(m, HumanMessage)]
    assert humans == ["first", "second"]
    assert_answer_is_settled_content(second)
    assert seen(second) == seen(two_turns("router"))


@tool(response_format="content_and_artifact")
def confirm(query: str) -> tuple[str, dict[str, Any]]:
    """Ask a person first, then look ``query`` up."""
    answer = interrupt(f"Look up {query}?")
    return f"# {query}\n\nLooked up: {answer}.", completed()


def resumed(path: str) -> Mapping[str, Any]:
    """A turn paused inside its tool step, then resumed: the run that finishes it."""
    model = ScriptedChatModel(script=call_then_answer("confirm"))
    graph = build(path, model, [confirm], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke(user("store"), config)
    waiting = [i.value for task in graph.get_state(config).tasks for i in task.interrupts]
    assert waiting == ["Look up store?"]
    result: Mapping[str, Any] = graph.invoke(Command(resume="yes"), config)
    return result


def test_a_turn_resumed_after_an_interrupt_keeps_its_record_on_every_path(path: str) -> None:
    # The functional entrypoint's body runs again on the resume: the turn's record must
    # still match the user's message it re-reads (see soa_graphs.functional).
    result = resumed(path)
    assert_stopped(result, "completed")
    assert_model_calls(result, 1)
    assert result["messages"][-1].content == "# store\n\nLooked up: yes."
    assert_answer_is_settled_content(result)
    assert seen(result) == seen(resumed("router"))


def streamed(path: str) -> tuple[list[dict[str, Any]], Mapping[str, Any]]:
    """The custom events of a transient-then-success run, and its final state."""
    graph = agent(path, SCENARIOS[1])
    events: list[dict[str, Any]] = []
    final: Mapping[str, Any] = {}
    for mode, chunk in graph.stream(user("store"), stream_mode=["custom", "values"]):
        if mode == "custom":
            events.append(chunk)
        else:
            final = chunk
    return events, final


def test_every_path_streams_one_decision_event_per_tool_step(path: str) -> None:
    events, final = streamed(path)
    assert [sorted(event) for event in events] == [["stop_decision"], ["stop_decision"]]
    decisions = [event["stop_decision"] for event in events]
    assert [(d["action"], d["rule"]) for d in decisions] == [
        ("continue", "transient"),
        ("stop", "completed"),
    ]
    assert decisions[-1] == stop_decision(final)
    messages = final["messages"]
    expected_events, expected_final = streamed("router")
    assert [normalized(d, messages) for d in decisions] == [
        normalized(e["stop_decision"], expected_final["messages"]) for e in expected_events
    ]
