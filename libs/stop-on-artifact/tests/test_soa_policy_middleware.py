"""``PolicyMiddleware`` in one ``create_agent`` agent with langchain's own middleware.

langchain's ``HumanInTheLoopMiddleware`` (static approvals for another tool),
``ToolRetryMiddleware``, ``ToolErrorMiddleware`` and ``ModelCallLimitMiddleware`` each keep
their meaning beside it; the order rule (policies before the stop decision) holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from soa_graphs import has_middleware
from soa_policy_graphs import REFUSAL, Shop, Till, spend_cap
from stop_on_artifact import completed
from stop_on_artifact._turn import message_text
from stop_on_artifact.testing import ScriptedChatModel, approve, pending_approval, tool_call

pytestmark = pytest.mark.skipif(not has_middleware(), reason="create_agent is langchain 1.x")


def thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": "t"}}


def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
    """On the user's message, call each named tool once ("checkout desk 900; email; lookup")."""
    last = messages[-1]
    if not tools or not isinstance(last, HumanMessage):
        return AIMessage("All done.")
    calls = []
    for index, part in enumerate(message_text(last).split(";")):
        name, *rest = part.split()
        args: dict[str, Any] = {"to": "ops"} if name == "email" else {"query": "q"}
        if name == "checkout":
            args = {"item": rest[0], "amount": float(rest[1])}
        calls.append(tool_call(name, args, f"c{len(messages)}_{index}"))
    return AIMessage("", tool_calls=calls)


class Tools:
    def __init__(self) -> None:
        self.till = Till()
        self.emails = 0
        self.lookups = 0

        @tool(response_format="content_and_artifact")
        def email(to: str) -> tuple[str, dict[str, Any]]:
            """Send an email."""
            self.emails += 1
            return f"Emailed {to}.", completed()

        @tool(response_format="content_and_artifact")
        def lookup(query: str) -> tuple[str, dict[str, Any]]:
            """Look something up; the first attempt fails."""
            self.lookups += 1
            if self.lookups == 1:
                raise ConnectionError
            return "Found it.", completed()

        @tool(response_format="content_and_artifact")
        def broken(query: str) -> tuple[str, dict[str, Any]]:
            """Always fails."""
            raise ValueError

        self.all = [*self.till.tools, email, lookup, broken]


def agent(tools: Tools, *, model_calls: int = 5) -> Any:
    from langchain.agents import create_agent
    from langchain.agents.middleware import (
        HumanInTheLoopMiddleware,
        ModelCallLimitMiddleware,
        ToolErrorMiddleware,
        ToolRetryMiddleware,
    )
    from stop_on_artifact import StopOnArtifactMiddleware
    from stop_on_artifact._policy_middleware import PolicyMiddleware

    middleware: list[Any] = [
        HumanInTheLoopMiddleware(interrupt_on={"email": True}),
        PolicyMiddleware(policies=[spend_cap], name="spend_cap"),  # policies first ...
        ToolErrorMiddleware(on_error=lambda error, *_: f"{type(error).__name__}: not done"),
        ToolRetryMiddleware(max_retries=1, tools=["lookup"], initial_delay=0, jitter=False),
        ModelCallLimitMiddleware(run_limit=model_calls, exit_behavior="end"),
        StopOnArtifactMiddleware(),  # ... then the stop decision
    ]
    return create_agent(
        ScriptedChatModel(script=script),
        tools.all,
        middleware=middleware,
        context_schema=Shop,
        checkpointer=InMemorySaver(),
    )


def tool_messages(result: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.name or "": m for m in result["messages"] if isinstance(m, ToolMessage)}


def test_each_middleware_keeps_its_meaning_beside_the_policy() -> None:
    tools = Tools()
    graph = agent(tools)
    assert "spend_cap.after_model" in graph.get_graph().nodes
    graph.invoke(
        {"messages": [HumanMessage("checkout desk 900; email; lookup; broken")]},
        thread(),
        context=Shop(on_block="ask"),
    )
    answered: list[list[str]] = []
    while (request := pending_approval(graph, thread())) is not None:  # one pause per middleware
        answered.append([action["name"] for action in request["action_requests"]])
        result = graph.invoke(approve(len(answered[-1])), thread(), context=Shop(on_block="ask"))
    assert sorted(answered) == [["checkout"], ["email"]]
    assert (tools.till.charged, tools.emails, tools.lookups) == (["desk"], 1, 2)  # one retry
    by_tool = tool_messages(result)
    assert by_tool["checkout"].artifact["approval"] == "approved"
    assert by_tool["email"].content == "Emailed ops."
    assert by_tool["lookup"].content == "Found it."
    assert by_tool["broken"].content == "ValueError: not done"  # ToolErrorMiddleware's answer
    decision = result["stop_decision"]
    assert decision["rule"] == "tool_error" and decision.get("approval") == "approved"


def test_a_refused_call_never_reaches_the_retry_and_is_the_stop_decision() -> None:
    tools = Tools()
    result = agent(tools).invoke(
        {"messages": [HumanMessage("checkout desk 900")]}, thread(), context=Shop()
    )
    assert tools.till.charged == []
    assert tool_messages(result)["checkout"].content == REFUSAL
    assert result["stop_decision"]["rule"] == "policy_block"
    assert result["messages"][-1].content == REFUSAL  # the refusal is the answer, no model call
    assert [m.type for m in result["messages"]] == ["human", "ai", "tool", "ai"]


def test_the_model_call_limit_still_ends_the_run() -> None:
    tools = Tools()
    tools.till.timeouts = 1  # the pen times out: the stop decision lets the model retry ...
    result = agent(tools, model_calls=1).invoke(
        {"messages": [HumanMessage("checkout pen 5")]}, thread(), context=Shop(on_block="ask")
    )
    assert tools.till.charged == []  # ... and the limit ends the run before a second call
    assert sum(bool(isinstance(m, AIMessage) and m.tool_calls) for m in result["messages"]) == 1
    assert "limit" in message_text(result["messages"][-1]).lower()


def test_the_middleware_names_its_state_keys_after_its_name() -> None:
    from stop_on_artifact._policy_middleware import PolicyMiddleware, PolicyState

    assert PolicyMiddleware(policies=[spend_cap]).state_schema is PolicyState
    named = PolicyMiddleware(policies=[spend_cap], name="spend_cap")
    assert set(named.state_schema.__annotations__) == {"spend_cap_verdict", "spend_cap_approved"}
    assert named.name == "spend_cap"
