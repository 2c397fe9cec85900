"""What marking accuracy pays: a marker of given precision and recall, simulated on the replay.

The oracle (:func:`bench.agentdojo.harness.oracle_marks`) marks a task's last call when a stop
there keeps the task, else nothing. A real model marks worse. This module runs each task once
per place a mark can go under the marking configuration (:data:`CONFIG`, no faults): unmarked,
and marked on each ground-truth call *k* (the run stops right after call *k*); then draws, with
a seeded ``random.Random``, which call an imperfect marker marks, and reads the cached run.

The marker's rule, per task, call by call: every ground-truth call is marked independently,
the oracle's call with probability *r* (the recall) and any other call (every call of a task
the oracle leaves unmarked, every call before the oracle's in the others) with probability
``q = r * M * (1 - p) / (p * (C - M))``, where *M* is the number of calls the oracle marks and
*C* the number of ground-truth calls: the expected true marks are ``r * M``, the expected false
ones ``q * (C - M)``, so the expected precision is *p*. The run stops at the first marked call
(a later mark is never reached); with no call marked, the replay writes its own answer. Each
seed draws one uniform number per call in the same order at every grid point, so two points
differ only by their probabilities.

The figures are set against stock's (no faults): tasks lost, model calls and dollars saved.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from random import Random
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # importing them loads agentdojo, which the simulation does not need
    from bench.agentdojo.configs import Config
    from bench.agentdojo.suites import Task
    from bench.latency import Profile

CONFIG = "stop/when_marked/shared+retry"
"""The marking configuration the grid runs (every tool may be marked)."""
LEVELS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""The precisions and the recalls of the grid."""
SEEDS = 20
"""Draws per grid point (seeds ``0 .. SEEDS - 1``)."""
FIGURES = (
    "utility",
    "tasks_lost",
    "dollars",
    "dollars_saved",
    "model_calls",
    "calls_saved",
    "tokens",
)


@dataclass(frozen=True)
class Position:
    """One run of a task with the mark in one place: what AgentDojo judged, what it cost."""

    utility: bool
    model_calls: int
    input_tokens: int
    output_tokens: int
    dollars: float


@dataclass(frozen=True)
class TaskRuns:
    """A task's runs: unmarked, and marked on each ground-truth call in turn."""

    unmarked: Position
    marked: tuple[Position, ...]
    """``marked[k]``: the run whose replay marks call *k*, so it stops right after it."""
    oracle: int | None
    """The call the oracle marks, if any."""


def position_runs(
    tasks: Sequence[Task], config: Config, oracle: Mapping[str, int | None], profile: Profile
) -> dict[str, TaskRuns]:
    """Run every task unmarked and marked on each of its calls, without faults.

    Args:
        tasks: The tasks to run.
        config: A marking configuration (``config.marks``).
        oracle: The oracle's mark per task key.
        profile: Prices the tokens.

    Returns:
        The runs per task key.
    """
    from bench.agentdojo.harness import run_task
    from bench.agentdojo.tools import Faults

    def position(mark: int | None, task: Task) -> Position:
        o = run_task(config, task, Faults(), profile, mark=mark)
        return Position(o.utility, o.model_calls, o.input_tokens, o.output_tokens, o.dollars)

    return {
        t.key: TaskRuns(
            unmarked=position(None, t),
            marked=tuple(position(k, t) for k in range(len(t.calls))),
            oracle=oracle.get(t.key),
        )
        for t in tasks
    }


def false_rate(runs: Mapping[str, TaskRuns], precision: float, recall: float) -> float:
    """Return the probability that a call the oracle does not mark is marked.

    Args:
        runs: The runs per task, which give the calls and the oracle's marks.
        precision: The marker's expected precision, in (0, 1].
        recall: The marker's recall, in [0, 1].

    Returns:
        ``r * M * (1 - p) / (p * (C - M))``, capped at 1 (0 when every call is the oracle's).
    """
    oracle = sum(r.oracle is not None for r in runs.values())
    others = sum(len(r.marked) for r in runs.values()) - oracle
    if others == 0:
        return 0.0
    return min(1.0, recall * oracle * (1 - precision) / (precision * others))


def draw(
    runs: Mapping[str, TaskRuns], precision: float, recall: float, seed: int
) -> dict[str, float]:
    """Return one seeded marker's totals: utility, model calls, tokens, dollars, stops.

    Args:
        runs: The runs per task (:func:`position_runs`).
        precision: The marker's expected precision.
        recall: The marker's recall.
        seed: Seeds the draws.

    Returns:
        The totals over the tasks (``tokens``: input and output), and how many runs a true
        or a false mark stopped.
    """
    rng = Random(seed)
    q = false_rate(runs, precision, recall)
    totals = dict.fromkeys(
        ("utility", "model_calls", "input_tokens", "output_tokens", "dollars"), 0.0
    )
    totals |= {"true_stops": 0.0, "false_stops": 0.0}
    for task in runs.values():
        stop = None
        for k in range(len(task.marked)):
            chance = recall if k == task.oracle else q
            if rng.random() < chance and stop is None:
                stop = k
        ran = task.unmarked if stop is None else task.marked[stop]
        if stop is not None:
            totals["true_stops" if stop == task.oracle else "false_stops"] += 1
        totals["utility"] += ran.utility
        totals["model_calls"] += ran.model_calls
        totals["input_tokens"] += ran.input_tokens
        totals["output_tokens"] += ran.output_tokens
        totals["dollars"] += ran.dollars
    totals["tokens"] = totals["input_tokens"] + totals["output_tokens"]
    return totals


def _spread(values: Iterable[float]) -> dict[str, float]:
    got = list(values)
    return {
        "mean": round(statistics.fmean(got), 4),
        "min": round(min(got), 4),
        "max": round(max(got), 4),
        "stdev": round(statistics.pstdev(got), 4),
    }


def grid(
    runs: Mapping[str, TaskRuns],
    stock: Mapping[str, Any],
    *,
    levels: Sequence[float] = LEVELS,
    seeds: int = SEEDS,
) -> list[dict[str, Any]]:
    """Return the grid: per precision and recall, the figures' mean and spread over the seeds.

    Args:
        runs: The runs per task (:func:`position_runs`).
        stock: Stock's totals without faults (``utility``, ``model_calls``, ``dollars``).
        levels: The precisions and recalls.
        seeds: Draws per point.

    Returns:
        One entry per point, precision-major.
    """
    points = []
    for precision in levels:
        for recall in levels:
            drawn = [draw(runs, precision, recall, seed) for seed in range(seeds)]
            for d in drawn:
                d["tasks_lost"] = stock["utility"] - d["utility"]
                d["calls_saved"] = stock["model_calls"] - d["model_calls"]
                d["dollars_saved"] = stock["dollars"] - d["dollars"]
            rate = round(false_rate(runs, precision, recall), 6)
            points.append(
                {"precision": precision, "recall": recall, "false_rate": rate}
                | {
                    name: _spread(d[name] for d in drawn)
                    for name in (*FIGURES, "true_stops", "false_stops")
                }
            )
    return points


def break_even(points: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return where marking stops paying, read from the grid's means.

    Args:
        points: The grid (:func:`grid`).

    Returns:
        ``lossless``: the points that lose no task on average; ``losses_begin``: per recall,
        the highest precision below 1 that loses tasks while saving calls, with its figures;
        ``saves_no_calls`` and ``saves_no_dollars``: the points whose mean saving is <= 0;
        ``worst``: the point that loses most tasks.
    """

    def mean(point: Mapping[str, Any], name: str) -> float:
        return float(point[name]["mean"])

    def brief(point: Mapping[str, Any]) -> dict[str, float]:
        return {"precision": point["precision"], "recall": point["recall"]} | {
            name: mean(point, name) for name in ("tasks_lost", "calls_saved", "dollars_saved")
        }

    losing = [p for p in points if mean(p, "tasks_lost") > 0 and mean(p, "calls_saved") > 0]
    begin: dict[float, dict[str, float]] = {}
    for p in losing:
        best = begin.get(p["recall"])
        if best is None or p["precision"] > best["precision"]:
            begin[p["recall"]] = brief(p)
    return {
        "lossless": [brief(p) for p in points if mean(p, "tasks_lost") <= 0],
        "losses_begin": [begin[r] for r in sorted(begin)],
        "saves_no_calls": [brief(p) for p in points if mean(p, "calls_saved") <= 0],
        "saves_no_dollars": [brief(p) for p in points if mean(p, "dollars_saved") <= 0],
        "worst": brief(max(points, key=lambda p: mean(p, "tasks_lost"))),
    }


def marking_grid(
    tasks: Sequence[Task],
    configs: Sequence[Config],
    oracle: Mapping[str, int | None],
    rows: Sequence[Mapping[str, Any]],
    profile: Profile,
) -> dict[str, Any]:
    """Return the result document's ``marking_grid``: the rule, the grid and its break-even.

    Args:
        tasks: The tasks of the run.
        configs: The run's configurations; the one named :data:`CONFIG` is used.
        oracle: The oracle's mark per task key.
        rows: The run's rows; stock's total without faults is the baseline.
        profile: Prices the tokens.

    Returns:
        The grid's document, or ``{}`` when the run has no :data:`CONFIG`.
    """
    config = next((c for c in configs if c.name == CONFIG), None)
    if config is None:
        return {}
    stock = next(
        r for r in rows if (r["config"], r["faults"], r["suite"]) == ("stock", False, "total")
    )
    runs = position_runs(tasks, config, oracle, profile)
    points = grid(runs, stock)
    return {
        "config": CONFIG,
        "seeds": SEEDS,
        "levels": list(LEVELS),
        "runs": sum(1 + len(r.marked) for r in runs.values()),
        "oracle_calls": sum(r.oracle is not None for r in runs.values()),
        "calls": sum(len(r.marked) for r in runs.values()),
        "stock": {name: stock[name] for name in ("tasks", "utility", "model_calls", "dollars")},
        "rule": (
            "every ground-truth call is marked independently: the oracle's call with "
            "probability r (the recall), any other call with probability "
            "q = r*M*(1-p)/(p*(C-M)) (M calls the oracle marks, C ground-truth calls), so "
            "the expected precision is p; the run stops at the first marked call, and with "
            "none marked the replay writes its answer"
        ),
        "points": points,
        "break_even": break_even(points),
    }
