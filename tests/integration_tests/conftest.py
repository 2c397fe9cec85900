"""The session dev server: the project's own langgraph.json under `langgraph dev`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from tests.support.dev_server import DevServer, dev_server


@pytest.fixture(scope="session")
def server() -> Iterator[DevServer]:
    # Several jobs at once, so concurrent tests and the load test are not serialized.
    with dev_server(args=["--n-jobs-per-worker", "8"]) as running:
        yield running


@pytest.fixture(scope="session")
async def client(server: DevServer) -> AsyncIterator[LangGraphClient]:
    sdk = get_client(url=server.url)
    yield sdk
    await sdk.aclose()
