"""``StopOnArtifactMiddleware``: the stop decision inside ``langchain.agents.create_agent``.

Needs langchain 1.x: ``pip install "stop-on-artifact[langchain]"``; without it, importing
this module fails with an ImportError that says so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, NotRequired, cast

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


class MiddlewareOrderError(RuntimeError):
    """Another middleware's ``before_model`` hook runs after the stop's: it would not see a stop."""


class StopOnArtifactMiddleware(
    StopCore, AgentMiddleware[StopOnArtifactState[ResponseT], ContextT, ResponseT]
):
    """Stop after a tool step when :func:`stop_on_artifact.decide` says so.

    ``before_model`` decides after each tool step, records ``stop_decision`` (checkpointed),
    streams it and, on a hard stop, jumps to the end with the settled tools' content. Under
    ``polish`` one more model call runs, with no tools. It takes
    :class:`~stop_on_artifact.StopRouter`'s arguments, and ``on_model_call``.

    It goes last among the middleware with a ``before_model`` hook: a hard stop ends the run
    there, so a hook after it (PII's redaction of tool results, a summary, a call limit) would
    never see the step; the turn's first model call raises :class:`MiddlewareOrderError`
    naming that hook. The ``wrap_*`` layers a setting turns off are not on the instance's class
    (a layer costs about as much as a node): ``hard`` alone adds one ``before_model`` hook.

    Example: ``create_agent(model, tools, middleware=[StopOnArtifactMiddleware()])``.
    """

    state_schema = StopOnArtifactState  # type: ignore[assignment]
    calls_model_hook = True

    if not TYPE_CHECKING:  # a type checker sees StopCore's keyword-only, typed signature

        def __init__(self, **arguments: Any) -> None:
            """Validate and keep the settings (StopCore's); take the layers they can use."""
            super().__init__(**arguments)
            settings, per_run = self.settings, self.per_run
            model = per_run or settings.stop_mode == "polish" or self.on_model_call is not None
            self.__class__ = _LAYERED[model, per_run or settings.retry_in_place]

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
            if later := _hooks_after(NODE):
                msg = (
                    f"{', '.join(later)} runs after {NODE} and would never see a hard stop's "
                    "step: put StopOnArtifactMiddleware last in create_agent's middleware="
                )
                raise MiddlewareOrderError(msg)
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


class _ModelLayer(StopOnArtifactMiddleware[Any, Any]):
    """With ``wrap_model_call``: the polish call's tools and ``on_model_call``."""

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
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Unbind the tools for the one polish call after a stop; call ``on_model_call``."""
        return cast("ModelResponse[Any]", self._record(request, handler(self._request(request))))

    @override
    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async twin of :meth:`wrap_model_call`."""
        response = await handler(self._request(request))
        return cast("ModelResponse[Any]", self._record(request, response))


class _ToolLayer(StopOnArtifactMiddleware[Any, Any]):
    """With ``wrap_tool_call``: in-place retries."""

    @override
    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        """Retry a transient call in place first, when the turn's ``retry_in_place`` is on."""
        state = request.state if isinstance(request.state, dict) else {}
        return self.run_tool(lambda: handler(request), state)

    @override
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """Async twin of :meth:`wrap_tool_call`."""
        state = request.state if isinstance(request.state, dict) else {}
        return await self.arun_tool(lambda: handler(request), state)


class _BothLayers(_ModelLayer, _ToolLayer):
    """With both layers."""


_LAYERED: dict[tuple[bool, bool], type[Any]] = {
    (False, False): StopOnArtifactMiddleware,
    (True, False): _ModelLayer,
    (False, True): _ToolLayer,
    (True, True): _BothLayers,
}


def _hooks_after(node: str) -> list[str]:
    """Return the ``before_model`` hooks that run after ``node`` in this create_agent graph.

    Read from the running graph's channel names (``branch:to:<node>``, which create_agent adds
    in the middleware's order); a graph read otherwise gives none.
    """
    try:
        channels = list(get_config()["configurable"]["__pregel_read"].args[1])
    except (RuntimeError, KeyError, AttributeError, IndexError, TypeError):
        return []
    hooks = [c[10:] for c in channels if c.startswith("branch:to:") and c.endswith(".before_model")]
    return hooks[hooks.index(node) + 1 :] if node in hooks else []
