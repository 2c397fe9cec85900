"""Retry a transient tool call in place, before the model hears of it.

The same call runs again after ``initial_delay * backoff_factor ** n`` seconds (at most
``max_delay``), as langchain's ``ToolRetryMiddleware`` retries exceptions, while transient;
the last attempt's artifact records ``in_place_retries``, each counted against ``max_retries``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, TypeVar

from langchain_core.messages import ToolMessage

from stop_on_artifact._artifact import InvalidArtifactError, parse_artifact, speaks, with_fields
from stop_on_artifact._settings import MAX_DELAY
from stop_on_artifact.messages import IN_PLACE_FIELD

Result = TypeVar("Result")

_ATTEMPT: ContextVar[int] = ContextVar("stop_on_artifact_in_place_attempt", default=0)


def current_attempt() -> int:
    """Return which in-place attempt of a tool call is running: 0 first, then 1, 2, ..."""
    return _ATTEMPT.get()


def is_transient(result: object) -> bool:
    """Return True when ``result`` is a ToolMessage whose valid artifact says ``transient``."""
    if not isinstance(result, ToolMessage) or not isinstance(result.artifact, dict):
        return False
    try:
        return bool(parse_artifact(result.artifact)["reason"] == "transient")
    except InvalidArtifactError:
        return False


def delay(
    attempt: int, initial_delay: float, backoff_factor: float, max_delay: float = MAX_DELAY
) -> float:
    """Return the wait before retry number ``attempt`` (0-based), in seconds, bounded."""
    return float(min(max_delay, MAX_DELAY, initial_delay * backoff_factor**attempt))


def _allowed(retries: int | None, take: Callable[[], bool] | None) -> Callable[[int], bool]:
    """Return whether retry number ``done`` may run: under ``retries`` and taken from ``take``."""
    if retries is None and take is None:
        raise TypeError("pass retries= (a bound), take= (a shared budget) or both")
    return lambda done: (retries is None or done < retries) and (take is None or take())


def _check(retries: int | None, initial_delay: float, backoff_factor: float) -> None:
    for name, value, low in (
        ("retries", retries or 0, 0),
        ("initial_delay", initial_delay, 0),
        ("backoff_factor", backoff_factor, 1),
    ):
        if value < low:
            msg = f"{name} must be >= {low}"
            raise ValueError(msg)


def _recorded(result: Result, retries: int) -> Result:
    if retries == 0 or not isinstance(result, ToolMessage) or not speaks(result.artifact):
        return result  # a plain result (a read tool's success) stays plain
    artifact = with_fields(result.artifact or {}, **{IN_PLACE_FIELD: retries})
    return result.model_copy(update={"artifact": artifact})


def _attempt(run: Callable[[], Result], done: int) -> Result:
    token = _ATTEMPT.set(done)
    try:
        return run()
    finally:
        _ATTEMPT.reset(token)


async def _aattempt(run: Callable[[], Awaitable[Result]], done: int) -> Result:
    token = _ATTEMPT.set(done)
    try:
        return await run()
    finally:
        _ATTEMPT.reset(token)


def retry_in_place(
    run: Callable[[], Result],
    *,
    retries: int | None = None,
    take: Callable[[], bool] | None = None,
    initial_delay: float = 0.0,
    backoff_factor: float = 2.0,
    max_delay: float = MAX_DELAY,
    sleep: Callable[[float], Any] = time.sleep,
) -> Result:
    """Run a call, and again while transient: at most ``retries`` more, each one ``take()``.

    ``take`` is a budget several calls share (it returns False once spent).

    Raises:
        ValueError: If a bound is negative.
        TypeError: If neither ``retries`` nor ``take`` is given.
    """
    _check(retries, initial_delay, backoff_factor)
    allowed, done = _allowed(retries, take), 0
    while is_transient(result := _attempt(run, done)) and allowed(done):
        sleep(delay(done, initial_delay, backoff_factor, max_delay))
        done += 1
    return _recorded(result, done)


async def aretry_in_place(
    run: Callable[[], Awaitable[Result]],
    *,
    retries: int | None = None,
    take: Callable[[], bool] | None = None,
    initial_delay: float = 0.0,
    backoff_factor: float = 2.0,
    max_delay: float = MAX_DELAY,
) -> Result:
    """Async twin of :func:`retry_in_place` (waits with ``asyncio.sleep``)."""
    _check(retries, initial_delay, backoff_factor)
    allowed, done = _allowed(retries, take), 0
    while is_transient(result := await _aattempt(run, done)) and allowed(done):
        await asyncio.sleep(delay(done, initial_delay, backoff_factor, max_delay))
        done += 1
    return _recorded(result, done)
