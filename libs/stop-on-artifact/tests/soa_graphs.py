"""Agents the library suite runs: the router's two loops, create_agent and create_deep_agent.

The hand-built graph is the README's: the router binds the model's tools (none for the polish
call after a stop) and clears a new turn's decision. The functional loop is LangGraph's
functional-API quickstart with the same router calls, keeping the graph's state as a dict.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Literal

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolCall, ToolMessage, convert_to_messages
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from stop_on_artifact import StopRouter, StopState, final_text
from stop_on_artifact._turn import message_text
from stop_on_artifact.testing import Script as Script  # the suite's helpers, not public
from stop_on_artifact.testing import (
    ScriptedChatModel,
    _forced_result,
    _model_calls,
    _stop_decision,
    assert_stopped,
    call_then_answer,
)


def has_middleware() -> bool:
    """Return whether ``langchain.agents.middleware`` imports (langchain 1.x)."""
    try:
        import langchain.agents.middleware  # noqa: F401
    except ImportError:
        return False
    return True


# The library's own helpers the suite reads (not public).
forced_result = _forced_result
model_calls = _model_calls
stop_decision = _stop_decision
ANSWERED = "The model answered after the tools."
"""What `call_then_answer` answers by default."""


def assert_answer_is_settled_content(result: Mapping[str, Any]) -> None:
    """Assert a hard stop: the last message, from no model, is the decision's `final_text`."""
    decision, messages = assert_stopped(result), result["messages"]
    answer = messages[-1]
    if not isinstance(answer, AIMessage):
        raise AssertionError(f"the last message is a {type(answer).__name__}")
    if model_calls([answer]):
        raise AssertionError("the answer came from a model call, not the tools")
    if message_text(answer) != final_text(decision, messages[:-1]):
        raise AssertionError("the answer is not the settled content verbatim")


needs_langchain = pytest.mark.skipif(not has_middleware(), reason="needs langchain 1.x")
modes = pytest.mark.parametrize("mode", ["sync", "async"])
CLOSING = "I could not finish this request within the allowed number of steps"
"""How the model-call cap's and the step limit's closing line begins."""


async def invoke(
    agent: Any, inputs: Any, mode: str, config: dict[str, Any] | None = None, **more: Any
) -> Any:
    """Run a compiled graph with ``invoke`` (``mode="sync"``) or ``ainvoke`` (``more``: the
    run's keyword arguments, such as ``context``)."""
    if mode == "async":
        return await agent.ainvoke(inputs, config, **more)
    return agent.invoke(inputs, config, **more)


class State(StopState):
    pass


def agent_node(model: BaseChatModel, tools: Sequence[BaseTool], router: StopRouter) -> Any:
    """The README's ``agent`` node, with an async twin: the bound model's reply, a new turn."""

    def agent_sync(state: State) -> dict[str, Any]:
        reply = router.bind_model(model, tools, state).invoke(state["messages"])
        return {"messages": [reply], **router.turn_update(state)}

    async def agent_async(state: State) -> dict[str, Any]:
        reply = await router.bind_model(model, tools, state).ainvoke(state["messages"])
        return {"messages": [reply], **router.turn_update(state)}

    return RunnableLambda(agent_sync, afunc=agent_async, name="agent")


def loop_graph(
    state: type[Any],
    agent: Any,
    tools_node: Any,
    router: StopRouter,
    *,
    context_schema: type[Any] | None = None,
    checkpointer: Any = None,
) -> Any:
    """Compile ``agent -> tools -> route_after_tools -> agent | finalize`` from its nodes."""

    def route(current: Any) -> Literal["agent", "finalize"]:
        return router.route_after_tools(current)

    builder = StateGraph(state, context_schema=context_schema)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools_node)
    builder.add_node("finalize", router.finalize)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    builder.add_conditional_edges("tools", route, {"agent": "agent", "finalize": "finalize"})
    builder.add_edge("finalize", END)
    return builder.compile(checkpointer=checkpointer)


def hand_built(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    router: StopRouter,
    *,
    context_schema: type[Any] | None = None,
    checkpointer: Any = None,
    wrap: bool = False,
) -> Any:
    """Compile ``agent -> tools -> route_after_tools -> agent | finalize``.

    Its nodes have an async twin, so ``ainvoke`` runs async-only tools (MCP's). ``wrap``:
    ``ToolNode`` runs each call through the router (``retry_in_place``; langgraph 1.x).
    """
    wrappers: dict[str, Any] = {"wrap_tool_call": router.wrap_tool_call}
    wrappers["awrap_tool_call"] = router.awrap_tool_call
    run_tools = ToolNode(list(tools), handle_tool_errors=True, **(wrappers if wrap else {}))

    def tools_sync(state: State) -> dict[str, Any]:
        new = run_tools.invoke(state)["messages"]
        return {"messages": new, **router.after_tools(state, new)}

    async def tools_async(state: State) -> dict[str, Any]:
        new = (await run_tools.ainvoke(state))["messages"]
        return {"messages": new, **router.after_tools(state, new)}

    tools_node = RunnableLambda(tools_sync, afunc=tools_async, name="tools")
    return loop_graph(
        State,
        agent_node(model, tools, router),
        tools_node,
        router,
        context_schema=context_schema,
        checkpointer=checkpointer,
    )


def step_calls(state: StopState) -> list[ToolCall]:
    """Return the calls of the model reply the tools node answers."""
    issued = state["messages"][-1]
    assert isinstance(issued, AIMessage)
    return issued.tool_calls


def retrying_graph(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    router: StopRouter,
    *,
    checkpointer: Any = None,
) -> Any:
    """The README's hand-built graph whose tools node retries each call in place.

    Each call of the step runs on its own through ``router.run_tool`` (one after the other)
    or ``router.arun_tool`` (all at once), as a graph with ``retry_in_place`` does.
    """
    node = ToolNode(list(tools), handle_tool_errors=True)

    def one(state: StopState, call: ToolCall) -> dict[str, Any]:
        return {"messages": [state["messages"][-1].model_copy(update={"tool_calls": [call]})]}

    def tools_sync(state: StopState) -> dict[str, Any]:
        def call_once(call: ToolCall) -> ToolMessage:
            [message] = node.invoke(one(state, call), get_config())["messages"]
            return message  # type: ignore[no-any-return]

        new = [router.run_tool(partial(call_once, c), state) for c in step_calls(state)]
        return {"messages": new, **router.after_tools(state, new)}

    async def tools_async(state: StopState) -> dict[str, Any]:
        async def call_once(call: ToolCall) -> ToolMessage:
            [message] = (await node.ainvoke(one(state, call), get_config()))["messages"]
            return message  # type: ignore[no-any-return]

        runs = (router.arun_tool(partial(call_once, c), state) for c in step_calls(state))
        new = list(await asyncio.gather(*runs))
        return {"messages": new, **router.after_tools(state, new)}

    tools_node = RunnableLambda(tools_sync, afunc=tools_async, name="tools")
    agent = agent_node(model, tools, router)
    return loop_graph(State, agent, tools_node, router, checkpointer=checkpointer)


def functional(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    router: StopRouter,
    *,
    checkpointer: Any = None,
) -> Any:
    """The functional API's ReAct loop: ``call_model``, then ``call_tools`` until a stop.

    The entrypoint keeps the hand-built graph's state (``messages``, ``stop_decision``,
    ``stop_turn``) as a dict, appends each task's update to it and returns it; on a thread it
    starts from the state the last turn returned (``previous``).
    """
    run_tools = ToolNode(list(tools), handle_tool_errors=True)

    @task
    def call_model(state: dict[str, Any]) -> dict[str, Any]:
        messages = state["messages"]
        reply = router.bind_model(model, tools, state).invoke(messages)
        return {"messages": [reply], **router.turn_update(state)}

    @task
    def call_tools(state: dict[str, Any]) -> dict[str, Any]:
        new = run_tools.invoke(state)["messages"]
        return {"messages": new, **router.after_tools(state, new)}

    def merge(state: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
        # Appends, giving no message an id: the body runs again on a resume, and a fresh
        # uuid on the user's message (add_messages) would no longer match the turn's record.
        messages = [*state["messages"], *convert_to_messages(update["messages"])]
        return {**state, **update, "messages": messages}

    @entrypoint(checkpointer=checkpointer)
    def agent(inputs: dict[str, Any], *, previous: dict[str, Any] | None = None) -> dict[str, Any]:
        state = merge({"messages": [], **(previous or {})}, inputs)
        while True:
            state = merge(state, call_model(state).result())
            last = state["messages"][-1]
            if not (isinstance(last, AIMessage) and last.tool_calls):
                return state
            state = merge(state, call_tools(state).result())
            if router.is_hard(state):
                return merge(state, router.finalize(state))

    return agent


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


def deep(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    *,
    checkpointer: Any = None,
    **settings: Any,
) -> Any:
    """``create_deep_agent`` with ``StopOnArtifactMiddleware(**settings)`` (deepagents)."""
    from deepagents import create_deep_agent
    from stop_on_artifact import StopOnArtifactMiddleware

    return create_deep_agent(
        model=model,
        tools=list(tools),
        middleware=[StopOnArtifactMiddleware(**settings)],
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
    """Build the ``router`` (hand-built), ``functional``, ``middleware`` or ``deep`` agent.

    ``functional`` and ``deep`` take no ``context_schema``: a TypeError if one is given.
    """
    if kind == "router":
        router = StopRouter(**settings)
        return hand_built(
            model, tools, router, context_schema=context_schema, checkpointer=checkpointer
        )
    if kind in ("functional", "deep"):
        if context_schema is not None:
            msg = f"the {kind} agent here takes no context_schema"
            raise TypeError(msg)
        if kind == "deep":
            return deep(model, tools, checkpointer=checkpointer, **settings)
        return functional(model, tools, StopRouter(**settings), checkpointer=checkpointer)
    if kind != "middleware":
        msg = f"kind must be router, functional, middleware or deep, not {kind!r}"
        raise ValueError(msg)
    return with_middleware(
        model, tools, context_schema=context_schema, checkpointer=checkpointer, **settings
    )


def noop_hooks() -> tuple[Any, Any]:
    """Return a middleware with a no-op ``before_model`` hook and one with an ``after_agent``."""
    from langchain.agents.middleware import AgentMiddleware

    class Before(AgentMiddleware[Any, Any, Any]):
        def before_model(self, state: Any, runtime: Any) -> None:
            return None

    class After(AgentMiddleware[Any, Any, Any]):
        def after_agent(self, state: Any, runtime: Any) -> None:
            return None

    return Before(), After()


def user(text: str) -> dict[str, Any]:
    """The input of one user turn."""
    return {"messages": [{"role": "user", "content": text}]}


async def ask(kind: str, tool: BaseTool, question: str) -> dict[str, Any]:
    """Ask ``question`` of a router or middleware agent whose one tool is ``tool`` (MCP tests)."""
    model = ScriptedChatModel(script=call_then_answer())
    if kind == "router":
        agent = hand_built(model, [tool], StopRouter())
    else:
        agent = with_middleware(model, [tool])
    result: dict[str, Any] = await agent.ainvoke(user(question))
    return result


def tool_messages(result: dict[str, Any]) -> list[ToolMessage]:
    """The ToolMessages of a result."""
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def retry_line(tool: str, tries: int, where: str = "this request") -> str:
    """The default closing line of a spent retry budget for one part, as the answer says it."""
    from stop_on_artifact.testing import RETRY_BUDGET_MESSAGE

    return RETRY_BUDGET_MESSAGE.format(where=where, tool=tool, tries=tries)
