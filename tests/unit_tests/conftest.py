from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langsmith.env import get_langchain_env_var_metadata

from agent.tools.payments import DB_ENV
from tests.support.graph_runs import Observed, build, run, tool_steps
from tests.support.langsmith_collector import LangSmithCollector

# Re-exported for modules that still import them from here (tests/compat,
# tests/unit_tests/test_tools_and_errors.py): import them from tests.support.graph_runs.
__all__ = ["Observed", "build", "run", "tool_steps"]


@pytest.fixture(autouse=True, scope="session")
def session_payments_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The payment record of fixtures wider than one test: the session's, never the clone's."""
    path = tmp_path_factory.mktemp("payments") / "payments.sqlite3"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(DB_ENV, str(path))
        yield path


@pytest.fixture(autouse=True)
def payments_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own payment record: a charge made in one test is never another's replay."""
    path = tmp_path / "payments.sqlite3"
    monkeypatch.setenv(DB_ENV, str(path))
    return path


@pytest.fixture(params=["legacy", "middleware"])
def graph_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[LangSmithCollector]:
    """A loopback LangSmith collector, with no proxy between it and the client."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("LANGSMITH_REVISION_ID", "tracing-test")  # no `git describe`
    get_langchain_env_var_metadata.cache_clear()  # langsmith caches the env it copies
    with LangSmithCollector() as server:
        yield server
    get_langchain_env_var_metadata.cache_clear()
