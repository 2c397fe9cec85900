"""No route of ``langgraph dev`` lets one identity read another's data.

A dev server with keys for alice and bob serves :mod:`tests.support.routes_app`, so the walk
reads every route the server mounts from the running app (the API, ``/internal/*``,
``/deploy``, A2A, MCP, the thread protocol, the UI and meta routes). Alice plants a marker in
a thread with a finished run, an assistant, a cron and a store item; bob calls every route
with her ids in the path, the query and the body. No 2xx answer may hold her marker or her
ids, and she still has everything afterwards. The production server has the same walk
(``tests/prod_tests/test_prod_route_walk.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.auth import API_KEYS_ENV
from tests.support.dev_server import CONFIG, ROOT, DevServer, dev_server
from tests.support.route_walk import ROUTES_APP, assert_no_route_leaks, assert_routes_listed

ALICE_KEY = "walk-alice-2b7e41"
BOB_KEY = "walk-bob-9c03d5"


@pytest.fixture(scope="module")
def walked_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    config = json.loads(CONFIG.read_text("utf-8"))
    config.update({"dependencies": [str(ROOT)], "http": {"app": ROUTES_APP}})
    config.pop("env", None)
    path = Path(tmp_path_factory.mktemp("walk-config")) / "langgraph.json"
    path.write_text(json.dumps(config), "utf-8")
    env = {API_KEYS_ENV: f"{ALICE_KEY}:alice,{BOB_KEY}:bob"}
    with dev_server(env=env, config=path) as running:
        yield running


def test_the_walk_reads_every_route_from_the_running_app(walked_server: DevServer) -> None:
    # Not a list to walk: a check that the listing is the server's, routes of every kind.
    expected = [
        ("GET", "/threads/{thread_id}/state"),
        ("GET", "/internal/debug/thread/{thread_id}"),
        ("POST", "/internal/truncate"),
        ("POST", "/deploy"),
        ("POST", "/a2a/{assistant_id}"),
        ("POST", "/threads/{thread_id}/commands"),
        ("GET", "/ok"),
    ]
    assert_routes_listed(walked_server.url, expected, at_least=60)


async def test_no_route_gives_bob_anything_of_alices(walked_server: DevServer) -> None:
    await assert_no_route_leaks(walked_server.url, ALICE_KEY, BOB_KEY)
