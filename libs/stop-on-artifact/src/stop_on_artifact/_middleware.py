"""``StopOnArtifactMiddleware``: the stop decision inside ``langchain.agents.create_agent``.

::

    agent = create_agent(
        model,
        tools,  # each returns (content, artifact) with response_format="content_and_artifact"
        middleware=[StopOnArtifactMiddleware(stop_mode="hard")],
    )

``before_model`` runs before every model call, so after a tool step it decides, records the
decision under ``stop_decision`` (checkpointed, unlike ``jump_to``), streams it and, on a
hard stop, jumps to the end with the settled tools' content as the answer. Under
``stop_mode="polish"`` it lets exactly one more model call through, with no tools bound.
Place policy middleware (a spend cap, for example) before it, so a denial is written before
any stop is read. Needs ``langchain`` 1.x: ``pip install "stop-on-artifact[langchain]"``;
without it, importing this module fails with an ImportError that says so.
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

from stop_on_artifact._decision import StopDecision, final_text, is_hard_stop
from stop_on_artifact.messages import require_messages
from stop_on_artifact._router import StopRouter, _settings_from_arguments
from stop_on_artifact._settings import ParallelPolicy, SettingsFromContext, StopMode, StopSettings
from stop_on_artifact._record import TurnRecord, starts_turn
from stop_on_artifact._stream import DecisionHook, ModelCallHook
from stop_on_artifact._texts import StopTexts


class StopOnArtifactState(AgentState[ResponseT]):
    """``create_agent``'s state with the latest stop decision and the turn's record."""

    stop_decision: NotRequired[StopDecision | None]
    """Decision of the latest tool step this turn; None when no tool ran. Checkpointed."""
    stop_turn: NotRequired[Annotated[TurnRecord | None, PrivateStateAttr]]
    """The settings this turn runs under, recorded at its first model call."""


class StopOnArtifactMiddleware(
    AgentMiddleware[StopOnArtifactState[ResponseT], ContextT, ResponseT]
):
    """Stop after a tool step when :func:`stop_on_artifact.decide` says so.

    The constructor's settings hold for every run, unless ``from_context=True`` (a run's
    context replaces the fields it set, :meth:`StopSettings.for_run`: a field's default
    never counts) or ``settings_from_context`` decides. The run that starts a turn resolves
    them once and records them under ``stop_turn``; the rest of the turn, resumes included,
    runs under that record, whatever context a resume sends. Only the layers the settings
    can use are built: a ``wrap_model_call`` for the polish call (or ``on_model_call``), a
    ``wrap_tool_call`` for in-place retries; ``stop_mode="hard"`` alone adds one
    ``before_model`` hook to ``create_agent``.

    Example:
        ```python
        from langchain.agents import create_agent

        from stop_on_artifact import StopOnArtifactMiddleware
        from stop_on_artifact.testing import ScriptedChatModel, call_then_answer, forced_tool

        agent = create_agent(
            ScriptedChatModel(script=call_then_answer("search")),
            [forced_tool("search", "success")],
            middleware=[StopOnArtifactMiddleware(stop_mode="never")],
        )
        result = agent.invoke({"messages": [{"role": "user", "content": "store"}]})
        assert result["stop_decision"]["rule"] == "stop_mode_never"  # the model answers
        ```

    Args:
        stop_mode: What a stop does (:data:`~stop_on_artifact.StopMode`); default ``hard``.
        parallel_policy: Several calls in one model turn
            (:data:`~stop_on_artifact.ParallelPolicy`); default ``all``.
        max_retries: Transient outcomes allowed per user message, 0 to 50; default 2.
        max_model_calls: Model calls allowed per user message, 1 to 50; default 6.
        retry_in_place: Retry a transient call in place before the model hears of it
            (:mod:`stop_on_artifact._retry`); default False.
        retry_delay: Seconds before the first in-place retry, 0 to 5; default 0.
        retry_backoff: Multiplier of that delay per retry, 1 to 10; default 2.
        texts: The texts a hard stop writes (:class:`~stop_on_artifact.StopTexts`).
        settings: All of these at once, instead of the flat arguments.
        from_context: Let the run that starts a turn replace a setting with a value its
            context set (:meth:`StopSettings.for_run`); default False: these settings hold
            for every run, and a context naming a setting is logged once as ignored.
        settings_from_context: Your own rule from the run's context to its settings,
            instead of ``from_context``.
        on_decision: Called with every decision, after it is streamed.
        on_model_call: Called after every model call with the messages so far.

    Raises:
        TypeError: If ``settings`` is given with a flat argument, or is not a
            :class:`StopSettings`; or if ``from_context`` and ``settings_from_context``
            are both given.
        ValueError: If a flat argument is outside its allowed values (named, never quoted).
    """

    state_schema = StopOnArtifactState  # type: ignore[assignment]

    def __new__(cls, **arguments: Any) -> StopOnArtifactMiddleware[Any, Any]:
        """Build the variant with only the ``wrap_*`` layers these settings can use."""
        settings = arguments.get("settings")
        per_run = bool(arguments.get("from_context")) or (
            arguments.get("settings_from_context") is not None
        )
        polish = arguments.get("stop_mode") == "polish" or (
            isinstance(settings, StopSettings) and settings.stop_mode == "polish"
        )
        retry = bool(arguments.get("retry_in_place")) or (
            isinstance(settings, StopSettings) and settings.retry_in_place
        )
        model_layer = per_run or polish or arguments.get("on_model_call") is not None
        chosen = _variant(cls, model_layer, per_run or retry)
        return cast("StopOnArtifactMiddleware[Any, Any]", super().__new__(chosen))

    def __init__(
        self,
        *,
        stop_mode: StopMode | None = None,
        parallel_policy: ParallelPolicy | None = None,
        max_retries: int | None = None,
        max_model_calls: int | None = None,
        retry_in_place: bool | None = None,
        retry_delay: float | None = None,
        retry_backoff: float | None = None,
        texts: StopTexts | None = None,
        settings: StopSettings | None = None,
        from_context: bool = False,
        settings_from_context: SettingsFromContext | None = None,
        on_decision: DecisionHook | None = None,
        on_model_call: ModelCallHook | None = None,
    ) -> None:
        """Validate and keep the settings."""
        super().__init__()
        flat = {
            "stop_mode": stop_mode,
            "parallel_policy": parallel_policy,
            "max_retries": max_retries,
            "max_model_calls": max_model_calls,
            "retry_in_place": retry_in_place,
            "retry_delay": retry_delay,
            "retry_backoff": retry_backoff,
            "texts": texts,
        }
        # The decision, its stream event, the hard-stop test and the polish call's tools are
        # the router's, as in a hand-built graph: the middleware places them in the hooks.
        self.router = StopRouter(
            settings=_settings_from_arguments(type(self).__name__, settings, flat),
            from_context=from_context,
            settings_from_context=settings_from_context,
            on_decision=on_decision,
        )
        self.on_model_call = on_model_call

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
            return self.router.turn_update(messages, runtime.context)
        if not isinstance(messages[-1], ToolMessage):
            return None
        settings = self.router.turn_settings(state)
        update: dict[str, Any] = self.router.decide_step(state, [], settings)  # read once
        if is_hard_stop(update["stop_decision"], settings):
            answer = AIMessage(
                content=final_text(update["stop_decision"], messages, settings.texts)
            )
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
    """The ``wrap_tool_call`` layer: in-place retries. Present only where a run can use it."""

    router: StopRouter

    @staticmethod
    def _state(request: ToolCallRequest) -> dict[str, Any]:
        return request.state if isinstance(request.state, dict) else {}

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """Retry a transient call in place first, when ``retry_in_place`` is on."""
        return self.router.run_tool(lambda: handler(request), self._state(request))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Async twin of :meth:`wrap_tool_call`."""
        return await self.router.arun_tool(lambda: handler(request), self._state(request))


class _ModelLayer:
    """The ``wrap_model_call`` layer: the polish call's tools, ``on_model_call``.

    Present only where a run can polish or ``on_model_call`` is given: each ``wrap_*``
    layer costs about as much as a graph node in ``create_agent``.
    """

    router: StopRouter
    on_model_call: ModelCallHook | None

    def _request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        if self.router.polishing(request.state):
            return request.override(tools=[])  # polish: phrase the answer, call nothing
        return request

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
