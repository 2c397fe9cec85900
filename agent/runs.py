"""What a run request is told when its thread cannot take it: the same words on both servers.

A thread runs one run at a time (LangGraph's multitask strategies; :mod:`agent.http` and
:mod:`agent.frameworks.aegra` make both servers keep it), and a person's answer to a pause is
used once: of two answers to one pause exactly one runs. The other is refused before a run is
created, with :data:`CONFLICT` and :func:`answered`, which names the thread (never anything
else the caller sent).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

CONFLICT = 409
"""The status of a refused run: the thread's state, not the request, is in the way."""

BUSY = (
    "Thread is already running a task. Wait for it to finish or choose a different multitask "
    "strategy."
)
"""langgraph-api's own refusal under ``multitask_strategy="reject"``, kept word for word."""

STRATEGIES = ("reject", "enqueue", "interrupt", "rollback")
"""LangGraph's multitask strategies."""

DEFAULT_STRATEGY = "enqueue"
"""What langgraph-api applies when a run names no strategy (``models/run.py``)."""


def thread_name(thread_id: object) -> str:
    """Return ``thread <id>`` for a thread id shaped as a UUID, else ``this thread``.

    Args:
        thread_id: The thread id from the request's path.

    Returns:
        A name safe to put in an error: a value that is no UUID is never quoted.
    """
    try:
        return f"thread {uuid.UUID(str(thread_id))}"
    except ValueError:
        return "this thread"


def answered(thread_id: object) -> str:
    """Return the refusal of an answer to a pause that is no longer waiting for one.

    Args:
        thread_id: The thread id from the request's path.

    Returns:
        The message: the pause was answered (by this or another client) or never happened.
    """
    return (
        f"Cannot resume {thread_name(thread_id)}: it is not waiting for an answer (another "
        "answer to its pause was taken first, or it never paused). Read the thread's state "
        "before answering again."
    )


def is_resume(body: Mapping[str, Any]) -> bool:
    """Return True when a run request's body answers a pause (``command.resume`` is set).

    Args:
        body: The run request's JSON body.

    Returns:
        Whether the body carries a ``command`` with a ``resume`` key.
    """
    command = body.get("command")
    return isinstance(command, Mapping) and "resume" in command
