"""The few LangGraph Platform API calls ``python -m client`` makes, over ``httpx`` alone.

``langgraph_sdk`` imports ``langchain_core``'s chat models when it loads (about a second
here), which every question would pay before it is sent. This client speaks the same
routes with the same shapes, so :func:`client.cli.stream_run` and :func:`client.cli.check`
take it or a ``langgraph_sdk`` client alike: ``threads.create`` / ``threads.get_state``,
``runs.stream`` / ``runs.create`` / ``runs.join`` / ``runs.get`` / ``runs.join_stream``
(server-sent events read as ``StreamPart``-like parts with ``event``, ``data`` and ``id``).

As ``langgraph_sdk.get_client`` does, it sends ``x-api-key`` from ``LANGGRAPH_API_KEY``
(else ``LANGSMITH_API_KEY``, else ``LANGCHAIN_API_KEY``), retries a failed connection 5
times, waits at most 5 s to connect and 300 s to read, and raises
:class:`httpx.HTTPStatusError` (its body read) when the server refuses a request. Unlike
the SDK, a stream cut in the middle is not reconnected: the error reaches the caller.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

API_KEY_ENV = ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")
"""Where the key comes from, first set wins (``langgraph_sdk``'s order)."""
TIMEOUT = httpx.Timeout(connect=5, read=300, write=300, pool=5)
"""``langgraph_sdk``'s default timeouts."""


@dataclass(frozen=True)
class StreamPart:
    """One server-sent event of a run's stream.

    Attributes:
        event: The event name (``metadata``, ``updates``, ``custom``, ``error``, ``end``...).
        data: The event's JSON data (None when it has none).
        id: The event id, when the server gives one (resumable streams).
    """

    event: str
    data: Any
    id: str | None = None


def api_key() -> str | None:
    """Return the API key from the environment (:data:`API_KEY_ENV`), or None."""
    for name in API_KEY_ENV:
        if value := os.environ.get(name):
            return value.strip().strip("\"'")
    return None


def _path(*parts: str) -> str:
    return "/" + "/".join(quote(part, safe="") for part in parts)


def _payload(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Return the request body without the fields left None, as the SDK sends it."""
    return {key: value for key, value in fields.items() if value is not None}


async def _checked(response: httpx.Response) -> httpx.Response:
    """Return ``response``; raise :class:`httpx.HTTPStatusError` (body read) on a refusal."""
    if response.status_code >= 400:
        await response.aread()
        response.raise_for_status()
    return response


async def _events(response: httpx.Response) -> AsyncIterator[StreamPart]:
    """Read a ``text/event-stream`` body as parts (the SSE rules the server's events use)."""
    event, last_id = "", None
    data: list[str] = []
    async for line in response.aiter_lines():
        if not line:
            if event or data:
                body = "\n".join(data)
                yield StreamPart(event, json.loads(body) if body.strip() else None, last_id)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue  # a comment: the server's heartbeat
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id" and "\0" not in value:
            last_id = value


class _Http:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def get(self, path: str) -> Any:
        return (await _checked(await self.http.get(path))).json()

    async def post(self, path: str, body: Mapping[str, Any]) -> Any:
        return (await _checked(await self.http.post(path, json=dict(body)))).json()

    async def stream(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> AsyncIterator[StreamPart]:
        sent = {"Accept": "text/event-stream", "Cache-Control": "no-store", **(headers or {})}
        request = self.http.build_request(
            method,
            path,
            json=None if body is None else dict(body),
            headers=sent,
            params=params,
        )
        response = await self.http.send(request, stream=True)
        try:
            await _checked(response)
            async for part in _events(response):
                yield part
        finally:
            await response.aclose()


class Threads:
    """``/threads``: create a thread, read its state."""

    def __init__(self, http: _Http) -> None:
        """Use the client's connection."""
        self._http = http

    async def create(self) -> dict[str, Any]:
        """Create a thread; return it (``thread_id`` among its fields)."""
        thread: dict[str, Any] = await self._http.post("/threads", {})
        return thread

    async def get_state(self, thread_id: str) -> dict[str, Any]:
        """Return a thread's state (``values``, ``interrupts``...)."""
        state: dict[str, Any] = await self._http.get(_path("threads", thread_id, "state"))
        return state


class Runs:
    """``/threads/{id}/runs``: stream a run, or start one and read its stored stream."""

    def __init__(self, http: _Http) -> None:
        """Use the client's connection."""
        self._http = http

    def stream(
        self,
        thread_id: str,
        assistant_id: str,
        *,
        input: dict[str, Any] | None = None,
        command: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
        stream_mode: list[Any] | None = None,
    ) -> AsyncIterator[StreamPart]:
        """Start a run on a thread and stream its events as they come."""
        body = _payload(
            {
                "input": input,
                "command": command,
                "context": context,
                "stream_mode": stream_mode,
                "assistant_id": assistant_id,
            }
        )
        return self._http.stream("POST", _path("threads", thread_id, "runs", "stream"), body)

    async def create(
        self,
        thread_id: str,
        assistant_id: str,
        *,
        input: dict[str, Any] | None = None,
        command: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
        stream_mode: list[Any] | None = None,
        stream_resumable: bool | None = None,
    ) -> dict[str, Any]:
        """Start a run in the background; return it (``run_id`` among its fields)."""
        body = _payload(
            {
                "input": input,
                "command": command,
                "context": context,
                "stream_mode": stream_mode,
                "stream_resumable": stream_resumable,
                "assistant_id": assistant_id,
            }
        )
        run: dict[str, Any] = await self._http.post(_path("threads", thread_id, "runs"), body)
        return run

    async def join(self, thread_id: str, run_id: str) -> dict[str, Any]:
        """Wait for a run to end; return the thread's values (``__error__`` if it failed)."""
        joined: dict[str, Any] = await self._http.get(
            _path("threads", thread_id, "runs", run_id, "join")
        )
        return joined

    async def get(self, thread_id: str, run_id: str) -> dict[str, Any]:
        """Return a run (its ``status`` among its fields)."""
        run: dict[str, Any] = await self._http.get(_path("threads", thread_id, "runs", run_id))
        return run

    def join_stream(
        self, thread_id: str, run_id: str, *, last_event_id: str | None = None
    ) -> AsyncIterator[StreamPart]:
        """Stream a run's events; from the start of its stored stream with ``"-1"``."""
        headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
        path = _path("threads", thread_id, "runs", run_id, "stream")
        return self._http.stream("GET", path, headers=headers)


class ApiClient:
    """A LangGraph server's threads and runs, as ``python -m client`` uses them.

    Attributes:
        threads: Create a thread, read its state.
        runs: Stream a run, or start one and read its stored stream.
    """

    def __init__(self, url: str, *, key: str | None = None) -> None:
        """Connect to the server at ``url``.

        Args:
            url: The server's base URL.
            key: Sent as ``x-api-key``; :func:`api_key` (the environment) when None.
        """
        key = key if key is not None else api_key()
        self._client = httpx.AsyncClient(
            base_url=url,
            transport=httpx.AsyncHTTPTransport(retries=5),
            timeout=TIMEOUT,
            headers={"x-api-key": key} if key else {},
        )
        http = _Http(self._client)
        self.threads = Threads(http)
        self.runs = Runs(http)

    async def aclose(self) -> None:
        """Close the connection."""
        await self._client.aclose()
