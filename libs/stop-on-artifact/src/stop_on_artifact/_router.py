"""The stop decision in a hand-built `StateGraph`: `agent -> tools -> (agent | finalize)`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langgraph.types import Command

from stop_on_artifact._artifact import carried
from stop_on_artifact._core import DecisionHook, Engine, retries_left, steps_left
from stop_on_artifact._decision import (
    MODEL_CALL_LIMIT_MESSAGE,
    NOT_DONE_MESSAGE,
    RETRY_BUDGET_MESSAGE,
    StopDecision,
    logger,
)
from stop_on_artifact._settings import (
    ParallelPolicy,
    SettingsFromContext,
    StopMode,
    StopSettings,
    settings_from_arguments,
)

if TYPE_CHECKING:  # langgraph 1.x: ToolNode's wrap_tool_call (0.6 calls run_tool instead)
    from langgraph.prebuilt.tool_node import ToolCallRequest

StateT = TypeVar("StateT", bound=Mapping[str, Any])
ToolT = TypeVar("ToolT")
DOOR = "StopRouter"
NO_RECORD = (
    "declare it in the graph's state (inherit stop_on_artifact.StopState, or add "
    "'stop_turn: dict | None'), and return StopRouter.turn_update(...) from the node that "
    "calls the model"
)


class StopRouter:
    """The model's tools, the tools-step decision, the route after tools and `finalize`.

    The `agent` node binds the model with `bind_model` and returns `turn_update`
    with the reply, the tools node ends with `after_tools`, `route_after_tools`
    routes and `finalize` is a node; the state inherits `StopState` (see the README).

    The flat settings arguments (`stop_mode`, `parallel_policy`, `max_retries`,
    `max_model_calls`, `retry_in_place`, `initial_delay`, `backoff_factor`,
    `max_delay`) are [StopSettings][stop_on_artifact.StopSettings]' fields, described there.

    Args:
        settings: All of the flat settings at once, instead of the flat arguments.
        from_context: Let the context of the run that starts a turn set them.
        settings_from_context: Your own `(context) -> StopSettings | None` instead.
        on_decision: Called with every decision, after it is streamed.
        retry_budget_message: A hard stop's closing line when the retry budget is spent.
        model_call_limit_message: Its closing line when the model-call cap ends the run.
        not_done_message: A part left undone unless its tool wrote `not_done` ({where},
            {tool} and {why} are filled in).

    Raises:
        TypeError: If `settings` is not a [StopSettings][stop_on_artifact.StopSettings] or comes
            with a flat argument, or both `from_context` and `settings_from_context`.
        ValueError: If an argument is outside its allowed values (named, never quoted).

    Example:
        The flat arguments make its settings:

            >>> from stop_on_artifact import StopRouter
            >>> StopRouter(stop_mode="polish", max_retries=1).settings.stop_mode
            'polish'
    """

    def __init__(
        self,
        *,
        stop_mode: StopMode | None = None,
        parallel_policy: ParallelPolicy | None = None,
        max_retries: int | None = None,
        max_model_calls: int | None = None,
        retry_in_place: bool | None = None,
        initial_delay: float | None = None,
        backoff_factor: float | None = None,
        max_delay: float | None = None,
        settings: StopSettings | None = None,
        from_context: bool = False,
        settings_from_context: SettingsFromContext | None = None,
        on_decision: DecisionHook | None = None,
        retry_budget_message: str = RETRY_BUDGET_MESSAGE,
        model_call_limit_message: str = MODEL_CALL_LIMIT_MESSAGE,
        not_done_message: str = NOT_DONE_MESSAGE,
    ) -> None:
        """Validate and keep the settings and texts."""
        flat = {"stop_mode": stop_mode, "parallel_policy": parallel_policy,
                "max_retries": max_retries, "max_model_calls": max_model_calls,
                "retry_in_place": retry_in_place, "initial_delay": initial_delay,
                "backoff_factor": backoff_factor, "max_delay": max_delay}  # fmt: skip
        texts = {"retry_budget_message": retry_budget_message, "not_done_message": not_done_message,
                 "model_call_limit_message": model_call_limit_message}  # fmt: skip
        chosen = settings_from_arguments(DOOR, settings, flat)
        self._engine = Engine(DOOR, NO_RECORD, chosen, texts, from_context, settings_from_context,
                              on_decision)  # fmt: skip
        self.settings: StopSettings = chosen  # a turn's, unless a run's context sets its own
        self.texts = texts  # a hard stop's answer is written in them, by argument name
        self._told_unwrapped = False  # retry_in_place with no call through run_tool: said once

    def turn_update(
        self, state: Mapping[str, Any] | Sequence[BaseMessage], context: object = None
    ) -> dict[str, Any]:
        """Return a new turn's `{"stop_decision": None, "stop_turn": ...}`, else `{}`.

        The model node returns it with the reply. A turn begins at a user's question, and at
        a model call that follows no tool step of the turn (a planner's or a supervisor's
        reply); its record holds the settings `context` (None: the running graph's) resolves.
        """
        return self._engine.turn_update(state, context)

    def run_tool(self, run: Callable[[], ToolT], state: Mapping[str, Any]) -> ToolT:
        """Run one tool call (`run()`), retried in place while transient if `retry_in_place`."""
        return self._engine.run_tool(run, state)

    async def arun_tool(
        self, run: Callable[[], Awaitable[ToolT]], state: Mapping[str, Any]
    ) -> ToolT:
        """Async twin of `run_tool`."""
        return await self._engine.arun_tool(run, state)

    def in_place_retries_left(self, state: Mapping[str, Any]) -> int:
        """Return the in-place retries the next tool step's calls may run, all together."""
        settings = self._engine.turn_settings(state)
        return retries_left(settings, state) if settings.retry_in_place else 0

    def bind_model(
        self, model: BaseChatModel, tools: Sequence[Any], state: Mapping[str, Any]
    ) -> Runnable[LanguageModelInput, Any]:
        """Return `model.bind_tools(tools)`, or `model` itself for the polish call."""
        return model if self._engine.polishing(state) or not tools else model.bind_tools(tools)

    def after_tools(self, state: Mapping[str, Any], new: Sequence[Any]) -> dict[str, StopDecision]:
        """Return `{"stop_decision": ...}` for the step `new` ends (`state`: before it).

        `new` holds the step's ToolMessages; a `Command` a tool returned counts as the
        ToolMessage it carries.

        Raises:
            TypeError: If `state` is not a mapping (0.2 passed the messages).
            StateSchemaError: If the state holds no record of the turn.
        """
        if not isinstance(state, Mapping):
            msg = (
                "after_tools takes the graph state and the step's new messages: "
                "router.after_tools(state, new_messages)"
            )
            raise TypeError(msg)
        settings = self._engine.turn_settings(state)
        if settings.retry_in_place and not self._engine.wrapped and not self._told_unwrapped:
            self._told_unwrapped = True
            logger.warning(
                "retry_in_place is on, but no tool call ran through this router: build the "
                "tools node as ToolNode(tools, wrap_tool_call=router.wrap_tool_call, "
                "awrap_tool_call=router.awrap_tool_call), or call router.run_tool"
            )
        messages = [carried(m) if isinstance(m, Command) else m for m in new]
        left = steps_left()  # a round is agent and tools; a stop then needs finalize
        room = left is None or left > 3
        update, _ = self._engine.decide_step(state, [m for m in messages if m], settings, room=room)
        return update

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]
    ) -> Any:
        """Run one call as `ToolNode(wrap_tool_call=...)` does, retried in place while transient.

        Args:
            request: The call and the graph's state, from `ToolNode`.
            handler: Runs the call.
        """
        state = request.state if isinstance(request.state, Mapping) else {}
        return self.run_tool(lambda: handler(request), state)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        """Async twin of `wrap_tool_call` (`ToolNode(awrap_tool_call=...)`)."""
        state = request.state if isinstance(request.state, Mapping) else {}
        return await self.arun_tool(lambda: handler(request), state)

    def is_hard(self, state: Mapping[str, Any]) -> bool:
        """Return whether the state's latest decision ends the run without the model."""
        decision = state.get("stop_decision")
        return decision is not None and "answer_chars" in decision  # a hard stop's answer

    def route_after_tools(self, state: Mapping[str, Any]) -> Literal["agent", "finalize"]:
        """Go to `finalize` on a hard stop; otherwise (continue, or polish) to `agent`."""
        return "finalize" if self.is_hard(state) else "agent"

    def finalize(self, state: StateT) -> dict[str, list[AIMessage]]:
        """Answer with the settled tools' content verbatim; no model call.

        Raises:
            RuntimeError: If the state holds no stop decision.
        """
        decision = state.get("stop_decision")
        if decision is None or decision["action"] != "stop":
            msg = "finalize reached without a stop decision in 'stop_decision'"
            raise RuntimeError(msg)
        return {"messages": [AIMessage(content=self._engine.answer(decision, state["messages"]))]}
