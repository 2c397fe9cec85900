"""A hard stop's answer is the whole of what the tools gave and the model asked (#53, item 4).

1. A tool's blocks that are not text (an image, OpenAI's ``image_url``, a file) stay in the
   answer right after their part's text; an image-only result answers with the image, never an
   empty message; a text-only stop still answers with the same ``str``.
2. A malformed call beside the calls that ran (``invalid_tool_calls``, which ``create_agent``
   and ``ToolNode`` never run) is named as a part not done, by its tool, its arguments never
   quoted; only the last reply's malformed calls count (``create_agent`` later writes an
   error result for an earlier one: that result is no part either).

Each graph runs sync and async, on the router and on the middleware (the ``kind`` fixture).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from soa_graphs import assert_answer_is_settled_content, build, modes, user
from stop_on_artifact import StopSettings, completed, decide, final_text, transient
from stop_on_artifact._decision import final_content
from stop_on_artifact.testing import (
    ANSWER_SEPARATOR,
    ScriptedChatModel,
    assert_model_calls,
    assert_stopped,
    forced_tool,
    tool_call,
)

IMAGE = {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}
IMAGE_URL = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
FILE = {"type": "file", "base64": "JVBERi0=", "mime_type": "application/pdf"}
REFUNDS = "Refunds: within 30 days."
SECRET = "sk-live-0123456789abcdef"
MALFORMED = "the call was malformed and never ran, so it was not completed. Ask again to retry."
BAD_CALL = {
    "name": "lookup",
    "args": '{"query": "' + SECRET + '", "page": ',
    "id": "c2",
    "error": "Function lookup arguments:\n\n{bad json\n\nare not valid JSON.",
    "type": "invalid_tool_call",
}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def returning(name: str, content: str | list[Any]) -> BaseTool:
    """A ``content_and_artifact`` tool whose every call completes with ``content``."""

    def run(query: str) -> tuple[Any, dict[str, Any]]:
        return content, completed()

    return StructuredTool.from_function(
        run, name=name, description="Look up.", response_format="content_and_artifact"
    )


def asking(*replies: AIMessage) -> ScriptedChatModel:
    """A model answering the i-th model call of the turn with ``replies[i]`` (then plain text)."""

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        asked = sum(isinstance(m, AIMessage) for m in messages[start:])
        return replies[asked].model_copy() if asked < len(replies) else AIMessage("Answered.")

    return ScriptedChatModel(script=script)


def calling(*names: str, invalid: Sequence[dict[str, Any]] = ()) -> AIMessage:
    calls = [tool_call(name, {"query": f"q{i}"}, f"c{i}") for i, name in enumerate(names)]
    return AIMessage("", tool_calls=calls, invalid_tool_calls=list(invalid))


async def run(kind: str, model: ScriptedChatModel, tools: list[BaseTool], mode: str) -> Any:
    agent = build(kind, model, tools)
    if mode == "async":
        return await agent.ainvoke(user("Show me."))
    return agent.invoke(user("Show me."))


def stopped(result: dict[str, Any]) -> str | list[str | dict[str, Any]]:
    """The answer of a hard stop made with no model call after the tools."""
    assert_stopped(result, "completed")
    assert_answer_is_settled_content(result)  # its text is final_text's
    assert_model_calls(result, 1)
    assert result["stop_decision"]["saved"]["model_calls"] == 1
    content: str | list[str | dict[str, Any]] = result["messages"][-1].content
    return content


# --- 1. blocks that are not text --------------------------------------------------------------


@modes
@pytest.mark.parametrize("block", [IMAGE, IMAGE_URL, FILE], ids=["image", "image_url", "file"])
async def test_text_and_a_block_answer_with_the_text_then_the_block(
    kind: str, mode: str, block: dict[str, Any]
) -> None:
    chart = returning("chart", [text("Sales rose 4%."), block])
    result = await run(kind, asking(calling("chart")), [chart], mode)
    given = next(m.content for m in result["messages"] if isinstance(m, ToolMessage))
    # langgraph 0.6's ToolNode turns a block type it does not know (file) into JSON text
    expected = [text("Sales rose 4%."), block] if isinstance(given, list) else given
    assert stopped(result) == expected


@modes
async def test_an_image_only_result_answers_with_the_image(kind: str, mode: str) -> None:
    result = await run(kind, asking(calling("chart")), [returning("chart", [IMAGE])], mode)
    assert stopped(result) == [IMAGE]


@modes
async def test_two_parts_keep_their_order_the_image_after_its_own_text(
    kind: str, mode: str
) -> None:
    tools = [returning("lookup", REFUNDS), returning("chart", [text("Chart:"), IMAGE])]
    result = await run(kind, asking(calling("lookup", "chart")), tools, mode)
    assert stopped(result) == [text(REFUNDS + ANSWER_SEPARATOR + "Chart:"), IMAGE]
    result = await run(kind, asking(calling("chart", "lookup")), tools, mode)
    assert stopped(result) == [text("Chart:"), IMAGE, text(ANSWER_SEPARATOR + REFUNDS)]


@modes
async def test_a_plain_text_stop_answers_with_the_same_string(kind: str, mode: str) -> None:
    tools = [returning("lookup", REFUNDS), returning("notes", [text("Open "), text("9-5.")])]
    answer = stopped(await run(kind, asking(calling("lookup", "notes")), tools, mode))
    assert isinstance(answer, str)
    assert answer == REFUNDS + ANSWER_SEPARATOR + "Open 9-5."


# --- 2. a malformed call beside the calls that ran ----------------------------------------------


@modes
async def test_a_malformed_call_beside_a_completed_one_is_named_not_done(
    kind: str, mode: str
) -> None:
    reply = calling("lookup", invalid=[BAD_CALL])
    result = await run(kind, asking(reply), [returning("lookup", REFUNDS)], mode)
    answer = stopped(result)
    assert answer == f"{REFUNDS}{ANSWER_SEPARATOR}**Not done: part 2 of 2 (`lookup`)**: {MALFORMED}"
    assert SECRET not in answer and "bad json" not in answer and "page" not in answer
    assert result["stop_decision"]["answer_from"] == ["c0"]  # the decision is unchanged
    assert result["stop_decision"]["unsettled"] == []


@modes
async def test_a_malformed_call_the_model_reissued_is_not_named(kind: str, mode: str) -> None:
    first = calling("search", invalid=[{**BAD_CALL, "name": "search", "id": "c9"}])
    again = AIMessage(
        "",
        tool_calls=[
            tool_call("search", {"query": "q0"}, "r0"),
            tool_call("search", {"query": "b"}, "r1"),
        ],
    )
    search = forced_tool("search", ["transient", "completed"])
    result = await run(kind, asking(first, again), [search], mode)
    assert_stopped(result, "completed")
    assert_answer_is_settled_content(result)
    answer = result["messages"][-1].content
    assert answer == "# q0\n\nThe page about q0." + ANSWER_SEPARATOR + "# b\n\nThe page about b."
    assert "Not done" not in answer and SECRET not in answer


# --- the functions, on message lists --------------------------------------------------------------


def turn(*steps: BaseMessage) -> list[BaseMessage]:
    return [HumanMessage("Show me."), *steps]


def result(call_id: str, content: Any, artifact: dict[str, Any] | None = None) -> ToolMessage:
    return ToolMessage(content, tool_call_id=call_id, artifact=artifact or completed())


def test_final_content_keeps_the_blocks_and_final_text_the_text() -> None:
    messages = turn(
        calling("chart", "lookup", "map"),
        result("c0", [IMAGE]),
        result("c1", [text("Refunds:"), " within ", {"text": "30 days.", "type": "text"}]),
        result("c2", [IMAGE_URL, text("Here."), FILE]),
    )
    decision = decide(messages, StopSettings())
    assert final_content(decision, messages) == [
        IMAGE,
        text(ANSWER_SEPARATOR + "Refunds: within 30 days." + ANSWER_SEPARATOR + "Here."),
        IMAGE_URL,
        FILE,
    ]
    expected = ANSWER_SEPARATOR.join(["", "Refunds: within 30 days.", "Here."])
    assert final_text(decision, messages) == expected  # public: the text alone, as before


def test_without_other_blocks_final_content_is_final_text() -> None:
    messages = turn(calling("lookup", "notes"), result("c0", REFUNDS), result("c1", [text("Hi")]))
    decision = decide(messages, StopSettings())
    assert final_content(decision, messages) == final_text(decision, messages)
    assert final_content(decision, messages) == REFUNDS + ANSWER_SEPARATOR + "Hi"


def test_an_image_only_answer_is_never_empty_and_a_closing_line_follows() -> None:
    messages = turn(calling("chart"), result("c0", [IMAGE]))
    decision = decide(messages, StopSettings())
    assert final_content(decision, messages) == [IMAGE]
    closing = {**decision, "rule": "retry_budget"}
    answer = final_content(closing, messages, retry_budget_message="Stopped.")
    assert answer == [IMAGE, text(ANSWER_SEPARATOR + "Stopped.")]


@pytest.mark.parametrize(
    ("name", "named"),
    [("lookup", "lookup"), ("", "tool"), (None, "tool"), ("look`up <x>**", "lookupx")],
)
def test_a_malformed_call_is_named_by_its_tool_after_the_reply_calls(
    name: str | None, named: str
) -> None:
    bad = [{**BAD_CALL, "name": name}, {**BAD_CALL, "name": "other", "id": None}]
    messages = turn(calling("lookup", invalid=bad), result("c0", REFUNDS))
    decision = decide(messages, StopSettings())
    assert decision["action"] == "stop" and decision["answer_from"] == ["c0"]
    answer = final_text(decision, messages)
    assert answer.split(ANSWER_SEPARATOR) == [
        REFUNDS,
        f"**Not done: part 2 of 3 (`{named}`)**: {MALFORMED}",
        f"**Not done: part 3 of 3 (`other`)**: {MALFORMED}",
    ]
    assert final_content(decision, messages) == answer
    assert SECRET not in answer
    template = {"not_done_message": "Skipped {tool} ({where}): {why}."}
    lines = final_text(decision, messages, **template).split(ANSWER_SEPARATOR)
    assert lines[1] == f"Skipped {named} (part 2 of 3): the call was malformed and never ran."


def test_only_the_last_replys_malformed_calls_are_parts() -> None:
    retry = [tool_call("search", {"query": "q0"}, "r0")]
    messages = turn(
        calling("search", invalid=[{**BAD_CALL, "name": "earlier", "id": "e1"}]),
        ToolMessage("Malformed.", tool_call_id="e1", name="earlier", status="error"),  # langchain's
        result("c0", "Timed out.", transient()),
        AIMessage("", tool_calls=retry, invalid_tool_calls=[BAD_CALL]),
        result("r0", "# q0\n\nThe page about q0.", completed()),
    )
    decision = decide(messages, StopSettings())
    assert decision["answer_from"] == ["r0"] and decision["unsettled"] == []
    answer = final_text(decision, messages)
    assert answer.split(ANSWER_SEPARATOR) == [
        "# q0\n\nThe page about q0.",
        f"**Not done: part 2 of 2 (`lookup`)**: {MALFORMED}",
    ]  # the earlier reply's malformed call is no part
