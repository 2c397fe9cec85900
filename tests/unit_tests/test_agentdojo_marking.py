"""The marking grid's simulated marker draws what its rule says, and the report labels honestly.

Only :mod:`bench.agentdojo.marking`'s simulation and :mod:`bench.agentdojo.report` run here:
neither loads ``agentdojo`` (see ``test_agentdojo.py``), so the runs are made up.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.agentdojo.marking import Position, TaskRuns, break_even, draw, false_rate, grid
from bench.agentdojo.report import FITTED, markdown, marking_table, totals_table

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "agentdojo.json"


def _runs(tasks: int = 40, calls: int = 4) -> dict[str, TaskRuns]:
    """Tasks of ``calls`` calls; the even ones marked by the oracle on their last call."""

    def at(calls_made: int, kept: bool) -> Position:
        return Position(kept, calls_made, 100 * calls_made, 10, 0.001 * calls_made)

    runs = {}
    for i in range(tasks):
        oracle = calls - 1 if i % 2 == 0 else None
        marked = tuple(at(k + 1, k == oracle) for k in range(calls))
        runs[f"s/t{i}"] = TaskRuns(unmarked=at(calls + 1, True), marked=marked, oracle=oracle)
    return runs


def test_a_perfect_marker_stops_every_oracle_task_and_loses_none() -> None:
    runs = _runs()
    got = draw(runs, 1.0, 1.0, seed=3)
    assert got["utility"] == len(runs)
    assert (got["true_stops"], got["false_stops"]) == (20, 0)
    assert got["model_calls"] == 20 * 4 + 20 * 5  # a marked task skips its answer
    assert false_rate(runs, 1.0, 0.5) == 0.0


def test_false_marks_are_drawn_for_the_expected_precision() -> None:
    runs = _runs()
    oracle, others = 20, 40 * 4 - 20
    assert false_rate(runs, 0.5, 1.0) == oracle / others  # as many false as true, expected
    assert false_rate(runs, 0.8, 0.5) == pytest.approx(0.5 * oracle * 0.2 / (0.8 * others))


def test_the_draws_are_seeded() -> None:
    runs = _runs()
    assert draw(runs, 0.7, 0.8, seed=5) == draw(runs, 0.7, 0.8, seed=5)
    assert any(draw(runs, 0.7, 0.8, seed=s) != draw(runs, 0.7, 0.8, seed=0) for s in range(1, 9))


def test_the_grid_sets_each_point_against_stock_and_finds_where_losses_begin() -> None:
    runs = _runs()
    stock = {"tasks": 40, "utility": 40, "model_calls": 200, "dollars": 0.2}
    points = grid(runs, stock, levels=(0.5, 1.0), seeds=5)
    assert [(p["precision"], p["recall"]) for p in points] == [
        (0.5, 0.5),
        (0.5, 1.0),
        (1.0, 0.5),
        (1.0, 1.0),
    ]
    perfect = points[-1]
    assert perfect["tasks_lost"]["max"] == 0 and perfect["calls_saved"]["mean"] == 20
    assert perfect["dollars_saved"]["mean"] == pytest.approx(0.02)
    found = break_even(points)
    assert [(p["precision"], p["recall"]) for p in found["lossless"]] == [(1.0, 0.5), (1.0, 1.0)]
    assert [p["precision"] for p in found["losses_begin"]] == [0.5, 0.5]
    assert found["saves_no_calls"] == []


def _result() -> dict[str, Any]:
    result: dict[str, Any] = json.loads(RESULTS.read_text("utf-8"))
    return result


def test_every_fitted_configuration_is_labelled_in_every_table() -> None:
    result = _result()
    fitted = [c["name"] for c in result["configs"] if c["upper_bound"]]
    assert {"return_direct/no-loss", "stop/no-loss", "stop/when_marked", "stock+parallel"} <= set(
        fitted
    )
    assert not {"stock", "stop/team", "return_direct/team"} & set(fitted)
    text = markdown(result)
    for name in fitted:
        assert f"`{name}`{FITTED}" in text, name
        assert f"`{name}` |" not in text, name  # never unlabelled in a table row


def test_dollars_come_first_among_the_cost_columns() -> None:
    result = _result()
    tables = [totals_table(result)[0]]
    if result.get("marking_grid"):
        tables.append(marking_table(result)[0])
    for head in tables:
        cells = [c.strip() for c in head.strip("|").split("|")]
        assert cells.index("$") < cells.index("model calls"), head
        assert "$ vs stock" in cells and "calls vs stock" in cells, head
        assert any("tokens" in c for c in cells), head
