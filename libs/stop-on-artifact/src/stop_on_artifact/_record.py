"""The turn's record (`stop_turn`): its settings, written once at its first model call.

Every later run of the turn reads it; each decision adds what it counted, so a budget holds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Annotated, Any, NotRequired

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langgraph.graph import MessagesState
from typing_extensions import TypedDict

from stop_on_artifact._decision import StopDecision
from stop_on_artifact._settings import StopSettings
from stop_on_artifact._turn import asks, turn_start

TURN_KEY = "stop_turn"
logger = logging.getLogger("stop_on_artifact")


class TurnRecord(TypedDict):
    """What a turn decided when it started, and what its decisions counted since."""

    turn: str  # the id of the last message present when the turn began (`#<position>` without)
    settings: dict[str, Any]  # the turn's StopSettings, as JSON
    schema: NotRequired[bool]  # whether the agent declares a response_format
    replies: NotRequired[list[str]]  # the ids of the turn's model replies counted so far
    transients: NotRequired[dict[str, int]]  # transient outcomes so far, by call id (in place too)
    rounds: NotRequired[int]  # the decisions made so far: each one follows one model call
    steps: NotRequired[dict[str, int]]  # the round that read each result, by message id


def latest(current: StopDecision | None, new: StopDecision | None) -> StopDecision | None:
    """Keep the latest decision: one deepagents copies back from a subagent never collides."""
    return new


Decision = Annotated[StopDecision | None, latest]  # the stop_decision key's type and reducer


class StopState(MessagesState):
    """A hand-built graph's state: `messages`, the latest decision and the turn's record.

    Inherit it (`class State(StopState): ...`); without these keys the router fails with
    a `StateSchemaError` (a `RuntimeError`) naming the key.

    Example:
        A graph's own state adds its keys:

            >>> from stop_on_artifact import StopState
            >>> class State(StopState):
            ...     customer: str
            >>> sorted(State.__required_keys__ | State.__optional_keys__)
            ['customer', 'messages', 'stop_decision', 'stop_turn']
    """

    stop_decision: NotRequired[Decision]
    stop_turn: NotRequired[TurnRecord | None]


class StateSchemaError(RuntimeError):
    """The graph's state lacks a key the library writes; the message names it and the fix.

    Example:
        Raised by the router when the state lacks a key:

            >>> from stop_on_artifact._record import StateSchemaError
            >>> issubclass(StateSchemaError, RuntimeError)
            True
    """


def starts_turn(messages: Sequence[BaseMessage], record: object = None) -> bool:
    """Return True when `messages` end with a user's question `record` does not name yet."""
    if not messages or not asks(messages, len(messages) - 1):
        return False
    return not isinstance(record, Mapping) or record.get("turn") != messages[-1].id


def opens_turn(messages: Sequence[BaseMessage], record: object) -> bool:
    """Return whether a model call begins a turn: not after its tools, nor at its start."""
    if not isinstance(record, Mapping) or not is_current(record, messages):
        return True
    last = next((m for m in reversed(messages) if not isinstance(m, HumanMessage)), None)
    # at its start: another middleware removed every step of the turn, which goes on
    at_start = record["turn"] in (messages[-1].id, f"#{len(messages) - 1}") if messages else False
    return not isinstance(last, ToolMessage) and not at_start


def new_record(messages: Sequence[BaseMessage], settings: StopSettings) -> TurnRecord:
    """Return the record of the turn that begins after `messages` (its last one's id)."""
    turn = messages[-1].id if messages and messages[-1].id else f"#{len(messages) - 1}"
    return {"turn": turn, "settings": settings.model_dump(mode="json")}


def is_current(record: object, messages: Sequence[BaseMessage]) -> bool:
    """Return whether `record` is this turn's: no user's question came after its start."""
    if not isinstance(record, Mapping) or not isinstance(record.get("turn"), str):
        return False
    turn = record["turn"]
    if not turn.startswith("#") and all(m.id != turn for m in messages):
        # trimmed away: the rest is this turn, but a question asked since begins the next
        return not messages or not asks(messages, len(messages) - 1)
    return turn_start(messages, record) >= turn_start(messages) or not messages


@lru_cache(maxsize=256)
def _validated(items: tuple[tuple[str, Any], ...]) -> StopSettings:
    return StopSettings.model_validate(dict(items))


_WARNED: dict[tuple[str, str, tuple[str, ...]], None] = {}  # oldest first, at most 1,024
_WARNED_LOCK = threading.Lock()  # a step's parallel tool calls read the settings at once


def _warn(turn: str, run: str, fields: tuple[str, ...]) -> None:
    with _WARNED_LOCK:  # once per turn and run
        if (turn, run, fields) in _WARNED:
            return
        _WARNED[turn, run, fields] = None
        if len(_WARNED) > 1024:
            del _WARNED[next(iter(_WARNED))]
    logger.warning(
        "A run carrying on a turn resolves other stop settings (%s); the turn keeps the "
        "settings it started with, and the next user message uses the new ones",
        ", ".join(fields),
    )


def recorded_settings(
    state: Mapping[str, Any],
    missing: str,
    current: StopSettings | tuple[str, ...] | None = None,
    run: str = "",
    *,
    checked: bool = False,
) -> StopSettings:
    """Return the turn's settings from its record, logging once per turn what `current` changes."""
    record: Any = state.get(TURN_KEY)
    if not checked and not is_current(record, state.get("messages") or []):
        raise StateSchemaError(missing)
    settings = _validated(tuple(sorted(record["settings"].items())))
    if isinstance(current, StopSettings) and current != settings:
        current = tuple(n for n, value in settings if getattr(current, n) != value)
    if isinstance(current, tuple):
        _warn(str(record["turn"]), run, current)
    return settings
