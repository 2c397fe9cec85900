"""The forced-outcome matrix, the streamed decisions and the traces, on the production server.

The matrix is ``python -m client check`` against the stack's URL, so it follows
:data:`client.scenarios.SCENARIOS` wherever they go. The stream and trace tests hold the
same promises as the dev-server suite: every ``stop_decision`` arrives as a custom event,
the last one is the thread's ``stop_decision``, and the trace's root run carries the stop
metadata and the totals.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from langgraph_sdk.client import LangGraphClient

from agent.tracing.metadata import SAVED_KEYS, STOP_KEYS, TOTAL_KEYS
from client.cli import stream_run
from client.scenarios import GRAPHS, SCENARIOS, Scenario
from tests.prod_tests.conftest import ALICE_KEY
from tests.support.api import decisions_in_history
from tests.support.langsmith_collector import LangSmithCollector
from tests.support.prod_server import ProdServer
from tests.support.tracing import metadata


def first(action: str) -> Scenario:
    return next(s for s in SCENARIOS if s.action == action and len(set(s.calls)) <= 1)


PICKED = [first("stop"), first("continue")]


def test_the_check_matrix_matches_on_both_graphs(stack: ProdServer) -> None:
    env = {k: v for k, v in os.environ.items() if k != "LANGGRAPH_URL"}
    env["LANGGRAPH_API_KEY"] = ALICE_KEY
    done = subprocess.run(
        [sys.executable, "-m", "client", "check", "--url", stack.url],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    rows = len(GRAPHS) * len(SCENARIOS)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert f"{rows}/{rows} rows match" in done.stdout


@pytest.mark.parametrize("scenario", PICKED, ids=lambda s: s.name)
@pytest.mark.parametrize("graph", GRAPHS)
async def test_stop_decisions_stream_as_custom_events_and_land_in_thread_state(
    alice: LangGraphClient, graph: str, scenario: Scenario
) -> None:
    seen = await stream_run(alice, graph, scenario.query, dict(scenario.context))
    assert seen.decisions, "no stop_decision custom event arrived"
    assert seen.decision is not None
    assert seen.decisions[-1] == seen.decision
    assert (seen.decision["action"], seen.decision["rule"]) == (scenario.action, scenario.rule)
    assert seen.path == scenario.path(graph)
    history = await alice.threads.get_history(seen.thread_id, limit=100)
    assert decisions_in_history(history)[-1] == seen.decision  # type: ignore[arg-type]


@pytest.mark.parametrize("graph", GRAPHS)
async def test_the_root_run_carries_the_stop_metadata_and_totals(
    alice: LangGraphClient, collector: LangSmithCollector, graph: str
) -> None:
    scenario = PICKED[0]
    seen = await stream_run(alice, graph, scenario.query, dict(scenario.context))
    [run] = await alice.runs.list(seen.thread_id)
    run_id = run["run_id"]

    runs = collector.wait_for(
        lambda runs: (
            bool(runs.get(run_id, {}).get("end_time")) and "model_calls" in metadata(runs[run_id])
        ),
        timeout=60,
    )
    root = runs[run_id]
    assert not root.get("parent_run_id"), "the API's run is the root of its trace"
    found = metadata(root)
    assert set(STOP_KEYS) | set(TOTAL_KEYS) | set(SAVED_KEYS) <= set(found)
    saved = (seen.decision or {}).get("saved")
    assert found["stop_saved_model_calls"] == (1 if saved else 0)
    if saved:  # and the same as feedback on the root run, sent by the worker that ran it
        collector.wait_for(
            lambda _: any(
                str(f.get("run_id")) == run_id and f["key"] == "stop_saved_input_tokens"
                for f in collector.feedback
            ),
            timeout=60,
        )
        [score] = [
            f["score"]
            for f in collector.feedback
            if str(f.get("run_id")) == run_id and f["key"] == "stop_saved_input_tokens"
        ]
        assert score == found["stop_saved_input_tokens"] == saved["input_tokens"]
    assert found["stop_action"] == scenario.action
    assert found["stop_rule"] == scenario.rule
    assert found["model_calls"] == scenario.model_calls
    assert found["thread_id"] == seen.thread_id
