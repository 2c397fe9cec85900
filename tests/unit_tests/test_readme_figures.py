"""The AgentDojo figures the READMEs quote come from the committed ``make bench-agentdojo`` run.

Each figure is recomputed from ``bench/results/agentdojo.json``: an edit to a README or to the
results without the other fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from bench.agentdojo.model import MAX_RETRIES
from bench.agentdojo.report import (
    ALMOST_ALWAYS,
    break_even_figures,
    break_even_sentence,
    duration_sentence,
    goal_line,
    goals,
)

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "agentdojo.json"
LIBRARY_README = ROOT / "libs" / "stop-on-artifact" / "README.md"
README = ROOT / "README.md"
BENCH_README = ROOT / "bench" / "README.md"


def result() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(RESULTS.read_text("utf-8"))
    return document


def total(config: str, faults: float = 0.0, suite: str = "total") -> dict[str, Any]:
    rows = result()["rows"]
    [row] = [
        r for r in rows if r["suite"] == suite and r["config"] == config and r["faults"] == faults
    ]
    return dict(row)


def less(config: str, field: str = "model_calls", faults: bool = False) -> str:
    """How much less than stock (same faults), as the bench README says it: ``21.6%``."""
    return f"{1 - total(config, faults)[field] / total('stock', faults)[field]:.1%}"


def more(config: str, field: str) -> str:
    """How much more than stock without faults: ``9.5%``."""
    return f"{total(config)[field] / total('stock')[field] - 1:.1%}"


def lost(config: str, faults: bool = False) -> int:
    row = total(config, faults)
    return int(row["tasks"]) - int(row["utility"])


def saved(config: str) -> int:
    """Percent of stock's model calls a configuration saves, rounded as the READMEs say it."""
    calls, stock = int(total(config)["model_calls"]), int(total("stock")["model_calls"])
    return round(100 * (1 - calls / stock))


def test_the_library_readme_quotes_the_committed_run() -> None:
    text = " ".join(LIBRARY_README.read_text("utf-8").split())
    said = re.search(
        r"every write stopping lost (\d+) of (\d+) tasks; perfect marks saved (\d+)% of calls "
        r"\(shared: (\d+)% of dollars\), (\d+)% with independent calls in one step\. "
        r"Simulated imperfect marks save calls and dollars at every precision and recall tried, "
        r"but only precision 1 loses no task: at ([\d.]+) they lose (\d+) to (\d+) tasks to "
        r"save (\d+) to (\d+) calls, since a false mark, drawn only where a stop cuts its task "
        r"short, almost always loses it\.",
        text,
    )
    assert said is not None
    team_lost, tasks, marked, dollars, parallel = (int(x) for x in said.groups()[:5])
    assert (team_lost, tasks) == (lost("stop/team"), total("stock")["tasks"])
    assert marked == saved("stop/when_marked") == saved("stop/when_marked/shared")
    shared, stock = total("stop/when_marked/shared")["dollars"], total("stock")["dollars"]
    assert dollars == round(100 * (1 - shared / stock))
    assert parallel == saved("stop/when_marked+parallel")
    found = break_even_figures(result())
    assert found["lossless"], "only precision 1 loses no task"
    assert found["calls_saved"] and found["dollars_saved"], "every point saves both"
    assert found["false_lost"][0] >= ALMOST_ALWAYS, "a false stop almost always loses"
    assert said.group(6) == str(found["precision"])
    assert [int(x) for x in said.groups()[6:]] == [*found["lost"], *found["saved"]]


def test_the_readme_quotes_the_committed_run() -> None:
    text = " ".join(README.read_text("utf-8").split())
    said = re.search(
        r"loses (\d+) tasks, .* loses none \(fitted to these tasks: an upper bound\) saves "
        r"(\d+)% .* an upper bound\) saves (\d+)% with every task kept, and (\d+)% of the "
        r"dollars when the mark is one shared tool .* it saves (\d+)% \((\d+) model calls "
        r"against (\d+),",
        text,
    )
    assert said is not None
    lost, no_loss, marked, dollars, parallel, calls, stock = (int(x) for x in said.groups())
    shared = total("stop/when_marked/shared")["dollars"]
    assert dollars == round(100 * (1 - shared / total("stock")["dollars"]))
    team = total("stop/team")
    assert lost == team["tasks"] - team["utility"]
    assert (no_loss, marked) == (saved("stop/no-loss"), saved("stop/when_marked"))
    assert parallel == saved("stop/when_marked+parallel")
    assert (calls, stock) == (
        total("stop/when_marked+parallel")["model_calls"],
        total("stock")["model_calls"],
    )


def test_the_bench_readme_quotes_the_committed_run() -> None:
    text = " ".join(BENCH_README.read_text("utf-8").split())
    document = result()
    tasks, stock = total("stock")["tasks"], total("stock")["model_calls"]
    calls = document["steps"]["calls"]
    team = [x for x in document["losses"] if x["config"] == "stop/team" and not x["faults"]]
    marks, step_marks = document["oracle_marks"], document["oracle_step_marks"]
    travel = [k for k in marks["unmarked"] if k.startswith("travel/")]
    steps = document["steps"]
    found = break_even_figures(document)
    grid = document["marking_grid"]
    perfect = sorted((p for p in grid["points"] if p["precision"] == 1), key=lambda p: p["recall"])
    per_suite = ", ".join(
        f"{s} {total('stop/when_marked+parallel', False, s)['model_calls']} "
        f"({total('stock', False, s)['model_calls']})"
        for s in document["meta"]["suites"]
    )
    parallel = total("stop/when_marked+parallel")
    shared = total("stop/when_marked/shared")
    quoted = [
        duration_sentence(document),
        f"(`max_retries={MAX_RETRIES}`: {MAX_RETRIES + 1} tries, the request and {MAX_RETRIES} "
        "retries,",
        f"{calls} + {tasks} = {stock}",
        f"saves {less('stop/team')} of the model calls and loses {lost('stop/team')} of {tasks}",
        f"{sum(x['cause'].startswith('ended after') for x in team)} tasks make a write in the "
        f"middle",
        f"and {sum(x['cause'].startswith('answered with') for x in team)} want an answer",
        f"Only {sum(len(t) for t in document['mappings']['no-loss']['stops'].values())} tools",
        f"{tasks}/{tasks} with {less('stop/no-loss')} fewer model calls and "
        f"{less('stop/no-loss', 'dollars')} fewer dollars",
        f"({lost('return_direct/no-loss', True)} tasks lost with the `no-loss` tools, "
        f"{lost('return_direct/team', True) - lost('return_direct/team')} more than without "
        "faults",
        f"({total('stop/no-loss+retry', True)['model_calls']} calls against stock's "
        f"{total('stock', True)['model_calls']}, {tasks}/{tasks})",
        f"{total('stop/no-loss+retry+reads', True)['model_calls']} calls, "
        f"{less('stop/no-loss+retry+reads', faults=True)} fewer calls and "
        f"{less('stop/no-loss+retry+reads', 'dollars', True)} fewer dollars than stock under "
        "the same faults",
        f"{less('stop/when_marked')} fewer model calls than stock "
        f"({total('stop/when_marked')['model_calls']} against {stock})",
        f"in {len(marks['unmarked'])} tasks ({len(travel)} of travel's "
        f"{total('stock', False, 'travel')['tasks']})",
        f"at most {marks['marked']} of {stock} calls go",
        f"input tokens grow {more('stop/when_marked', 'input_tokens')} and dollars "
        f"{more('stop/when_marked', 'dollars')} over stock",
        f"brings dollars {less('stop/when_marked/ends+retry', 'dollars')} below stock",
        f"the {calls} ground-truth calls go in {steps['steps']} steps "
        f"({steps['tasks_with_a_shared_step']} tasks have a step of several calls, the largest "
        f"{steps['largest_step']})",
        f"saves {less('stock+parallel')} of the model calls "
        f"({total('stock+parallel')['model_calls']}) and {less('stock+parallel', 'dollars')} of "
        "the dollars",
        f"travel ({total('stock+parallel', False, 'travel')['model_calls']} calls against "
        f"{total('stock', False, 'travel')['model_calls']})",
        f"every task passes with {parallel['model_calls']} model calls against {stock}: "
        f"{less('stop/when_marked+parallel')} fewer, and "
        f"{less('stop/when_marked+parallel', 'dollars')} fewer dollars "
        f"(${parallel['dollars']:.4f} against ${total('stock')['dollars']:.4f})",
        per_suite,
        f"the last step of {step_marks['marked']} tasks ({step_marks['marked_calls']} calls): "
        f"{step_marks['marked'] - marks['marked']} more than the last call alone",
        f"keeps {tasks}/{tasks} with {total('stop/when_marked+parallel', True)['model_calls']} "
        f"calls ({less('stop/when_marked+parallel', faults=True)} fewer than stock's "
        f"{total('stock', True)['model_calls']})",
        f"{total('stop/when_marked+parallel+retry', True)['model_calls']} calls, "
        f"{less('stop/when_marked+parallel+retry', faults=True)} fewer than stock under faults",
        f"only precision 1 loses no task, and at precision {found['precision']} a marker loses "
        f"{found['lost'][0]} to {found['lost'][1]} of {tasks} tasks (recall "
        f"{found['recalls'][0]} to {found['recalls'][1]}) while saving {found['saved'][0]} to "
        f"{found['saved'][1]} model calls",
        f"a marker of precision 1 saves {round(perfect[0]['calls_saved']['mean'])} to "
        f"{round(perfect[-1]['calls_saved']['mean'])} calls (recall {perfect[0]['recall']} to "
        f"{perfect[-1]['recall']}) and ${perfect[0]['dollars_saved']['mean']:.4f} to "
        f"${perfect[-1]['dollars_saved']['mean']:.4f} of stock's ${total('stock')['dollars']:.4f}, "
        "losing nothing",
        f"so input tokens grow {more('stop/when_marked', 'input_tokens')} and dollars "
        f"{more('stop/when_marked', 'dollars')} over stock despite the fewer calls",
        f"the same {shared['model_calls']} calls cost {less('stop/when_marked/shared', 'dollars')} "
        f"fewer dollars than stock (${shared['dollars']:.4f} against "
        f"${total('stock')['dollars']:.4f})",
        break_even_sentence(document),
    ]
    assert found["lossless"] and found["calls_saved"] and found["dollars_saved"]
    assert found["false_lost"][0] >= ALMOST_ALWAYS
    assert all(p["dollars_saved"]["mean"] > 0 for p in perfect)
    assert shared["utility"] == tasks and shared["dollars"] < total("stock")["dollars"]
    missing = [q for q in quoted if q not in text]
    assert not missing, "bench/README.md no longer quotes the committed run: " + repr(missing)


def test_the_run_time_is_the_runs_own() -> None:
    meta = result()["meta"]
    sentence = duration_sentence(result())
    assert f"took {round(meta['duration_s'])} s" in sentence
    if meta.get("timed") is None:  # a run from before the grid was timed says so
        assert "(not timed)" in sentence


def test_the_readmes_say_no_break_even_nor_a_bound_the_figures_do_not_support() -> None:
    texts = {
        path: " ".join(path.read_text("utf-8").split())
        for path in (README, LIBRARY_README, BENCH_README)
    }
    for path, text in texts.items():
        assert "break even" not in text, path
        assert "saves at most this" not in text, path
        assert "(6 tries" not in text, path


def test_the_goals_met_only_by_a_fitted_mapping_or_an_oracle_say_so() -> None:
    document = result()
    text = " ".join(BENCH_README.read_text("utf-8").split())
    found = goals(document)
    assert document["goals"] == found
    bounded = [g for g in found if g.get("bound")]
    assert len(bounded) == 3
    assert all("upper bound" in goal_line(g) for g in bounded)
    assert all(f"- {goal_line(g)}" in text for g in found)
