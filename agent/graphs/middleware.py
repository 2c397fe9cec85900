"""The ``middleware`` graph: ``create_agent`` plus the stop and policy middleware.

Order is public behaviour. ``ContextModelMiddleware`` records the turn's context at its
first model call (a resume runs under it, :mod:`agent.turn`). The library's
``PolicyMiddleware`` (named ``spend_cap``, running :data:`agent.policy.spend_cap`)
records its verdict on each reply's calls and wraps every tool call outermost, so a
policy denial is written before any stop is interpreted, and, with
``on_policy_block="ask"``, pauses the step in ``after_model`` (before any ``tools`` task
starts) with one approval request; the core's
:class:`~stop_on_artifact.StopOnArtifactMiddleware` reads the step in
``before_model`` (which runs right after tools) and jumps to the end.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, NotRequired, Required

from langchain.agents import AgentState, create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    ModelRequest,
    ModelResponse,
    ToolErrorMiddleware,
)
from langchain.agents.middleware.types import ExtendedModelResponse, PrivateStateAttr
from langchain_core.messages import AnyMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Checkpointer, Command
from stop_on_artifact import PolicyMiddleware, StopDecision, StopOnArtifactMiddleware

from agent.context import Context, resolve
from agent.graphs.commands import checked
from agent.models import OfflineChatModel, load_model
from agent.policy import POLICY, gate, tool_error_content
from agent.state import add_messages_quietly
from agent.tools import TOOLS
from agent.tracing.client import configure_tracing
from agent.tracing.metadata import (
    trace_approval_asked,
    trace_decision,
    trace_model_call,
    with_artifact_metadata,
)
from agent.turn import turn_context_update

ToolResult = ToolMessage | Command[Any]


class StopState(AgentState[Any]):
    """``create_agent``'s state, with messages read quietly, the decision and the turn's context."""

    messages: Required[Annotated[list[AnyMessage], add_messages_quietly]]
    """The conversation, as in ``AgentState``, through :func:`add_messages_quietly`."""
    stop_decision: NotRequired[StopDecision | None]
    """The library's decision of the latest tool step (its middleware declares it too)."""
    turn_context: NotRequired[Annotated[dict[str, Any] | None, PrivateStateAttr]]
    """The context this turn started with; a resume runs under it (:mod:`agent.turn`)."""


class ContextModelMiddleware(AgentMiddleware[StopState, Context]):
    """Serve each model call with the model the run's context names."""

    @property
    def name(self) -> str:
        """Node-name prefix."""
        return "context_model"

    def _request(self, request: ModelRequest[Context]) -> ModelRequest[Context]:
        return request.override(model=load_model(resolve(request.runtime.context).model))

    @staticmethod
    def _recorded(
        request: ModelRequest[Context], response: ModelResponse
    ) -> ModelResponse | ExtendedModelResponse[Any]:
        update = turn_context_update(request.state["messages"], request.runtime.context)
        if not update:
            return response
        return ExtendedModelResponse(model_response=response, command=Command(update=update))

    def wrap_model_call(
        self,
        request: ModelRequest[Context],
        handler: Callable[[ModelRequest[Context]], ModelResponse],
    ) -> ModelResponse | ExtendedModelResponse[Any]:
        """Swap in the context's model; at a turn's start, record the turn's context."""
        return self._recorded(request, handler(self._request(request)))

    async def awrap_model_call(
        self,
        request: ModelRequest[Context],
        handler: Callable[[ModelRequest[Context]], Awaitable[ModelResponse]],
    ) -> ModelResponse | ExtendedModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call`."""
        return self._recorded(request, await handler(self._request(request)))


class ArtifactTracingMiddleware(AgentMiddleware[StopState, Context]):
    """Run each tool call with :func:`agent.tracing.metadata.with_artifact_metadata`.

    So a traced tool run records its sanitized artifact; placed after the policy, so only a
    call the policy lets through runs (and is traced).
    """

    @property
    def name(self) -> str:
        """Name prefix (this middleware has no node)."""
        return "artifact_tracing"

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        """Run the call with its artifact recorded on a traced run."""
        return handler(with_artifact_metadata(request))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """Async twin of :meth:`wrap_tool_call`."""
        return await handler(with_artifact_metadata(request))


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
        # The policy first: a denial is written before any stop is read. Its node is
        # spend_cap.after_model, its records spend_cap_verdict and spend_cap_approved.
        PolicyMiddleware(policies=gate.policies, name=POLICY, on_ask=trace_approval_asked),
        ArtifactTracingMiddleware(),
        ToolErrorMiddleware(on_error=tool_error_content),
        # StopSettings() here; the Context of the run that starts a turn replaces what it set.
        StopOnArtifactMiddleware(
            from_context=True, on_decision=trace_decision, on_model_call=trace_model_call
        ),
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
