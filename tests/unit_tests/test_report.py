"""The savings report over runs traced into the LangSmith stand-in.

Both graphs run in-process, traced with the real ``langsmith`` client into the loopback
collector: runs that stop hard (a completed search, a completed checkout, a spend-cap refusal)
and runs that go back to the model (``stop_mode="never"``). ``report`` then reads them back
through the real client's ``list_runs`` and ``get_run_stats``, served by the collector: its
totals are the sums of the root runs' metadata, its JSON has the documented keys, its chart
is one self-contained page, and each failure is one line with its exit status. The commands
docs/tracing.md prints run here as printed.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent.tracing.metadata import flush_feedback
from agent.tracing.prices import PRICES_VAR, usd
from client import report
from client.cli import main
from tests.support.langsmith_collector import LangSmithCollector
from tests.support.tracing import metadata, trace_both

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "stop-on-artifact"
PRICES = json.dumps({"offline": [0.59, 0.79]})
RUNS: list[tuple[str, dict[str, Any]]] = [
    # (query, context): what each graph runs once
    ("What does a checkpointer do?", {"force_outcome": "success"}),
    ("What does a checkpointer do?", {"force_outcome": "success", "stop_mode": "never"}),
    ("buy a desk lamp for 40", {"spend_cap": 500, "force_outcome": "success"}),
    ("buy a standing desk for 900", {"spend_cap": 500, "force_outcome": "success"}),
]
COUNTS = {
    "model_calls": "model_calls",
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "model_calls_saved": "stop_saved_model_calls",
    "input_tokens_saved": "stop_saved_input_tokens",
    "output_tokens_saved": "stop_saved_output_tokens",
}
"""The report's figures, by the root-run metadata key each adds up."""


@pytest.fixture(scope="module")
def traced() -> Iterator[tuple[LangSmithCollector, list[dict[str, Any]]]]:
    """A collector holding both graphs' runs of :data:`RUNS`, priced, in :data:`PROJECT`."""
    with pytest.MonkeyPatch.context() as patch:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
            patch.delenv(name, raising=False)
        patch.setenv("NO_PROXY", "127.0.0.1,localhost")
        patch.setenv("LANGSMITH_REVISION_ID", "report-test")
        patch.setenv(PRICES_VAR, PRICES)
        with LangSmithCollector(projects={"empty-project"}, page_size=3) as collector:
            import asyncio

            roots: list[dict[str, Any]] = []
            for index, (query, context) in enumerate(RUNS):
                both = asyncio.run(
                    trace_both(collector, query, context, thread_id=f"r{index}", project=PROJECT)
                )
                roots.extend(root for _, root, _ in both.values())
            flush_feedback()
            yield collector, roots


@pytest.fixture
def env(
    traced: tuple[LangSmithCollector, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> LangSmithCollector:
    """The report's environment: the stand-in, a dummy key, the price of the offline model."""
    collector, _ = traced
    for name in list(os.environ):
        if name.startswith(("LANGSMITH_", "LANGCHAIN_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("LANGSMITH_ENDPOINT", collector.url)
    monkeypatch.setenv("LANGSMITH_API_KEY", "dummy")
    monkeypatch.setenv(PRICES_VAR, PRICES)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    return collector


def run_report(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    status = main(["report", *args], out=out)
    return status, out.getvalue()


def as_json(*args: str) -> dict[str, Any]:
    status, text = run_report("--project", PROJECT, "--json", *args)
    assert status == 0, text
    found: dict[str, Any] = json.loads(text)
    return found


def test_the_totals_are_the_sums_of_the_root_runs_metadata(
    env: LangSmithCollector, traced: tuple[LangSmithCollector, list[dict[str, Any]]]
) -> None:
    _, roots = traced
    found = as_json()
    sent = [metadata(root) for root in roots]
    assert len(sent) == 8 and found["totals"]["runs"] == 8
    for key, source in COUNTS.items():
        assert found["totals"][key] == sum(m[source] for m in sent), key
    assert found["totals"]["model_calls_saved"] > 0 and found["totals"]["model_calls"] > 0
    ended = [m for m in sent if m["stop_saved_model_calls"] > 0]
    assert found["totals"]["ended_early"] == len(ended)
    assert found["totals"]["ended_early_share"] == round(len(ended) / 8, 4)
    assert found["totals"]["usd_saved"] == pytest.approx(sum(m["stop_saved_usd"] for m in sent))
    made = sum(usd(m["input_tokens"], m["output_tokens"], (0.59, 0.79)) for m in sent)
    assert found["totals"]["usd"] == pytest.approx(made, abs=1e-6)
    for group, key in (("by_rule", "stop_rule"), ("by_tool", "stop_tool")):
        names = {m[key] or report.NO_TOOL for m in sent}
        assert set(found[group]) == names, group
        for name, figures in found[group].items():
            mine = [m for m in sent if (m[key] or report.NO_TOOL) == name]
            assert figures["runs"] == len(mine), (group, name)
            assert figures["model_calls_saved"] == sum(m["stop_saved_model_calls"] for m in mine)
    assert {"completed", "policy_block"} <= set(found["by_rule"])
    assert {"search", "checkout"} <= set(found["by_tool"])
    assert sum(step["runs"] for step in found["over_time"]) == 8


def test_the_report_reads_root_runs_by_the_documented_filters_and_no_content(
    env: LangSmithCollector,
) -> None:
    env.requests_log.clear()
    as_json("--since", "24h")
    queries = [json.loads(r.body) for r in env.requests_log if r.path == "/runs/query"]
    assert len(queries) >= 3, "8 runs in pages of 3: the cursor is followed"
    first = queries[0]
    assert first["is_root"] is True and first["filter"] == report.RUN_FILTER
    assert first["select"] == report.SELECT and "inputs" not in first["select"]
    since = datetime.fromisoformat(first["start_time"])
    assert timedelta(hours=23) < datetime.now(UTC) - since < timedelta(hours=25)


def test_the_json_keys_are_the_documented_ones(env: LangSmithCollector) -> None:
    found = as_json("--bucket", "hour")
    assert tuple(found) == report.REPORT_KEYS
    assert tuple(found["totals"]) == report.TALLY_KEYS
    assert all(tuple(f) == report.TALLY_KEYS for f in found["by_rule"].values())
    assert all(tuple(s) == ("start", *report.TALLY_KEYS) for s in found["over_time"])
    assert found["project"] == PROJECT and found["url"] is None and found["bucket"] == "hour"
    assert len(found["over_time"]) in (24 * 7, 24 * 7 + 1), "every hour of the 7 days"
    page = (ROOT / "docs" / "tracing.md").read_text("utf-8")
    section = page[page.index("`--json` keys") : page.index("Exit status:", page.index("`--json`"))]
    named = re.findall(r"`([a-z_]+)`", section)
    assert tuple(named[: len(report.REPORT_KEYS)]) == report.REPORT_KEYS
    assert tuple(named[-len(report.TALLY_KEYS) :]) == report.TALLY_KEYS


def test_dollars_are_absent_not_zero_without_a_price(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PRICES_VAR, raising=False)
    now = datetime.now(UTC)
    sent = {"model_calls": 2, "input_tokens": 10, "model_name": "offline", "stop_saved_usd": None}
    summary = report.summarize(
        [report.figures_of(sent, now)], PROJECT, now - timedelta(days=7), now
    )
    figures = summary.as_json()["totals"]
    assert figures["usd"] is None and figures["usd_saved"] is None
    assert figures["model_calls"] == 2 and figures["runs"] == 1 and summary.bucket == "day"
    out = io.StringIO()
    report.render(summary, report._terminal(out))
    assert "dollars" in out.getvalue() and "$" not in out.getvalue()


def test_the_table_names_the_figures_and_no_content(env: LangSmithCollector) -> None:
    status, text = run_report("--project", PROJECT)
    assert status == 0
    assert "8 runs since" in text and "ended early" in text
    for label in ("model calls", "input tokens", "output tokens", "dollars", "by stop rule"):
        assert label in text, label
    assert "completed" in text and "checkout" in text
    assert "checkpointer" not in text.lower() and "lamp" not in text, "no run content"


def test_the_chart_is_one_self_contained_page(env: LangSmithCollector, tmp_path: Path) -> None:
    chart = tmp_path / "savings.html"
    status, _ = run_report("--project", PROJECT, "--since", "24h", "--chart", str(chart))
    assert status == 0
    page = chart.read_text("utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.count("<svg") == 3
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page), "nothing fetched"
    assert "<script" not in page and "@import" not in page
    assert "model calls" in page and "saved" in page and "<rect" in page


def test_the_chart_as_png(env: LangSmithCollector, tmp_path: Path) -> None:
    chart = tmp_path / "savings.png"
    assert run_report("--project", PROJECT, "--chart", str(chart))[0] == 0
    assert chart.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_a_progress_bar_on_a_terminal_only(env: LangSmithCollector) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    env.requests_log.clear()
    err = Terminal()
    args = argparse.Namespace(
        project=PROJECT, url=None, since="7d", bucket=None, json=True, chart=None
    )
    assert report.run(args, io.StringIO(), err) == 0
    assert "reading runs" in err.getvalue()
    assert [r.path for r in env.requests_log].count("/runs/stats") == 1, "its total"
    env.requests_log.clear()
    assert report.run(args, io.StringIO(), io.StringIO()) == 0
    assert "/runs/stats" not in [r.path for r in env.requests_log]


@pytest.mark.parametrize(
    ("setup", "args", "status", "says"),
    [
        ("no key", ["--project", PROJECT], 2, "LANGSMITH_API_KEY is not set"),
        ("no project", [], 3, "no LangGraph server answered; tried http://127.0.0.1:"),
        ("", ["--project", "no-such-project"], 1, "--project: LangSmith has no project"),
        ("", ["--project", "empty-project"], 5, "no runs of the graphs in the project since"),
        ("unreachable", ["--project", PROJECT], 3, "LangSmith did not answer at http://127.0.0.1:"),
        ("", ["--project", PROJECT, "--since", "yesterday"], 2, "argument --since: give a"),
        (
            "",
            ["--project", PROJECT, "--since", "2999-01-01"],
            2,
            "argument --since: the period starts in",
        ),
        (
            "",
            ["--project", PROJECT, "--chart", "chart.svg"],
            2,
            "argument --chart: the path ends in",
        ),
        ("bad prices", ["--project", PROJECT], 2, f"{PRICES_VAR} must be a JSON object"),
    ],
)
def test_each_failure_is_one_line_with_its_status(
    env: LangSmithCollector,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setup: str,
    args: list[str],
    status: int,
    says: str,
) -> None:
    if setup == "no key":
        monkeypatch.delenv("LANGSMITH_API_KEY")
    elif setup == "no project":  # then the server the client finds: none here
        with LangSmithCollector() as gone:
            monkeypatch.setenv("LANGGRAPH_URL", gone.url)
    elif setup == "unreachable":
        with LangSmithCollector() as gone:
            url = gone.url
        monkeypatch.setenv("LANGSMITH_ENDPOINT", url)
    elif setup == "bad prices":
        monkeypatch.setenv(PRICES_VAR, "sk-not-json")
    capsys.readouterr()
    found, out = run_report(*args)
    err = capsys.readouterr().err
    assert found == status, err
    assert out == "" and err.count("\n") == 1 and err.startswith(f"error: {says}"), err
    assert "no-such-project" not in err and "yesterday" not in err and "sk-not" not in err


def test_a_project_and_a_server_at_once_is_a_bad_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["report", "--project", PROJECT, "--url", "http://127.0.0.1:1"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.startswith("error: argument --url: not allowed with")


def doc_commands() -> list[str]:
    page = (ROOT / "docs" / "tracing.md").read_text("utf-8")
    section = page[page.index("## A savings dashboard") : page.index("## What a trace keeps")]
    blocks = re.findall(r"^```bash\n(.*?)^```", section, re.S | re.M)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def test_the_docs_print_the_report_commands() -> None:
    commands = doc_commands()
    assert commands[0].startswith("make report ARGS=") and len(commands) == 3
    assert all(c.startswith(".venv/bin/python -m client report ") for c in commands[1:])


@pytest.mark.parametrize("line", doc_commands())
def test_every_report_command_the_docs_print_runs(
    env: LangSmithCollector, tmp_path: Path, line: str
) -> None:
    environ = {k: v for k, v in os.environ.items() if k != PRICES_VAR}
    if line.startswith("make "):
        done = subprocess.run(
            ["bash", "-c", line], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300
        )
    else:  # from a folder of its own (the chart lands there), the clone's .venv linked in
        (tmp_path / ".venv").symlink_to(ROOT / ".venv")
        environ["PYTHONPATH"] = str(ROOT)
        done = subprocess.run(
            shlex.split(line),
            cwd=tmp_path,
            env=environ,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    if "--json" in line:
        assert json.loads(done.stdout)["totals"]["runs"] == 8
        assert json.loads(done.stdout)["totals"]["usd"] is None, "no price in this shell"
    elif "--chart" in line:
        assert (tmp_path / "savings.html").read_text("utf-8").startswith("<!DOCTYPE html>")
    else:
        assert "8 runs since" in done.stdout


def chart_paths() -> list[tuple[str, str]]:
    """``(page, PATH)`` for each ``--chart PATH`` the README and docs/ print."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = []
    for page in pages:
        for block in re.findall(r"^```bash\n(.*?)^```", page.read_text("utf-8"), re.S | re.M):
            for line in block.splitlines():
                words = shlex.split(line) if line.strip() else []
                found += [
                    (page.name, words[i + 1])
                    for i, word in enumerate(words[:-1])
                    if word == "--chart"
                ]
    return found


def test_the_docs_print_chart_commands() -> None:
    assert ("README.md", "savings.png") in chart_paths()


@pytest.mark.parametrize(("page", "path"), chart_paths())
def test_every_chart_the_docs_write_lands_where_git_ignores_it(page: str, path: str) -> None:
    """A newcomer who follows the pages ends with a clean ``git status``: no chart in it."""
    assert not Path(path).is_absolute() and ".." not in Path(path).parts, (page, path)
    tracked = subprocess.run(
        ["git", "ls-files", "--error-unmatch", path], cwd=ROOT, capture_output=True, timeout=60
    )
    assert tracked.returncode != 0, f"{page}: {path} is a tracked file; the command overwrites it"
    ignored = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT, timeout=60)
    assert ignored.returncode == 0, f"{page}: {path} would show in git status"
