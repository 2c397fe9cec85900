"""``StopOnArtifactMiddleware``: the stop decision inside ``langchain.agents.create_agent``.

Needs langchain 1.x: ``pip install "stop-on-artifact[langchain]"``; without it, importing
this module fails with an ImportError that says so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NotRequired, cast

from typing_extensions import override

try:
    from langchain.agents import AgentState
    from langchain.agents.middleware import (
        AgentMiddleware,
        ModelRequest,
        ModelResponse,
        hook_config,
    )
    from langchain.agents.middleware.types import ContextT, PrivateStateAttr, ResponseT
except ImportError as error:  # langchain missing, or 0.3 (no create_agent)
    msg = (
        "StopOnArtifactMiddleware needs langchain 1.x (create_agent): install the extra, "
        "pip install 'stop-on-artifact[langchain]'. The router (StopRouter) needs only "
        "langgraph."
    )
    raise ImportError(msg) from error
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from stop_on_artifact._core import StopCore
from stop_on_artifact._decision import StopDecision, is_hard_stop
from stop_on_artifact._record import TurnRecord, starts_turn
from stop_on_artifact.messages import require_messages

ToolResult = ToolMessage | Command[Any]
NODE = "stop_on_artifact.before_model"


class StopOnArtifactState(AgentState[ResponseT]):
    """``create_agent``'s state with the latest stop decision and the turn's record."""

    stop_decision: NotRequired[StopDecision | None]
    stop_turn: NotRequired[Annotated[TurnRecord | None, PrivateStateAttr]]


class StopOnArtifactMiddleware(
    StopCore, AgentMiddleware[StopOnArtifactState[ResponseT], ContextT, ResponseT]
):
    """Stop after a tool step when :func:`stop_on_artifact.decide` says so.

    ``before_model`` decides after each tool step, records ``stop_decision`` (checkpointed),
    streams it and, on a hard stop, jumps to the end with the settled tools' content. Under
    ``polish`` one more model call runs, with no tools. It takes
    :class:`~stop_on_artifact.StopRouter`'s arguments, and ``on_model_call``.

    Where it goes: last in ``middleware=``, after policies and after every middleware that
    rewrites tool results (PII, summarization). Placed before such a ``before_model`` hook, a
    hard stop waits for it and answers from what it left, in the model's place, so nothing it
    redacts reaches the user in either order.

    Example: ``create_agent(model, tools, middleware=[StopOnArtifactMiddleware()])``.
    """

    state_schema = StopOnArtifactState  # type: ignore[assignment]
    calls_model_hook = True

    @property
    @override
    def name(self) -> str:
        """Node-name prefix: the hook's node is ``stop_on_artifact.before_model``."""
        return "stop_on_artifact"

    @hook_config(can_jump_to=["end"])
    @override
    def before_model(
        self, state: StopOnArtifactState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Decide about the tool step that just ran, if any."""
        messages = state.get("messages", [])
        require_messages(messages)
        if starts_turn(messages):  # a new turn: record its settings; no tool has run yet
            return self.turn_update(messages, runtime.context)
        if not isinstance(messages[-1], ToolMessage):
            return None
        settings = self.turn_settings(state)
        update: dict[str, Any] = self.decide_step(state, [], settings)
        if is_hard_stop(update["stop_decision"], settings) and not _hooks_after(NODE):
            answer = AIMessage(content=self.answer(update["stop_decision"], messages))
            return {**update, "jump_to": "end", "messages": [answer]}
        return update  # a hook after this one rewrites first; the model call answers then

    @hook_config(can_jump_to=["end"])
    @override
    async def abefore_model(
        self, state: StopOnArtifactState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`before_model`."""
        return self.before_model(state, runtime)

    def _answered(self, request: ModelRequest[Any]) -> ModelResponse[Any] | None:
        """Return a hard stop's answer in the model's place, when a later hook ran first."""
        state, messages = request.state, request.state.get("messages") or []
        decision = cast("StopDecision | None", state.get("stop_decision"))
        if decision is None or not messages or not isinstance(messages[-1], ToolMessage):
            return None
        if not is_hard_stop(decision, self.turn_settings(state)):
            return None
        return ModelResponse(result=[AIMessage(content=self.answer(decision, messages))])

    def _request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        return request.override(tools=[]) if self.polishing(request.state) else request

    def _record(self, request: ModelRequest[Any], response: ModelResponse[Any]) -> Any:
        if self.on_model_call is not None:
            decision = cast("StopDecision | None", request.state.get("stop_decision"))
            self.on_model_call([*request.state["messages"], *response.result], decision)
        return response

    @override
    def wrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], ModelResponse[ResponseT]],
    ) -> ModelResponse[ResponseT]:
        """Answer a waiting hard stop; unbind the tools for the polish call; ``on_model_call``."""
        if (answered := self._answered(request)) is not None:
            return answered
        response = handler(self._request(request))
        return cast("ModelResponse[ResponseT]", self._record(request, response))

    @override
    async def awrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], Awaitable[ModelResponse[ResponseT]]],
    ) -> ModelResponse[ResponseT]:
        """Async twin of :meth:`wrap_model_call`."""
        if (answered := self._answered(request)) is not None:
            return answered
        response = await handler(self._request(request))
        return cast("ModelResponse[ResponseT]", self._record(request, response))

    @override
    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        """Retry a transient call in place first, when the turn's ``retry_in_place`` is on."""
        if not (self.per_run or self.settings.retry_in_place):
            return handler(request)
        state = request.state if isinstance(request.state, dict) else {}
        return self.run_tool(lambda: handler(request), state)

    @override
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """Async twin of :meth:`wrap_tool_call`."""
        if not (self.per_run or self.settings.retry_in_place):
            return await handler(request)
        state = request.state if isinstance(request.state, dict) else {}
        return await self.arun_tool(lambda: handler(request), state)


def _hooks_after(node: str) -> bool:
    """Return whether another ``before_model`` hook runs after ``node`` in this graph.

    Read from the running graph's channel names (``branch:to:<node>``, in the order
    create_agent adds its nodes: the middleware's order); a graph read otherwise counts as
    having one, which only costs the stop its early jump.
    """
    try:
        channels = list(get_config()["configurable"]["__pregel_read"].args[1])
    except (RuntimeError, KeyError, AttributeError, IndexError, TypeError):
        return True
    hooks = [c for c in channels if c.startswith("branch:to:") and c.endswith(".before_model")]
    mine = f"branch:to:{node}"
    return mine not in hooks or hooks[-1] != mine
