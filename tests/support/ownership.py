"""What one identity tries on another's resources, shared by the dev and production auth tests.

Both servers must answer every attempt with 404 (as if the resource did not exist); the
tests add the attempts where the servers differ (see ``DIFFERENCES_FROM_DEV``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient

from client.scenarios import GRAPHS

Attempts = dict[str, Callable[[], Awaitable[object]]]
"""Named calls, each to be awaited once."""

USER: dict[str, Any] = {"messages": [{"role": "user", "content": "How does a checkpointer work?"}]}
"""An input for the runs the other identity tries to start."""


def status_of(error: BaseException) -> int | None:
    """The HTTP status of an SDK error, or None if it carries no response."""
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None)


def foreign_attempts(other: LangGraphClient, owners: Mapping[str, Any]) -> Attempts:
    """Every call ``other`` may try on the owner's thread, run, assistant and cron.

    Args:
        other: The client of the identity that does not own them.
        owners: The owner's ``thread``, ``run``, ``assistant`` and ``cron`` as created.
    """
    thread_id = owners["thread"]["thread_id"]
    run_id = owners["run"]["run_id"]
    assistant_id = owners["assistant"]["assistant_id"]
    return {
        "threads.get": lambda: other.threads.get(thread_id),
        "threads.get_state": lambda: other.threads.get_state(thread_id),
        "threads.get_history": lambda: other.threads.get_history(thread_id),
        "threads.update": lambda: other.threads.update(thread_id, metadata={"x": 1}),
        "threads.update_state": lambda: other.threads.update_state(thread_id, {"messages": []}),
        "threads.delete": lambda: other.threads.delete(thread_id),
        "runs.get": lambda: other.runs.get(thread_id, run_id),
        "runs.wait": lambda: other.runs.wait(thread_id, GRAPHS[0], input=USER),
        "runs.create": lambda: other.runs.create(thread_id, GRAPHS[0], input=USER),
        "assistants.get": lambda: other.assistants.get(assistant_id),
        "assistants.get_graph": lambda: other.assistants.get_graph(assistant_id),
        "assistants.update": lambda: other.assistants.update(assistant_id, metadata={"x": 1}),
        "assistants.delete": lambda: other.assistants.delete(assistant_id),
        "runs.wait with her assistant": lambda: other.runs.wait(None, assistant_id, input=USER),
        "crons.delete": lambda: other.crons.delete(owners["cron"]["cron_id"]),
    }


async def statuses(attempts: Attempts) -> dict[str, int | None]:
    """Await each attempt in turn; its HTTP status (200 when it succeeded)."""
    seen: dict[str, int | None] = {}
    for name, attempt in attempts.items():
        try:
            await attempt()
        except httpx.HTTPStatusError as error:
            seen[name] = status_of(error)
        else:
            seen[name] = 200
    return seen
