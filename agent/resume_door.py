"""One answer per pause, at the door: a resume is refused before it becomes a run.

A person's answer to a pause (a run whose ``command`` has ``resume``) may arrive twice: two
people answer one approval card, a client retries. Both servers queue a run before the graph
looks at it, so a second answer that reaches the graph finds nothing pending and fails there
(the thread then shows ``error``), or, on a thread that paused again, answers a question it was
never about. :class:`ResumeDoor`, an ASGI middleware both servers load through
:mod:`agent.http`, decides before the run exists:

- It asks the server itself (``GET /threads/{id}``, with the caller's own headers, so the
  server's auth applies) for the thread's status. A thread that is not ``interrupted`` is
  refused with :data:`agent.runs.CONFLICT` and :func:`agent.runs.answered`. A ``busy`` thread
  is looked at again for up to :data:`SETTLE_SECONDS`: the run that paused it may not have
  recorded its status yet when a quick client answers.
- It sends the resume on as ``multitask_strategy="reject"``, whatever the request named, so
  the server refuses it while another run of the thread is pending or running (the check and
  the insert are one step in the server); that refusal's 409 gets the same text.

Only the run routes of a thread (``POST /threads/{id}/runs``, ``.../runs/stream``,
``.../runs/wait``) are read, and only a body that mentions ``resume`` is parsed; everything
else passes untouched.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent.asgi import Rewrite, RewrittenResponse
from agent.runs import BUSY, CONFLICT, answered, is_resume

RUN_ROUTE = re.compile(r"/threads/([^/]+)/runs(?:/stream|/wait)?/?")
"""The run routes of a thread; the group is the thread id."""

NOT_INTERRUPTED = "Cannot resume: thread is not in interrupted state"
"""Aegra's refusal (400) of a resume on a thread that is not interrupted."""

SETTLE_SECONDS = 1.0
"""How long a ``busy`` thread is looked at again before an answer to it is refused."""

SETTLE_LOOK = 0.05
"""Seconds between two looks at a ``busy`` thread's status."""


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _never_sent() -> Message:
    return {"type": "http.disconnect"}


def _replay(body: bytes, then: Receive = _never_sent) -> Receive:
    """Give the body already read once, then what ``then`` receives (a disconnect)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await then()

    return receive


class ResumeDoor:
    """ASGI middleware: refuse an answer to a pause that is not waiting for one."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap ``app``.

        Args:
            app: The server's application.
        """
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve a request; a resume only when its thread waits for it."""
        route = RUN_ROUTE.fullmatch(scope["path"]) if scope["type"] == "http" else None
        if route is None or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        request = _resume_request(body)
        if request is None:
            await self.app(scope, _replay(body, receive), send)
            return
        thread_id = route[1]
        if not await self._waits_for_answer(scope, thread_id):
            await self._refuse(scope, send, thread_id)
            return
        body = json.dumps({**request, "multitask_strategy": "reject"}).encode()
        headers = MutableHeaders(scope=dict(scope))
        headers["content-length"] = str(len(body))
        scope = {**scope, "headers": headers.raw}
        rewritten = RewrittenResponse(send, (400, CONFLICT), _conflict_rewrite(thread_id))
        await self.app(scope, _replay(body, receive), rewritten)

    async def _waits_for_answer(self, scope: Scope, thread_id: str) -> bool:
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            status = await self._thread_status(scope, thread_id)
            if status is None or status == "interrupted":
                return True  # not found or not readable: the server answers the run itself
            if status != "busy" or time.monotonic() >= deadline:
                return False
            await asyncio.sleep(SETTLE_LOOK)

    async def _thread_status(self, scope: Scope, thread_id: str) -> str | None:
        """Ask the server for the thread, as the caller; None unless it answers 200."""
        headers = [(k, v) for k, v in scope["headers"] if k not in (b"content-length",)]
        inner: Scope = {
            **scope,
            "method": "GET",
            "path": f"/threads/{thread_id}",
            "raw_path": f"/threads/{thread_id}".encode(),
            "query_string": b"",
            "headers": headers,
        }
        response: dict[str, Any] = {"status": 0, "body": b""}

        async def collect(message: Message) -> None:
            if message["type"] == "http.response.start":
                response["status"] = message["status"]
            elif message["type"] == "http.response.body":
                response["body"] += message.get("body", b"")

        await self.app(inner, _replay(b""), collect)
        if response["status"] != 200:
            return None
        try:
            status = json.loads(response["body"]).get("status")
        except (ValueError, AttributeError):
            return None
        return status if isinstance(status, str) else None

    @staticmethod
    async def _refuse(scope: Scope, send: Send, thread_id: str) -> None:
        response = JSONResponse({"detail": answered(thread_id)}, status_code=CONFLICT)
        await response(scope, _replay(b""), send)


def _resume_request(body: bytes) -> dict[str, Any] | None:
    """Return the run request when it answers a pause, else None (unparsed when it cannot)."""
    if b'"resume"' not in body:
        return None
    try:
        request = json.loads(body)
    except ValueError:
        return None  # the server refuses malformed JSON itself
    return request if isinstance(request, dict) and is_resume(request) else None


def _conflict_rewrite(thread_id: str) -> Rewrite:
    """Give the server's own refusal of a resume the words of :func:`answered` (a 409).

    Rewritten: langgraph-api's 409 under ``reject`` (:data:`agent.runs.BUSY`) and Aegra's 400
    for a thread that is not interrupted. Any other response passes as it is.
    """

    def rewrite(start: Message, body: bytes) -> tuple[Message, bytes]:
        if not _refuses_resume(body):
            return start, body
        return {**start, "status": CONFLICT}, json.dumps({"detail": answered(thread_id)}).encode()

    return rewrite


def _refuses_resume(body: bytes) -> bool:
    """Whether a 400 or 409 body is a server's refusal to run a resume on its thread now."""
    try:
        detail = json.loads(body).get("detail")
    except (ValueError, AttributeError):
        return False
    return isinstance(detail, str) and (detail == BUSY or detail.startswith(NOT_INTERRUPTED))
