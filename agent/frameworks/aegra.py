"""What the app relies on in ``aegra_api`` (the production server) beyond its entry point.

Aegra documents one way in, ``uvicorn aegra_api.main:app``, whose startup migrates the
database and creates the graphs' default assistants in every worker; two workers doing so at
once collide on the assistants' key. So the production launcher runs :data:`SETUP_SCRIPT`
once, in Aegra's environment, before the workers start. It uses Aegra's internals:

- ``aegra_api.core.migrations.run_migrations()``: applies Aegra's database migrations.
- ``aegra_api.core.database.db_manager``: its ``initialize()`` and ``close()`` coroutines
  open and close the database (initializing also creates the checkpointer's and the store's
  tables).
- ``aegra_api.services.langgraph_service.get_langgraph_service()``: the service whose
  ``initialize()`` coroutine loads the graphs and creates their default assistants.

:data:`RELIED_ON` lists them; ``tests/unit_tests/test_frameworks.py`` fails, in Aegra's
environment (``.prod/venv``), if one goes or changes its shape.

A run's end is also where Aegra 0.11 is slow: ``WorkerExecutor.wait_for_completion``, which
every ``runs.wait`` (and a join) awaits, looks for the run's done-key in Redis every 2.0 s, a
constant with no setting. :func:`quick_completion_wait` gives each worker the same wait with
looks 10 to 50 ms apart (the database fallback stays 2 s apart); it refuses to run when the
method's source is not the one it was written against (:data:`COMPLETION_WAIT_SHA256`).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
from typing import Any

RELIED_ON: tuple[tuple[str, str], ...] = (
    ("aegra_api.core.migrations", "run_migrations"),
    ("aegra_api.core.database", "db_manager"),
    ("aegra_api.services.langgraph_service", "get_langgraph_service"),
)
"""The ``(module, name)`` pairs of Aegra's internals :data:`SETUP_SCRIPT` uses."""

SETUP_SCRIPT = """
import asyncio
from aegra_api.core.database import db_manager
from aegra_api.core.migrations import run_migrations
from aegra_api.services.langgraph_service import get_langgraph_service

async def setup() -> None:
    await db_manager.initialize()  # also creates the checkpointer's and the store's tables
    try:
        await get_langgraph_service().initialize()  # the graphs' default assistants
    finally:
        await db_manager.close()

run_migrations()
asyncio.run(setup())
"""
"""Run once before the workers start, in Aegra's Python: Aegra's migrations, LangGraph's
table setup and the graphs' default assistants."""


COMPLETION_WAIT_SHA256 = "d64940b7ecb0726a393d286a745a080cb9658bc0db281f6a1805f08d77f47013"
"""sha256 of ``aegra_api`` 0.11.0's ``WorkerExecutor.wait_for_completion`` source."""

FIRST_LOOK = 0.01
"""Seconds before the second look at a run's done-key; each wait after doubles, up to
:data:`LAST_LOOK`."""
LAST_LOOK = 0.05
"""The longest wait between two looks at a run's done-key (one ``EXISTS`` on Redis)."""
DATABASE_LOOK = 2.0
"""Seconds between looks at the run's row, for a done-key that never comes (Aegra's own)."""


def quick_completion_wait() -> None:
    """Make ``WorkerExecutor.wait_for_completion`` look at the done-key every 10-50 ms.

    Call it once per worker process, before serving. Idempotent.

    Raises:
        RuntimeError: ``aegra_api``'s method is not the one this replaces; the message names
            the method and what to check.
    """
    module = importlib.import_module("aegra_api.services.worker_executor")
    executor = module.WorkerExecutor
    if getattr(executor.wait_for_completion, "_quick", False):
        return
    try:
        source = inspect.getsource(executor.wait_for_completion)
    except (OSError, TypeError):  # no source to compare: not the method this was written for
        source = ""
    if hashlib.sha256(source.encode()).hexdigest() != COMPLETION_WAIT_SHA256:
        msg = (
            "aegra_api.services.worker_executor.WorkerExecutor.wait_for_completion changed; "
            "check agent/frameworks/aegra.py's quick_completion_wait against it and update "
            "COMPLETION_WAIT_SHA256"
        )
        raise RuntimeError(msg)
    settings = module.settings
    redis_error = module.RedisError

    async def wait_for_completion(self: Any, run_id: str, *, timeout: float = 300.0) -> None:
        done_key = f"{settings.redis.REDIS_CHANNEL_PREFIX}done:{run_id}"
        client = module.redis_manager.get_client()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        database_at = loop.time() + DATABASE_LOOK
        pause = FIRST_LOOK
        while loop.time() < deadline:
            try:
                if await client.exists(done_key):
                    return
            except redis_error:
                pass
            if loop.time() >= database_at:
                if await module._is_run_terminal(run_id):
                    return
                database_at = loop.time() + DATABASE_LOOK
            await asyncio.sleep(pause)
            pause = min(pause * 2, LAST_LOOK)
        msg = f"Run {run_id} did not complete within {timeout}s"
        raise TimeoutError(msg)

    wait_for_completion.__doc__ = executor.wait_for_completion.__doc__
    wait_for_completion._quick = True  # type: ignore[attr-defined]
    executor.wait_for_completion = wait_for_completion
