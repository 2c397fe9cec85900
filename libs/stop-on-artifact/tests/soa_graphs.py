"""Agents the library suite runs: a hand-built ReAct graph with the router, and create_agent.

The hand-built graph is the README's: the router binds the model's tools (none for the polish
call after a stop) and clears a new turn's decision.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from stop_on_artifact import StopRouter, StopState


def has_middleware() -> bool:
    """Return whether ``langchain.agents.middleware`` imports (langchain 1.x)."""
    try:
        import langchain.agents.middleware  # noqa: F401
    except ImportError:
        return False
    return True


class State(StopState):
    pass


def hand_built(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    router: StopRouter,
    *,
    context_schema: type[Any] | None = None,
    checkpointer: Any = None,
) -> Any:
    """Compile ``agent -> tools -> route_after_tools -> agent | finalize``."""
    run_tools = ToolNode(list(tools), handle_tool_errors=True)  # 0.6's default, explicit

    def agent(state: State) -> dict[str, Any]:
        messages = state["messages"]
        reply = router.bind_model(model, tools, state).invoke(messages)
        return {"messages": [reply], **router.turn_update(messages)}

    def tools_node(state: State) -> dict[str, Any]:
        new = run_tools.invoke(state)["messages"]
        return {"messages": new, **router.after_tools(state, new)}

    def route(state: State) -> Literal["agent", "finalize"]:
        return router.route_after_tools(state)

    builder = StateGraph(State, context_schema=context_schema)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools_node)
    builder.add_node("finalize", router.finalize)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    builder.add_conditional_edges("tools", route, {"agent": "agent", "finalize": "finalize"})
    builder.add_edge("finalize", END)
    return builder.compile(checkpointer=checkpointer)


def with_middleware(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    *,
    context_schema: type[Any] | None = None,
    checkpointer: Any = None,
    **middleware: Any,
) -> Any:
    """``create_agent`` with ``StopOnArtifactMiddleware(**middleware)`` (langchain 1.x)."""
    from langchain.agents import create_agent
    from stop_on_artifact import StopOnArtifactMiddleware

    return create_agent(
        model,
        list(tools),
        middleware=[StopOnArtifactMiddleware(**middleware)],
        context_schema=context_schema,
        checkpointer=checkpointer,
    )


def build(
    kind: str,
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    *,
    context_schema: type[Any] | None = None,
    checkpointer: Any = None,
    **settings: Any,
) -> Any:
    """Build the ``router`` (hand-built) or ``middleware`` (create_agent) agent."""
    if kind == "router":
        router = StopRouter(**settings)
        return hand_built(
            model, tools, router, context_schema=context_schema, checkpointer=checkpointer
        )
    return with_middleware(
        model, tools, context_schema=context_schema, checkpointer=checkpointer, **settings
    )


def user(text: str) -> dict[str, Any]:
    """The input of one user turn."""
    return {"messages": [{"role": "user", "content": text}]}
