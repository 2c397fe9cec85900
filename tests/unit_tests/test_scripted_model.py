"""The shared scripted fake model: history-decided replies, bound copies, streamed tool calls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.tools import tool
from stop_on_artifact.testing import ScriptedChatModel, tool_call


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
    unbound = model.invoke([HumanMessage("hi")])
    assert unbound.content == "answered after 1 messages, 0 tools"


def test_streaming_keeps_tool_calls_with_empty_content() -> None:
    bound = ScriptedChatModel(script=search_then_answer).bind_tools([echo])
    chunks = [c for c in bound.stream([HumanMessage("hi")]) if isinstance(c, AIMessageChunk)]
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk
    assert merged.content == ""
    assert merged.tool_calls == [tool_call("echo", {"query": "hi"}, "c0")]


def test_streaming_yields_the_text_word_by_word() -> None:
    model = ScriptedChatModel(script=search_then_answer)
    texts = [c.content for c in model.stream([HumanMessage("hi")]) if c.content]
    assert texts == ["answered ", "after ", "1 ", "messages, ", "0 ", "tools"]


def test_one_agent_serves_interleaved_threads_from_each_history() -> None:
    agent = create_agent(ScriptedChatModel(script=search_then_answer), [echo])
    first = agent.invoke({"messages": [HumanMessage("one")]})
    second = agent.invoke({"messages": [HumanMessage("two")]})
    assert first["messages"][2].content == "echo one"
    assert second["messages"][2].content == "echo two"
    assert first["messages"][-1].content == "answered after 3 messages, 1 tools"
    assert second["messages"][-1].content == "answered after 3 messages, 1 tools"
