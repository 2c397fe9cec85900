"""The turn's record (``stop_turn``): its settings, written once at its first model call.

A turn may span several runs (a resume is one, with whatever context it sends): every later
step reads the record, so another context changes nothing in the turn (the differing fields
are logged, never their values); the next user message starts a new record.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, NotRequired

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.graph import MessagesState
from typing_extensions import TypedDict

from stop_on_artifact._decision import StopDecision
from stop_on_artifact._settings import StopSettings

TURN_KEY = "stop_turn"
logger = logging.getLogger("stop_on_artifact")
_WARN_LOCK = threading.Lock()  # lru_cache runs a first call twice when two threads race


class TurnRecord(TypedDict):
    """What a turn decided when it started."""

    turn: str
    """The id of the user message that started the turn (``#<position>`` without one)."""
    settings: dict[str, Any]
    """The turn's :class:`~stop_on_artifact.StopSettings`, as JSON."""


class StopState(MessagesState):
    """A hand-built graph's state: ``messages``, the latest decision and the turn's record.

    Inherit it (``class State(StopState): ...``); without these keys the router fails with
    :class:`StateSchemaError`.
    """

    stop_decision: NotRequired[StopDecision | None]
    stop_turn: NotRequired[TurnRecord | None]


class StateSchemaError(RuntimeError):
    """The graph's state lacks a key the library writes; the message names it and the fix."""


def starts_turn(messages: Sequence[BaseMessage]) -> bool:
    """Return True when ``messages`` end with a user message: the next model call starts a turn."""
    return bool(messages) and isinstance(messages[-1], HumanMessage)


def turn_of(messages: Sequence[BaseMessage]) -> str:
    """Return the id of the user message that started the current turn."""
    for position in range(len(messages) - 1, -1, -1):
        if isinstance(messages[position], HumanMessage):
            return messages[position].id or f"#{position}"
    return "#-1"


def new_record(messages: Sequence[BaseMessage], settings: StopSettings) -> TurnRecord:
    """Return the record of the turn ``messages`` start, under ``settings``."""
    return {"turn": turn_of(messages), "settings": settings.model_dump(mode="json")}


@lru_cache(maxsize=256)
def _validated(items: tuple[tuple[str, Any], ...]) -> StopSettings:
    return StopSettings.model_validate(dict(items))


@lru_cache(maxsize=1024)  # once per turn and run
def _warn(turn: str, run: str, fields: tuple[str, ...]) -> None:
    logger.warning(
        "A run carrying on a turn resolves other stop settings (%s); the turn keeps the "
        "settings it started with, and the next user message uses the new ones",
        ", ".join(fields),
    )


def recorded_settings(
    state: Mapping[str, Any], owner: str, current: StopSettings | None = None, run: str = ""
) -> StopSettings:
    """Return the settings the current turn runs under, from its record.

    ``current``, what the running run's context resolves to, is compared: the fields that
    differ are logged once per turn and run (``run``); ``owner`` is named in the error.

    Raises:
        StateSchemaError: If the state holds no record of this turn.
    """
    record = state.get(TURN_KEY)
    if not isinstance(record, Mapping) or record.get("turn") != turn_of(
        state.get("messages") or []
    ):
        msg = (
            f"{owner} found no record of this turn under '{TURN_KEY}': declare it in the "
            "graph's state (inherit stop_on_artifact.StopState, or add "
            f"'{TURN_KEY}: dict | None'), and return StopRouter.turn_update(...) from "
            "the node that calls the model"
        )
        raise StateSchemaError(msg)
    settings = _validated(tuple(sorted(record["settings"].items())))
    if current is not None and current != settings:
        fields = StopSettings.model_fields
        changed = tuple(n for n in fields if getattr(current, n) != getattr(settings, n))
        with _WARN_LOCK:  # a step's calls run in threads (create_agent): one line, not two
            _warn(str(record["turn"]), run, changed)
    return settings
