"""The shipped harness: the scripted model, forced tools, and assertions that can fail."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.tools import tool
from soa_graphs import assert_answer_is_settled_content, build, forced_result, model_calls, user
from stop_on_artifact import StopRouter, StopSettings, completed
from stop_on_artifact.testing import (
    ScriptedChatModel,
    assert_model_calls,
    assert_stopped,
    call_then_answer,
    forced_tool,
    tool_call,
)


@tool
def echo(query: str) -> str:
    """Echo the query."""
    return f"echo {query}"


def search_then_answer(
    messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]
) -> AIMessage:
    last = messages[-1]
    if tools and isinstance(last, HumanMessage):
        return AIMessage("", tool_calls=[tool_call(tools[0], {"query": str(last.content)}, "c0")])
    return AIMessage(f"answered after {len(messages)} messages, {len(tools)} tools")


def test_bind_tools_returns_a_bound_copy_and_the_script_sees_the_tools() -> None:
    model = ScriptedChatModel(script=search_then_answer, model_name="scripted:test")
    bound = model.bind_tools([echo])
    called = bound.invoke([HumanMessage("hi")])
    assert called.tool_calls == [tool_call("echo", {"query": "hi"}, "c0")]
    assert called.response_metadata["model_name"] == "scripted:test"
    assert called.usage_metadata is not None and called.usage_metadata["input_tokens"] > 0
    unbound = model.invoke([HumanMessage("hi")])
    assert unbound.content == "answered after 1 messages, 0 tools"


def merged(chunks: list[Any]) -> AIMessageChunk:
    total = chunks[0]
    for chunk in chunks[1:]:
        total += chunk
    assert isinstance(total, AIMessageChunk)
    return total


def test_streaming_keeps_tool_calls_with_empty_content_sync_and_async() -> None:
    bound = ScriptedChatModel(script=search_then_answer).bind_tools([echo])
    total = merged(list(bound.stream([HumanMessage("hi")])))
    assert total.content == ""
    assert total.tool_calls == [tool_call("echo", {"query": "hi"}, "c0")]

    async def collect() -> list[Any]:
        return [chunk async for chunk in bound.astream([HumanMessage("hi")])]

    assert merged(asyncio.run(collect())).tool_calls == total.tool_calls
    answer = asyncio.run(bound.ainvoke([HumanMessage("hi"), AIMessage("x")]))
    assert answer.content == "answered after 2 messages, 1 tools"


def test_streaming_yields_the_text_word_by_word() -> None:
    model = ScriptedChatModel(script=search_then_answer)
    texts = [c.content for c in model.stream([HumanMessage("hi")]) if c.content]
    assert texts == ["answered ", "after ", "1 ", "messages, ", "0 ", "tools"]


def test_a_model_without_a_script_says_so() -> None:
    with pytest.raises(ValueError, match="needs a script"):
        ScriptedChatModel().invoke([HumanMessage("hi")])


def test_one_agent_serves_interleaved_threads_from_each_history(kind: str) -> None:
    model = ScriptedChatModel(script=call_then_answer())
    graph = build(kind, model, [forced_tool("search", ["transient", "success"])])
    first, second = graph.invoke(user("one")), graph.invoke(user("two"))
    for result, text in ((first, "one"), (second, "two")):
        assert_stopped(result, "completed")
        assert result["messages"][-1].content == forced_result("success", text)[0]
        assert_model_calls(result, 2)


def test_forced_tool_refuses_an_unknown_outcome() -> None:
    with pytest.raises(ValueError, match="outcomes must be"):
        forced_tool("search", ["success", "maybe"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="outcomes must be"):
        forced_tool("search", [])


def test_the_assertions_fail_when_the_contract_is_broken(kind: str) -> None:
    model = ScriptedChatModel(script=call_then_answer())
    tools = [forced_tool("search", "success")]
    never = build(kind, model, tools, settings=StopSettings(stop_mode="never"))
    went_on = never.invoke(user("store"))
    with pytest.raises(AssertionError, match="continued"):
        assert_stopped(went_on)
    with pytest.raises(AssertionError, match="2 model calls"):
        assert_model_calls(went_on, 1)
    hard = build(kind, model, tools).invoke(user("store"))
    with pytest.raises(AssertionError, match="'completed', not 'fatal'"):
        assert_stopped(hard, "fatal")
    tampered = {**hard, "messages": [*hard["messages"][:-1], AIMessage("# store\n\nreworded")]}
    with pytest.raises(AssertionError, match="verbatim"):
        assert_answer_is_settled_content(tampered)
    from_a_model = {**hard, "messages": [*hard["messages"][:-1], model.invoke("x")]}
    with pytest.raises(AssertionError, match="model call"):
        assert_answer_is_settled_content(from_a_model)
    with pytest.raises(AssertionError, match="no stop_decision"):
        assert_stopped({"messages": [HumanMessage("hi")], "stop_decision": None})


def test_model_calls_counts_this_turn_only() -> None:
    relay = AIMessage("# page")  # what finalize writes: no metadata, no usage
    first = [HumanMessage("a"), AIMessage("", tool_calls=[tool_call("s", {}, "c")])]
    messages = [*first, relay, HumanMessage("b"), AIMessage("x", response_metadata={"m": 1})]
    assert model_calls(messages) == 1
    assert model_calls(messages[:3]) == 1


def test_a_hand_built_router_and_a_scripted_model_in_a_users_own_graph() -> None:
    @tool(response_format="content_and_artifact")
    def order_status(order_id: str) -> tuple[str, dict[str, object]]:
        """Look up where an order is."""
        return f"# Order {order_id}\n\nShipped.", completed(order_id=order_id)

    model = ScriptedChatModel(script=call_then_answer("order_status"))
    result = build("router", model, [order_status], settings=StopSettings()).invoke(user("A-17"))
    assert_stopped(result, "completed")
    assert result["messages"][-1].content == "# Order A-17\n\nShipped."
    assert isinstance(StopRouter().settings, StopSettings)
