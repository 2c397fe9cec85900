"""The whole AgentDojo benchmark in one run: check the harness, derive, compare, judge goals.

1. The harness's own check: AgentDojo's ``GroundTruthPipeline`` and stock ``create_agent``
   with the replay model must score the same, task by task.
2. The mappings: the team's (every write tool stops) and the no-loss one (derived by
   replaying the ground truth, :func:`bench.agentdojo.harness.no_loss_mapping`).
3. Every configuration on every task, without faults and with the seeded faults (the same
   draws for all), judged by AgentDojo.
"""

from __future__ import annotations

import platform
import time
from collections.abc import Callable, Sequence
from importlib.metadata import version
from typing import Any

from bench.agentdojo.configs import STOCK, Config, configurations
from bench.agentdojo.harness import (
    Outcome,
    ground_truth_utility,
    no_loss_mapping,
    oracle_marks,
    oracle_step_marks,
    run_task,
)
from bench.agentdojo.mappings import ground_truth_candidates, ground_truth_ends, team_mapping
from bench.agentdojo.marking import marking_grid
from bench.agentdojo.parallel import steps
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


def run_all(
    *,
    suites: tuple[str, ...] = SUITES,
    rate: float = FAULT_RATE,
    seed: int = SEED,
    profile: Profile | None = None,
    progress: Progress = _quiet,
) -> dict[str, Any]:
    """Run the benchmark and return its result document."""
    profile = profile or Profile()
    started = time.perf_counter()
    chosen = list(tasks(suites))
    progress(f"{len(chosen)} tasks of {', '.join(suites)} (AgentDojo {VERSION})")

    team = team_mapping({name: [f.name for f in suite(name).tools] for name in suites})
    no_loss, dropped = no_loss_mapping(chosen, ground_truth_candidates(chosen), profile)
    progress("no-loss mapping derived")

    configs = configurations(team, no_loss, ground_truth_ends(chosen))
    # The mark goes on a task's last call or nowhere, and what a stop there answers is that
    # call's content under every marking configuration: one oracle serves them all.
    marking = next((c for c in configs if c.marks and not c.parallel), None)
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
                run_task(
                    config,
                    task,
                    faults,
                    profile,
                    mark=_mark(config, task, marks, step_marks),
                )
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
    progress(f"harness check: {check['equal']} of {check['tasks']} tasks equal to AgentDojo's")
    return {
        "meta": {
            "benchmark": f"AgentDojo {VERSION}",
            "suites": list(suites),
            "tasks": len(chosen),
            "fault_rate": rate,
            "seed": seed,
            "profile": profile.as_dict(),
            "versions": {name: version(name) for name in PACKAGES},
            "python": platform.python_version(),
            "duration_s": round(time.perf_counter() - started, 1),
        },
        "harness_check": check,
        "mappings": {
            "team": team.as_dict(),
            "no-loss": no_loss.as_dict() | {"dropped": dropped},
        },
        "configs": [
            {"name": c.name, "description": c.description, "upper_bound": c.upper_bound}
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
        "marking_grid": marking_grid(chosen, configs, marks, rows, profile),
    }


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
