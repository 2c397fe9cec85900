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
"""

from __future__ import annotations

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
