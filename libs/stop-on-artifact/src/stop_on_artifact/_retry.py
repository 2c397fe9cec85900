"""Retry a transient tool call in place, before the model hears of it.

The last attempt's artifact records `in_place_retries`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, TypeVar, cast

from stop_on_artifact import _artifact
from stop_on_artifact._settings import MAX_DELAY
from stop_on_artifact._turn import judge

Result = TypeVar("Result")

_ATTEMPT: ContextVar[int] = ContextVar("stop_on_artifact_in_place_attempt", default=0)


def current_attempt() -> int:
    """Return which in-place attempt of a tool call is running: 0 first, then 1, 2, ...

    Example:
        Read inside a tool; outside a retry in place it is 0:

            >>> from stop_on_artifact import current_attempt
            >>> current_attempt()
            0
    """
    return _ATTEMPT.get()


def is_transient(result: object) -> bool:
    """Return True when `result` (or the ToolMessage its Command holds) says `transient`."""
    if (message := _artifact.carried(result)) is None or not isinstance(message.artifact, dict):
        return False
    return judge(message).reason == "transient"


def _recorded(result: Result, retries: int) -> Result:
    message = _artifact.carried(result)
    if retries == 0 or message is None or not _artifact.speaks(message.artifact):
        return result  # a plain result (a read tool's success) stays plain
    recorded = _artifact.with_library_fields(message, **{_artifact.IN_PLACE_FIELD: retries})
    return cast("Result", _artifact.with_carried(result, recorded))


def retry_in_place(
    run: Callable[[], Result],
    *,
    take: Callable[[object], bool],
    initial_delay: float = 0.0,
    backoff_factor: float = 2.0,
    max_delay: float = MAX_DELAY,
    sleep: Callable[[float], Any] = time.sleep,
) -> Result:
    """Run a call, and again while transient and `take(result)` grants a retry (False: spent)."""
    done = 0
    while True:
        token = _ATTEMPT.set(done)
        try:
            result = run()
        finally:
            _ATTEMPT.reset(token)
        if not (is_transient(result) and take(_artifact.carried(result))):
            return _recorded(result, done)
        sleep(min(max_delay, MAX_DELAY, initial_delay * backoff_factor**done))
        done += 1


async def aretry_in_place(
    run: Callable[[], Awaitable[Result]],
    *,
    take: Callable[[object], bool],
    initial_delay: float = 0.0,
    backoff_factor: float = 2.0,
    max_delay: float = MAX_DELAY,
) -> Result:
    """Async twin of `retry_in_place` (waits with `asyncio.sleep`)."""
    done = 0
    while True:
        token = _ATTEMPT.set(done)
        try:
            result = await run()
        finally:
            _ATTEMPT.reset(token)
        if not (is_transient(result) and take(_artifact.carried(result))):
            return _recorded(result, done)
        await asyncio.sleep(min(max_delay, MAX_DELAY, initial_delay * backoff_factor**done))
        done += 1
