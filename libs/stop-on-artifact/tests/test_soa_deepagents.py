"""The stop and policy middleware inside ``deepagents.create_deep_agent``.

deepagents builds on ``create_agent`` and brings its own middleware and tools (a virtual
filesystem: ``ls``, ``read_file``, ``write_file``, ``edit_file``, ``glob``, ``grep``; a
``task`` tool; a todo list). Ours go beside them: a tool's artifact stops the run per call,
a transient result goes back to the model, a policy refuses or asks (on our tool and on
deepagents' own ``write_file``), and an approval sent later with other or no context runs
the approved call once. Runs where deepagents is installed (the project's dev
dependencies); the library alone does not need it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from soa_graphs import assert_answer_is_settled_content
from stop_on_artifact import Block, tool_policy
from stop_on_artifact._turn import message_text
from stop_on_artifact.testing import (
    ScriptedChatModel,
    approve,
    assert_model_calls,
    assert_stopped,
    call_then_answer,
    forced_tool,
    pending_approval,
    tool_call,
)

deepagents = pytest.importorskip("deepagents", reason="deepagents is a dev dependency only")


def deep_agent(model: ScriptedChatModel, tools: Sequence[Any], *policies: Any) -> Any:
    from stop_on_artifact import PolicyMiddleware, StopOnArtifactMiddleware

    middleware: list[Any] = [StopOnArtifactMiddleware(from_context=True)]
    if policies:
        middleware.insert(0, PolicyMiddleware(policies=list(policies)))
    return deepagents.create_deep_agent(
        model=model, tools=list(tools), middleware=middleware, checkpointer=InMemorySaver()
    )


def thread(name: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def ask(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


@pytest.mark.parametrize(("outcome", "rule"), [("success", "completed"), ("fatal", "fatal")])
def test_a_stop_artifact_ends_the_deep_agent_with_the_tools_text(outcome: Any, rule: str) -> None:
    agent = deep_agent(
        ScriptedChatModel(script=call_then_answer("search")), [forced_tool("search", outcome)]
    )
    result = agent.invoke(ask("store"), thread())
    assert_stopped(result, rule)
    assert_model_calls(result, 1)
    assert_answer_is_settled_content(result)


def test_a_transient_result_goes_back_to_the_model_then_stops() -> None:
    agent = deep_agent(
        ScriptedChatModel(script=call_then_answer("search")),
        [forced_tool("search", ["transient", "success"])],
    )
    result = agent.invoke(ask("store"), thread())
    assert_stopped(result, "completed")
    assert_model_calls(result, 2)
    assert_answer_is_settled_content(result)


def test_two_turns_on_one_thread_each_decide_on_their_own() -> None:
    agent = deep_agent(
        ScriptedChatModel(script=call_then_answer("search")), [forced_tool("search", "success")]
    )
    agent.invoke(ask("store"), thread())
    second = agent.invoke(ask("checkpointer"), thread())
    assert_stopped(second, "completed")
    humans = [m for m in second["messages"] if isinstance(m, HumanMessage)]
    assert len(humans) == 2


def writer(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
    """Write the file the user names ("/etc/motd" or "/notes.txt"), then answer."""
    last = messages[-1]
    if tools and isinstance(last, HumanMessage):
        path = message_text(last).strip()
        args = {"file_path": path, "content": "hello"}
        return AIMessage("", tool_calls=[tool_call("write_file", args, f"w{len(messages)}")])
    return AIMessage("Written.")


@tool_policy("system_files", tools={"write_file"})
def system_files(call: ToolCall, context: Any) -> Block | None:
    if not str(call["args"].get("file_path", "")).startswith("/etc/"):
        return None
    return Block(refusal="System files are **not** written.", description="Write a system file?")


def test_a_policy_refuses_deepagents_own_write_file_and_lets_another_path_through() -> None:
    agent = deep_agent(ScriptedChatModel(script=writer), [], system_files)
    refused = agent.invoke(ask("/etc/motd"), thread("a"))
    assert_stopped(refused, "policy_block")
    assert refused["messages"][-1].content == "System files are **not** written."
    assert "/etc/motd" not in (refused.get("files") or {})
    written = agent.invoke(ask("/notes.txt"), thread("b"))
    assert "/notes.txt" in (written.get("files") or {})  # a Command update, no artifact
    assert written["messages"][-1].content == "Written."  # back to the model, which answered


@tool_policy("spend_cap", tools={"checkout"}, on_block="ask")
def spend_cap(call: ToolCall, context: Any) -> Block | None:
    cap = (context or {}).get("cap", 500) if isinstance(context, dict) else 500
    if float(call["args"]["amount"]) <= cap:
        return None
    return Block(refusal="Above the cap: not bought.", description="Buy it?")


def test_an_approval_sent_later_with_other_context_runs_the_approved_call_once() -> None:
    from soa_policy_graphs import Till, shopper

    till = Till()
    agent = deep_agent(ScriptedChatModel(script=shopper), till.tools, spend_cap)
    agent.invoke(ask("a 100; b 700"), thread(), context={"cap": 500, "stop_mode": "hard"})
    request = pending_approval(agent, thread())
    assert request is not None and len(request["action_requests"]) == 1
    assert till.charged == []
    result = agent.invoke(approve(), thread(), context={"cap": 50, "stop_mode": "never"})
    assert sorted(till.charged) == ["a", "b"]
    assert_stopped(result, "completed")  # the turn's own mode: hard, one model call
    assert_model_calls(result, 1)
    answered = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert [m.artifact.get("approval") for m in answered if m.artifact] == [None, "approved"]
