"""The decision engine both doors hold: the router and the middleware (langgraph 0.6 too)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from importlib.metadata import version
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.config import get_config, get_stream_writer
from langgraph.runtime import get_runtime
from pydantic import ValidationError

from stop_on_artifact._decision import (
    StopDecision,
    decide_turn,
    final_content,
    is_hard_stop,
    logger,
)
from stop_on_artifact._record import (
    TURN_KEY,
    new_record,
    opens_turn,
    recorded_settings,
    starts_turn,
)
from stop_on_artifact._retry import aretry_in_place, retry_in_place
from stop_on_artifact._saving import estimate_saving
from stop_on_artifact._settings import (
    SettingsFromContext,
    StopSettings,
    check_texts,
    named_settings,
)
from stop_on_artifact._turn import Turn, scan_turn
from stop_on_artifact.messages import message_text

ToolT = TypeVar("ToolT")
_Budget = tuple[int, dict[str, int]]  # retries the step may take; those granted per call
_BUDGETS: OrderedDict[tuple[int, object], _Budget] = OrderedDict()  # per step execution
_LOCK = threading.Lock()  # a step's parallel calls take from one budget
DecisionHook = Callable[[StopDecision, Sequence[BaseMessage]], None]
"""Called with each decision and the messages it was made from (tracing, metrics)."""


class Engine:
    """One agent's stop: its settings and texts, the turn's record, the decision, the answer.

    Each door holds one (`StopRouter`, `StopOnArtifactMiddleware`) and names itself in `door`;
    `no_record` says, in that door's terms, how a turn gets its record.
    """

    def __init__(
        self,
        door: str,
        no_record: str,
        settings: StopSettings,
        texts: dict[str, str],
        from_context: bool,
        settings_from_context: SettingsFromContext | None,
        on_decision: DecisionHook | None,
    ) -> None:
        """Keep the door's settings; `TypeError` if both per-run sources are given."""
        if from_context and settings_from_context is not None:
            msg = f"{door} takes from_context=True or settings_from_context=, not both"
            raise TypeError(msg)
        check_texts(**texts)
        self.door, self.no_record, self.settings, self.texts = door, no_record, settings, texts
        self.from_context = bool(from_context)
        self.settings_from_context = settings_from_context
        self.on_decision = on_decision
        self._told_ignored = False
        self.wrapped = False  # a call ran through run_tool: the router's retry_in_place check

    @property
    def per_run(self) -> bool:
        """Whether a run's context may change the settings a turn records."""
        return self.from_context or self.settings_from_context is not None

    def settings_for(self, context: object) -> StopSettings:
        """Return the settings a turn started by a run with `context` records."""
        if self.settings_from_context is not None:
            chosen = self.settings_from_context(context)
            if chosen is None:
                return self.settings
            if not isinstance(chosen, StopSettings):
                kind = type(chosen).__name__
                msg = f"settings_from_context must return StopSettings or None, not {kind}"
                raise TypeError(msg)
            return chosen
        return self.settings.for_run(context) if self.from_context else self.settings

    def turn_update(
        self,
        state: Mapping[str, Any] | Sequence[BaseMessage],
        context: object = None,
        *,
        begins: bool = False,
        need: int = 3,
    ) -> dict[str, Any]:
        """Return a new turn's `{"stop_decision": None, "stop_turn": ...}`, else `{}`.

        A turn begins at a user's question, and where a run begins: given the graph's
        `state`, at a model call that follows no tool step of the turn (a planner's or a
        supervisor's reply); given `begins`, here. The record holds the settings
        `context` (None: the running graph's) resolves; `need` is the steps one model round
        and a stop take in this door's graph.
        """
        messages: Sequence[BaseMessage] = (
            (state.get("messages") or []) if isinstance(state, Mapping) else state
        )
        if isinstance(state, Mapping):  # a run's first model call begins a turn too
            begins = begins or opens_turn(messages, state.get(TURN_KEY))
        if not (begins or starts_turn(messages)):
            return {}
        if context is None:
            context, _ = _run_context()
        settings = self.settings_for(context)
        if (left := steps_left()) is not None and left < need:
            logger.warning(
                "The run's recursion_limit leaves %d steps at this turn's start; one model round "
                "and a stop need %d here: raise recursion_limit", left, need,
            )  # fmt: skip
        if named := [] if self.per_run or self._told_ignored else named_settings(context):
            self._told_ignored = True
            logger.warning(
                "The run's context sets %s, which %s ignores: its constructor's settings hold "
                "for every run; pass from_context=True to let a run's context set them",
                ", ".join(named),
                self.door,
            )
        return {"stop_decision": None, TURN_KEY: new_record(messages, settings)}

    def turn_settings(self, state: Mapping[str, Any], *, current: bool = False) -> StopSettings:
        """Return the turn's recorded settings (`current`: known to be this turn's record)."""
        missing = f"{self.door} found no record of this turn under '{TURN_KEY}': {self.no_record}"
        if not self.per_run:
            return recorded_settings(state, missing, checked=current)
        context, run = _run_context()
        try:
            chosen: StopSettings | tuple[str, ...] = self.settings_for(context)
        except (ValidationError, TypeError):  # the turn's record holds; the fields are named
            chosen = tuple(named_settings(context))
        return recorded_settings(state, missing, chosen, run, checked=current)

    def decide_step(
        self,
        state: Mapping[str, Any],
        new: Sequence[BaseMessage],
        settings: StopSettings,
        *,
        room: bool,
        turn: Turn | None = None,
        spends_call: Callable[[StopDecision], bool] | None = None,
    ) -> tuple[dict[str, Any], str | list[str | dict[str, Any]] | None]:
        """Decide, stream and hook the step `new` ends; return the update and a hard stop's answer.

        `room`: the step limit leaves room for another round; `turn`: already scanned from the
        same state; `spends_call`: a hard stop still calls the model (a structured answer).
        """
        messages = [*(state.get("messages") or []), *new]
        record = state.get(TURN_KEY) or {}
        turn = turn or scan_turn(messages, record)
        if settings.stop_mode == "polish" and turn.model_calls >= settings.max_model_calls:
            settings = settings.model_copy(update={"stop_mode": "hard"})  # no call left to polish
        decision = decide_turn(turn, settings, room)
        if decision["rule"] == "step_limit":
            logger.warning("The run's recursion_limit ended the turn (rule 'step_limit') before "
                "max_model_calls=%d: raise recursion_limit or lower max_model_calls",
                settings.max_model_calls)  # fmt: skip
        answer = self.answer(decision, messages, turn) if is_hard_stop(decision, settings) else None
        if answer is not None and spends_call is not None and spends_call(decision):
            decision["saved"] = {"model_calls": 0, "input_tokens": 0, "output_tokens": 0}
        elif answer is not None:
            spent = decision["rule"] in ("retry_budget", "model_call_limit", "step_limit")
            retried = [] if spent else decision["unsettled"]  # a spent bound: nothing to retry
            decision["saved"] = estimate_saving(messages, answer, retried)
        if answer is not None:
            decision["answer_chars"] = len(message_text(AIMessage(content=answer)).rstrip())
            inner = [(p.verdict.artifact or {}).get("subagent_saved_calls") for p in turn.parts
                     if p.call_id in decision["answer_from"] and p.verdict]  # fmt: skip
            if (calls := sum(n for n in inner if isinstance(n, int))) and "saved" in decision:
                decision["saved"]["subagent_model_calls"] = calls
        _write({"stop_decision": dict(decision)})
        named = (decision["action"], decision["rule"], decision["tool"])
        logger.info("stop decision: action=%s rule=%s tool=%s", *named)
        if self.on_decision is not None:
            self.on_decision(decision, messages)
        return {"stop_decision": decision, TURN_KEY: {**record, **turn.counted}}, answer

    def answer(
        self, decision: StopDecision, messages: Sequence[BaseMessage], turn: Turn | None = None
    ) -> str | list[str | dict[str, Any]]:
        """Return a hard stop's answer in these texts, blocks kept (`final_content`)."""
        return final_content(decision, messages, **self.texts, turn=turn)

    @staticmethod
    def polishing(state: Mapping[str, Any]) -> bool:
        """Return whether the next model call is the one polish call after a stop."""
        if starts_turn(state.get("messages") or []):
            return False  # the decision left in the state is the last turn's
        decision = state.get("stop_decision")
        return decision is not None and decision["action"] == "stop"

    def _take(self, state: Mapping[str, Any], settings: StopSettings) -> Callable[[object], bool]:
        """Return what takes one retry from the budget the step's parallel calls share.

        The budget belongs to one execution of the step (LangGraph names it by its input
        checkpoint): a fork is a new one; a resume re-runs it, and the retries its calls
        were granted are granted again (per task and call id) without taking twice.
        """
        messages = state.get("messages") or []
        issued = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        step, task = _execution()
        turn = (state.get(TURN_KEY) or {}).get("turn")
        key = (id(self), step or (turn, issued.id if issued else ""))
        budget = _BUDGETS.get(key)  # a dict read needs no lock
        if budget is None:  # the step's first call scans the turn, outside the lock
            left: _Budget = (retries_left(settings, state), {})
            with _LOCK:
                budget = _BUDGETS.setdefault(key, left)
                while len(_BUDGETS) > 1024:
                    _BUDGETS.popitem(last=False)
        asked: dict[str, int] = {}  # this execution's asks per call

        def take(result: object) -> bool:
            call = f"{task}/{getattr(result, 'tool_call_id', '')}"
            with _LOCK:
                asked[call] = asked.get(call, 0) + 1
                if asked[call] <= budget[1].get(call, 0):
                    return True  # granted to this call before the step was re-run
                if budget[0] - sum(budget[1].values()) <= 0:
                    return False
                budget[1][call] = asked[call]
                return True

        return take

    def run_tool(self, run: Callable[[], ToolT], state: Mapping[str, Any]) -> ToolT:
        """Run one tool call, retried in place while transient if `retry_in_place` is on."""
        self.wrapped = True
        settings = self.turn_settings(state)
        if not settings.retry_in_place:
            return run()
        return retry_in_place(run, take=self._take(state, settings), **_waits(settings))

    async def arun_tool(
        self, run: Callable[[], Awaitable[ToolT]], state: Mapping[str, Any]
    ) -> ToolT:
        """Async twin of `run_tool`."""
        self.wrapped = True
        settings = self.turn_settings(state)
        if not settings.retry_in_place:
            return await run()
        return await aretry_in_place(run, take=self._take(state, settings), **_waits(settings))


def retries_left(settings: StopSettings, state: Mapping[str, Any]) -> int:
    counted = scan_turn(state.get("messages") or [], state.get(TURN_KEY)).transients
    return max(0, settings.max_retries - counted)


def _waits(settings: StopSettings) -> dict[str, Any]:
    return settings.model_dump(include={"initial_delay", "backoff_factor", "max_delay"})


def _execution() -> tuple[str, str]:
    """Return the running step's input checkpoint id and task id (`""` before langgraph 1.2)."""
    try:
        info = get_runtime().execution_info
    except (RuntimeError, AttributeError):
        return "", ""
    return (info.checkpoint_id, info.task_id) if info is not None else ("", "")


def pregel(key: str) -> Any:
    """Return LangGraph's `key` from the running step's config; None outside a graph's step."""
    try:
        return get_config().get("configurable", {}).get(key)
    except RuntimeError:  # outside a runnable
        return None


def internals_changed(what: str, error: Exception) -> RuntimeError:
    """Return the error for a LangGraph internal that no longer reads as it did."""
    msg = (
        f"stop_on_artifact cannot read {what} on langgraph {version('langgraph')} "
        f"({type(error).__name__}): this langgraph changed it; pin langgraph below it"
    )
    return RuntimeError(msg)


def steps_left() -> int | None:
    """Return the steps the run's `recursion_limit` leaves after this one; None outside.

    Raises:
        RuntimeError: If the running langgraph keeps its step counter another way.
    """
    if (scratchpad := pregel("__pregel_scratchpad")) is None:
        return None
    try:
        return int(scratchpad.stop - scratchpad.step)
    except (AttributeError, TypeError) as error:
        raise internals_changed("the run's step counter", error) from error


def _write(event: dict[str, Any]) -> None:
    """Stream `event` in `stream_mode="custom"`; outside a graph run, nowhere."""
    try:
        writer = get_stream_writer()
    except RuntimeError:
        return
    writer(event)


def _run_context() -> tuple[object, str]:
    """Return the running graph's context and run id; `(None, "")` outside a run."""
    try:
        context = get_runtime().context
        config = get_config()
    except RuntimeError:
        return None, ""
    run = (config.get("metadata") or {}).get("run_id") or config.get("run_id") or ""
    return context, str(run)
