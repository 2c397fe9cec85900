"""A subagent's stop ends the parent's turn (``subagent_stops=True``), through deepagents' ``task``.

Sync and async, a dict subagent and a ``CompiledSubAgent``: the parent answers with the
subagent's text after one model call of its own; a subagent that answered through its model is
a plain result; the rules of several calls in one step, a subagent's fatal and budget stops,
a blank stop text, the parent's polish, a second turn and a subagent that asks a person.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from soa_graphs import invoke, modes, needs_langchain, user
from stop_on_artifact import completed
from stop_on_artifact.testing import (
    ScriptedChatModel,
    approve,
    assert_stopped,
    call_then_answer,
    forced_tool,
    pending_approval,
    tool_call,
)

pytestmark = needs_langchain
deepagents = pytest.importorskip("deepagents", reason="deepagents is a dev dependency only")
RELAY = "PARENT RELAYS"


class Parent:
    """The parent's model: delegate to each named subagent in one step, then relay."""

    def __init__(self, *subagents: str) -> None:
        self.subagents = subagents
        self.calls = 0

    def __call__(self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> Any:
        self.calls += 1
        if isinstance(messages[-1], HumanMessage):
            calls = [
                tool_call(
                    "task", {"description": messages[-1].text, "subagent_type": name}, f"t{i}"
                )
                for i, name in enumerate(self.subagents)
            ]
            return AIMessage("", tool_calls=calls)
        if not tools:
            return AIMessage("Polished: " + messages[-1].text)
        relayed = [m.text for m in messages if isinstance(m, ToolMessage)]
        return AIMessage(f"{RELAY}: {relayed}")


def kb_tool(outcome: str) -> BaseTool:
    return forced_tool("search", outcome)  # type: ignore[arg-type]


def chat_tool() -> BaseTool:
    return StructuredTool.from_function(
        lambda query: "Shipping: 3 days.", name="plain", description="Look up plainly."
    )


def spec(name: str, tool: BaseTool, *, compiled: bool, **settings: Any) -> dict[str, Any]:
    from langchain.agents import create_agent
    from stop_on_artifact import StopOnArtifactMiddleware

    model = ScriptedChatModel(script=call_then_answer(tool.name, answer="SUB ANSWER"))
    if compiled:
        runnable = create_agent(model, [tool], middleware=[StopOnArtifactMiddleware(**settings)])
        return {"name": name, "description": f"{name}.", "runnable": runnable}
    return {
        "name": name, "description": f"{name}.", "system_prompt": "Look it up.", "model": model,
        "tools": [tool], "middleware": [StopOnArtifactMiddleware(**settings)],
    }  # fmt: skip


def parent(
    model: Parent, subagents: list[dict[str, Any]], *, checkpointer: Any = None, **settings: Any
) -> Any:
    from deepagents import create_deep_agent
    from stop_on_artifact import StopOnArtifactMiddleware

    settings.setdefault("subagent_stops", True)
    return create_deep_agent(
        model=ScriptedChatModel(script=model),
        subagents=subagents,  # type: ignore[arg-type]
        middleware=[StopOnArtifactMiddleware(**settings)],
        checkpointer=checkpointer,
    )


compiled_or_dict = pytest.mark.parametrize("compiled", [False, True], ids=["dict", "compiled"])


@modes
@compiled_or_dict
async def test_one_stop_answers_as_the_subagent_did_and_counts_both_savings(
    compiled: bool, mode: str
) -> None:
    model = Parent("kb")
    built = parent(model, [spec("kb", kb_tool("completed"), compiled=compiled)])
    result = await invoke(built, user("refunds"), mode)
    assert model.calls == 1
    assert result["messages"][-1].content == "# refunds\n\nThe page about refunds."
    decision = assert_stopped(result, "completed")
    assert decision["tool"] == "task"
    assert decision["saved"]["model_calls"] == 1  # the parent's relay
    assert decision["saved"]["subagent_model_calls"] == 1  # the subagent's own answer


@modes
@compiled_or_dict
async def test_a_subagent_that_answers_through_its_model_is_a_plain_result(
    compiled: bool, mode: str
) -> None:
    model = Parent("chat")
    built = parent(model, [spec("chat", chat_tool(), compiled=compiled)])
    result = await invoke(built, user("shipping"), mode)
    assert model.calls == 2
    assert result["messages"][-1].content == f"{RELAY}: ['SUB ANSWER']"


@modes
async def test_off_the_parent_relays_and_its_decision_is_its_own(mode: str) -> None:
    model = Parent("kb")
    built = parent(model, [spec("kb", kb_tool("completed"), compiled=False)], subagent_stops=False)
    result = await invoke(built, user("refunds"), mode)
    assert model.calls == 2 and result["messages"][-1].content.startswith(RELAY)
    assert result["stop_decision"]["action"] == "continue"  # the parent's, never the subagent's


@modes
@pytest.mark.parametrize("policy", ["all", "priority", "any"])
async def test_two_subagents_that_both_stop_answer_once_in_call_order(
    policy: str, mode: str
) -> None:
    model = Parent("kb", "kb2")
    subagents = [
        spec("kb", kb_tool("completed"), compiled=False),
        spec("kb2", kb_tool("fatal"), compiled=True),
    ]
    result = await invoke(parent(model, subagents, parallel_policy=policy), user("a"), mode)
    assert model.calls == 1
    answer = result["messages"][-1].content
    assert answer.index("The page about a") < answer.index("Nothing matches a")
    assert assert_stopped(result)["saved"]["subagent_model_calls"] == 2


@modes
@pytest.mark.parametrize("policy", ["all", "priority", "any"])
async def test_one_stops_and_one_does_not(policy: str, mode: str) -> None:
    model = Parent("kb", "chat")
    subagents = [
        spec("kb", kb_tool("completed"), compiled=False),
        spec("chat", chat_tool(), compiled=False),
    ]
    result = await invoke(parent(model, subagents, parallel_policy=policy), user("a"), mode)
    assert model.calls == 2  # a plain result in the step: back to the parent's model
    assert result["messages"][-1].content.startswith(RELAY)


@modes
async def test_a_subagents_fatal_stop_is_the_parents(mode: str) -> None:
    model = Parent("kb")
    result = await invoke(
        parent(model, [spec("kb", kb_tool("fatal"), compiled=False)]), user("a"), mode
    )
    assert model.calls == 1
    assert_stopped(result, "fatal")
    assert result["messages"][-1].content == "Nothing matches a, and trying again will not help."


@modes
async def test_a_subagents_spent_budget_is_a_part_not_done_at_the_parent(mode: str) -> None:
    model = Parent("kb")
    subagent = spec("kb", kb_tool("transient"), compiled=False, max_retries=0)
    built = parent(model, [subagent], max_retries=0)
    result = await invoke(built, user("a"), mode)
    assert_stopped(result, "retry_budget")
    answer = result["messages"][-1].content
    assert answer.startswith("**Not done: the subagent's part**: it ended on `retry_budget`.")
    assert model.calls == 1


@modes
async def test_a_blank_stop_text_is_never_answered_with_an_earlier_message(mode: str) -> None:
    def blank(query: str) -> tuple[str, dict[str, Any]]:
        return "", completed()

    tool = StructuredTool.from_function(
        blank, name="blank", description="Look up.", response_format="content_and_artifact"
    )

    def chatty(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        reply = call_then_answer("blank")(messages, tools)
        return AIMessage("Let me look that up.", tool_calls=reply.tool_calls)

    from stop_on_artifact import StopOnArtifactMiddleware

    sub = {
        "name": "kb", "description": "kb.", "system_prompt": "Look it up.",
        "model": ScriptedChatModel(script=chatty), "tools": [tool],
        "middleware": [StopOnArtifactMiddleware()],
    }  # fmt: skip
    model = Parent("kb")
    result = await invoke(parent(model, [sub]), user("a"), mode)
    assert model.calls == 2  # the stop's text never came back: the parent's model read it
    assert result["messages"][-1].content != "Let me look that up."


@modes
async def test_under_polish_the_parent_phrases_the_subagents_stop(mode: str) -> None:
    model = Parent("kb")
    subagent = spec("kb", kb_tool("completed"), compiled=False)
    result = await invoke(parent(model, [subagent], stop_mode="polish"), user("a"), mode)
    assert model.calls == 2
    assert result["messages"][-1].content.startswith("Polished: ")


@modes
async def test_a_checkpointed_second_turn_stops_afresh(mode: str) -> None:
    model = Parent("kb")
    built = parent(
        model, [spec("kb", kb_tool("completed"), compiled=False)], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "t"}}
    await invoke(built, user("refunds"), mode, config)
    second = await invoke(built, user("parking"), mode, config)
    assert model.calls == 2
    assert second["messages"][-1].content == "# parking\n\nThe page about parking."


@modes
async def test_a_subagent_that_asks_a_person_is_resumed_and_its_stop_ends_the_turn(
    mode: str,
) -> None:
    sub = spec("kb", kb_tool("completed"), compiled=False)
    sub["interrupt_on"] = {"search": True}
    model = Parent("kb")
    built = parent(model, [sub], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    await invoke(built, user("refunds"), mode, config)
    assert pending_approval(built, config) is not None
    result = await invoke(built, approve(), mode, config)
    assert model.calls == 1
    assert result["messages"][-1].content == "# refunds\n\nThe page about refunds."
    assert "approval" not in result["stop_decision"]  # the subagent's approval stays its own
