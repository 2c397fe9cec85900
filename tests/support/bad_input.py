"""Bad run requests, shared by the dev and production bad-input tests.

Each case plants :data:`SECRET` where a caller could paste one by mistake (a context field,
the input, ``stream_mode``, ``metadata``, ``config``) and names the field the refusal must
name. :func:`send_every_case` sends every case to every run-creating route, on a thread
and without one, straight over HTTP so nothing in a client reshapes the request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient

from agent.context import Context

SECRET = "sk-planted-bad-input-5f1c9e"
"""Pasted into each bad field; it must reach neither the client nor the server log."""

GOOD_INPUT: dict[str, Any] = {"messages": [{"role": "user", "content": "checkpointer"}]}


@dataclass(frozen=True)
class BadRun:
    """One bad run request: what the body changes, and the field the refusal names."""

    name: str
    body: dict[str, Any]
    field: str


def _context(field: str, value: Any) -> BadRun:
    return BadRun(f"context.{field}", {"context": {field: value}}, field)


BAD_RUNS: list[BadRun] = [
    # Every context field with the secret pasted in: each is the wrong form for it.
    *(_context(field, SECRET) for field in Context.model_fields),
    _context("max_retries", -1),
    _context("max_model_calls", 0),
    _context("force_outcome", []),
    _context("force_outcome", ["success", SECRET]),
    BadRun("input list", {"input": [SECRET]}, "input"),
    BadRun("input string", {"input": SECRET}, "input"),
    BadRun("context list", {"context": [SECRET]}, "context"),
    BadRun("stream_mode", {"stream_mode": SECRET}, "stream_mode"),
    BadRun("stream_mode list", {"stream_mode": ["values", SECRET]}, "stream_mode"),
    BadRun("metadata string", {"metadata": SECRET}, "metadata"),
    BadRun("config string", {"config": SECRET}, "config"),
]
"""Every bad-input case; ``tests/integration_tests`` and ``tests/prod_tests`` send them all."""

RUN_ROUTES = ("/runs", "/runs/wait", "/runs/stream", "/runs/crons")
"""The run-creating routes (a cron creates runs later); each also exists under
``/threads/{thread_id}``."""

SCHEDULE = "0 0 1 1 *"


@dataclass(frozen=True)
class Refusal:
    """How a server answered one bad request."""

    case: BadRun
    path: str
    status: int
    text: str


async def send_every_case(
    http: httpx.AsyncClient, assistant_id: str, thread_id: str
) -> list[Refusal]:
    """Send every :data:`BAD_RUNS` case to every run route, threadless and on ``thread_id``.

    Args:
        http: A client with the server's base URL and the caller's headers.
        assistant_id: The graph to run.
        thread_id: The caller's own thread (it must end with no run).

    Returns:
        One answer per case and route.
    """
    answers: list[Refusal] = []
    paths = [*RUN_ROUTES, *(f"/threads/{thread_id}{route}" for route in RUN_ROUTES)]
    for case in BAD_RUNS:
        body = {"assistant_id": assistant_id, "input": GOOD_INPUT, **case.body}
        for path in paths:
            sent = {**body, "schedule": SCHEDULE} if path.endswith("/crons") else body
            response = await http.post(path, json=sent, timeout=30)
            answers.append(Refusal(case, path, response.status_code, response.text))
    return answers


def problems(answers: list[Refusal]) -> list[str]:
    """What is wrong with the answers: a status other than 422, an unnamed field, an echo."""
    wrong: list[str] = []
    for answer in answers:
        where = f"{answer.case.name} on {answer.path}"
        if answer.status != 422:
            wrong.append(f"{where}: status {answer.status}: {answer.text[:200]}")
        if answer.case.field not in answer.text:
            wrong.append(f"{where}: does not name {answer.case.field!r}: {answer.text[:200]}")
        if SECRET in answer.text:
            wrong.append(f"{where}: quotes the value")
    return wrong


async def assert_every_bad_run_refused(
    url: str,
    headers: Mapping[str, str],
    owner: LangGraphClient,
    assistant_id: str,
    log: Callable[[], str],
) -> None:
    """Send every case on every route as ``owner``; each a clean 422, no run or cron, no echo.

    Args:
        url: The server's base URL.
        headers: The owner's headers (her key, or none on an open server).
        owner: The owner's client (it creates the thread and lists its runs).
        assistant_id: The graph to run.
        log: Reads the server's whole log.
    """
    thread_id = (await owner.threads.create())["thread_id"]
    crons = await owner.crons.search(limit=1000)
    async with httpx.AsyncClient(base_url=url, headers=dict(headers)) as http:
        answers = await send_every_case(http, assistant_id, thread_id)
    assert len(answers) == len(BAD_RUNS) * 2 * len(RUN_ROUTES)
    assert problems(answers) == []
    assert await owner.runs.list(thread_id) == []
    assert await owner.crons.search(limit=1000) == crons
    lines = [line for line in log().splitlines() if SECRET in line]
    assert not lines, "a refused value reached the server log:\n" + "\n".join(lines[:5])
