"""The shared mark: `mark_tool` beside calls of tools adopted ``when_marked`` in shared mode.

A success of such a tool is a plain result unless its reply also calls the mark; then it is
``completed``, exactly as a call that set ``final=True``. The mark's own result never answers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from soa_graphs import (
    build,
    invoke,
    model_calls,
    modes,
    needs_langchain,
    stop_decision,
    tool_messages,
    user,
)
from stop_on_artifact import MARK_ARGUMENT, StopSettings, adopt, decide, final_text, mark_tool
from stop_on_artifact.testing import ScriptedChatModel

MARK = mark_tool()
KINDS = pytest.mark.parametrize(
    "kind", ["router", pytest.param("middleware", marks=needs_langchain)]
)


class Unavailable(Exception):
    pass


class NotFound(Exception):
    pass


@tool
def lookup(query: str) -> str:
    """Look an order up."""
    if query == "timeout":
        raise Unavailable
    if query == "missing":
        raise NotFound
    return f"Order {query} shipped."


@tool
def notes(query: str) -> str:
    """Read the notes."""
    return f"Notes on {query}."


SHARED = adopt(lookup, stops="when_marked", mark="shared", transient=Unavailable, fatal=NotFound)
ARGUMENT = adopt(lookup, stops="when_marked", transient=Unavailable, fatal=NotFound)
UNMARKED = MARK.invoke({})


def call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def step(*calls: dict[str, Any]) -> list[BaseMessage]:
    """The turn: a question, one reply with ``calls``, each call's result from its tool."""
    tools = {"lookup": SHARED, "notes": notes, "mark_final": MARK, "kept": adopt(notes)}
    results = [tools[c["name"]].invoke({**c, "name": tools[c["name"]].name}) for c in calls]
    return [HumanMessage("Where is my order?"), AIMessage("", tool_calls=calls), *results]


def first_then_answer(*calls: dict[str, Any]) -> ScriptedChatModel:
    """Issue ``calls`` in the first reply, then answer in text."""

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        if any(isinstance(m, ToolMessage) for m in messages):
            return AIMessage("The model's answer.")
        return AIMessage("", tool_calls=list(calls))

    return ScriptedChatModel(script=script)


def test_a_shared_mode_success_is_plain_unless_marked() -> None:
    result = SHARED.invoke(call("lookup", "c1", query="a1"))
    assert result.content == "Order a1 shipped." and result.artifact == {"markable": True}
    decision = decide(step(call("lookup", "c1", query="a1")), StopSettings())
    assert (decision["action"], decision["rule"]) == ("continue", "no_artifact")


def test_a_call_beside_the_mark_stops_and_the_answer_is_its_text() -> None:
    messages = step(call("lookup", "c1", query="a1"), call("mark_final", "m1"))
    decision = decide(messages, StopSettings())
    assert (decision["action"], decision["rule"], decision["answer_from"]) == (
        "stop", "completed", ["c1"]
    )  # fmt: skip
    assert final_text(decision, messages) == "Order a1 shipped."


def test_the_mark_alone_or_beside_plain_tools_goes_back_to_the_model() -> None:
    assert "ended nothing" in UNMARKED
    for calls in ([], [call("notes", "n1", query="a1")]):
        decision = decide(step(*calls, call("mark_final", "m1")), StopSettings())
        assert (decision["action"], decision["rule"]) == ("continue", "no_artifact")


def test_several_calls_with_the_mark_follow_the_parallel_policy() -> None:
    two = step(
        call("lookup", "c1", query="a1"), call("lookup", "c2", query="b2"), call("mark_final", "m1")
    )
    decision = decide(two, StopSettings())
    assert decision["answer_from"] == ["c1", "c2"]
    assert final_text(decision, two) == "Order a1 shipped.\n\n---\n\nOrder b2 shipped."
    plain = step(
        call("lookup", "c1", query="a1"), call("notes", "n1", query="a1"), call("mark_final", "m1")
    )
    assert decide(plain, StopSettings())["action"] == "continue"  # the model reads the notes
    kept = step(
        call("kept", "k1", query="a1"), call("lookup", "c1", query="a1"), call("mark_final", "m1")
    )
    assert decide(kept, StopSettings())["answer_from"] == ["k1", "c1"]
    failed = step(
        call("lookup", "c1", query="a1"),
        call("lookup", "c2", query="timeout"),
        call("mark_final", "m1"),
    )
    assert decide(failed, StopSettings(parallel_policy="all"))["rule"] == "transient"
    decision = decide(failed, StopSettings(parallel_policy="priority"))
    assert (decision["answer_from"], decision["unsettled"]) == (["c1"], ["c2"])
    assert UNMARKED not in final_text(decision, failed)


def test_a_marked_call_that_failed_follows_the_rules_of_a_failed_call() -> None:
    transient = decide(
        step(call("lookup", "c1", query="timeout"), call("mark_final", "m1")), StopSettings()
    )
    assert (transient["action"], transient["rule"]) == ("continue", "transient")
    messages = step(call("lookup", "c1", query="missing"), call("mark_final", "m1"))
    fatal = decide(messages, StopSettings())
    assert (fatal["action"], fatal["rule"], fatal["answer_from"]) == ("stop", "fatal", ["c1"])
    assert UNMARKED not in final_text(fatal, messages)


def test_the_mark_costs_one_small_schema_and_shared_tools_carry_no_argument() -> None:
    schema = convert_to_openai_tool(MARK)["function"]
    assert schema["parameters"]["properties"] == {} and len(json.dumps(schema)) < 200
    shared = convert_to_openai_tool(SHARED)["function"]["parameters"]["properties"]
    argument = convert_to_openai_tool(ARGUMENT)["function"]["parameters"]["properties"]
    assert list(shared) == ["query"] and list(argument) == ["query", MARK_ARGUMENT]
    assert ARGUMENT.invoke(call("lookup", "c1", query="a1", final=True)).artifact["stop"] is True
    with pytest.raises(ValueError, match="mark must be 'argument' or 'shared'"):
        adopt(lookup, stops="when_marked", mark="both")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'shared' needs stops='when_marked'"):
        adopt(lookup, mark="shared")  # a success would complete: the mark would mean nothing
    with pytest.raises(ValueError, match="stops must be True, False or 'when_marked'"):
        adopt(lookup, stops="sometimes")  # type: ignore[arg-type]


@KINDS
@modes
async def test_an_agent_stops_on_a_marked_call_and_not_on_the_mark_alone(
    kind: str, mode: str
) -> None:
    tools: list[BaseTool] = [SHARED, MARK]
    model = first_then_answer(call("lookup", "c1", query="a1"), call("mark_final", "m1"))
    result = await invoke(build(kind, model, tools), user("Where is a1?"), mode)
    assert stop_decision(result)["rule"] == "completed" and model_calls(result) == 1
    assert result["messages"][-1].content == "Order a1 shipped."
    alone = first_then_answer(call("mark_final", "m1"))
    result = await invoke(build(kind, alone, tools), user("Where is a1?"), mode)
    assert model_calls(result) == 2 and result["messages"][-1].content == "The model's answer."
    assert [m.content for m in tool_messages(result)] == [UNMARKED]
