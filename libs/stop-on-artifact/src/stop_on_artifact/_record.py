"""The state the library keeps: the turn's record, and :class:`StopState` for a hand-built graph.

A turn starts with a user message and may span several runs (a run that pauses for a
person is carried on by a resume, which the server runs as a run of its own, with whatever
context the resume sends). So the settings a turn runs under are resolved once, when its
first model call is made, and written under :data:`TURN_KEY` with the id of the user
message that started it. Every later step of the turn (the pause, the resume, the tools
step, the decision, the answer) reads them from there, never from the context of the run
that happens to carry it on. A run whose context would resolve to other settings changes
nothing in the turn; the library logs the fields that differ (never their values). The next
user message starts a new record.

A graph whose state cannot hold the record fails at the turn's first tool step with
:class:`StateSchemaError`, naming the key to declare: it never runs on other settings.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any, NotRequired

from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.graph import MessagesState
from typing_extensions import TypedDict

from stop_on_artifact._decision import StopDecision
from stop_on_artifact._settings import StopSettings

TURN_KEY = "stop_turn"
"""State key of the current turn's record (:class:`TurnRecord`)."""

logger = logging.getLogger("stop_on_artifact")


class TurnRecord(TypedDict):
    """What a turn decided when it started: written once, read by every later step."""

    turn: str
    """The id of the user message that started the turn (its position when it has none)."""
    settings: dict[str, Any]
    """The :class:`~stop_on_artifact.StopSettings` the turn runs under, as JSON."""


class StopState(MessagesState):
    """A hand-built graph's state: ``messages``, the latest decision and the turn's record.

    Inherit it (``class State(StopState): ...``) so the graph keeps what the router
    writes; a graph without these keys fails with :class:`StateSchemaError`.
    """

    stop_decision: NotRequired[StopDecision | None]
    """Decision of the latest tool step this turn; None when no tool ran. Checkpointed."""
    stop_turn: NotRequired[TurnRecord | None]
    """The settings this turn runs under, recorded at its first model call."""


class StateSchemaError(RuntimeError):
    """The graph's state lacks a key the library writes; the message names it and the fix."""


def starts_turn(messages: Sequence[BaseMessage]) -> bool:
    """Return True when ``messages`` end with a user message: the next model call starts a turn."""
    return bool(messages) and isinstance(messages[-1], HumanMessage)


def turn_of(messages: Sequence[BaseMessage]) -> str:
    """Return the id of the user message that started the current turn.

    Args:
        messages: The thread's messages.

    Returns:
        The last user message's id, or ``"#<position>"`` when it has none; ``"#-1"`` when
        there is no user message.
    """
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if isinstance(message, HumanMessage):
            return message.id or f"#{position}"
    return "#-1"


def new_record(messages: Sequence[BaseMessage], settings: StopSettings) -> TurnRecord:
    """Return the record of the turn that ``messages`` start, under ``settings``."""
    return {"turn": turn_of(messages), "settings": settings.model_dump(mode="json")}


_WARNED: OrderedDict[tuple[str, str], None] = OrderedDict()
_WARNED_CAP = 1024


def _warn_once(key: tuple[str, str], fields: Sequence[str]) -> None:
    if key in _WARNED:
        return
    _WARNED[key] = None
    while len(_WARNED) > _WARNED_CAP:
        _WARNED.popitem(last=False)
    logger.warning(
        "A run carrying on a turn resolves other stop settings (%s); the turn keeps the "
        "settings it started with, and the next user message uses the new ones",
        ", ".join(fields),
    )


def recorded_settings(
    state: Mapping[str, Any],
    owner: str,
    current: StopSettings | None = None,
    run: str = "",
) -> StopSettings:
    """Return the settings the current turn runs under, from its record.

    Args:
        state: The graph state, holding ``messages`` and :data:`TURN_KEY`.
        owner: The class reading it, named in the error.
        current: The settings the running run's context resolves to, if known: the fields
            that differ from the record are logged, once per run.
        run: The running run's id, to log once per run.

    Returns:
        The recorded settings.

    Raises:
        StateSchemaError: If the state holds no record of this turn (the graph's state does
            not declare :data:`TURN_KEY`, or the turn's first model call did not write it).
    """
    messages = state.get("messages") or []
    record = state.get(TURN_KEY)
    if not isinstance(record, Mapping) or record.get("turn") != turn_of(messages):
        msg = (
            f"{owner} found no record of this turn under '{TURN_KEY}': declare it in the "
            "graph's state (inherit stop_on_artifact.StopState, or add "
            f"'{TURN_KEY}: TurnRecord | None'), and return StopRouter.turn_update(...) from "
            "the node that calls the model"
        )
        raise StateSchemaError(msg)
    settings = StopSettings.model_validate(record["settings"])
    if current is not None and current != settings:
        changed = [
            name
            for name in StopSettings.model_fields
            if getattr(current, name) != getattr(settings, name)
        ]
        _warn_once((str(record["turn"]), run), changed)
    return settings
