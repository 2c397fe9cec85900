"""Running the compiled graphs in-process and reading what they did."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from stop_on_artifact.messages import turn_start

from agent.graphs.legacy import build_legacy
from agent.graphs.middleware import build_middleware
from agent.tools import TOOLS
from client.scenarios import model_calls


@dataclass
class Observed:
    path: list[str]
    events: list[dict[str, Any]]
    state: dict[str, Any]
    updates: list[dict[str, Any]] = field(default_factory=list)
    interrupts: list[Any] = field(default_factory=list)
    """The values of the approval requests the run paused on."""

    @property
    def model_calls(self) -> int:
        return model_calls(self.path, self.decision)

    @property
    def messages(self) -> list[BaseMessage]:
        return list(self.state["messages"])

    @property
    def decision(self) -> dict[str, Any] | None:
        return self.state.get("stop_decision")

    @property
    def answer(self) -> AIMessage:
        last = self.messages[-1]
        assert isinstance(last, AIMessage)
        return last

    @property
    def agreed(self) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        """The events and the decision as both graphs must agree on them.

        ``saved`` keeps its model calls: its tokens are each graph's own estimate, from the
        usage of its last model call, whose input differs by a few tokens between graphs.
        """
        events = [{"stop_decision": without_tokens(e["stop_decision"])} for e in self.events]
        return events, without_tokens(self.decision)

    def tool_message(self, tool_call_id: str) -> ToolMessage:
        for message in self.messages:
            if isinstance(message, ToolMessage) and message.tool_call_id == tool_call_id:
                return message
        raise AssertionError(f"no ToolMessage {tool_call_id}")


def without_tokens(decision: dict[str, Any] | None) -> dict[str, Any] | None:
    """``decision`` with ``saved`` reduced to its model calls."""
    if decision is None or "saved" not in decision:
        return decision
    return {**decision, "saved": decision["saved"]["model_calls"]}


def tool_steps(messages: Sequence[BaseMessage]) -> list[list[ToolMessage]]:
    """ToolMessages grouped per model turn of the current turn, in call order."""
    steps: list[list[ToolMessage]] = []
    order: dict[str, int] = {}
    for message in messages[turn_start(messages) :]:
        if isinstance(message, AIMessage) and message.tool_calls:
            order = {str(call["id"]): i for i, call in enumerate(message.tool_calls)}
            steps.append([])
        elif isinstance(message, ToolMessage) and steps:
            steps[-1].append(message)
    return [sorted(step, key=lambda m: order.get(m.tool_call_id, len(order))) for step in steps]


def build(graph: str, tools: Sequence[BaseTool] = TOOLS) -> Any:
    builder = build_legacy if graph == "legacy" else build_middleware
    return builder(tools, checkpointer=InMemorySaver())


async def run(
    graph: Any,
    text: str,
    context: dict[str, Any] | None = None,
    thread_id: str | None = None,
    resume: Sequence[dict[str, Any]] = (),
) -> Observed:
    """Run one user message; with ``resume``, answer the one approval request it pauses on.

    Without ``thread_id`` the run gets a thread of its own: a purchase's idempotency key
    names its thread, so two runs that reuse one id would share their charges.
    """
    thread_id = thread_id or f"t-{uuid.uuid4().hex}"
    path: list[str] = []
    events: list[dict[str, Any]] = []
    updates: list[dict[str, Any]] = []
    interrupts: list[Any] = []
    config = {"configurable": {"thread_id": thread_id}}
    inputs: list[Any] = [{"messages": [{"role": "user", "content": text}]}]
    if resume:
        inputs.append(Command(resume={"decisions": list(resume)}))
    for index, given in enumerate(inputs):
        async for mode, chunk in graph.astream(
            given, config, context=context, stream_mode=["updates", "custom"]
        ):
            if mode == "updates":
                updates.append(chunk)
                path.extend(chunk)
            else:
                events.append(chunk)
        snapshot = await graph.aget_state(config)
        if index < len(inputs) - 1:
            assert len(snapshot.interrupts) == 1, "the run should pause for approval once"
            interrupts.append(snapshot.interrupts[0].value)
    state = snapshot.values
    assert not snapshot.interrupts, "the run should not be paused at its end"
    return Observed(path=path, events=events, state=state, updates=updates, interrupts=interrupts)
