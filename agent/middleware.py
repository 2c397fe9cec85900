"""The ``middleware`` graph: ``create_agent`` plus the stop and policy middleware.

Order is public behaviour. ``SpendCapMiddleware`` wraps every tool call outermost, so a
policy denial is written before any stop is interpreted; ``StopOnArtifactMiddleware``
reads the step in ``before_model`` (which runs right after tools) and jumps to the end.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelRequest,
    ModelResponse,
    ToolErrorMiddleware,
    hook_config,
)
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer

from agent.commands import checked
from agent.context import Context, resolve
from agent.contract import StopDecision, decide, final_text, is_hard_stop
from agent.models import OfflineChatModel, load_model
from agent.observe import publish, record_model_call
from agent.policy import ToolResult, aenforce_spend_cap, enforce_spend_cap, tool_error_content
from agent.state import StopState, require_messages
from agent.tools import TOOLS
from agent.trace_client import configure_tracing


class ContextModelMiddleware(AgentMiddleware[StopState, Context]):
    """Serve each model call with the model the run's context names."""

    @property
    def name(self) -> str:
        """Node-name prefix."""
        return "context_model"

    def _request(self, request: ModelRequest[Context]) -> ModelRequest[Context]:
        return request.override(model=load_model(resolve(request.runtime.context).model))

    def wrap_model_call(
        self,
        request: ModelRequest[Context],
        handler: Callable[[ModelRequest[Context]], ModelResponse],
    ) -> ModelResponse:
        """Swap in the context's model."""
        return handler(self._request(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Context],
        handler: Callable[[ModelRequest[Context]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """Async twin of :meth:`wrap_model_call`."""
        return await handler(self._request(request))


class SpendCapMiddleware(AgentMiddleware[StopState, Context]):
    """Refuse a checkout above the context's ``spend_cap`` before the tool runs."""

    @property
    def name(self) -> str:
        """Node-name prefix."""
        return "spend_cap"

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        """Return a ``policy_block`` ToolMessage instead of running an over-cap checkout."""
        return enforce_spend_cap(request, handler)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """Async twin of :meth:`wrap_tool_call`."""
        return await aenforce_spend_cap(request, handler)


class StopOnArtifactMiddleware(AgentMiddleware[StopState, Context]):
    """Stop after a tool step when :func:`agent.contract.decide` says so.

    ``before_model`` runs before every model call; after a tool step it decides, records
    the decision under ``stop_decision`` (checkpointed, unlike ``jump_to``), streams it,
    and on a hard stop jumps to the end with the chosen tool's content as the answer.
    Under ``stop_mode="polish"`` it lets exactly one more model call through, with no
    tools bound.
    """

    state_schema = StopState

    @property
    def name(self) -> str:
        """Node-name prefix: the hook's node is ``stop_on_artifact.before_model``."""
        return "stop_on_artifact"

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: StopState, runtime: Runtime[Context]) -> dict[str, Any] | None:
        """Decide about the tool step that just ran, if any."""
        messages = state.get("messages", [])
        require_messages(messages)
        last = messages[-1]
        if isinstance(last, HumanMessage):
            return {"stop_decision": None}  # a new turn: no tool has run yet
        if not isinstance(last, ToolMessage):
            return None
        context = resolve(runtime.context)
        decision = decide(messages, context)
        publish(decision, messages)
        if is_hard_stop(decision, context):
            answer = AIMessage(content=final_text(decision, messages))
            return {"stop_decision": decision, "jump_to": "end", "messages": [answer]}
        return {"stop_decision": decision}

    @hook_config(can_jump_to=["end"])
    async def abefore_model(
        self, state: StopState, runtime: Runtime[Context]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`before_model`."""
        return self.before_model(state, runtime)

    @staticmethod
    def _request(request: ModelRequest[Context]) -> ModelRequest[Context]:
        decision = cast("StopDecision | None", request.state.get("stop_decision"))
        if decision is not None and decision["action"] == "stop":
            return request.override(tools=[])  # polish: phrase the answer, call nothing
        return request

    @staticmethod
    def _record(request: ModelRequest[Context], response: ModelResponse) -> ModelResponse:
        decision = cast("StopDecision | None", request.state.get("stop_decision"))
        record_model_call([*request.state["messages"], *response.result], decision)
        return response

    def wrap_model_call(
        self,
        request: ModelRequest[Context],
        handler: Callable[[ModelRequest[Context]], ModelResponse],
    ) -> ModelResponse:
        """Unbind the tools for the one polish call after a stop."""
        return self._record(request, handler(self._request(request)))

    async def awrap_model_call(
        self,
        request: ModelRequest[Context],
        handler: Callable[[ModelRequest[Context]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """Async twin of :meth:`wrap_model_call`."""
        return self._record(request, await handler(self._request(request)))


def build_middleware(
    tools: Sequence[BaseTool] = TOOLS, *, checkpointer: Checkpointer = None
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the ``create_agent`` graph.

    Args:
        tools: Tools to bind; each returns ``(content, artifact)``.
        checkpointer: For in-process use; the server brings its own.

    Returns:
        The compiled graph.
    """
    middleware: list[AgentMiddleware[Any, Context]] = [
        ContextModelMiddleware(),
        SpendCapMiddleware(),  # policy first: a denial is written before any stop is read
        ToolErrorMiddleware(on_error=tool_error_content),
        StopOnArtifactMiddleware(),
    ]
    compiled = create_agent(
        OfflineChatModel(),
        list(tools),
        middleware=middleware,
        state_schema=StopState,  # a middleware's schema cannot replace the messages reducer
        context_schema=Context,
        checkpointer=checkpointer,
        name="middleware",
    )
    return checked(compiled)


configure_tracing()  # before any run: traces go through the redacting client
graph = build_middleware()
