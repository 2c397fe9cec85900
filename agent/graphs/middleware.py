"""The ``middleware`` graph: ``create_agent`` plus the stop and policy middleware.

Order is public behaviour. ``SpendCapMiddleware`` wraps every tool call outermost, so a
policy denial is written before any stop is interpreted, and, with
``on_policy_block="ask"``, pauses the step in ``after_model`` (before any ``tools`` task
starts) with one approval request; the core's
:class:`~stop_on_artifact.middleware.StopOnArtifactMiddleware` reads the step in
``before_model`` (which runs right after tools) and jumps to the end.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, NotRequired, Required

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelRequest,
    ModelResponse,
    ToolErrorMiddleware,
)
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import AnyMessage
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Checkpointer
from stop_on_artifact.middleware import StopOnArtifactMiddleware, StopOnArtifactState

from agent.context import Context, resolve
from agent.graphs.commands import checked
from agent.models import OfflineChatModel, load_model
from agent.policy import (
    ToolResult,
    aenforce_spend_cap,
    approval_update,
    enforce_spend_cap,
    tool_error_content,
)
from agent.state import add_messages_quietly
from agent.tools import TOOLS
from agent.tracing.client import configure_tracing
from agent.tracing.metadata import trace_decision, trace_model_call


class StopState(StopOnArtifactState):
    """The core's ``create_agent`` state, with messages read quietly."""

    messages: Required[Annotated[list[AnyMessage], add_messages_quietly]]
    """The conversation, as in ``AgentState``, through :func:`add_messages_quietly`."""


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


class SpendCapState(StopState):
    """The state with the calls a person approved this step."""

    spend_cap_approved: NotRequired[Annotated[list[str], PrivateStateAttr]]
    """``tool_call_id``s approved in ``after_model``, read by ``wrap_tool_call``."""


class SpendCapMiddleware(AgentMiddleware[SpendCapState, Context]):
    """Refuse a checkout above the context's ``spend_cap`` before the tool runs.

    With ``on_policy_block="ask"``, ``after_model`` first pauses the step with one
    approval request (langchain's human-in-the-loop schema) for its over-cap calls, before
    any ``tools`` task starts; a rejected call gets its refusal there, an approved one
    runs.
    """

    state_schema = SpendCapState

    @property
    def name(self) -> str:
        """Node-name prefix: the hook's node is ``spend_cap.after_model``."""
        return "spend_cap"

    def after_model(self, state: SpendCapState, runtime: Runtime[Context]) -> dict[str, Any] | None:
        """Ask a person about the model turn's over-cap calls, under ``ask``."""
        previous = state.get("spend_cap_approved") or []  # agent.policy.APPROVED_KEY
        return approval_update(state["messages"], resolve(runtime.context), previous)

    async def aafter_model(
        self, state: SpendCapState, runtime: Runtime[Context]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`after_model`."""
        return self.after_model(state, runtime)

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
        # StopSettings() here; each run's Context replaces what that run set (StopSettings.for_run).
        StopOnArtifactMiddleware(on_decision=trace_decision, on_model_call=trace_model_call),
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
