"""A real model's calls outside the ground truth, and runs that raise, under ``+parallel``.

``python -m bench.agentdojo --model URL#name`` runs the first three banking tasks under
``stock+parallel`` and ``stop/when_marked+parallel`` against a loopback OpenAI-compatible
stand-in (:class:`Failing`, a :class:`ScriptedOpenAI`) whose first call, ``get_balance``, is
in no task's ground truth. Task 0 runs to the end; task 1's provider fails after the tool's
result (one request answered, one call made); task 2's provider fails on the first request.
Everything that loads AgentDojo runs in a child interpreter (see ``test_agentdojo.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.fake_openai import ScriptedOpenAI
from tests.support.loopback import Request, Response
from tests.unit_tests.test_agentdojo_model import _bench

CONFIGS = ("stock+parallel", "stop/when_marked+parallel")
OUTSIDE = "get_balance"
"""The stand-in's first call: no banking task's ground truth calls it."""


class Failing(ScriptedOpenAI):
    """The stand-in, answering ``400`` after a tool result to prompts containing ``after``."""

    def __init__(self, *, after: str, **options: Any) -> None:
        """Create the server; ``options`` are :class:`ScriptedOpenAI`'s."""
        super().__init__(**options)
        self.after = after.lower()

    def handle(self, request: Request) -> Response:
        """Answer as the stand-in does, except a tool's result in a prompt with ``after``."""
        try:
            payload = json.loads(request.body or b"{}")
        except json.JSONDecodeError:
            payload = {}
        messages = [m for m in payload.get("messages") or [] if isinstance(m, dict)]
        prompt = next((str(m.get("content")) for m in messages if m.get("role") == "user"), "")
        if messages and messages[-1].get("role") == "tool" and self.after in prompt.lower():
            with self._lock:
                self.failed.append(prompt)
            body = b'{"error": {"message": "bad request", "type": "invalid_request_error"}}'
            return Response(400, "application/json", body)
        return super().handle(request)


@dataclass
class Runs:
    """Both invocations' outputs, the requests answered after each, and the results folder."""

    first: str
    again: str
    answered: tuple[int, int]
    out: Path


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    out = tmp_path_factory.mktemp("agentdojo-outside")
    with Failing(after="spending", first_tool=OUTSIDE, failing="landlord") as server:
        done = []
        answered = []
        for _ in range(2):
            ran = _bench(
                *("--model", f"{server.base_url}#scripted", "--tasks", "3", "--suite", "banking"),
                *("--configs", ",".join(CONFIGS), "--price", "1,1", "--out", str(out), "--yes"),
            )
            assert ran.returncode == 0, ran.stderr[-3000:]
            done.append(ran.stdout)
            answered.append(len(server.requests))
    yield Runs(done[0], done[1], (answered[0], answered[1]), out)


def _rows(out: Path) -> list[dict[str, Any]]:
    (path,) = out.glob("agentdojo-*.jsonl")
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_a_call_outside_the_ground_truth_runs_and_counts(runs: Runs) -> None:
    rows = [r for r in _rows(runs.out) if r["task"] == "banking/user_task_0"]
    assert len(rows) == 4
    assert not any(r["errored"] for r in rows)
    assert all("IndexError" not in str(r["cause"]) for r in rows)
    clean = {r["config"]: r for r in rows if not r["faults"]}
    # stock+parallel: the call, its result, the stand-in's answer; the task is not done
    stock = clean["stock+parallel"]
    assert (stock["model_calls"], stock["calls"]) == (2, 1)
    assert stock["cause"] == "ended after call 1/2 get_balance: the last 1 call(s) never ran"
    # the marked call stops the run after it: one request, one call, marked too early
    marked = clean["stop/when_marked+parallel"]
    assert (marked["model_calls"], marked["calls"]) == (1, 1)
    assert marked["marked"] == [0, OUTSIDE]
    assert marked["mark"] == "too early"
    assert all(r["dollars"] > 0 for r in rows)


def test_every_answered_request_is_counted_even_in_a_run_that_raised(runs: Runs) -> None:
    rows = _rows(runs.out)
    assert sum(r["model_calls"] for r in rows) == runs.answered[1]
    raised = [r for r in rows if r["task"] == "banking/user_task_1" and r["errored"]]
    assert {(r["config"], r["faults"]) for r in raised} == {
        ("stock+parallel", False),
        ("stock+parallel", True),
    }
    for row in raised:  # one request answered, the call made, then the provider failed
        assert row["model_calls"] == 1
        assert row["input_tokens"] > 0
        assert row["dollars"] > 0
        assert row["cause"].startswith("model error: provider: ")
    clean = next(r for r in raised if not r["faults"])
    assert clean["calls"] == 1


def test_a_run_that_raised_is_not_a_missed_mark(runs: Runs) -> None:
    rows = [r for r in _rows(runs.out) if r["config"] == "stop/when_marked+parallel"]
    raised = [r for r in rows if r["task"] == "banking/user_task_2"]
    assert raised and all(r["errored"] and r["mark"] == "errored" for r in raised)
    assert all(r["oracle_mark"] is not None for r in raised)  # a "missed" mark before
    (result,) = runs.out.glob("agentdojo-*.json")
    document = json.loads(result.read_text("utf-8"))
    total = next(
        r
        for r in document["marking"]
        if r["suite"] == "total" and r["config"] == "stop/when_marked+parallel"
    )
    assert (total["missed"], total["errored"], total["runs"]) == (0, 2, 6)
    assert total["right"] + total["too early"] + total["spurious"] + total["none"] == 4
    assert {(e["task"], e["config"]) for e in document["model"]["errored"]} == {
        ("banking/user_task_1", "stock+parallel"),
        ("banking/user_task_2", "stock+parallel"),
        ("banking/user_task_2", "stop/when_marked+parallel"),
    }
    assert "errored 2" in runs.first


def test_a_run_that_raised_runs_again_on_resume(runs: Runs) -> None:
    rows = _rows(runs.out)
    # 12 runs, 6 of them raised (task 1 under stock+parallel, task 2 everywhere): run again
    assert len(rows) == 12 + 6
    assert "6 task runs already in" in runs.again
    assert "6 task runs there raised: run again" in runs.again
    assert runs.answered[1] == runs.answered[0] + 2  # task 1's first request, twice
