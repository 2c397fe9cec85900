"""The session stack: Aegra with 2 workers on a private PostgreSQL and Redis, keys on.

It serves the project's graphs (from ``aegra.json``) plus ``slow``, a graph whose tool
takes a few seconds, so a test can kill the worker that holds a running run. Every run is
traced into a loopback LangSmith collector. Crash recovery uses :data:`SHORT_LEASE`. Its
``http.app`` is :mod:`tests.support.routes_app` (the project's ``agent.http:app`` plus a
route listing every route), so the route walk reads what Aegra mounts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agent.auth import API_KEYS_ENV
from tests.support.langsmith_collector import LangSmithCollector
from tests.support.prod_server import (
    SHORT_LEASE,
    ProdServer,
    prod_server,
    state_folder,
    write_config,
)
from tests.support.route_walk import ROUTES_APP

HERE = __file__.rsplit("/", 1)[0]
ALICE_KEY = "prod-alice-5e0c2b"
BOB_KEY = "prod-bob-81f3a9"
KEYS = f"{ALICE_KEY}:alice,{BOB_KEY}:bob"
SLOW_SECONDS = 6.0

SLOW_GRAPH = f'''
"""A legacy graph with a slow tool, served only by tests/prod_tests."""

import asyncio

from langchain_core.tools import tool

from agent.graphs.legacy import build_legacy
from agent.tools import TOOLS


@tool
async def slow(query: str) -> str:
    """Take a few seconds, then answer."""
    await asyncio.sleep({SLOW_SECONDS})
    return f"slow result for {{query}}"


graph = build_legacy([*TOOLS, slow])
'''


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if str(item.fspath).startswith(HERE):
            item.add_marker(pytest.mark.prod)


@pytest.fixture(scope="session")
def collector() -> Iterator[LangSmithCollector]:
    with LangSmithCollector() as running:
        yield running


@pytest.fixture(scope="session")
def stack(
    tmp_path_factory: pytest.TempPathFactory, collector: LangSmithCollector
) -> Iterator[ProdServer]:
    folder = tmp_path_factory.mktemp("prod-config")
    (folder / "slow_graph.py").write_text(SLOW_GRAPH, "utf-8")
    # The project's http app plus GET /__routes__, for the route walk.
    config = write_config(
        folder, {"slow": f"{folder / 'slow_graph.py'}:graph"}, http_app=ROUTES_APP
    )
    env = {API_KEYS_ENV: KEYS, **SHORT_LEASE, **collector.env()}
    with state_folder() as state, prod_server(state, env, config=config) as running:
        yield running


@pytest.fixture(scope="session")
async def alice(stack: ProdServer) -> AsyncIterator[LangGraphClient]:
    client = get_client(url=stack.url, api_key=ALICE_KEY, timeout=(5, 120, 120, None))
    yield client
    await client.aclose()
