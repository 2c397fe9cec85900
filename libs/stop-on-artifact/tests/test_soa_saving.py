"""What a hard stop saved: ``stop_decision["saved"]``, checked against the call it skipped.

The same question runs with ``stop_mode="hard"`` and ``"never"``; the never run makes the
call the hard run skipped, and the scripted model reports its usage (approximate tokens), so
the estimate meets a measurement. Both kinds of agent; polish and never save nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.messages.utils import count_tokens_approximately
from soa_graphs import build, stop_decision, user
from stop_on_artifact import StopSettings
from stop_on_artifact.testing import (
    ScriptedChatModel,
    assert_stopped,
    call_then_answer,
    forced_tool,
)

CASES = ["success", "fatal", ["transient", "success"], "policy_block"]
QUESTION = "How does a checkpointer keep a thread's state between runs?"


def run(kind: str, outcomes: Any, mode: str, **invoke: Any) -> dict[str, Any]:
    model = ScriptedChatModel(script=call_then_answer("search"))
    tools = [forced_tool("search", outcomes)]
    agent = build(kind, model, tools, settings=StopSettings(stop_mode=mode))  # type: ignore[arg-type]
    result: dict[str, Any] = agent.invoke(user(QUESTION), **invoke)
    return result


@pytest.mark.parametrize("outcomes", CASES, ids=str)
def test_a_hard_stop_records_the_call_it_skipped(kind: str, outcomes: Any) -> None:
    hard = run(kind, outcomes, "hard")
    saved = assert_stopped(hard)["saved"]
    assert saved["model_calls"] == 1
    answer = hard["messages"][-1].content
    assert saved["output_tokens"] == count_tokens_approximately([AIMessage(content=answer)])
    if outcomes == "policy_block":
        return  # stops in every mode: nothing to measure against
    never = run(kind, outcomes, "never")
    skipped = never["messages"][-1]
    assert isinstance(skipped, AIMessage) and skipped.usage_metadata is not None
    measured = skipped.usage_metadata["input_tokens"]
    assert abs(saved["input_tokens"] - measured) <= 0.1 * measured, (saved, measured)
    assert "saved" not in stop_decision(never)


def test_polish_saves_nothing(kind: str) -> None:
    assert "saved" not in stop_decision(run(kind, "success", "polish"))


def test_the_stream_event_carries_the_saving(kind: str) -> None:
    model = ScriptedChatModel(script=call_then_answer("search"))
    agent = build(kind, model, [forced_tool("search", "success")])
    events = [
        chunk["stop_decision"]
        for chunk in agent.stream(user(QUESTION), stream_mode="custom")
        if isinstance(chunk, dict) and "stop_decision" in chunk
    ]
    assert [event["saved"]["model_calls"] for event in events] == [1]


def test_the_estimate_reads_the_models_usage_where_it_has_it(kind: str) -> None:
    """A model that reports more input than the messages hold (a system prompt, schemas)."""

    def script(messages: Any, tools: Any) -> AIMessage:
        reply = call_then_answer("search")(messages, tools)
        reply.usage_metadata = {"input_tokens": 5000, "output_tokens": 20, "total_tokens": 5020}
        return reply

    agent = build(kind, ScriptedChatModel(script=script), [forced_tool("search", "success")])
    saved = assert_stopped(agent.invoke(user(QUESTION)))["saved"]
    assert 5020 < saved["input_tokens"] < 5020 + 200


def test_a_stop_that_leaves_a_part_to_retry_records_the_retry_round(kind: str) -> None:
    """``parallel_policy="any"``: a loop without the stop retries the part, then answers."""

    def ask(mode: str) -> dict[str, Any]:
        model = ScriptedChatModel(script=call_then_answer("search", calls=2))
        tools = [forced_tool("search", ["success", "transient", "success"])]
        settings = StopSettings(stop_mode=mode, parallel_policy="any")  # type: ignore[arg-type]
        result: dict[str, Any] = build(kind, model, tools, settings=settings).invoke(user(QUESTION))
        return result

    saved = assert_stopped(ask("hard"))["saved"]
    never = [m for m in ask("never")["messages"] if isinstance(m, AIMessage)]
    skipped = never[1:]  # the retry round and the answer after it
    assert saved["model_calls"] == len(skipped) == 2
    measured = sum(m.usage_metadata["input_tokens"] for m in skipped if m.usage_metadata)
    assert abs(saved["input_tokens"] - measured) <= 0.1 * measured, (saved, measured)
