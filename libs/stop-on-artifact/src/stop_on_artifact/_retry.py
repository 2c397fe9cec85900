"""Retry a transient tool call in place, before the model hears of it.

A ``transient`` result normally goes back to the model, which retries the call: a
one-part question that times out once costs two model calls. With in-place retries the
same call (same tool, same arguments, same ``tool_call_id``) runs again at once, after a
short backoff, until it is no longer transient or the retries are spent; only then is the
step decided, and only a result still transient involves the model. The way
``ToolRetryMiddleware`` retries exceptions, applied to the artifact's ``transient``.

The kept result is the last attempt's, its artifact carrying
``in_place_retries``: how many extra attempts ran (an attempt that was not needed is not
recorded). Every attempt counts against ``max_retries`` (the decision reads
``in_place_retries`` as that many transient results), so the bound on retries is the same
whether the model or this loop retries.

A tool can tell an in-place retry from a first attempt with :func:`current_attempt`
(0 on the first attempt, 1 on the first retry, ...), to reuse an idempotency key, say.

Delays are bounded: each is ``initial_delay * backoff_factor ** n``, at most
:data:`MAX_DELAY` seconds, so a run's settings cannot stall a worker for long.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, TypeVar

from langchain_core.messages import ToolMessage

from stop_on_artifact._artifact import InvalidArtifactError, parse_artifact

__all__ = [
    "IN_PLACE_FIELD",
    "MAX_DELAY",
    "aretry_in_place",
    "current_attempt",
    "delay",
    "in_place_retries",
    "is_transient",
    "retry_in_place",
]

IN_PLACE_FIELD = "in_place_retries"
"""Artifact field: how many extra attempts of this call ran in place."""

MAX_DELAY = 5.0
"""Longest wait between two attempts, in seconds, whatever the settings say."""

Result = TypeVar("Result")

_ATTEMPT: ContextVar[int] = ContextVar("stop_on_artifact_in_place_attempt", default=0)


def current_attempt() -> int:
    """Return which in-place attempt of a call is running: 0 first, then 1, 2, ...

    Read it inside a tool; outside an in-place retry it is 0.
    """
    return _ATTEMPT.get()


def _attempt(run: Callable[[], Result], number: int) -> Result:
    token = _ATTEMPT.set(number)
    try:
        return run()
    finally:
        _ATTEMPT.reset(token)


async def _aattempt(run: Callable[[], Awaitable[Result]], number: int) -> Result:
    token = _ATTEMPT.set(number)
    try:
        return await run()
    finally:
        _ATTEMPT.reset(token)


def is_transient(result: object) -> bool:
    """Return True when ``result`` is a ToolMessage whose valid artifact says ``transient``."""
    if not isinstance(result, ToolMessage) or not isinstance(result.artifact, dict):
        return False
    try:
        return bool(parse_artifact(result.artifact)["reason"] == "transient")
    except InvalidArtifactError:
        return False


def in_place_retries(message: ToolMessage) -> int:
    """Return how many in-place retries ran for ``message``'s call (0 when none)."""
    artifact = message.artifact
    count = artifact.get(IN_PLACE_FIELD) if isinstance(artifact, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 0


def delay(attempt: int, initial_delay: float, backoff_factor: float) -> float:
    """Return the wait before retry number ``attempt`` (0-based), in seconds, bounded."""
    return float(min(MAX_DELAY, initial_delay * backoff_factor**attempt))


def _recorded(result: Result, retries: int) -> Result:
    if retries == 0 or not isinstance(result, ToolMessage):
        return result
    artifact = {**(result.artifact or {}), IN_PLACE_FIELD: retries}
    return result.model_copy(update={"artifact": artifact})


def _check(retries: int, initial_delay: float, backoff_factor: float) -> None:
    if retries < 0:
        msg = "retries must be >= 0"
        raise ValueError(msg)
    if initial_delay < 0:
        msg = "initial_delay must be >= 0"
        raise ValueError(msg)
    if backoff_factor < 1:
        msg = "backoff_factor must be >= 1"
        raise ValueError(msg)


def retry_in_place(
    run: Callable[[], Result],
    *,
    retries: int,
    initial_delay: float = 0.0,
    backoff_factor: float = 2.0,
    sleep: Callable[[float], Any] = time.sleep,
) -> Result:
    """Run a tool call, and again while its result is transient, at most ``retries`` more.

    Args:
        run: Runs the call once and returns its result (a ToolMessage, or anything else,
            which is returned as it is).
        retries: How many extra attempts may run.
        initial_delay: Seconds before the first retry.
        backoff_factor: Multiplier of the delay per retry (at least 1).
        sleep: The wait; ``time.sleep`` by default.

    Returns:
        The last attempt's result, its artifact recording ``in_place_retries`` when a
        retry ran.

    Raises:
        ValueError: If a bound is out of range (named).
    """
    _check(retries, initial_delay, backoff_factor)
    result = _attempt(run, 0)
    done = 0
    while done < retries and is_transient(result):
        sleep(delay(done, initial_delay, backoff_factor))
        done += 1
        result = _attempt(run, done)
    return _recorded(result, done)


async def aretry_in_place(
    run: Callable[[], Awaitable[Result]],
    *,
    retries: int,
    initial_delay: float = 0.0,
    backoff_factor: float = 2.0,
) -> Result:
    """Async twin of :func:`retry_in_place` (waits with ``asyncio.sleep``).

    Args:
        run: Runs the call once and returns its result.
        retries: How many extra attempts may run.
        initial_delay: Seconds before the first retry.
        backoff_factor: Multiplier of the delay per retry (at least 1).

    Returns:
        The last attempt's result, recording ``in_place_retries`` when a retry ran.

    Raises:
        ValueError: If a bound is out of range (named).
    """
    _check(retries, initial_delay, backoff_factor)
    result = await _aattempt(run, 0)
    done = 0
    while done < retries and is_transient(result):
        await asyncio.sleep(delay(done, initial_delay, backoff_factor))
        done += 1
        result = await _aattempt(run, done)
    return _recorded(result, done)
