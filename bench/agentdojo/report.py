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
MARKED_SAVING = 0.20
"""Item 6's goal: at least this share of stock's model calls saved."""


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


def goals(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Return each goal of the benchmark with whether the run met it and what it measured."""
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
        }
    )
    best = best_marked(result)
    if best is not None:
        marked, stock = row(result, best, False), row(result, "stock", False)
        saved = 1 - marked["model_calls"] / stock["model_calls"]
        out.append(
            {
                "goal": "a run stops after its last needed call and not before (perfect replay, "
                f"an upper bound): every task, >= {MARKED_SAVING:.0%} fewer model calls than "
                "stock",
                "met": marked["utility"] == marked["tasks"] and saved >= MARKED_SAVING,
                "measured": f"best marked configuration `{best}`: {marked['utility']}/"
                f"{marked['tasks']}; {marked['model_calls']} model calls vs "
                f"{stock['model_calls']} ({saved:.1%} fewer)",
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


def _pct(value: int, base: int) -> str:
    return f"{(value - base) / base:+.1%}" if base else "n/a"


def _label(result: dict[str, Any], name: str) -> str:
    bound = next((c["upper_bound"] for c in result["configs"] if c["name"] == name), False)
    return f"`{name}`" + (" (upper bound)" if bound else "")


def totals_table(result: dict[str, Any]) -> list[str]:
    """Return the totals table: one line per configuration and fault setting."""
    lines = [
        "| configuration | faults | utility | model calls | vs stock | input tokens | "
        'output tokens | $ | model s | ended early | false "Not done" | invalid artifacts | '
        "wall s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for faults in (False, True):
        base = row(result, "stock", faults)["model_calls"]
        for config in result["configs"]:
            r = row(result, config["name"], faults)
            lines.append(
                f"| {_label(result, config['name'])} | {'20%' if faults else 'none'} | "
                f"{r['utility']}/{r['tasks']} | {r['model_calls']} | "
                f"{_pct(r['model_calls'], base)} | {r['input_tokens']:,} | "
                f"{r['output_tokens']:,} | {r['dollars']:.4f} | {r['model_s']:.0f} | "
                f"{r['ended_early']} | "
                f"{r['false_not_done']} | {r['invalid_artifacts']} | {r['wall_s']:.1f} |"
            )
    return lines


def suites_table(result: dict[str, Any]) -> list[str]:
    """Return the per-suite table: utility, model calls and dollars per suite."""
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
                cells.append(f"{r['utility']} · {r['model_calls']} · ${r['dollars']:.4f}")
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
            f"| `{loss['config']}` | {'20%' if loss['faults'] else 'none'} | "
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
            f"| `{e['config']}` | {'20%' if e['faults'] else 'none'} | {e['task']} | {e['after']} |"
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


def markdown(result: dict[str, Any]) -> str:
    """Return the whole result as Markdown (``bench/results/agentdojo.md``)."""
    meta, faults = result["meta"], result["faults"]
    counts = ", ".join(f"{s} {row(result, 'stock', False, s)['tasks']}" for s in meta["suites"])
    status = {True: "met", False: "NOT met", None: "not measured"}
    lines = [
        f"{meta['benchmark']}: {meta['tasks']} user tasks ({counts}), the perfect replay model; "
        f"faults: {meta['fault_rate']:.0%} of ground-truth calls time out once (seed "
        f"{meta['seed']}: {faults['drawn']} of {faults['calls']} calls drawn). Dollars at "
        f"${meta['profile']['input_usd_per_m']} / ${meta['profile']['output_usd_per_m']} per "
        f"million input / output tokens. Took {meta['duration_s']} s.",
        "",
        *totals_table(result),
        "",
        "Per suite: utility · model calls · dollars.",
        "",
        *suites_table(result),
        "",
        "Goals:",
        "",
        *(f"- [{status[g['met']]}] {g['goal']}: {g['measured']}" for g in goals(result)),
        "",
        "Mappings:",
        "",
        *mappings_lines(result),
        "",
        *marks_lines(result),
        "",
        "Every loss:",
        "",
        *losses_table(result),
        "",
        *early_table(result),
        "",
    ]
    return "\n".join(lines)


def update_readme(text: str, result: dict[str, Any]) -> str:
    """Return ``bench/README.md`` text whose AgentDojo block is rendered from ``result``.

    Raises:
        ValueError: If the README has no AgentDojo block.
    """
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        msg = f"README has no {README_BEGIN} ... {README_END} block"
        raise ValueError(msg)
    block = f"{README_BEGIN}\n{markdown(result)}{README_END}"
    return text[:start] + block + text[end + len(README_END) :]


def write(result: dict[str, Any], out: Path) -> dict[str, Path]:
    """Write ``agentdojo.json`` and ``agentdojo.md`` into ``out``; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "agentdojo.json", "md": out / "agentdojo.md"}
    document = result | {"goals": goals(result)}
    paths["json"].write_text(json.dumps(document, indent=2) + "\n", "utf-8")
    paths["md"].write_text(markdown(result), "utf-8")
    return paths
