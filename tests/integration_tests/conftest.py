"""The session dev server: the project's own langgraph.json under `langgraph dev`.

Helpers that read what the API returns live in :mod:`tests.support.api`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.support.dev_server import DevServer, dev_server

HERE = __file__.rsplit("/", 1)[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if str(item.fspath).startswith(HERE):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def server() -> Iterator[DevServer]:
    # Several jobs at once, so concurrent tests and the load test are not serialized.
    with dev_server(args=["--n-jobs-per-worker", "8"]) as running:
        yield running


@pytest.fixture(scope="session")
async def client(server: DevServer) -> AsyncIterator[LangGraphClient]:
    # No pool timeout: tests queue many requests at once on purpose.
    sdk = get_client(url=server.url, api_key=None, timeout=(5, 120, 120, None))
    yield sdk
    await sdk.aclose()
