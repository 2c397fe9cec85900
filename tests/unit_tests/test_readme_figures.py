"""The AgentDojo figures the READMEs quote come from the committed ``make bench-agentdojo`` run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "agentdojo.json"
LIBRARY_README = ROOT / "libs" / "stop-on-artifact" / "README.md"
README = ROOT / "README.md"


def total(config: str, faults: float = 0.0) -> dict[str, Any]:
    rows = json.loads(RESULTS.read_text("utf-8"))["rows"]
    [row] = [
        r for r in rows if r["suite"] == "total" and r["config"] == config and r["faults"] == faults
    ]
    return dict(row)


def saved(config: str) -> int:
    """Percent of stock's model calls a configuration saves, rounded as the READMEs say it."""
    calls, stock = int(total(config)["model_calls"]), int(total("stock")["model_calls"])
    return round(100 * (1 - calls / stock))


def test_the_library_readme_quotes_the_committed_run() -> None:
    text = " ".join(LIBRARY_README.read_text("utf-8").split())
    said = re.search(
        r"every write stopping lost (\d+); .* lost none and saved (\d+)% of model calls; "
        r"a perfectly marked call, (\d+)%, and (\d+)% beside independent calls in one step",
        text,
    )
    assert said is not None
    lost, no_loss, marked, parallel = (int(x) for x in said.groups())
    team = total("stop/team")
    assert lost == team["tasks"] - team["utility"]
    assert total("stop/no-loss")["utility"] == total("stop/no-loss")["tasks"]
    assert no_loss == saved("stop/no-loss")
    assert marked == saved("stop/when_marked")
    assert parallel == saved("stop/when_marked+parallel")


def test_the_readme_quotes_the_committed_run() -> None:
    text = " ".join(README.read_text("utf-8").split())
    said = re.search(
        r"loses (\d+) tasks, .* loses none saves (\d+)% .* an upper bound\) saves (\d+)% "
        r".* it saves (\d+)% \((\d+) model calls against (\d+),",
        text,
    )
    assert said is not None
    lost, no_loss, marked, parallel, calls, stock = (int(x) for x in said.groups())
    team = total("stop/team")
    assert lost == team["tasks"] - team["utility"]
    assert (no_loss, marked) == (saved("stop/no-loss"), saved("stop/when_marked"))
    assert parallel == saved("stop/when_marked+parallel")
    assert (calls, stock) == (
        total("stop/when_marked+parallel")["model_calls"],
        total("stock")["model_calls"],
    )
