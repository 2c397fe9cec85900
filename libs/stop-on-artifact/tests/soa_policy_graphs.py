"""Agents with a spend-cap policy: a hand-built graph with ``PolicyGate``, and create_agent.

The model buys what the user lists ("desk 900; pen 5": one ``checkout`` call per item, in
one model turn), then answers. ``checkout`` counts its runs, so a test can tell that a
refused or rejected call never ran and an approved one ran once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.config import get_config
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from soa_graphs import loop_graph
from stop_on_artifact import (
    Block,
    PolicyGate,
    StopRouter,
    StopState,
    completed,
    tool_policy,
    transient,
)
from stop_on_artifact._policies import ToolPolicy
from stop_on_artifact._turn import message_text
from stop_on_artifact.testing import ScriptedChatModel, tool_call

REFUSAL = "Above the $500 limit: **not bought**."
REJECTED = "The approver declined: not bought."


@dataclass
class Shop:
    """The run's context."""

    cap: float = 500
    on_block: Literal["refuse", "ask"] = "refuse"


@tool_policy("spend_cap", tools={"checkout"}, on_block=lambda context: context.on_block)
def spend_cap(call: ToolCall, context: Shop) -> Block | None:
    amount = float(call["args"]["amount"])
    if math.isfinite(amount) and amount <= context.cap:
        return None
    return Block(
        refusal=REFUSAL,
        rejected=REJECTED,
        description=f"Buy {call['args']['item']} for {amount:.2f}?",
        fields={"cap": context.cap},
    )


class Till:
    """The checkout tool and what it charged."""

    def __init__(self, *, timeouts: int = 0) -> None:
        self.charged: list[str] = []
        self.timeouts = timeouts

        @tool(response_format="content_and_artifact")
        def checkout(item: str, amount: float) -> tuple[str, dict[str, Any]]:
            """Buy one item."""
            if self.timeouts:
                self.timeouts -= 1
                return f"{item}: timed out", transient()
            self.charged.append(item)
            return f"Bought {item}.", completed()

        self.tools: list[BaseTool] = [checkout]


def shopper(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
    """Buy each "item amount" the user listed; retry a transient one; then answer."""
    last = messages[-1]
    if tools and isinstance(last, HumanMessage):
        calls = []
        for index, part in enumerate(message_text(last).split(";")):
            item, amount = part.split()
            args = {"item": item, "amount": float(amount)}
            calls.append(tool_call("checkout", args, f"c{len(messages)}_{index}"))
        return AIMessage("", tool_calls=calls)
    if tools and isinstance(last, ToolMessage) and isinstance(last.artifact, dict):
        if last.artifact.get("reason") == "transient":
            issued = next(m for m in reversed(messages) if isinstance(m, AIMessage))
            call = next(c for c in issued.tool_calls if c["id"] == last.tool_call_id)
            return AIMessage("", tool_calls=[{**call, "id": f"r{len(messages)}"}])
    return AIMessage("All done.")


def model() -> ScriptedChatModel:
    return ScriptedChatModel(script=shopper)


class GateState(StopState):
    spend_cap_verdict: dict[str, Any] | None


def hand_built(
    tools: Sequence[BaseTool],
    *,
    policies: Sequence[ToolPolicy] = (spend_cap,),
    checkpointer: Any = None,
    asynchronous: bool = False,
    asked: list[str] | None = None,
) -> Any:
    """``agent -> tools -> agent | finalize`` with the gate in both nodes."""
    on_ask = asked.append if asked is not None else None
    gate = PolicyGate(policies=policies, name="spend_cap", on_ask=on_ask)
    router = StopRouter()
    node = ToolNode(list(tools), handle_tool_errors=True)
    chat = model()

    def agent(state: GateState, runtime: Runtime[Shop]) -> dict[str, Any]:
        messages = state["messages"]
        reply = router.bind_model(chat, tools, state).invoke(messages)
        return {
            "messages": [reply],
            **router.turn_update(state),
            **gate.record(reply, messages, runtime.context),
        }

    def step(calls: list[ToolCall], state: GateState) -> dict[str, Any]:
        reply = state["messages"][-1].model_copy(update={"tool_calls": calls})
        return {"messages": [reply]}

    def tools_node(state: GateState, runtime: Runtime[Shop]) -> dict[str, Any]:
        def run_calls(calls: list[ToolCall]) -> list[ToolMessage]:
            return list(node.invoke(step(calls, state), get_config())["messages"])

        new = gate.run(state, run_calls)
        return {"messages": new, **router.after_tools(state, new)}

    async def atools_node(state: GateState, runtime: Runtime[Shop]) -> dict[str, Any]:
        async def run_calls(calls: list[ToolCall]) -> list[ToolMessage]:
            return list((await node.ainvoke(step(calls, state), get_config()))["messages"])

        new = await gate.arun(state, run_calls)
        return {"messages": new, **router.after_tools(state, new)}

    chosen = atools_node if asynchronous else tools_node
    return loop_graph(
        GateState, agent, chosen, router, context_schema=Shop, checkpointer=checkpointer
    )


def with_middleware(
    tools: Sequence[BaseTool],
    *,
    policies: Sequence[ToolPolicy] = (spend_cap,),
    checkpointer: Any = None,
    asked: list[str] | None = None,
    before: Sequence[Any] = (),
    after: Sequence[Any] = (),
) -> Any:
    """``create_agent`` with ``PolicyMiddleware`` before ``StopOnArtifactMiddleware``."""
    from langchain.agents import create_agent
    from stop_on_artifact import StopOnArtifactMiddleware
    from stop_on_artifact._policy_middleware import PolicyMiddleware

    policy = PolicyMiddleware(
        policies=policies, name="spend_cap", on_ask=asked.append if asked is not None else None
    )
    return create_agent(
        model(),
        list(tools),
        middleware=[*before, policy, *after, StopOnArtifactMiddleware()],
        context_schema=Shop,
        checkpointer=checkpointer,
    )


def build(kind: str, tools: Sequence[BaseTool], **options: Any) -> Any:
    if kind == "router":
        return hand_built(tools, **options)
    options.pop("asynchronous", None)
    return with_middleware(tools, **options)
