"""What the app relies on in ``langgraph_runtime_inmem``, the runtime of ``langgraph dev``.

The in-memory runtime's scheduler (``langgraph_runtime_inmem.queue.queue``) asks
``ops.Runs.next(wait=...)`` for queued runs, looking the method up on every turn of its loop;
when its last look found none, ``next`` first sleeps 0.5 s, a constant with no setting. A run
created in that pause waits for the next look, so through ``langgraph dev`` every
``runs.wait`` and ``runs.stream`` of one client asking one question at a time pays up to
0.5 s before the graph starts. :func:`quick_scheduler` makes the pause :data:`PAUSE` long: the
same look (the runtime's own ``next`` with ``wait=False``, which only yields to the loop
first), sooner. Each look scans the in-memory runs under the runtime's lock, a few
microseconds per thousand runs. It refuses to run when ``Runs.next``'s source is not the one it
was written against (:data:`NEXT_SHA256`).

:mod:`agent.http`, which both servers load, applies it when the server's runtime is this one
(``LANGGRAPH_RUNTIME_EDITION=inmem``); LangGraph Platform's runtime and Aegra are left alone.
``tests/unit_tests/test_frameworks.py`` fails when the method's source changes.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
import os
from collections.abc import AsyncIterator
from typing import Any

NEXT_SHA256 = "7305a9e130436ca5258731f0b26a187c01844c2b191270add53b4ee41af95a47"
"""sha256 of ``langgraph_runtime_inmem`` 0.36.7's ``ops.Runs.next`` source."""

PAUSE = 0.02
"""Seconds between two looks for a queued run when the last found none (the runtime's: 0.5)."""

EDITION_VARIABLE = "LANGGRAPH_RUNTIME_EDITION"
"""Set by ``langgraph dev`` and the platform's images: ``inmem`` for this runtime."""


def in_memory_runtime() -> bool:
    """Whether this process serves with the in-memory runtime (``langgraph dev``)."""
    return os.environ.get(EDITION_VARIABLE) == "inmem"


def next_source_sha256() -> str:
    """Return the sha256 of the installed ``ops.Runs.next``'s source ("" hashed if none)."""
    runs = importlib.import_module("langgraph_runtime_inmem.ops").Runs
    try:
        source = inspect.getsource(runs.next)
    except (OSError, TypeError):  # no source to compare: not the method this was written for
        source = ""
    return hashlib.sha256(source.encode()).hexdigest()


def quick_scheduler() -> None:
    """Make the in-memory scheduler look for a queued run every :data:`PAUSE` seconds.

    Idempotent.

    Raises:
        RuntimeError: ``langgraph_runtime_inmem``'s method is not the one this wraps; the
            message names the method and what to check.
    """
    runs = importlib.import_module("langgraph_runtime_inmem.ops").Runs
    if getattr(runs.next, "_quick", False):
        return
    if next_source_sha256() != NEXT_SHA256:
        msg = (
            "langgraph_runtime_inmem.ops.Runs.next changed; check "
            "agent/frameworks/langgraph_runtime_inmem.py's quick_scheduler against it and "
            "update NEXT_SHA256"
        )
        raise RuntimeError(msg)
    look = runs.next

    async def next_run(wait: bool, limit: int = 1) -> AsyncIterator[tuple[Any, int]]:
        if wait:
            await asyncio.sleep(PAUSE)
        async for found in look(False, limit):
            yield found

    next_run.__doc__ = look.__doc__
    next_run._quick = True  # type: ignore[attr-defined]
    runs.next = staticmethod(next_run)
