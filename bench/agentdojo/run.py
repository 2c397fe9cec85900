"""The whole AgentDojo benchmark in one run: check the harness, derive, compare, judge goals.

1. The harness's own check: AgentDojo's ``GroundTruthPipeline`` and stock ``create_agent``
   with the replay model must score the same, task by task.
2. The mappings: the team's (every write tool stops) and the no-loss one (derived by
   replaying the ground truth, :func:`bench.agentdojo.harness.no_loss_mapping`).
3. Every configuration on every task, without faults and with the seeded faults (the same
   draws for all), judged by AgentDojo.

With a real model (``model=``) step 3 runs on that model instead of the replay, in the same
task order with the same fault draws; the configurations that rest on an oracle (the
replay's marks, its calls issued together) run without it: the model marks and groups its
own calls. The no-loss mapping is still derived by replaying (fitted to the replay). Each
finished task goes to ``journal`` at once, and a task already there is not run again unless
its run raised (``errored``: a provider's failure after its retries, or the run's own).
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import fields
from importlib.metadata import version
from typing import Any

from langchain_core.language_models import BaseChatModel

from bench.agentdojo.configs import STOCK, Config, configurations
from bench.agentdojo.harness import (
    Outcome,
    Verdict,
    errored,
    ground_truth_utility,
    judge_mark,
    no_loss_mapping,
    oracle_marks,
    oracle_step_marks,
    run_task,
)
from bench.agentdojo.mappings import (
    ToolMapping,
    ground_truth_candidates,
    ground_truth_ends,
    team_mapping,
)
from bench.agentdojo.marking import marking_grid
from bench.agentdojo.model import Journal
from bench.agentdojo.parallel import steps
from bench.agentdojo.report import TIMED
from bench.agentdojo.suites import SUITES, VERSION, Task, suite, tasks
from bench.agentdojo.tools import Faults
from bench.latency import Profile

FAULT_RATE = 0.2
SEED = 41
PACKAGES = ("agentdojo", "langchain", "langchain-core", "langgraph", "stop-on-artifact")

Progress = Callable[[str], None]


def _quiet(line: str) -> None:
    del line


def summarize(outcomes: Sequence[Outcome], profile: Profile) -> dict[str, Any]:
    """Return the figures of a set of outcomes (one configuration, one suite or all)."""
    del profile
    return {
        "tasks": len(outcomes),
        "utility": sum(o.utility for o in outcomes),
        "model_calls": sum(o.model_calls for o in outcomes),
        "input_tokens": sum(o.input_tokens for o in outcomes),
        "output_tokens": sum(o.output_tokens for o in outcomes),
        "dollars": round(sum(o.dollars for o in outcomes), 6),
        "ended_early": sum(o.ended_after is not None for o in outcomes),
        "false_not_done": sum(o.false_not_done for o in outcomes),
        "timeouts": sum(o.timeouts for o in outcomes),
        "in_place_retries": sum(o.in_place_retries for o in outcomes),
        "invalid_artifacts": sum(o.invalid_artifacts for o in outcomes),
        "wall_s": round(sum(o.wall_s for o in outcomes), 3),
        "model_s": round(sum(o.model_s for o in outcomes), 3),
    }


def _rows(config: Config, outcomes: Sequence[Outcome], profile: Profile) -> list[dict[str, Any]]:
    faults = bool(outcomes and outcomes[0].faults)
    rows = []
    for name in (*SUITES, "total"):
        chosen = [o for o in outcomes if name in ("total", o.suite)]
        rows.append(
            {"config": config.name, "faults": faults, "suite": name} | summarize(chosen, profile)
        )
    return rows


def config_names() -> list[str]:
    """Return every configuration's name, in the order the benchmark runs them."""
    empty = {name: frozenset[str]() for name in SUITES}
    mappings = [ToolMapping(name=n, rule="", stops=empty) for n in ("team", "no-loss", "ends")]
    return [c.name for c in configurations(*mappings)]


def chosen_tasks(suites: tuple[str, ...] = SUITES, limit: int | None = None) -> list[Task]:
    """Return the tasks of ``suites`` in the benchmark's order, the first ``limit`` of them."""
    chosen = list(tasks(suites))
    return chosen if limit is None else chosen[:limit]


def task_row(outcome: Outcome) -> dict[str, Any]:
    """Return one outcome as a compact per-task row of the result document."""
    return {
        "task": outcome.task,
        "config": outcome.config,
        "faults": outcome.faults,
        "utility": outcome.utility,
        "model_calls": outcome.model_calls,
        "input_tokens": outcome.input_tokens,
        "output_tokens": outcome.output_tokens,
        "dollars": round(outcome.dollars, 6),
    }


_OUTCOME_FIELDS = tuple(f.name for f in fields(Outcome))


def _from_row(row: dict[str, Any]) -> Outcome:
    values = {name: row[name] for name in _OUTCOME_FIELDS if name in row}
    marked = values.get("marked")
    values["marked"] = None if marked is None else (int(marked[0]), str(marked[1]))
    return Outcome(**values)


def run_all(
    *,
    suites: tuple[str, ...] = SUITES,
    rate: float = FAULT_RATE,
    seed: int = SEED,
    profile: Profile | None = None,
    progress: Progress = _quiet,
    limit: int | None = None,
    model: BaseChatModel | None = None,
    model_label: str | None = None,
    journal: Journal | None = None,
    only: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Run the benchmark and return its result document.

    Args:
        suites: The suites to run.
        rate: The share of calls that time out once, in the faulty runs.
        seed: The fault draws' seed.
        profile: The model's latency and price (the default: Groq's Llama 3.3 70B).
        progress: Called with one line per step.
        limit: Run only the first ``limit`` tasks (in the benchmark's order).
        model: Run the configurations on this model instead of the replay.
        model_label: How the result names ``model``.
        journal: Where each finished task of a model run goes, and what it resumes from (a
            task whose run raised runs again).
        only: Run only the configurations of these names (all when None).

    Returns:
        The result document (see :mod:`bench.agentdojo.report`).
    """
    profile = profile or Profile()
    started = time.perf_counter()
    chosen = chosen_tasks(suites, limit)
    progress(f"{len(chosen)} tasks of {', '.join(suites)} (AgentDojo {VERSION})")

    team = team_mapping({name: [f.name for f in suite(name).tools] for name in suites})
    no_loss, dropped = no_loss_mapping(chosen, ground_truth_candidates(chosen), profile)
    progress("no-loss mapping derived")

    every = configurations(team, no_loss, ground_truth_ends(chosen))
    configs = every if only is None else [c for c in every if c.name in only]
    # The mark goes on a task's last call or nowhere, and what a stop there answers is that
    # call's content under every marking configuration: one oracle serves them all. A model's
    # marks are judged against it under +parallel too, even when no one-call configuration runs.
    marking = next((c for c in configs if c.marks and not c.parallel), None)
    if marking is None and model is not None and any(c.marks for c in configs):
        marking = next(c for c in every if c.marks and not c.parallel)
    marks = oracle_marks(chosen, marking, profile) if marking else {}
    progress(f"oracle: {sum(m is not None for m in marks.values())} tasks marked")
    # With calls issued together, the mark goes on every call of the last step (or nowhere),
    # and what a stop there answers is those calls' contents: one oracle again.
    stepping = next((c for c in configs if c.marks and c.parallel), None)
    step_marks = oracle_step_marks(chosen, stepping, profile) if stepping else {}
    progress(f"oracle, steps: {sum(m is not None for m in step_marks.values())} tasks marked")
    outcomes: list[Outcome] = []
    rows: list[dict[str, Any]] = []
    for faults in (Faults(seed=seed), Faults(rate=rate, seed=seed)):
        for config in configs:
            ran = [
                _run(config, task, faults, profile, _mark(config, task, marks, step_marks))
                if model is None
                else _run_model(config, task, faults, profile, model, journal, marks, progress)
                for task in chosen
            ]
            outcomes += ran
            rows += _rows(config, ran, profile)
            total = rows[-1]
            progress(
                f"{config.name:<24} faults={faults.rate:<4} utility {total['utility']}/"
                f"{total['tasks']}  model calls {total['model_calls']}"
            )
    stock = [o for o in outcomes if o.config == STOCK.name and not o.faults]
    check = harness_check(chosen, stock)
    if model is None:
        progress(f"harness check: {check['equal']} of {check['tasks']} tasks equal to AgentDojo's")
    result: dict[str, Any] = {
        "meta": {
            "benchmark": f"AgentDojo {VERSION}",
            "suites": list(suites),
            "tasks": len(chosen),
            "fault_rate": rate,
            "seed": seed,
            "profile": profile.as_dict(),
            "versions": {name: version(name) for name in PACKAGES},
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "harness_check": check,
        "mappings": {
            "team": team.as_dict(),
            "no-loss": no_loss.as_dict() | {"dropped": dropped},
        },
        "configs": [
            {
                "name": c.name,
                "description": c.description,
                "upper_bound": c.upper_bound and model is None,
            }
            for c in configs
        ],
        "oracle_marks": {
            "config": marking.name if marking else None,
            "marked": sum(m is not None for m in marks.values()),
            "unmarked": [key for key, m in marks.items() if m is None],
        },
        "oracle_step_marks": {
            "config": stepping.name if stepping else None,
            "marked": sum(m is not None for m in step_marks.values()),
            "marked_calls": sum(len(m) for m in step_marks.values() if m is not None),
            "unmarked": [key for key, m in step_marks.items() if m is None],
        },
        "steps": {
            "calls": sum(len(t.calls) for t in chosen),
            "steps": sum(len(steps(t)) for t in chosen),
            "tasks_with_a_shared_step": sum(len(steps(t)) < len(t.calls) for t in chosen),
            "largest_step": max((len(s) for t in chosen for s in steps(t)), default=0),
        },
        "faults": {
            "drawn": sum(len(Faults(rate, seed).plan(t.key, len(t.calls))) for t in chosen),
            "calls": sum(len(t.calls) for t in chosen),
        },
        "rows": rows,
        "losses": [
            {"config": o.config, "faults": o.faults, "task": o.task, "cause": o.cause}
            for o in outcomes
            if not o.utility
        ],
        "ended_early": [
            {"config": o.config, "faults": o.faults, "task": o.task, "after": o.ended_after}
            for o in outcomes
            if o.ended_after is not None
        ],
        "false_not_done": [
            {"config": o.config, "faults": o.faults, "task": o.task}
            for o in outcomes
            if o.false_not_done
        ],
        "tasks": [task_row(o) for o in outcomes],
    }
    if model is None:  # the grid simulates markers on the replay's runs
        result["marking_grid"] = marking_grid(chosen, configs, marks, rows, profile)
    if model is not None:
        result["model"] = {
            "name": model_label or getattr(model, "model_name", type(model).__name__),
            "oracle": False,
            "no_loss_mapping": "fitted: derived by replaying the ground truth, not by this model",
            "journal": str(journal.path) if journal else None,
            "errored": [
                {"config": o.config, "faults": o.faults, "task": o.task, "cause": o.cause}
                for o in outcomes
                if o.errored
            ],
        }
        result["marking"] = marking_rows(chosen, outcomes, configs, marks)
    # the whole run, the marking grid included (the README's figure: bench/README.md)
    result["meta"] |= {"duration_s": round(time.perf_counter() - started, 1), "timed": TIMED}
    return result


def _run(config: Config, task: Task, faults: Faults, profile: Profile, mark: Any) -> Outcome:
    return run_task(config, task, faults, profile, mark=mark)


def _run_model(
    config: Config,
    task: Task,
    faults: Faults,
    profile: Profile,
    model: BaseChatModel,
    journal: Journal | None,
    marks: dict[str, int | None],
    progress: Progress,
) -> Outcome:
    """Run one task on the model, or read it from the journal when it ran already."""
    done = journal.get(config.name, faults.rate > 0, task.key) if journal else None
    if done is not None and not errored(done):
        return _from_row(done)  # a run that raised is tried again; an answered one is kept
    outcome = run_task(config, task, faults, profile, model=model)
    row: dict[str, Any] = outcome.as_dict()
    if config.marks:
        row["oracle_mark"] = marks.get(task.key)
        row["mark"] = (
            ERRORED if outcome.errored else judge_mark(task, marks.get(task.key), outcome.marked)
        )
    if journal is not None:
        journal.add(row)
    verdict = "ok" if outcome.utility else f"lost: {outcome.cause}"
    progress(f"  {config.name} faults={faults.rate} {task.key}: {verdict}")
    return outcome


VERDICTS: tuple[Verdict, ...] = ("right", "too early", "missed", "spurious", "none")
ERRORED = "errored"
"""A marking run that raised: no verdict (its mark, if any, is unknown)."""


def marking_rows(
    chosen: Sequence[Task],
    outcomes: Sequence[Outcome],
    configs: Sequence[Config],
    marks: dict[str, int | None],
) -> list[dict[str, Any]]:
    """Return, per marking configuration and suite, how the model's marks met the oracle's.

    Precision is right marks over all marks the model made (right, too early, spurious);
    recall is right marks over the tasks the oracle marks (right, too early, missed). A run
    that raised has no verdict: it is counted as ``errored``, in neither.
    """
    by_key = {t.key: t for t in chosen}
    rows = []
    for config in (c for c in configs if c.marks):
        mine = [o for o in outcomes if o.config == config.name]
        for name in (*SUITES, "total"):
            picked = [o for o in mine if name in ("total", o.suite)]
            if not picked:
                continue
            counts = dict.fromkeys(VERDICTS, 0)
            for o in picked:
                if not o.errored:
                    counts[judge_mark(by_key[o.task], marks.get(o.task), o.marked)] += 1
            made = counts["right"] + counts["too early"] + counts["spurious"]
            due = counts["right"] + counts["too early"] + counts["missed"]
            rows.append(
                {"config": config.name, "suite": name, "runs": len(picked)}
                | counts
                | {ERRORED: sum(o.errored for o in picked)}
                | {
                    "precision": round(counts["right"] / made, 3) if made else None,
                    "recall": round(counts["right"] / due, 3) if due else None,
                }
            )
    return rows


def _mark(
    config: Config,
    task: Task,
    marks: dict[str, int | None],
    step_marks: dict[str, tuple[int, ...] | None],
) -> int | tuple[int, ...] | None:
    if not config.marks:
        return None
    return step_marks.get(task.key) if config.parallel else marks.get(task.key)


def harness_check(chosen: Sequence[Task], stock: Sequence[Outcome]) -> dict[str, Any]:
    """Compare stock ``create_agent`` with the replay to AgentDojo's pipeline, task by task."""
    got = {o.task: o.utility for o in stock}
    differ = [
        {"task": t.key, "agentdojo": ground_truth_utility(t), "replay": got.get(t.key)}
        for t in chosen
        if got.get(t.key) != ground_truth_utility(t)
    ]
    return {
        "tasks": len(chosen),
        "agentdojo_utility": sum(ground_truth_utility(t) for t in chosen),
        "equal": len(chosen) - len(differ),
        "differ": differ,
    }
