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
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from stop_on_artifact._core import ModelCallHook, StopCore
from stop_on_artifact._decision import StopDecision, is_hard_stop
from stop_on_artifact._record import TurnRecord, starts_turn
from stop_on_artifact._settings import StopSettings
from stop_on_artifact.messages import require_messages


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
    ``polish`` one more model call runs, with no tools. Place policy middleware before it.
    It takes :class:`~stop_on_artifact.StopRouter`'s arguments. Only the layers the settings
    can use are built: ``hard`` alone adds one ``before_model`` hook to ``create_agent``.
    """

    state_schema = StopOnArtifactState  # type: ignore[assignment]

    def __new__(cls, **arguments: Any) -> StopOnArtifactMiddleware[Any, Any]:
        """Build the variant with only the ``wrap_*`` layers these settings can use."""
        settings = arguments.get("settings")
        chosen = settings if isinstance(settings, StopSettings) else None
        per_run = bool(arguments.get("from_context")) or (
            arguments.get("settings_from_context") is not None
        )
        polish = arguments.get("stop_mode") == "polish" or (
            chosen is not None and chosen.stop_mode == "polish"
        )
        retry = bool(arguments.get("retry_in_place")) or bool(chosen and chosen.retry_in_place)
        model_layer = per_run or polish or arguments.get("on_model_call") is not None
        variant = _variant(cls, model_layer, per_run or retry)
        return cast("StopOnArtifactMiddleware[Any, Any]", super().__new__(variant))

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
        if is_hard_stop(update["stop_decision"], settings):
            answer = AIMessage(content=self.answer(update["stop_decision"], messages))
            return {**update, "jump_to": "end", "messages": [answer]}
        return update

    @hook_config(can_jump_to=["end"])
    @override
    async def abefore_model(
        self, state: StopOnArtifactState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`before_model`."""
        return self.before_model(state, runtime)


class _ToolLayer:
    """The ``wrap_tool_call`` layer: in-place retries, built only where a run can use it."""

    run_tool: Any
    arun_tool: Any

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Retry a transient call in place first, when ``retry_in_place`` is on."""
        state = request.state if isinstance(request.state, dict) else {}
        return cast("ToolMessage | Command[Any]", self.run_tool(lambda: handler(request), state))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async twin of :meth:`wrap_tool_call`."""
        state = request.state if isinstance(request.state, dict) else {}
        result = await self.arun_tool(lambda: handler(request), state)
        return cast("ToolMessage | Command[Any]", result)


class _ModelLayer:
    """The ``wrap_model_call`` layer: the polish call's tools and ``on_model_call``.

    Built only where a run can polish or ``on_model_call`` is given: each ``wrap_*`` layer
    costs about as much as a graph node in ``create_agent``.
    """

    on_model_call: ModelCallHook | None
    polishing: Callable[[Any], bool]

    def _request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        return request.override(tools=[]) if self.polishing(request.state) else request

    def _record(self, request: ModelRequest[Any], response: ModelResponse[Any]) -> Any:
        if self.on_model_call is not None:
            decision = cast("StopDecision | None", request.state.get("stop_decision"))
            self.on_model_call([*request.state["messages"], *response.result], decision)
        return response

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Unbind the tools for the one polish call after a stop."""
        return cast("ModelResponse[Any]", self._record(request, handler(self._request(request))))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call`."""
        response = await handler(self._request(request))
        return cast("ModelResponse[Any]", self._record(request, response))


_VARIANTS: dict[tuple[type[Any], bool, bool], type[Any]] = {}


def _variant(cls: type[Any], model_layer: bool, tool_layer: bool) -> type[Any]:
    """Return ``cls`` with only the layers its settings can use (one class per choice)."""
    if not (model_layer or tool_layer):
        return cls
    key = (cls, model_layer, tool_layer)
    if key not in _VARIANTS:
        layers = (_ModelLayer,) * model_layer + (_ToolLayer,) * tool_layer
        namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__}
        _VARIANTS[key] = type(cls.__name__, (*layers, cls), namespace)
    return _VARIANTS[key]
