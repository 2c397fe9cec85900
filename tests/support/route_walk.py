"""Walk every route a server mounts as one identity, on what another identity owns.

The server serves :mod:`tests.support.routes_app` (the project's own ``agent.http:app``
plus ``GET /__routes__``), so the walk reads the routes from the running app, never from a
list kept here: a route a new server version adds is walked the day it appears. Every path
parameter is filled with the owner's ids; every route is called with the owner's ids in
its query, and a route that takes a body with each of :data:`BODIES`. A 2xx answer that
holds :data:`MARKER` (planted in everything the owner has) or one of her ids is a leak.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.schema import Config

from client.scenarios import GRAPHS
from tests.support.routes_app import ROUTES_PATH

ROUTES_APP = f"{Path(__file__).with_name('routes_app.py')}:app"
"""The ``http.app`` entry of a walk's server config."""

MARKER = "alice-private-marker-4e21"
"""Planted in the owner's thread metadata, messages, assistant, cron and store item."""

EXTRA_HEADERS = {("POST", "/deploy"): {"origin": "http://[::1]:3000"}}
"""Headers added to one route's calls. ``POST /deploy`` with a valid key would start
``langgraph deploy`` of the server's folder: the walk sends it from a loopback origin that
``agent/http.py`` lets through and the dev server's own check refuses, so the route is
walked (a foreign identity gets no further than its key) and nothing is deployed."""

STREAM_BYTES = 256 * 1024
STREAM_SECONDS = 4.0
_PARAM = re.compile(r"\{([A-Za-z_]+)(?::[a-z]+)?\}")


@dataclass(frozen=True)
class Owned:
    """The owner's resources, each holding :data:`MARKER`."""

    thread_id: str
    run_id: str
    assistant_id: str
    cron_id: str
    checkpoint_id: str

    def ids(self) -> list[str]:
        """Every id that must not come back to another identity."""
        return [self.thread_id, self.run_id, self.assistant_id, self.cron_id, self.checkpoint_id]


async def plant(owner: LangGraphClient) -> Owned:
    """Create a thread with a finished run, an assistant, a cron and a store item, all marked."""
    text = f"How does a checkpointer work? {MARKER}"
    user: dict[str, Any] = {"messages": [{"role": "user", "content": text}]}
    thread = await owner.threads.create(metadata={"note": MARKER})
    await owner.runs.wait(
        thread["thread_id"], GRAPHS[0], input=user, context={"force_outcome": "success"}
    )
    [run] = await owner.runs.list(thread["thread_id"])
    state = await owner.threads.get_state(thread["thread_id"])
    # Config of its own: Aegra refuses a second assistant of one graph with the same config,
    # which another test of the same session may have made.
    config: Config = {"tags": [f"route-walk-{uuid.uuid4()}"]}
    assistant = await owner.assistants.create(
        GRAPHS[1], config=config, name=MARKER, metadata={"note": MARKER}
    )
    before = {c["cron_id"] for c in await owner.crons.search(limit=1000)}
    await owner.crons.create(GRAPHS[0], schedule="0 0 1 1 *", input=user)  # Aegra: its run
    [cron] = [c for c in await owner.crons.search(limit=1000) if c["cron_id"] not in before]
    await owner.store.put_item(["notes"], "favourite", {"note": MARKER})
    checkpoint = state["checkpoint"]
    assert checkpoint is not None
    return Owned(
        thread_id=thread["thread_id"],
        run_id=run["run_id"],
        assistant_id=assistant["assistant_id"],
        cron_id=cron["cron_id"],
        checkpoint_id=str(checkpoint["checkpoint_id"]),
    )


async def still_owned(owner: LangGraphClient, owned: Owned) -> None:
    """Assert the owner still has everything, unchanged by the walk."""
    thread = await owner.threads.get(owned.thread_id)
    assert (thread["metadata"] or {}).get("note") == MARKER
    state = await owner.threads.get_state(owned.thread_id)
    assert MARKER in str(state["values"])
    assistant = await owner.assistants.get(owned.assistant_id)
    assert assistant["name"] == MARKER
    assert owned.cron_id in {c["cron_id"] for c in await owner.crons.search()}
    item = await owner.store.get_item(["notes"], "favourite")
    assert item is not None and item["value"] == {"note": MARKER}


def mounted_routes(url: str) -> list[tuple[str, str]]:
    """Every (method, path template) the running server mounts, read from its app."""
    response = httpx.get(url + ROUTES_PATH, timeout=10)
    response.raise_for_status()
    return [(m, p) for m, p in response.json() if p != ROUTES_PATH]


def path_params(owned: Owned) -> dict[str, str]:
    """What each path parameter is filled with: the owner's ids where it names one."""
    return {
        "thread_id": owned.thread_id,
        "run_id": owned.run_id,
        "assistant_id": owned.assistant_id,
        "cron_id": owned.cron_id,
        "checkpoint_id": owned.checkpoint_id,
        "graph_id": GRAPHS[0],
        "namespace": "tools",
        "operation_id": "0" * 12,
    }


def query(owned: Owned) -> dict[str, str]:
    """Query parameters a GET or DELETE may read, naming the owner's things."""
    return {
        "thread_id": owned.thread_id,
        "run_id": owned.run_id,
        "assistant_id": owned.assistant_id,
        "namespace": "notes",
        "key": "favourite",
        "limit": "100",
    }


def bodies(owned: Owned) -> list[dict[str, Any]]:
    """The bodies every route that takes one is sent: empty, the owner's ids, JSON-RPC calls."""
    ids = {
        "thread_id": owned.thread_id,
        "run_id": owned.run_id,
        "assistant_id": owned.assistant_id,
        "cron_id": owned.cron_id,
        "checkpoint_id": owned.checkpoint_id,
        "checkpoint": {"checkpoint_id": owned.checkpoint_id},
        "ids": [owned.thread_id],
        "thread_ids": [owned.thread_id],
        "run_ids": [owned.run_id],
        "metadata": {"owner": "alice"},
        "namespace": ["notes"],
        "namespace_prefix": ["notes"],
        "key": "favourite",
        "values": {"messages": []},
        "schedule": "0 0 1 1 *",
        "limit": 100,
    }
    message = {
        "role": "user",
        "parts": [{"kind": "text", "text": "hello"}],
        "messageId": "walk-message-1",
        "contextId": owned.thread_id,
        "taskId": owned.run_id,
    }
    rpc: dict[str, Any] = {"jsonrpc": "2.0", "id": 1}
    task = {"id": owned.run_id, "contextId": owned.thread_id}
    run_start = {"assistant_id": GRAPHS[0], "input": {"messages": [message["parts"]]}}
    return [
        # The thread protocol's commands (``POST /threads/{thread_id}/commands``).
        {"id": 1, "method": "run.start", "params": run_start},
        {"id": 1, "method": "agent.getTree", "params": {"run_id": owned.run_id}},
        {"id": 1, "method": "subscription.subscribe", "params": {"channels": ["values"]}},
        {"id": 1, "method": "input.respond", "params": {"run_id": owned.run_id, "response": 1}},
        {},
        ids,
        {**rpc, "method": "tasks/get", "params": task},
        {**rpc, "method": "message/send", "params": {"message": message}},
        {**rpc, "method": "tools/list", "params": {}},
        {**rpc, "method": "tools/call", "params": {"name": owned.assistant_id, "arguments": {}}},
    ]


@dataclass(frozen=True)
class Answer:
    """One request of the walk and what came back (at most :data:`STREAM_BYTES`)."""

    method: str
    path: str
    body: Mapping[str, Any] | None
    status: int
    text: str


def _read(http: httpx.Client, method: str, url: str, **kwargs: Any) -> tuple[int, str]:
    deadline = time.monotonic() + STREAM_SECONDS
    chunks: list[bytes] = []
    try:
        with http.stream(method, url, **kwargs) as response:
            size = 0
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if size >= STREAM_BYTES or time.monotonic() > deadline:
                    break
            status = response.status_code
    except httpx.ReadTimeout:
        status = 200 if chunks else 0  # a stream that went quiet: judge what it sent
    except httpx.TransportError as error:  # the server closed it (a WebSocket-only route)
        return 0, type(error).__name__
    return status, b"".join(chunks).decode("utf-8", errors="replace")


def walk(
    url: str, headers: Mapping[str, str], owned: Owned, methods: frozenset[str] | None = None
) -> list[Answer]:
    """Call every mounted route as the identity ``headers`` carry, on ``owned``.

    Args:
        url: The server's base URL.
        headers: The other identity's headers (its key).
        owned: What the owner holds.
        methods: Only routes with these methods (``{"GET"}`` changes nothing); all if None.

    Returns:
        Every answer, in route order.

    Raises:
        AssertionError: If a route has a path parameter this walk cannot fill.
    """
    params = path_params(owned)
    answers: list[Answer] = []
    timeout = httpx.Timeout(10, read=STREAM_SECONDS)
    with httpx.Client(base_url=url, headers=dict(headers), timeout=timeout) as http:
        for method, template in mounted_routes(url):
            if methods is not None and method not in methods:
                continue
            unknown = set(_PARAM.findall(template)) - set(params)
            assert not unknown, f"{template}: no value for {sorted(unknown)}; add it here"
            path = _PARAM.sub(lambda m: params[m[1]], template)
            verb = "GET" if method == "*" else method
            sent: list[dict[str, Any] | None] = (
                [None] if verb in ("GET", "DELETE", "OPTIONS") else list(bodies(owned))
            )
            if verb == "DELETE":
                sent.append(bodies(owned)[1])
            for body in sent:
                extra = EXTRA_HEADERS.get((method, template), {})
                status, text = _read(
                    http, verb, path, json=body, params=query(owned), headers=extra
                )
                answers.append(Answer(method, template, body, status, text))
    return answers


def _refused(answer: Answer) -> bool:
    """A non-2xx status, or a JSON-RPC error (A2A and MCP answer those with 200)."""
    if not 200 <= answer.status < 300:
        return True
    try:
        parsed = json.loads(answer.text)
    except ValueError:
        return False
    return isinstance(parsed, dict) and "error" in parsed and "result" not in parsed


def leaks(answers: list[Answer], owned: Owned) -> list[str]:
    """The answers that are 2xx and carry the owner's marker or ids, described."""
    found = []
    for answer in answers:
        if _refused(answer):
            continue
        held = [s for s in (MARKER, *owned.ids()) if s in answer.text]
        if held:
            method = (answer.body or {}).get("method", "ids" if answer.body else "no body")
            found.append(
                f"{answer.method} {answer.path} ({method}) -> {answer.status} holds {held}: "
                f"{answer.text[:200]}"
            )
    return found


READS = frozenset({"GET"})
"""The methods the owner's own walk uses: it must find her marker, and change nothing."""


def assert_routes_listed(url: str, expected: list[tuple[str, str]], at_least: int) -> None:
    """Assert the listing is the server's: routes of every kind, and many of them."""
    routes = set(mounted_routes(url))
    missing = [route for route in expected if route not in routes]
    assert not missing, f"not listed: {missing}"
    assert len(routes) >= at_least, len(routes)


async def assert_no_route_leaks(url: str, owner_key: str, other_key: str) -> None:
    """Walk every route as ``other_key`` on what ``owner_key``'s identity plants; no leak.

    The owner's own read-only walk must find her marker (the check can fail), and she must
    still have everything afterwards (the other identity's writes changed nothing).
    """
    owner = get_client(url=url, api_key=owner_key)
    try:
        owned = await plant(owner)
        answers = walk(url, {"x-api-key": other_key}, owned)
        assert {(a.method, a.path) for a in answers} == set(mounted_routes(url))
        found = leaks(answers, owned)
        assert not found, "another identity's data came back:\n" + "\n".join(found)
        assert leaks(walk(url, {"x-api-key": owner_key}, owned, READS), owned), "nothing to find"
        await still_owned(owner, owned)
    finally:
        await owner.aclose()
