"""``report --url``: the savings of a ``langgraph dev`` server's threads.

The same runs go to the session dev server and, traced in-process, into the LangSmith
stand-in: the report over the server's threads and the report over the project's root runs
add up to the same figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from langgraph_sdk import get_sync_client
from stop_on_artifact import whatif

from agent.tracing.metadata import flush_feedback
from agent.tracing.prices import PRICES_VAR
from client import report
from client.cli import main
from client.scenarios import GRAPHS
from tests.support.dev_server import DevServer, dev_server, free_port
from tests.support.langsmith_collector import LangSmithCollector
from tests.support.tracing import trace_both

PROJECT = "report-server"
RUNS: list[tuple[str, dict[str, Any]]] = [
    ("What does a checkpointer do?", {"force_outcome": "success"}),
    ("What does a checkpointer do?", {"force_outcome": "success", "stop_mode": "never"}),
    ("buy a desk lamp for 40", {"spend_cap": 500, "force_outcome": "success"}),
    ("buy a standing desk for 900", {"spend_cap": 500, "force_outcome": "success"}),
]


@pytest.fixture(scope="module")
def server() -> Iterator[DevServer]:
    # A server of its own: the report reads every thread that changed in the period, and
    # the session server's other tests leave runs finishing there.
    with dev_server() as running:
        yield running


@pytest.fixture
def priced(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv(PRICES_VAR, json.dumps({"offline": [0.59, 0.79]}))
    monkeypatch.delenv("LANGSMITH_PROJECT", raising=False)
    yield


def as_json(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    assert main(["report", "--json", *args], out=out) == 0
    found: dict[str, Any] = json.loads(out.getvalue())
    return found


def test_the_server_report_adds_up_what_the_traced_report_does(
    server: DevServer, priced: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    sdk = get_sync_client(url=server.url, api_key=None)
    for graph in GRAPHS:
        for query, context in RUNS:
            message: dict[str, Any] = {"role": "user", "content": query}
            thread = sdk.threads.create()
            sdk.runs.wait(
                thread["thread_id"],
                graph,
                input=cast(Any, {"messages": [message]}),
                context=context,
            )
    from_server = as_json("--url", server.url, "--since", started)

    with LangSmithCollector() as collector:
        for index, (query, context) in enumerate(RUNS):
            asyncio.run(
                trace_both(collector, query, context, thread_id=f"s{index}", project=PROJECT)
            )
        flush_feedback()
        monkeypatch.setenv("LANGSMITH_ENDPOINT", collector.url)
        monkeypatch.setenv("LANGSMITH_API_KEY", "dummy")
        from_langsmith = as_json("--project", PROJECT)

    assert from_server["url"] == server.url and from_server["project"] is None
    assert from_server["totals"]["runs"] == 8 and from_server["totals"]["model_calls_saved"] == 6
    for key in ("totals", "by_rule", "by_tool"):
        assert from_server[key] == from_langsmith[key], key

    # The what-if over the same server's threads (#65), each result's own artifact as the
    # mapping, under the default settings: the same model calls, no turn cut, and the saving
    # the report adds up, plus the answering call of each stop_mode=never thread (one per
    # graph), which a hard stop would have skipped.
    out = io.StringIO()
    mapping = "tests.support.recorded:recorded"
    with contextlib.redirect_stdout(out):
        assert whatif.main([server.url, "--mapping", mapping, "--json"]) == 0
    replayed = json.loads(out.getvalue())
    totals, never = from_server["totals"], len(GRAPHS)
    assert (replayed["traces"], replayed["cut"]) == (8, [])
    assert replayed["model_calls"] == totals["model_calls"]
    assert replayed["model_calls_saved"] == totals["model_calls_saved"] + never
    ended = {tool: row["ended"] for tool, row in replayed["tools"].items()}
    early = {tool: row["ended_early"] for tool, row in from_server["by_tool"].items()}
    assert sum(ended.values()) == sum(early.values()) + never, (ended, early)


def test_no_server_and_a_quiet_period_are_one_line_each(
    server: DevServer, priced: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = io.StringIO()
    assert main(["report", "--url", f"http://127.0.0.1:{free_port()}"], out=out) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: no LangGraph server answered") and err.count("\n") == 1
    since = (datetime.now(UTC) - timedelta(seconds=0.5)).isoformat()
    assert main(["report", "--url", server.url, "--since", since], out=out) == report.EXIT_NO_RUNS
    err = capsys.readouterr().err
    assert err.startswith("error: no threads on the server changed since") and err.count("\n") == 1
    assert out.getvalue() == ""
