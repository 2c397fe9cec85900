"""The ``legacy`` graph: a hand-built ReAct loop whose tools edge reads the artifact.

::

    START -> agent -> should_continue -> tools | END
             tools -> route_after_tools -> agent | finalize
             finalize -> END

``tools`` runs a ``ToolNode`` (with the spend-cap policy around every call), then asks
:func:`agent.contract.decide` about the step and checkpoints the answer under
``stop_decision``. ``finalize`` makes no model call: it relays the chosen tool's content.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer

from agent.commands import checked
from agent.context import Context, resolve
from agent.contract import decide, final_text, is_hard_stop
from agent.models import load_model
from agent.observe import publish, record_model_call
from agent.policy import aenforce_spend_cap, enforce_spend_cap, tool_error_content
from agent.state import InputState, State, require_messages
from agent.tools import TOOLS
from agent.trace_client import configure_tracing


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
        record_model_call([*messages, *update["messages"]], decision)
        return update

    async def tools_step(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
        """Run the tool calls, then decide from their artifacts."""
        context = resolve(runtime.context)
        result = await tool_node.ainvoke(state, get_config())
        new_messages = result["messages"]
        step = [*state["messages"], *new_messages]
        decision = decide(step, context)
        publish(decision, step)
        return {"messages": new_messages, "stop_decision": decision}

    def finalize(state: State) -> dict[str, Any]:
        """Relay the chosen tool's content verbatim as the answer. No model call."""
        decision = state.get("stop_decision")
        if decision is None:
            msg = "finalize reached without a stop decision"
            raise RuntimeError(msg)
        return {"messages": [AIMessage(content=final_text(decision, state["messages"]))]}

    def should_continue(state: State) -> Literal["tools", "__end__"]:
        """Go to tools when the model asked for any; otherwise the run is over."""
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else "__end__"

    def route_after_tools(state: State, runtime: Runtime[Context]) -> Literal["agent", "finalize"]:
        """Finalize on a hard stop; otherwise (continue, or polish) back to the model."""
        decision = state.get("stop_decision")
        if decision is not None and is_hard_stop(decision, resolve(runtime.context)):
            return "finalize"
        return "agent"

    builder = StateGraph(State, context_schema=Context, input_schema=InputState)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools_step)
    builder.add_node("finalize", finalize)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", should_continue, {"tools": "tools", END: END})
    builder.add_conditional_edges(
        "tools", route_after_tools, {"agent": "agent", "finalize": "finalize"}
    )
    builder.add_edge("finalize", END)
    return checked(builder.compile(checkpointer=checkpointer, name="legacy"))


configure_tracing()  # before any run: traces go through the redacting client
graph = build_legacy()
