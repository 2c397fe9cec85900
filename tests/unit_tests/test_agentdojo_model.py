"""The AgentDojo benchmark on a real model: estimate first, confirm, retry, resume.

``python -m bench.agentdojo --model URL#name`` runs against :class:`ScriptedOpenAI`, a
loopback OpenAI-compatible server, on two banking tasks and two configurations. Everything
that loads AgentDojo runs in a child interpreter (see ``test_agentdojo.py``); this process
imports only :mod:`bench.agentdojo.model`, which does not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_groq import ChatGroq

from bench.agentdojo.model import Journal, estimate, parse_price, price, spec
from tests.support.fake_groq import FakeGroq
from tests.support.fake_openai import ScriptedOpenAI

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = "stock,stop/when_marked"
KEYS = ("GROQ_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MISTRAL_API_KEY")


@dataclass
class Invocation:
    """One run of the command, and the server's request count after it."""

    code: int
    stdout: str
    stderr: str
    requests: int
    limited: int
    failed: int


@dataclass
class Runs:
    """The three invocations, in order, and the results folder."""

    refused: Invocation
    first: Invocation
    again: Invocation
    out: Path


def _bench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m bench.agentdojo args...` without a terminal and without any real key."""
    clean = {k: v for k, v in os.environ.items() if k not in KEYS}
    return subprocess.run(  # noqa: S603  (our own interpreter and module)
        [sys.executable, "-m", "bench.agentdojo", *args],
        cwd=ROOT,
        env=clean | (env or {}),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _invoke(server: ScriptedOpenAI, out: Path, *extra: str) -> Invocation:
    model = f"{server.base_url}#scripted"
    done = _bench(
        *("--model", model, "--tasks", "3", "--suite", "banking", "--configs", CONFIGS),
        *("--out", str(out), *extra),
    )
    return Invocation(
        done.returncode,
        done.stdout,
        done.stderr,
        len(server.requests),
        server.limited,
        len(server.failed),
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    out = tmp_path_factory.mktemp("agentdojo-model")
    # task 1 ("What's my total spending ...") gets a call whose arguments are not JSON;
    # task 2 ("Read 'landlord-notices.txt' ...") a provider error (400)
    with ScriptedOpenAI(
        rate_limited=1, first_tool="get_balance", malformed="spending", failing="landlord"
    ) as server:
        refused = _invoke(server, out)
        first = _invoke(server, out, "--yes")
        again = _invoke(server, out, "--yes")
    yield Runs(refused, first, again, out)


def _rows(out: Path) -> list[dict[str, Any]]:
    (path,) = out.glob("agentdojo-*.jsonl")
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_without_a_terminal_or_yes_it_prints_the_estimate_and_refuses(runs: Runs) -> None:
    assert runs.refused.code == 2, runs.refused.stderr[-2000:]
    assert "estimate for scripted at http://127.0.0.1:" in runs.refused.stdout
    assert "price unknown" in runs.refused.stdout
    assert "--yes" in runs.refused.stderr
    assert runs.refused.requests == 0
    assert runs.refused.limited == 0


def test_the_run_prints_the_estimate_before_any_task_and_completes(runs: Runs) -> None:
    assert runs.first.code == 0, runs.first.stderr[-3000:]
    lines = runs.first.stdout.splitlines()
    estimate_at = next(i for i, line in enumerate(lines) if line.startswith("estimate for"))
    task_at = next(i for i, line in enumerate(lines) if "banking/user_task_0:" in line)
    assert estimate_at < task_at
    # 2 tasks x 2 configurations x 2 fault settings, each asked at least once
    assert runs.first.requests >= 8
    assert runs.first.failed == 4


def test_a_rate_limit_is_retried_and_the_run_goes_on(runs: Runs) -> None:
    assert runs.first.limited == 1
    rows = _rows(runs.out)[:12]  # the first invocation's
    assert len(rows) == 12
    assert {(r["config"], r["faults"]) for r in rows} == {
        (c, f) for c in CONFIGS.split(",") for f in (False, True)
    }
    assert all(not r["cause"] or "RateLimit" not in r["cause"] for r in rows)


def test_a_malformed_call_is_the_models_error_not_a_crash(runs: Runs) -> None:
    rows = [r for r in _rows(runs.out) if r["task"] == "banking/user_task_1"]
    assert len(rows) == 4
    for row in rows:
        assert row["utility"] is False
        assert row["cause"].startswith("model error: malformed call to 'get_balance'")


def test_a_provider_error_is_the_models_error_and_runs_again_on_resume(runs: Runs) -> None:
    rows = [r for r in _rows(runs.out) if r["task"] == "banking/user_task_2"]
    assert len(rows) == 8  # 4 per invocation: a provider's failure is not kept
    for row in rows:
        assert row["utility"] is False
        assert row["cause"].startswith("model error: provider: ")
        assert "400" in row["cause"]
    assert runs.again.failed == 8


def test_marks_are_judged_against_the_oracle(runs: Runs) -> None:
    marking = [r for r in _rows(runs.out) if r["config"] == "stop/when_marked"]
    task0 = [r for r in marking if r["task"] == "banking/user_task_0"]
    # the stand-in marks its first call, get_balance; the task ends with send_money
    assert [r["mark"] for r in task0] == ["too early", "too early"]
    assert all(r["marked"] == [0, "get_balance"] for r in task0)
    (result,) = runs.out.glob("agentdojo-*.json")
    document = json.loads(result.read_text("utf-8"))
    total = next(
        r
        for r in document["marking"]
        if r["suite"] == "total" and r["config"] == "stop/when_marked"
    )
    assert total["too early"] >= 2
    assert total["precision"] == 0.0
    assert document["model"]["oracle"] is False
    assert "fitted" in document["model"]["no_loss_mapping"]
    assert all(c["upper_bound"] is False for c in document["configs"])
    assert {r["task"] for r in document["tasks"]} == {f"banking/user_task_{n}" for n in range(3)}
    assert "precision" in runs.first.stdout


def test_a_second_invocation_resumes_without_running_a_task_again(runs: Runs) -> None:
    assert runs.again.code == 0, runs.again.stderr[-3000:]
    assert runs.again.requests == runs.first.requests  # only the provider's failures re-ran
    assert "8 task runs already in" in runs.again.stdout
    assert "4 task runs there raised: run again" in runs.again.stdout
    assert len(_rows(runs.out)) == 16


def test_the_openai_and_groq_clients_retry_a_429_with_retry_after() -> None:
    with ScriptedOpenAI(rate_limited=2) as server:
        model = spec(f"{server.base_url}#scripted").build()
        assert model.invoke("hi").content == "Done."
        assert server.limited == 2
    with ScriptedOpenAI(rate_limited=2) as server:
        groq = ChatGroq(model="scripted", base_url=server.url, api_key="x", max_retries=2)  # type: ignore[arg-type]
        assert groq.invoke("hi").content == "Done."
        assert server.limited == 2


def test_the_model_string_the_price_and_the_estimate() -> None:
    assert spec("groq:llama-3.3-70b-versatile").base_url is None
    local = spec("http://127.0.0.1:8000/v1/", "llama3")
    assert (local.name, local.base_url) == ("llama3", "http://127.0.0.1:8000/v1")
    assert spec("http://h:1/v1#m").name == "m"
    with pytest.raises(ValueError, match="--model-name"):
        spec("http://h:1/v1")
    with pytest.raises(ValueError, match="provider:model"):
        spec("llama3")
    assert price(spec("groq:llama-3.3-70b-versatile"), None) == (0.59, 0.79)
    assert price(local, None) is None
    assert price(local, parse_price("1,2")) == (1.0, 2.0)
    committed = {
        "rows": [
            {"config": "stock", "suite": "banking", "tasks": 4, "model_calls": 40}
            | {"input_tokens": 4_000_000, "output_tokens": 400_000},
            {"config": "other", "suite": "banking", "tasks": 4, "model_calls": 8}
            | {"input_tokens": 8, "output_tokens": 8},
        ]
    }
    scaled = estimate(committed, [("banking", "banking/a")], ["stock"], (1.0, 2.0))
    assert (scaled.model_calls, scaled.input_tokens, scaled.output_tokens) == (10, 10**6, 10**5)
    assert scaled.dollars == pytest.approx(1.2)
    per_task = {
        "tasks": [
            {"config": "stock", "task": "banking/a", "model_calls": 3}
            | {"input_tokens": 300, "output_tokens": 30},
            {"config": "stock", "task": "banking/b", "model_calls": 9}
            | {"input_tokens": 900, "output_tokens": 90},
        ]
    }
    exact = estimate(per_task, [("banking", "banking/a")], ["stock"], None)
    assert (exact.input_tokens, exact.dollars, exact.runs) == (300, None, 2)


def test_the_journal_keeps_rows_only_for_the_same_options(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    Journal(path, {"seed": 1}).add({"config": "c", "faults": False, "task": "t"})
    assert Journal(path, {"seed": 1}).get("c", False, "t") is not None
    assert Journal(path, {"seed": 2}).get("c", False, "t") is None
    assert Journal(path, {"seed": 1}, fresh=True).rows == {}


@pytest.mark.parametrize("target", ["bench-agentdojo", "bench"])
def test_make_passes_model_and_args_to_the_command(target: str) -> None:
    def planned(*options: str) -> str:
        quiet = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS")}
        done = subprocess.run(
            ["make", "-n", "--no-print-directory", target, *options],
            cwd=ROOT,
            env=quiet | {"MAKELEVEL": "0"},
            capture_output=True,
            text=True,
            check=True,
        )
        [command] = [line for line in done.stdout.splitlines() if " -m bench" in line]
        return command.strip()

    module = "bench.agentdojo" if target == "bench-agentdojo" else "bench"
    assert planned().endswith(f"python -m {module}")
    assert planned("MODEL=http://127.0.0.1:8000/v1#llama3", "ARGS=--tasks 2 --yes").endswith(
        f'python -m {module} --model "http://127.0.0.1:8000/v1#llama3" --tasks 2 --yes'
    )


def test_the_bench_readme_quotes_the_estimate_the_command_prints() -> None:
    committed = json.loads((ROOT / "bench" / "results" / "agentdojo.json").read_text("utf-8"))
    model = spec("groq:llama-3.3-70b-versatile")
    chosen = sorted({(row["task"].split("/")[0], row["task"]) for row in committed["tasks"]})
    configs = [c["name"] for c in committed["configs"]]
    guess = estimate(committed, chosen, configs, price(model, None))
    assert guess.dollars is not None
    text = " ".join((ROOT / "bench" / "README.md").read_text("utf-8").split())
    assert (
        f"over all {guess.tasks} tasks and all {guess.configs} configurations, with and without "
        f"faults ({guess.runs:,} task runs), the estimate is {guess.model_calls:,} model calls, "
        f"{guess.input_tokens:,} input and {guess.output_tokens:,} output tokens: "
        f"**${guess.dollars:.2f}**"
    ) in text


@pytest.mark.parametrize("how", ["groq:", "openai-compatible"])
def test_the_groq_stand_in_serves_a_run_by_provider_string_or_base_url(
    how: str, tmp_path: Path
) -> None:
    # The project's Groq stand-in answers AgentDojo's tasks with prose (it knows only the
    # demo's tools): every run completes, each task judged, whichever way the model is named.
    with FakeGroq() as groq:
        name = "llama-3.3-70b-versatile"
        model = f"groq:{name}" if how == "groq:" else f"{groq.openai_base_url}#{name}"
        done = _bench(
            *("--model", model, "--tasks", "1", "--suite", "banking", "--configs", "stock"),
            *("--out", str(tmp_path), "--yes"),
            env={"GROQ_API_KEY": "dummy", "GROQ_API_BASE": groq.url},
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert groq.served == 2  # one task, with and without faults: one answer each
        # the listed price by the provider's name; a server's URL says nothing of its price
        priced = "$0.59 in / $0.79 out" if how == "groq:" else "price unknown"
        assert priced in done.stdout
    (path,) = tmp_path.glob("agentdojo-*.jsonl")
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
    assert [(r["config"], r["task"], r["model_calls"]) for r in rows] == [
        ("stock", "banking/user_task_0", 1),
        ("stock", "banking/user_task_0", 1),
    ]


def test_a_key_the_provider_refuses_stops_the_run_at_once(tmp_path: Path) -> None:
    with ScriptedOpenAI(key="the-right-key") as server:
        done = _bench(
            *("--model", f"{server.base_url}#scripted", "--tasks", "3", "--suite", "banking"),
            *("--configs", CONFIGS, "--out", str(tmp_path), "--yes"),
            env={"OPENAI_API_KEY": "wrong"},
        )
    assert done.returncode == 1, done.stderr[-3000:]
    assert "the provider refused the key (" in done.stderr and "): stopped" in done.stderr
    assert "wrong" not in done.stdout + done.stderr  # the key is never quoted back
    assert (server.refused, server.requests) == (1, [])  # no retry, no second task
    assert list(tmp_path.glob("agentdojo-*.json")) == []
    rows = [p.read_text("utf-8") for p in tmp_path.glob("agentdojo-*.jsonl")]
    assert rows in ([], [""]), rows  # no task counted as run: a rerun with a good key runs all
