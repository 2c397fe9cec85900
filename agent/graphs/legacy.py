"""The ``legacy`` graph: a hand-built ReAct loop whose tools edge reads the artifact.

::

    START -> agent -> tools_condition -> tools | END
             tools -> route_after_tools -> agent | finalize
             finalize -> END

``tools`` runs a ``ToolNode`` (with the spend-cap policy around every call), then asks the
core's :class:`~agent.stopping.graph.StopRouter` about the step, which checkpoints the
decision under ``stop_decision``. ``finalize`` makes no model call: it relays the settled
tools' content.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer

from agent.context import Context, resolve
from agent.graphs.commands import checked
from agent.models import load_model
from agent.policy import aenforce_spend_cap, enforce_spend_cap, tool_error_content
from agent.state import InputState, State
from agent.stopping.graph import StopRouter
from agent.stopping.state import require_messages
from agent.tools import TOOLS
from agent.tracing.client import configure_tracing
from agent.tracing.metadata import trace_decision, trace_model_call


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
    tool_node = ToolNode(
        list(tools),
        handle_tool_errors=tool_error_content,
        wrap_tool_call=enforce_spend_cap,
        awrap_tool_call=aenforce_spend_cap,
    )
    router = StopRouter(on_decision=trace_decision)  # settings come from each run's Context

    async def agent(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Call the model; with tools bound unless a polish stop is pending."""
        context = resolve(runtime.context)
        messages = state.get("messages", [])
        require_messages(messages)
        update: dict[str, Any] = {}
        if isinstance(messages[-1], HumanMessage):
            update["stop_decision"] = None  # a new turn: no tool has run yet
        decision = update.get("stop_decision", state.get("stop_decision"))
        polishing = decision is not None and decision["action"] == "stop"
        model = load_model(context.model)
        runnable = model if polishing else model.bind_tools(list(tools))
        update["messages"] = [await runnable.ainvoke(messages)]
        trace_model_call([*messages, *update["messages"]], decision)
        return update

    async def tools_step(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Run the tool calls, then decide from their artifacts."""
        context = resolve(runtime.context)
        result = await tool_node.ainvoke(state, get_config())
        new_messages = result["messages"]
        return {
            "messages": new_messages,
            **router.after_tools([*state["messages"], *new_messages], context),
        }

    def route_after_tools(state: State, runtime: Runtime[Context]) -> Literal["agent", "finalize"]:
        """Finalize on a hard stop; otherwise (continue, or polish) back to the model."""
        return router.route_after_tools(state, resolve(runtime.context))

    builder = StateGraph(State, context_schema=Context, input_schema=InputState)
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
