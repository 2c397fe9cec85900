"""The forced-outcome matrix through the shipped harness, on both kinds of agent.

Runs on the newest releases and on langgraph 0.6.6 / langchain-core 0.3 (router only there).
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from soa_graphs import (
    ANSWERED,
    assert_answer_is_settled_content,
    build,
    forced_result,
    model_calls,
    retry_line,
    stop_decision,
    user,
)
from stop_on_artifact import StopSettings
from stop_on_artifact._decision import (
    ANSWER_SEPARATOR,
    MODEL_CALL_LIMIT_MESSAGE,
)
from stop_on_artifact.testing import (
    ScriptedChatModel,
    assert_model_calls,
    assert_stopped,
    call_then_answer,
    forced_tool,
)

MATRIX: list[tuple[Any, str, str, int]] = [
    # outcomes, stop_mode, rule, model calls
    ("success", "hard", "completed", 1),
    ("fatal", "hard", "fatal", 1),
    ("policy_block", "hard", "policy_block", 1),
    (["transient", "success"], "hard", "completed", 2),
    (["retryable", "fatal"], "hard", "fatal", 2),
    ("success", "polish", "completed", 2),
    ("policy_block", "polish", "policy_block", 1),
    ("success", "never", "stop_mode_never", 2),
]


def agent(kind: str, outcomes: Any, **settings: Any) -> Any:
    model = ScriptedChatModel(script=call_then_answer("search"))
    return build(kind, model, [forced_tool("search", outcomes)], settings=StopSettings(**settings))


@pytest.mark.parametrize(("outcomes", "mode", "rule", "calls"), MATRIX)
def test_forced_outcomes(kind: str, outcomes: Any, mode: str, rule: str, calls: int) -> None:
    result = agent(kind, outcomes, stop_mode=mode).invoke(user("store"))
    decision = stop_decision(result)
    assert decision["rule"] == rule
    assert_model_calls(result, calls)
    if mode == "hard" or rule == "policy_block":
        assert_stopped(result, rule)
        assert_answer_is_settled_content(result)
        outcome: Any = "success" if rule == "completed" else rule
        content, _ = forced_result(outcome, "store")
        assert result["messages"][-1].content == content
    else:
        assert result["messages"][-1].content == ANSWERED  # the model answered


@pytest.mark.parametrize(("outcomes", "mode", "rule", "calls"), MATRIX[:4])
async def test_forced_outcomes_async(
    kind: str, outcomes: Any, mode: str, rule: str, calls: int
) -> None:
    result = await agent(kind, outcomes, stop_mode=mode).ainvoke(user("store"))
    assert_stopped(result, rule)
    assert_model_calls(result, calls)
    assert_answer_is_settled_content(result)


def test_the_retry_budget_and_the_model_call_cap_stop_with_their_text(kind: str) -> None:
    spent = agent(kind, "transient", max_retries=1).invoke(user("store"))
    assert_stopped(spent, "retry_budget")
    assert_answer_is_settled_content(spent)
    closing = retry_line("search", 2)  # its part, named, tried twice
    assert spent["messages"][-1].content.endswith(ANSWER_SEPARATOR + closing)
    assert spent["messages"][-1].content.startswith("**Not done: this request (`search`)**")
    assert stop_decision(spent)["unsettled"] == [spent["messages"][-2].tool_call_id]
    assert_model_calls(spent, 2)
    capped = agent(kind, "transient", max_retries=10, max_model_calls=3).invoke(user("store"))
    assert_stopped(capped, "model_call_limit")
    assert capped["messages"][-1].content.endswith(ANSWER_SEPARATOR + MODEL_CALL_LIMIT_MESSAGE)
    assert_model_calls(capped, 3)


def test_polish_with_no_call_left_answers_with_the_stops_text(kind: str) -> None:
    result = agent(kind, "success", stop_mode="polish", max_model_calls=1).invoke(user("store"))
    assert_stopped(result, "completed")  # the polish call is one of max_model_calls (#61)
    assert_model_calls(result, 1)
    assert_answer_is_settled_content(result)


def test_parallel_calls_all_settle_before_a_hard_stop(kind: str) -> None:
    model = ScriptedChatModel(script=call_then_answer("search", calls=2))
    tools = [forced_tool("search", ["success", "transient", "success"])]
    result = build(kind, model, tools).invoke(user("store"))
    decision = assert_stopped(result, "completed")
    first, retried = [m for m in result["messages"] if m.type == "ai" and m.tool_calls]
    # The first part's page, then the retried second part in its own place.
    assert decision["answer_from"] == [first.tool_calls[0]["id"], retried.tool_calls[0]["id"]]
    assert decision["unsettled"] == []
    page, _ = forced_result("success", "store")
    assert result["messages"][-1].content == page  # the same page twice is said once
    assert_model_calls(result, 2)
    assert_answer_is_settled_content(result)


def test_a_second_turn_on_one_thread_decides_afresh(kind: str) -> None:
    model = ScriptedChatModel(script=call_then_answer("search"))
    graph = build(kind, model, [forced_tool("search", "fatal")], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke(user("first"), config)
    second = graph.invoke(user("second"), config)
    assert_stopped(second, "fatal")
    assert_model_calls(second, 1)
    assert "second" in second["messages"][-1].content


def test_streaming_yields_one_decision_event_per_tool_step(kind: str) -> None:
    graph = agent(kind, ["transient", "success"])
    events = [e for e in graph.stream(user("store"), stream_mode="custom")]
    assert [e["stop_decision"]["rule"] for e in events] == ["transient", "completed"]
    last = graph.invoke(user("store"))
    assert model_calls(last["messages"]) == 2
