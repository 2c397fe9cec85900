"""The AgentDojo result document as Markdown, its goals, and the README block it fills."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[1] / "README.md"
README_BEGIN = "<!-- bench:agentdojo -->"
README_END = "<!-- /bench:agentdojo -->"
STOP_RETRY = "stop/no-loss+retry"
STOP_NO_LOSS = "stop/no-loss"
RETURN_DIRECT = "return_direct/no-loss"
WHEN_MARKED = "stop/when_marked"
CHART = "agentdojo-marking.png"
"""The marking grid's chart, beside ``agentdojo.md``."""
MARKED_SAVING = 0.20
"""Item 6's goal: at least this share of stock's model calls saved."""
TIMED = "the whole run: the configurations, the oracles and the marking grid"
"""What ``meta.duration_s`` covers, as the run records it."""


def row(result: dict[str, Any], config: str, faults: bool, suite: str = "total") -> dict[str, Any]:
    """Return the figures of ``config`` on ``suite`` (or ``total``), with or without faults.

    Raises:
        KeyError: If the run has no such row.
    """
    for found in result["rows"]:
        if (found["config"], found["faults"], found["suite"]) == (config, faults, suite):
            return dict(found)
    msg = f"no row for {config} (faults={faults}) on {suite}"
    raise KeyError(msg)


def best_marked(result: dict[str, Any]) -> str | None:
    """Return the marking configuration that keeps most tasks with fewest calls (no faults).

    Ties go to the fewer dollars, then to the first listed.
    """
    names = [c["name"] for c in result["configs"] if c["name"].startswith(WHEN_MARKED)]
    if not names:
        return None

    def key(name: str) -> tuple[int, int, float]:
        r = row(result, name, False)
        return (-int(r["utility"]), int(r["model_calls"]), float(r["dollars"]))

    best: str = min(names, key=key)
    return best


def bound(result: dict[str, Any], config: str) -> str | None:
    """Return what makes ``config``'s figures an upper bound (fitted or an oracle), or None.

    A mapping other than ``team`` is fitted (found from the scored tasks), with a model too;
    the replay's marks and its calls issued together are an oracle (``upper_bound`` in the
    result's configurations: a model run's are the model's own).
    """
    oracle = next((c["upper_bound"] for c in result["configs"] if c["name"] == config), False)
    marks, parallel = "when_marked" in config, "+parallel" in config
    mapping = config.split("/")[1] if config.startswith(("stop/", "return_direct/")) else ""
    mapping = mapping.split("+")[0]
    fitted = mapping == "no-loss" or config.split("+")[0].endswith("/ends")
    if fitted:
        return f"a fitted mapping (`{mapping or 'ends'}`, found from these very tasks)"
    if oracle and (marks or parallel):
        what = " and ".join(
            part
            for part, used in (
                ("perfect marks", marks),
                ("its calls issued together by a rule on the ground truth", parallel),
            )
            if used
        )
        return f"an oracle (the replay's {what})"
    return None


def goal_line(goal: dict[str, Any]) -> str:
    """Return one goal as the results list it: status, goal, measured, and what bounds it."""
    status = {True: "met", False: "NOT met", None: "not measured"}[goal["met"]]
    line = f"[{status}] {goal['goal']}: {goal['measured']}"
    if goal.get("bound"):
        verb = "met only by" if goal["met"] else "measured with"
        line += f"; {verb} {goal['bound']}: an upper bound"
    return line


def goals(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Return each goal of the benchmark with whether the run met it and what it measured.

    ``bound`` says when the configuration that meets it is fitted or an oracle (:func:`bound`).
    """
    check = result["harness_check"]
    out = [
        {
            "goal": "stock create_agent with the replay equals AgentDojo's pipeline, task by task",
            "met": check["equal"] == check["tasks"] == check["agentdojo_utility"],
            "measured": f"{check['equal']}/{check['tasks']} equal; AgentDojo "
            f"{check['agentdojo_utility']}/{check['tasks']}",
        }
    ]
    stop = row(result, STOP_NO_LOSS, False)
    fewer = {
        suite: row(result, STOP_NO_LOSS, False, suite)["model_calls"]
        < row(result, "stock", False, suite)["model_calls"]
        for suite in result["meta"]["suites"]
    }
    out.append(
        {
            "goal": "the stop with the no-loss mapping: every task, fewer model calls than "
            "stock on every suite",
            "met": stop["utility"] == stop["tasks"] and all(fewer.values()),
            "measured": f"{stop['utility']}/{stop['tasks']}; fewer calls on "
            + ", ".join(suite for suite, ok in fewer.items() if ok),
            "bound": bound(result, STOP_NO_LOSS),
        }
    )
    retry, stock, direct = (row(result, c, True) for c in (STOP_RETRY, "stock", RETURN_DIRECT))
    out.append(
        {
            "goal": "under faults, the stop with in-place retries: utility >= stock's and > "
            "return_direct's, fewer model calls than stock",
            "met": retry["utility"] >= stock["utility"]
            and retry["utility"] > direct["utility"]
            and retry["model_calls"] < stock["model_calls"],
            "measured": f"utility {retry['utility']} vs stock {stock['utility']}, "
            f"return_direct {direct['utility']}; model calls {retry['model_calls']} vs "
            f"{stock['model_calls']}",
            "bound": bound(result, STOP_RETRY),
        }
    )
    best = best_marked(result)
    if best is not None:
        marked, stock = row(result, best, False), row(result, "stock", False)
        saved = 1 - marked["model_calls"] / stock["model_calls"]
        out.append(
            {
                "goal": "a run stops after its last needed call and not before: every task, "
                f">= {MARKED_SAVING:.0%} fewer model calls than stock",
                "met": marked["utility"] == marked["tasks"] and saved >= MARKED_SAVING,
                "measured": f"best marked configuration `{best}`: {marked['utility']}/"
                f"{marked['tasks']}; {marked['model_calls']} model calls vs "
                f"{stock['model_calls']} ({saved:.1%} fewer)",
                "bound": bound(result, best),
            }
        )
    else:
        out.append(
            {
                "goal": "tools that stop when the model marks a call: every task, >= 20% fewer "
                "model calls than stock",
                "met": None,
                "measured": "not measured: the library has no adopt(tool, stops=...) yet",
            }
        )
    return out


def _pct(value: float, base: float) -> str:
    return f"{(value - base) / base:+.1%}" if base else "n/a"


FITTED = " (fitted: upper bound)"
"""The label of a configuration fitted to the scored tasks (``Config.upper_bound``)."""


def _label(result: dict[str, Any], name: str) -> str:
    bound = next((c["upper_bound"] for c in result["configs"] if c["name"] == name), False)
    return f"`{name}`" + (FITTED if bound else "")


def totals_table(result: dict[str, Any]) -> list[str]:
    """Return the totals table: one line per configuration and fault setting, dollars first."""
    lines = [
        "| configuration | faults | utility | $ | $ vs stock | model calls | calls vs stock | "
        'input tokens | output tokens | model s | ended early | false "Not done" | '
        "invalid artifacts | wall s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for faults in (False, True):
        # a model run of chosen configurations may leave stock out: nothing to compare with
        ran = {c["name"] for c in result["configs"]}
        base = row(result, "stock", faults) if "stock" in ran else {"dollars": 0, "model_calls": 0}
        for config in result["configs"]:
            r = row(result, config["name"], faults)
            lines.append(
                f"| {_label(result, config['name'])} | {'20%' if faults else 'none'} | "
                f"{r['utility']}/{r['tasks']} | {r['dollars']:.4f} | "
                f"{_pct(r['dollars'], base['dollars'])} | {r['model_calls']} | "
                f"{_pct(r['model_calls'], base['model_calls'])} | {r['input_tokens']:,} | "
                f"{r['output_tokens']:,} | {r['model_s']:.0f} | {r['ended_early']} | "
                f"{r['false_not_done']} | {r['invalid_artifacts']} | {r['wall_s']:.1f} |"
            )
    return lines


def suites_table(result: dict[str, Any]) -> list[str]:
    """Return the per-suite table: utility, dollars, model calls and tokens per suite."""
    suites = result["meta"]["suites"]
    head = " | ".join(f"{s} ({row(result, 'stock', False, s)['tasks']})" for s in suites)
    lines = [
        f"| configuration | faults | {head} |",
        "|---|---|" + "---|" * len(suites),
    ]
    for faults in (False, True):
        for config in result["configs"]:
            cells = []
            for suite in suites:
                r = row(result, config["name"], faults, suite)
                tokens = r["input_tokens"] + r["output_tokens"]
                cells.append(
                    f"{r['utility']} · ${r['dollars']:.4f} · {r['model_calls']} · {tokens:,}"
                )
            lines.append(
                f"| {_label(result, config['name'])} | {'20%' if faults else 'none'} | "
                + " | ".join(cells)
                + " |"
            )
    return lines


def losses_table(result: dict[str, Any]) -> list[str]:
    """Return every loss of every configuration, with its task and cause."""
    if not result["losses"]:
        return ["No configuration lost a task."]
    lines = ["| configuration | faults | task | cause |", "|---|---|---|---|"]
    for loss in result["losses"]:
        lines.append(
            f"| {_label(result, loss['config'])} | {'20%' if loss['faults'] else 'none'} | "
            f"{loss['task']} | {loss['cause']} |"
        )
    return lines


def early_table(result: dict[str, Any]) -> list[str]:
    """Return the runs that ended before their ground truth finished and still passed."""
    lost = {(loss["config"], loss["faults"], loss["task"]) for loss in result["losses"]}
    early = [e for e in result["ended_early"] if (e["config"], e["faults"], e["task"]) not in lost]
    if not early:
        return ["Every run that ended before its ground truth finished lost its task (above)."]
    lines = [
        "Ended before the ground truth finished and still passed (calls done / ground truth, "
        "the last call made):",
        "",
        "| configuration | faults | task | ended after |",
        "|---|---|---|---|",
    ]
    for e in early:
        lines.append(
            f"| {_label(result, e['config'])} | {'20%' if e['faults'] else 'none'} | "
            f"{e['task']} | {e['after']} |"
        )
    return lines


def mappings_lines(result: dict[str, Any]) -> list[str]:
    """Return the mappings: their rules and the tools each makes stop, per suite."""
    lines = []
    for mapping in result["mappings"].values():
        lines.append(f"- **{mapping['name']}**: {mapping['rule']}.")
        for suite, tools in mapping["stops"].items():
            lines.append(f"  - {suite}: " + (", ".join(f"`{t}`" for t in tools) or "none"))
        for drop in mapping.get("dropped", []):
            lines.append(
                f"  - dropped `{drop['tool']}` ({drop['suite']}): {drop['task']} lost with it"
            )
    return lines


def marks_lines(result: dict[str, Any]) -> list[str]:
    """Return what the oracle marked, for the configurations whose replay marks a call."""
    marks = result["oracle_marks"]
    lines = []
    if marks["config"] is not None:
        unmarked = ", ".join(marks["unmarked"]) or "none"
        lines.append(
            f"The oracle (found with `{marks['config']}`, used by every marking configuration "
            f"that issues one call per step) marks the last call of {marks['marked']} tasks. A "
            f"stop there loses each of the others, whose answer the model must write from "
            f"several results: {unmarked}."
        )
    steps, step_marks = result.get("steps"), result.get("oracle_step_marks")
    if steps:
        lines += [
            "",
            f"Calls issued together (`+parallel`): the {steps['calls']} ground-truth calls go "
            f"in {steps['steps']} steps; {steps['tasks_with_a_shared_step']} tasks have a step "
            f"of several calls, the largest {steps['largest_step']}.",
        ]
    if step_marks and step_marks["config"] is not None:
        unmarked = ", ".join(step_marks["unmarked"]) or "none"
        lines.append(
            f"Its oracle (found with `{step_marks['config']}`) marks every call of the last "
            f"step of {step_marks['marked']} tasks ({step_marks['marked_calls']} calls); a stop "
            f"there loses each of the others: {unmarked}."
        )
    return lines


def _points(result: dict[str, Any]) -> list[dict[str, Any]]:
    grid: dict[str, Any] = result.get("marking_grid") or {}
    return list(grid.get("points", []))


def break_even_figures(result: dict[str, Any]) -> dict[str, Any]:
    """Return the figures the break-even sentence quotes, read from the marking grid's means.

    ``precision``: the highest precision below 1 of the grid; at it, ``lost`` and ``saved``
    (tasks lost and model calls saved, rounded) at the lowest and the highest recall of
    ``recalls``; ``lossless``: whether exactly the points of precision 1 lose no task;
    ``calls_saved`` and ``dollars_saved``: whether every point saves model calls, dollars;
    ``false_lost``: the lowest and the highest share, over the points with false stops, of
    false stops that lost their task (tasks lost over false stops; None without any);
    ``dollars_recall``: the lowest recall at which precision 1 saves dollars (None if none
    does); ``dollars_lose``: whether every point that saves dollars loses tasks.

    Raises:
        ValueError: If the result has no marking grid.
    """
    points = _points(result)
    if not points:
        msg = "the result has no marking grid"
        raise ValueError(msg)

    def mean(point: dict[str, Any], name: str) -> float:
        return float(point[name]["mean"])

    below = max(p["precision"] for p in points if p["precision"] < 1)
    at = sorted((p for p in points if p["precision"] == below), key=lambda p: p["recall"])
    perfect = sorted((p for p in points if p["precision"] == 1), key=lambda p: p["recall"])
    paying = [p["recall"] for p in perfect if mean(p, "dollars_saved") > 0]
    shares = [
        mean(p, "tasks_lost") / mean(p, "false_stops") for p in points if mean(p, "false_stops") > 0
    ]
    return {
        "tasks": result["marking_grid"]["stock"]["tasks"],
        "precision": below,
        "recalls": [at[0]["recall"], at[-1]["recall"]],
        "lost": [round(mean(at[0], "tasks_lost")), round(mean(at[-1], "tasks_lost"))],
        "saved": [round(mean(at[0], "calls_saved")), round(mean(at[-1], "calls_saved"))],
        "lossless": all((mean(p, "tasks_lost") <= 0) == (p["precision"] == 1) for p in points),
        "calls_saved": all(mean(p, "calls_saved") > 0 for p in points),
        "dollars_saved": all(mean(p, "dollars_saved") > 0 for p in points),
        "false_lost": [min(shares), max(shares)] if shares else None,
        "dollars_recall": paying[0] if paying else None,
        "dollars_lose": all(
            mean(p, "tasks_lost") > 0 for p in points if mean(p, "dollars_saved") > 0
        ),
    }


ALMOST_ALWAYS = 0.95
"""The share of false stops that lose their task above which the text says "almost always"."""


def break_even_sentence(result: dict[str, Any]) -> str:
    """Return the sentences that state what the marking grid shows, from the grid.

    Not a break-even in calls or dollars (every point of the committed grid saves both): what
    a false mark costs is its task, and the grid's rule draws false marks only where a stop
    cuts the task short.
    """
    b = break_even_figures(result)
    saves = {
        (True, True): "Every point of the grid saves model calls and dollars",
        (True, False): "Every point of the grid saves model calls, not every one dollars",
        (False, True): "Every point of the grid saves dollars, not every one model calls",
        (False, False): "Not every point of the grid saves model calls or dollars",
    }[b["calls_saved"], b["dollars_saved"]]
    begin = (
        "only precision 1 loses no task"
        if b["lossless"]
        else "losses do not follow precision alone"
    )
    first = (
        f"{saves}; {begin}, and at precision {b['precision']} a marker loses {b['lost'][0]} to "
        f"{b['lost'][1]} of {b['tasks']} tasks (recall {b['recalls'][0]} to "
        f"{b['recalls'][1]}) while saving {b['saved'][0]} to {b['saved'][1]} model calls."
    )
    share = b["false_lost"]
    if share is None:
        return first
    how = "almost always loses" if share[0] >= ALMOST_ALWAYS else "often loses"
    return (
        f"{first} A false mark {how} its task ({share[0]:.1%} to {share[1]:.1%} of the false "
        "stops, point by point), because of how false marks are drawn: only on a call before "
        "the oracle's, so the calls after it never run, or on a call of a task the oracle "
        "leaves unmarked, whose answer the model must write."
    )


def duration_sentence(result: dict[str, Any]) -> str:
    """Return how long the run took, as the run recorded it (``meta``).

    ``duration_s`` covers the whole run, the marking grid included, when ``meta`` says so
    (``timed``); an older run's covered the configurations only.
    """
    meta = result["meta"]
    grid = result.get("marking_grid") or {}
    seconds = round(meta["duration_s"])
    on = f" on a {meta['cpus']}-core machine" if meta.get("cpus") else ""
    if meta.get("timed") == TIMED:
        runs = f", the marking grid's {grid['runs']} runs included" if grid else ""
        return f"The committed run took {seconds} s{on}{runs}"
    runs = f", before the marking grid's {grid['runs']} runs (not timed)" if grid else ""
    return f"The committed run took {seconds} s{on} to run the configurations{runs}"


def marking_table(result: dict[str, Any]) -> list[str]:
    """Return the marking grid: per precision and recall, mean and range over the seeds."""
    grid = result["marking_grid"]
    stock = grid["stock"]

    def spread(fig: dict[str, float], fmt: str) -> str:
        return f"{fig['mean']:{fmt}} ({fig['min']:{fmt}}–{fig['max']:{fmt}})"

    lines = [
        "| precision | recall | false-mark rate | tasks kept | $ | $ vs stock | model calls | "
        "calls vs stock | tokens | true stops | false stops |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in grid["points"]:
        lines.append(
            f"| {p['precision']} | {p['recall']} | {p['false_rate']:.3f} | "
            f"{spread(p['utility'], '.1f')} | {spread(p['dollars'], '.4f')} | "
            f"{_pct(p['dollars']['mean'], stock['dollars'])} | "
            f"{spread(p['model_calls'], '.1f')} | "
            f"{_pct(p['model_calls']['mean'], stock['model_calls'])} | "
            f"{p['tokens']['mean']:,.0f} | "
            f"{p['true_stops']['mean']:.1f} | {p['false_stops']['mean']:.1f} |"
        )
    return lines


def marking_lines(result: dict[str, Any], chart: str) -> list[str]:
    """Return the marking section: the rule, the break-even, the chart and the grid."""
    grid = result.get("marking_grid")
    if not grid:
        return []
    stock = grid["stock"]
    return [
        f"What marking accuracy pays, under `{grid['config']}`{FITTED} without faults "
        f"(`bench/agentdojo/marking.py`): each task ran unmarked and marked on each of its "
        f"calls ({grid['runs']} runs), then a marker of precision p and recall r was drawn "
        f"{grid['seeds']} times (seeds 0 to {grid['seeds'] - 1}) per point: {grid['rule']}. "
        f"The oracle marks {grid['oracle_calls']} of {grid['calls']} calls. Figures are the "
        f"mean over the seeds (min–max); stock: {stock['utility']}/{stock['tasks']}, "
        f"${stock['dollars']:.4f}, {stock['model_calls']} model calls.",
        "",
        break_even_sentence(result),
        "",
        f"![tasks kept, dollars and model calls against precision and recall]({chart})",
        "",
        *marking_table(result),
    ]


def chart(result: dict[str, Any], path: Path) -> None:
    """Draw the marking grid: tasks kept, dollars and model calls against recall, per precision.

    Each line is one precision; its band spans the seeds' min to max; the dashed line is stock.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = result["marking_grid"]
    panels = (
        ("utility", "tasks kept", "utility"),
        ("dollars", "$ (lower is better)", "dollars"),
        ("model_calls", "model calls (lower is better)", "model_calls"),
    )
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.8))
    colors = plt.get_cmap("viridis")
    levels = grid["levels"]
    for axis, (name, title, base) in zip(axes, panels, strict=True):
        for i, precision in enumerate(levels):
            points = [p for p in grid["points"] if p["precision"] == precision]
            recalls = [p["recall"] for p in points]
            color = colors(i / max(1, len(levels) - 1))
            axis.plot(
                recalls, [p[name]["mean"] for p in points], marker="o", color=color,
                label=f"precision {precision}",
            )  # fmt: skip
            axis.fill_between(
                recalls, [p[name]["min"] for p in points], [p[name]["max"] for p in points],
                color=color, alpha=0.15,
            )  # fmt: skip
        axis.axhline(grid["stock"][base], color="black", linestyle="--", label="stock")
        axis.set_xlabel("recall")
        axis.set_title(title)
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"AgentDojo, {grid['stock']['tasks']} tasks, {grid['config']}{FITTED}: "
        f"a marker of precision p and recall r, {grid['seeds']} seeds",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def markdown(result: dict[str, Any], chart: str = CHART) -> str:
    """Return the whole result as Markdown (``bench/results/agentdojo.md``).

    ``chart`` is the marking chart's path relative to where the text goes.
    """
    meta, faults = result["meta"], result["faults"]
    counts = ", ".join(f"{s} {row(result, 'stock', False, s)['tasks']}" for s in meta["suites"])
    lines = [
        f"{meta['benchmark']}: {meta['tasks']} user tasks ({counts}), the perfect replay model; "
        f"faults: {meta['fault_rate']:.0%} of ground-truth calls time out once (seed "
        f"{meta['seed']}: {faults['drawn']} of {faults['calls']} calls drawn). Dollars at "
        f"${meta['profile']['input_usd_per_m']} / ${meta['profile']['output_usd_per_m']} per "
        f"million input / output tokens. {took(result)}.",
        "",
        *totals_table(result),
        "",
        "Per suite: utility · dollars · model calls · tokens (input and output).",
        "",
        *suites_table(result),
        "",
        "Goals:",
        "",
        *(f"- {goal_line(g)}" for g in goals(result)),
        "",
        "Mappings:",
        "",
        *mappings_lines(result),
        "",
        *marks_lines(result),
        "",
        *marking_lines(result, chart),
        *([""] if result.get("marking_grid") else []),
        "Every loss:",
        "",
        *losses_table(result),
        "",
        *early_table(result),
        "",
    ]
    return "\n".join(lines)


def took(result: dict[str, Any]) -> str:
    """Return the run's time as the result's first paragraph says it."""
    meta = result["meta"]
    cpus = f" on {meta['cpus']} cores" if meta.get("cpus") else ""
    if meta.get("timed") == TIMED:
        return f"Took {meta['duration_s']} s{cpus}, the marking grid included"
    return f"Took {meta['duration_s']} s{cpus} (the configurations; the marking grid not timed)"


def update_readme(text: str, result: dict[str, Any]) -> str:
    """Return ``bench/README.md`` text whose AgentDojo block is rendered from ``result``.

    Raises:
        ValueError: If the README has no AgentDojo block.
    """
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        msg = f"README has no {README_BEGIN} ... {README_END} block"
        raise ValueError(msg)
    block = f"{README_BEGIN}\n{markdown(result, f'results/{CHART}')}{README_END}"
    return text[:start] + block + text[end + len(README_END) :]


def write(result: dict[str, Any], out: Path) -> dict[str, Path]:
    """Write ``agentdojo.json`` and ``agentdojo.md`` into ``out``; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "agentdojo.json", "md": out / "agentdojo.md"}
    document = result | {"goals": goals(result)}
    paths["json"].write_text(json.dumps(document, indent=2) + "\n", "utf-8")
    paths["md"].write_text(markdown(result), "utf-8")
    if result.get("marking_grid"):
        paths["chart"] = out / CHART
        chart(result, paths["chart"])
    return paths
