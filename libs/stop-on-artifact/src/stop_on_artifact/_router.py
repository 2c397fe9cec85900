"""The stop decision in a hand-built ``StateGraph``: decide after tools, route, finalize.

Any graph whose state inherits :class:`~stop_on_artifact.StopState` (``messages`` with the
``add_messages`` reducer, ``stop_decision`` and the turn's record ``stop_turn``) can use it::

    START -> agent -> tools_condition -> tools | END
             tools -> route_after_tools -> agent | finalize
             finalize -> END

In your ``agent`` node, bind the model with :meth:`StopRouter.bind_model` (no tools for the
one polish call after a stop) and return :meth:`StopRouter.turn_update` with the reply (a
new turn records the settings it runs under and clears the last turn's decision). Call
:meth:`StopRouter.after_tools` with the state and the step's messages at the end of your
tools node (it decides, streams the decision and returns the ``stop_decision``
update), route with :meth:`StopRouter.route_after_tools`, and add
:meth:`StopRouter.finalize` as the ``finalize`` node. ``finalize`` makes no model call: it
relays the settled tools' content. Nothing here needs ``langchain`` or langgraph 1.x: it
runs on langgraph 0.6 as well.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langgraph.config import get_config
from langgraph.runtime import get_runtime
from pydantic import ValidationError

from stop_on_artifact._decision import StopDecision, decide, final_text, is_hard_stop
from stop_on_artifact._retry import aretry_in_place, retry_in_place
from stop_on_artifact.messages import transient_count
from stop_on_artifact._settings import (
    ParallelPolicy,
    SettingsFromContext,
    StopMode,
    StopSettings,
    names_a_setting,
    resolve_settings,
)
from stop_on_artifact._record import TURN_KEY, logger, new_record, recorded_settings, starts_turn
from stop_on_artifact._stream import DecisionHook, emit
from stop_on_artifact._texts import StopTexts

ToolT = TypeVar("ToolT")
StateT = TypeVar("StateT", bound=Mapping[str, Any])
"""The graph's state type (a ``TypedDict``), so ``finalize`` type-checks as its node."""


def _settings_from_arguments(
    owner: str, settings: StopSettings | None, flat: Mapping[str, object]
) -> StopSettings:
    """Return a constructor's settings: ``settings``, or the flat arguments validated.

    Args:
        owner: The class whose arguments these are, named in errors.
        settings: A settings object, or None.
        flat: The flat arguments (``stop_mode`` ...); None means not given.

    Returns:
        The settings (``StopSettings()`` when nothing is given).

    Raises:
        TypeError: If both ``settings`` and a flat argument are given, or ``settings`` is
            not a :class:`StopSettings`.
        ValueError: If a flat argument is outside its allowed values (the argument and the
            allowed values are named, the value never).
    """
    given = {name: value for name, value in flat.items() if value is not None}
    if settings is not None:
        if given:
            msg = (
                f"{owner} takes either settings= or the flat arguments "
                f"({', '.join(sorted(given))}), not both"
            )
            raise TypeError(msg)
        if not isinstance(settings, StopSettings):
            msg = "settings must be a StopSettings"
            raise TypeError(msg)
        return settings
    try:
        return StopSettings.model_validate(given)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in problem['loc'])}: {problem['msg']}"
            for problem in error.errors(include_input=False, include_url=False)
        )
        msg = f"{owner} argument {problems}"
        raise ValueError(msg) from None


def _retries_left(settings: StopSettings, messages: Sequence[BaseMessage]) -> int:
    if not settings.retry_in_place:
        return 0
    return max(0, settings.max_retries - transient_count(messages))


class StopRouter:
    """The model's tools, the tools-step decision, the router after tools and ``finalize``.

    Configured like :class:`~stop_on_artifact._middleware.StopOnArtifactMiddleware`: the
    constructor's settings hold for every run unless ``from_context=True`` (a run's context
    replaces the fields it set, :meth:`StopSettings.for_run`) or ``settings_from_context``
    decides. That is resolved once per turn, by the run that starts it (:meth:`turn_update`),
    and recorded; the rest of the turn, resumes included, runs under the record
    (:meth:`turn_settings`).

    Example:
        ```python
        from langgraph.graph import END, START, StateGraph
        from langgraph.prebuilt import ToolNode, tools_condition

        from stop_on_artifact import StopRouter, StopState
        from stop_on_artifact.testing import ScriptedChatModel, call_then_answer, forced_tool

        tools = [forced_tool("search", "success")]
        chat_model = ScriptedChatModel(script=call_then_answer("search"))
        router = StopRouter(stop_mode="polish", max_retries=1)


        class State(StopState):  # messages, stop_decision and the turn's record
            pass


        def agent(state: State) -> dict[str, object]:
            reply = router.bind_model(chat_model, tools, state).invoke(state["messages"])
            return {"messages": [reply], **router.turn_update(state["messages"])}


        def run_tools(state: State) -> dict[str, object]:
            new = ToolNode(tools).invoke(state)["messages"]
            return {"messages": new, **router.after_tools(state, new)}


        builder = StateGraph(State)
        builder.add_node("agent", agent)
        builder.add_node("tools", run_tools)
        builder.add_node("finalize", router.finalize)
        builder.add_edge(START, "agent")
        builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
        builder.add_conditional_edges(
            "tools", router.route_after_tools, {"agent": "agent", "finalize": "finalize"}
        )
        builder.add_edge("finalize", END)
        result = builder.compile().invoke({"messages": [{"role": "user", "content": "store"}]})
        assert result["stop_decision"]["rule"] == "completed"  # then one polish call, no tools
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

    Raises:
        TypeError: If ``settings`` is given with a flat argument, or is not a
            :class:`StopSettings`; or if ``from_context`` and ``settings_from_context``
            are both given.
        ValueError: If a flat argument is outside its allowed values (named, never quoted).
    """

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
    ) -> None:
        """Validate and keep the settings."""
        if from_context and settings_from_context is not None:
            msg = "pass from_context=True or settings_from_context=, not both"
            raise TypeError(msg)
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
        self.settings = _settings_from_arguments(type(self).__name__, settings, flat)
        self.settings_from_context = settings_from_context
        self.from_context = bool(from_context)
        self.on_decision = on_decision
        self._told_ignored = False

    @property
    def per_run(self) -> bool:
        """Whether a run's context may change the settings a turn records."""
        return self.from_context or self.settings_from_context is not None

    def settings_for(self, context: object) -> StopSettings:
        """Return the settings a turn started by a run with ``context`` would record."""
        if not self.per_run:
            return self.settings
        return resolve_settings(
            self.settings, context, self.settings_from_context, self.from_context
        )

    def _tell_ignored(self, context: object) -> None:
        if self._told_ignored or self.per_run:
            return
        named = names_a_setting(context)
        if named:
            self._told_ignored = True
            logger.warning(
                "The run's context sets %s, which %s ignores: its constructor's settings hold "
                "for every run; pass from_context=True to let a run's context set them",
                ", ".join(named),
                type(self).__name__,
            )

    def turn_settings(self, state: Mapping[str, Any]) -> StopSettings:
        """Return the settings the current turn runs under: the ones it recorded at its start.

        A run carrying on the turn (a resume, say) with a context that resolves to other
        settings changes nothing; the fields that differ are logged, never their values.

        Args:
            state: The graph state, holding ``messages`` and ``stop_turn``.

        Returns:
            The turn's settings.

        Raises:
            StateSchemaError: If the state holds no record of the turn (see
                :class:`~stop_on_artifact.StopState`).
        """
        if not self.per_run:
            return recorded_settings(state, type(self).__name__)
        context, run = _run_context()
        return recorded_settings(state, type(self).__name__, self.settings_for(context), run)

    def in_place_retries_left(self, state: Mapping[str, Any]) -> int:
        """Return how many in-place retries a call of the next tool step may run.

        Args:
            state: The graph state before the step.

        Returns:
            0 unless ``retry_in_place`` is on; else what ``max_retries`` leaves this turn.
        """
        return _retries_left(self.turn_settings(state), state.get("messages") or [])

    def run_tool(self, run: Callable[[], ToolT], state: Mapping[str, Any]) -> ToolT:
        """Run one tool call, retried in place while transient if ``retry_in_place`` is on.

        Args:
            run: Runs the call once (a ``ToolNode`` on that one call, for example).
            state: The graph state before the step.

        Returns:
            The kept result (see :func:`~stop_on_artifact._retry.retry_in_place`).
        """
        settings = self.turn_settings(state)
        if not settings.retry_in_place:
            return run()  # the common case: no retry machinery on the tool path
        return retry_in_place(
            run,
            retries=_retries_left(settings, state.get("messages") or []),
            initial_delay=settings.retry_delay,
            backoff_factor=settings.retry_backoff,
        )

    async def arun_tool(
        self, run: Callable[[], Awaitable[ToolT]], state: Mapping[str, Any]
    ) -> ToolT:
        """Async twin of :meth:`run_tool`."""
        settings = self.turn_settings(state)
        if not settings.retry_in_place:
            return await run()
        return await aretry_in_place(
            run,
            retries=_retries_left(settings, state.get("messages") or []),
            initial_delay=settings.retry_delay,
            backoff_factor=settings.retry_backoff,
        )

    def turn_update(
        self, messages: Sequence[BaseMessage], context: object = None
    ) -> dict[str, Any]:
        """Return the update a model node adds to its reply: a new turn's record.

        Args:
            messages: The messages the model node was called with.
            context: The run's context (``runtime.context``); None reads the running graph's.

        Returns:
            When the last message is the user's (a new turn: no tool has run yet),
            ``{"stop_decision": None, "stop_turn": record}``, the record holding the settings
            this run resolves (:meth:`settings_for`), which the whole turn then runs under;
            else ``{}``.
        """
        if not starts_turn(messages):
            return {}
        if context is None:
            context, _ = _run_context()
        self._tell_ignored(context)
        return {"stop_decision": None, TURN_KEY: new_record(messages, self.settings_for(context))}

    @staticmethod
    def polishing(state: Mapping[str, Any]) -> bool:
        """Return whether the next model call is the one polish call after a stop.

        Args:
            state: The graph state, holding ``messages`` and ``stop_decision``.

        Returns:
            True when the turn's latest decision stopped (and did not end the run), so the
            model phrases the answer and must call no tool.
        """
        messages = state.get("messages") or []
        if starts_turn(messages):
            return False  # a new turn: the decision left in the state is the last turn's
        decision = state.get("stop_decision")
        return decision is not None and decision["action"] == "stop"

    def tools_for(self, state: Mapping[str, Any], tools: Sequence[ToolT]) -> list[ToolT]:
        """Return the tools the next model call may use: none for the polish call.

        Args:
            state: The graph state, holding ``messages`` and ``stop_decision``.
            tools: The agent's tools.

        Returns:
            ``[]`` for the one polish call after a stop, else ``tools``.
        """
        return [] if self.polishing(state) else list(tools)

    def bind_model(
        self, model: BaseChatModel, tools: Sequence[Any], state: Mapping[str, Any]
    ) -> Runnable[LanguageModelInput, Any]:
        """Return the model to call next: bound to ``tools``, or unbound for the polish call.

        Args:
            model: The chat model.
            tools: The agent's tools.
            state: The graph state, holding ``messages`` and ``stop_decision``.

        Returns:
            ``model.bind_tools(tools)``, or ``model`` itself when no tool may be called.
        """
        allowed = self.tools_for(state, tools)
        return model.bind_tools(allowed) if allowed else model

    def after_tools(
        self, state: Mapping[str, Any], new: Sequence[BaseMessage]
    ) -> dict[str, StopDecision]:
        """Decide about the tool step ``new`` ends; stream and return the decision.

        Args:
            state: The graph state before the step (holding ``messages`` and the turn's
                record, ``stop_turn``).
            new: The step's ToolMessages, as the tools node returns them.

        Returns:
            ``{"stop_decision": decision}``, the state update to return from the tools node.

        Raises:
            TypeError: If ``state`` is not a mapping (the 0.2 form passed the messages).
            StateSchemaError: If the state holds no record of the turn.
        """
        if not isinstance(state, Mapping):
            msg = (
                "after_tools takes the graph state and the step's new messages: "
                "router.after_tools(state, new_messages)"
            )
            raise TypeError(msg)
        return self.decide_step(state, new, self.turn_settings(state))

    def decide_step(
        self, state: Mapping[str, Any], new: Sequence[BaseMessage], settings: StopSettings
    ) -> dict[str, StopDecision]:
        """:meth:`after_tools` under ``settings`` already read from the turn's record."""
        messages = [*(state.get("messages") or []), *new]
        decision = decide(messages, settings)
        emit(decision, messages, self.on_decision)
        return {"stop_decision": decision}

    def is_hard(self, state: Mapping[str, Any]) -> bool:
        """Return whether the state's latest decision ends the run without the model."""
        decision = state.get("stop_decision")
        return decision is not None and is_hard_stop(decision, self.turn_settings(state))

    def route_after_tools(self, state: Mapping[str, Any]) -> Literal["agent", "finalize"]:
        """Go to ``finalize`` on a hard stop; otherwise (continue, or polish) to ``agent``.

        Args:
            state: The graph state, holding ``stop_decision`` and the turn's record.

        Returns:
            The next node's name.
        """
        return "finalize" if self.is_hard(state) else "agent"

    def finalize(self, state: StateT) -> dict[str, list[AIMessage]]:
        """Answer with the settled tools' content verbatim. No model call.

        Args:
            state: The graph state, holding ``messages`` and a stop ``stop_decision``.

        Returns:
            ``{"messages": [AIMessage(answer)]}``.

        Raises:
            RuntimeError: If the state holds no stop decision.
        """
        decision = state.get("stop_decision")
        if decision is None or decision["action"] != "stop":
            msg = "finalize reached without a stop decision in 'stop_decision'"
            raise RuntimeError(msg)
        texts = self.turn_settings(state).texts  # the turn's own texts, if it set them
        return {"messages": [AIMessage(content=final_text(decision, state["messages"], texts))]}


def _run_context() -> tuple[object, str]:
    """Return the running graph's context and run id; ``(None, "")`` outside a run."""
    try:
        context = get_runtime().context
    except RuntimeError:  # called outside a graph run
        return None, ""
    try:
        config = get_config()
    except RuntimeError:
        return context, ""
    run = (config.get("metadata") or {}).get("run_id") or config.get("run_id") or ""
    return context, str(run)
