"""The ``legacy`` graph: a hand-built ReAct loop whose tools edge reads the artifact.

::

    START -> agent -> tools_condition -> tools | END
             tools -> route_after_tools -> agent | finalize
             finalize -> END

``agent`` records the turn's context when a turn starts (:mod:`agent.turn`) and, with the
model's reply, the spend-cap verdict on its calls (the library's ``PolicyGate.record``).
``tools`` applies that verdict (``PolicyGate.arun``): it refuses each call the policy
blocked (or, with ``on_policy_block="ask"``, first pauses the step with one approval
request and applies the person's decisions; see :mod:`agent.policy`), runs each of the
others through a ``ToolNode`` as its own task (:data:`CALL_TASK`; a call that finished is not
run again when the step is), then asks the core's
:class:`~stop_on_artifact.StopRouter` about the step, which checkpoints the decision
under ``stop_decision``. ``finalize`` makes no model call: it relays the settled tools'
content. Nothing here needs langgraph or langchain 1.x: the graph builds and runs on
langgraph 0.6.6 with langchain-core 0.3 (``make compat``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from functools import partial
from typing import Any, Literal

from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.func import task
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer
from stop_on_artifact import StopRouter

from agent.context import Context, resolve
from agent.graphs.commands import checked
from agent.models import load_model
from agent.policy import gate, tool_error_content
from agent.state import InputState, OutputState, State
from agent.tools import TOOLS
from agent.tracing.client import configure_tracing
from agent.tracing.metadata import trace_decision, trace_model_call, traced_tool
from agent.turn import turn_context_update

NO_MESSAGES = (
    "input needs at least one message under 'messages', for example "
    "{'messages': [{'role': 'user', 'content': '...'}]}"
)
CALL_TASK = "tool_call"
"""The task each allowed call of a step runs in (``langgraph.func.task``).

A task's result is saved as soon as it finishes (a pending write of the step), and the step run
again (a worker that crashed, a resume, another call's failure) gets it back instead of running
the call again, as ``create_agent`` keeps each call's ``tools`` task. ``stream_mode="updates"``
shows one ``tool_call`` update per call run, before the ``tools`` update.
"""

CALLS_TO_RUN = "calls_to_run"
"""Where the tools node hands ``ToolNode`` the calls the policy let through.

``ToolNode`` runs the tool calls of the last AIMessage under its ``messages_key``; the tools
read ``messages`` (``InjectedState``), which keeps the model's AIMessage unchanged, so each
call's position this turn (``invocation_index``) is the one the model gave it.
"""


def build_legacy(
    tools: Sequence[BaseTool] = TOOLS, *, checkpointer: Checkpointer = None
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the hand-built graph.

    Args:
        tools: Tools to bind; each returns ``(content, artifact)``.
        checkpointer: For in-process use; the server brings its own.

    Returns:
        The compiled graph.
    """
    # ToolNode's wrap_tool_call is langgraph 1.x only: the policy runs in tools_step, and
    # each tool is a traced copy whose own run records its sanitized artifact.
    tool_node = ToolNode(
        [traced_tool(tool) for tool in tools],
        handle_tool_errors=tool_error_content,
        messages_key=CALLS_TO_RUN,
    )
    # The Context of the run that starts a turn replaces the settings it set.
    router = StopRouter(from_context=True, on_decision=trace_decision)

    async def agent(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Call the model; with tools bound unless a polish stop is pending."""
        context = resolve(runtime.context)
        messages = state.get("messages", [])
        if not messages:  # as create_agent's door says it
            raise ValueError(NO_MESSAGES)
        # A new turn clears the last turn's decision; the polish call gets no tools.
        update: dict[str, Any] = {
            **turn_context_update(messages, context),
            **router.turn_update(state, context),
        }
        decision = update.get("stop_decision", state.get("stop_decision"))
        runnable = router.bind_model(load_model(context.model), tools, state)
        reply = await runnable.ainvoke(messages)
        update["messages"] = [reply]
        # The policy decides here, once: a pause in tools and its resume apply this record.
        update.update(gate.record(reply, messages, context))
        trace_model_call([*messages, *update["messages"]], decision)
        return update

    async def tools_step(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Refuse (or ask about) over-cap calls, run the others, then decide the step."""
        resolve(runtime.context)  # a bad context fails here, before any tool runs

        issued = next((m for m in reversed(state["messages"]) if isinstance(m, AIMessage)), None)

        async def run(call: ToolCall) -> ToolMessage:
            assert issued is not None  # the gate refused a state with no AIMessage already
            step = issued.model_copy(update={"tool_calls": [call]})
            result = await tool_node.ainvoke({**state, CALLS_TO_RUN: [step]}, get_config())
            [message] = result[CALLS_TO_RUN]
            return message  # type: ignore[no-any-return]

        async def one_call(call: ToolCall, in_place: bool) -> ToolMessage:
            # Retried in place while transient (retry_in_place), inside the task: a step run
            # again replays the call's final result, retries and all.
            return await (router.arun_tool(partial(run, call), state) if in_place else run(call))

        one_call.__name__ = CALL_TASK  # the task's name (task(name=...) loses the types)
        run_call = task(one_call)

        async def run_allowed(calls: list[ToolCall]) -> list[ToolMessage]:
            in_place = router.in_place_retries_left(state) > 0
            # One task per call, started in call order (a task's id is its position), so a
            # call that finished keeps its result when this step runs again.
            return list(await asyncio.gather(*(run_call(call, in_place) for call in calls)))

        # Asks before any tool runs (a resume runs this node again from the top, and the
        # answer applies to the verdict recorded with the model's reply), refuses in place,
        # runs the rest: one ToolMessage per call, in call order.
        new_messages = await gate.arun(state, run_allowed)
        return {
            "messages": new_messages,
            **router.after_tools(state, new_messages),
        }

    def route_after_tools(state: State) -> Literal["agent", "finalize"]:
        """Finalize on a hard stop; otherwise (continue, or polish) back to the model."""
        return router.route_after_tools(state)

    builder = StateGraph(
        State, context_schema=Context, input_schema=InputState, output_schema=OutputState
    )
    builder.add_node("agent", agent)
    builder.add_node("tools", tools_step)
    builder.add_node("finalize", router.finalize)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    builder.add_conditional_edges(
        "tools", route_after_tools, {"agent": "agent", "finalize": "finalize"}
    )
    builder.add_edge("finalize", END)
    return checked(builder.compile(checkpointer=checkpointer, name="legacy"))


configure_tracing()  # before any run: traces go through the redacting client
graph = build_legacy()
