"""Turning run records into figures, targets, and the three result files.

``latest.json`` holds every figure; ``latest.md`` the tables the README quotes;
``latest.png`` the chart of model calls and tokens per configuration.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.configs import Config
from bench.correctness import CHECKS, RunRecord, summary_of_checks
from bench.queries import Query
from bench.stats import latency_ms, mean_total

CLASSES: tuple[str, ...] = ("success", "transient", "fatal", "over_cap")
"""Query classes in per-class tables: the forced outcome, or ``over_cap`` for a checkout
refused by the spend cap whatever was forced."""
MAX_LISTED_IDS = 10
TOKEN_SHARE_TARGET = 0.25
OVERHEAD_TARGET_PCT = 10.0
SERVER_TARGET_CLIENTS = 32


def query_class(query: Query) -> str:
    """Return the class a query is reported under."""
    return "over_cap" if query.over_cap else query.outcome


def per_config(
    configs: Sequence[Config], queries: Sequence[Query], records: Sequence[RunRecord]
) -> dict[str, Any]:
    """Aggregate the records of each configuration.

    Returns:
        Per configuration name: model calls, tokens, tool calls (mean and total), model
        calls per class, correctness (overall and per check, with the first failing query
        ids), and in-process latency.
    """
    by_id = {q.id: q for q in queries}
    out: dict[str, Any] = {}
    for config in configs:
        mine = [r for r in records if r.config == config.name]
        by_class: dict[str, Any] = {}
        for cls in CLASSES:
            calls = [r.model_calls for r in mine if query_class(by_id[r.query_id]) == cls]
            if calls:
                by_class[cls] = {
                    "queries": len(calls),
                    "model_calls_mean": round(sum(calls) / len(calls), 3),
                    "model_calls_max": max(calls),
                }
        wrong = [r.query_id for r in mine if not r.correct]
        out[config.name] = {
            "graph": config.graph_id,
            "stop_mode": config.stop_mode,
            "description": config.description,
            "queries": len(mine),
            "model_calls": mean_total([r.model_calls for r in mine]),
            "input_tokens": mean_total([r.input_tokens for r in mine]),
            "output_tokens": mean_total([r.output_tokens for r in mine]),
            "tool_calls": mean_total([r.tool_calls for r in mine]),
            "by_class": by_class,
            "correct": {
                "passed": len(mine) - len(wrong),
                "of": len(mine),
                "rate": round((len(mine) - len(wrong)) / len(mine), 4) if mine else 0.0,
                "checks": summary_of_checks(mine),
                "incorrect_ids": wrong[:MAX_LISTED_IDS],
            },
            "latency_ms": latency_ms([r.latency_s for r in mine if r.latency_s is not None]),
        }
    return out


def targets(
    queries: Sequence[Query],
    records: Sequence[RunRecord],
    summary: dict[str, Any],
    overhead: dict[str, Any] | None,
    server: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """Check the issue's four targets against the measured figures.

    Returns:
        One entry per target: ``name``, ``target``, ``measured`` (text), ``met`` (None when
        not measured in this run).
    """
    by_id = {q.id: q for q in queries}
    rows: list[dict[str, Any]] = []

    hard = [name for name, figures in summary.items() if figures["stop_mode"] == "hard"]
    off = [
        r
        for r in records
        if r.config in hard
        and by_id[r.query_id].outcome in ("success", "fatal")
        and r.model_calls != 1
    ]
    counted = sum(
        1 for r in records if r.config in hard and by_id[r.query_id].outcome in ("success", "fatal")
    )
    rows.append(
        {
            "name": "hard_one_model_call",
            "target": "stop_mode=hard: exactly 1 model call for every success and fatal query",
            "measured": (
                f"{counted - len(off)} of {counted} runs ({', '.join(hard)}) made exactly 1"
                + (f"; off: {sorted({r.query_id for r in off})[:MAX_LISTED_IDS]}" if off else "")
            ),
            "met": bool(counted) and not off,
        }
    )

    shares: dict[str, float] = {}
    for graph in ("legacy", "middleware"):
        hard_tokens = summary.get(f"{graph}/hard", {}).get("input_tokens", {}).get("total")
        never_tokens = summary.get(f"{graph}/never", {}).get("input_tokens", {}).get("total")
        if hard_tokens is not None and never_tokens:
            shares[graph] = hard_tokens / never_tokens
    rows.append(
        {
            "name": "hard_input_tokens",
            "target": f"hard uses <= {TOKEN_SHARE_TARGET:.0%} of never's input tokens",
            "measured": ", ".join(f"{g}: {s:.1%}" for g, s in shares.items()) or "not measured",
            "met": all(s <= TOKEN_SHARE_TARGET for s in shares.values()) if shares else None,
        }
    )

    variants = (overhead or {}).get("variants", {})
    routing = variants.get("stop_routing")
    stack = variants.get("middleware")
    rows.append(
        {
            "name": "stop_routing_overhead",
            "target": (
                f"stop routing adds <= {OVERHEAD_TARGET_PCT:.0f}% per tool step over stock "
                "create_agent"
            ),
            "measured": (
                f"stop routing alone: {routing['overhead_pct']:+.1f}% "
                f"({routing['ms_per_tool_step']:.2f} vs "
                f"{variants['create_agent']['ms_per_tool_step']:.2f} ms per tool step)"
                + (f"; whole middleware graph: {stack['overhead_pct']:+.1f}%" if stack else "")
                if routing
                else "not measured"
            ),
            "met": routing["overhead_pct"] <= OVERHEAD_TARGET_PCT if routing else None,
        }
    )

    level = str(SERVER_TARGET_CLIENTS)
    loads = [
        (label, figures["levels"][level])
        for label, figures in (server or {}).items()
        if level in figures["levels"]
    ]
    rows.append(
        {
            "name": "server_32_clients",
            "target": f"the dev server holds {SERVER_TARGET_CLIENTS} concurrent clients, 0 errors",
            "measured": "; ".join(
                f"{label}: {fig['errors']} errors in {fig['runs']} runs" for label, fig in loads
            )
            or "not measured (--skip-server)",
            "met": all(fig["errors"] == 0 for _, fig in loads) if loads else None,
        }
    )
    return rows


# ---------------------------------------------------------------------------------------
# Files.


def _counts(counts: dict[str, int]) -> str:
    """Render counts as ``180 success, 75 transient``, largest first."""
    return ", ".join(f"{n} {key}" for key, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def _met(value: bool | None) -> str:
    return {True: "met", False: "NOT met", None: "not measured"}[value]


def _ms(figures: dict[str, Any], key: str) -> str:
    value = figures.get(key)
    return f"{value:.1f}" if isinstance(value, int | float) else "-"


def markdown(result: dict[str, Any]) -> str:
    """Render the result as the markdown tables the README quotes."""
    meta = result["meta"]
    qs = result["query_set"]
    lines = [
        "# Benchmark results",
        "",
        f"`{meta['command']}` on {meta['cpus']} CPU(s), Python {meta['python']}, "
        f"langgraph {meta['versions']['langgraph']}, langchain {meta['versions']['langchain']}, "
        f"langgraph-api {meta['versions']['langgraph-api']}; took {meta['duration_s']:.0f} s.",
        f"Query set: `{qs['path']}`, {qs['count']} queries: {_counts(qs['by_outcome'])}; "
        f"{_counts(qs['by_kind'])}; {qs['over_cap']} checkouts above the spend cap.",
        "",
        "## Per configuration (in-process, offline model)",
        "",
        "| configuration | model calls / query | model calls total | input tokens / query "
        "| input tokens total | output tokens / query | output tokens total | correct "
        "| p50 ms | p95 ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, fig in result["configs"].items():
        correct = fig["correct"]
        lines.append(
            f"| `{name}` | {fig['model_calls']['mean']:.2f} | {fig['model_calls']['total']} "
            f"| {fig['input_tokens']['mean']:.0f} | {fig['input_tokens']['total']} "
            f"| {fig['output_tokens']['mean']:.0f} | {fig['output_tokens']['total']} "
            f"| {correct['passed']}/{correct['of']} "
            f"| {_ms(fig['latency_ms'], 'p50')} | {_ms(fig['latency_ms'], 'p95')} |"
        )
    lines += [
        "",
        "## Model calls per query, by class (mean / max)",
        "",
        "| configuration | " + " | ".join(CLASSES) + " |",
        "|---|" + "---:|" * len(CLASSES),
    ]
    for name, fig in result["configs"].items():
        cells = []
        for cls in CLASSES:
            c = fig["by_class"].get(cls)
            cells.append(f"{c['model_calls_mean']:.2f} / {c['model_calls_max']}" if c else "-")
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Correctness checks (passed / applicable runs)",
        "",
        "| configuration | " + " | ".join(CHECKS) + " | first incorrect queries |",
        "|---|" + "---:|" * len(CHECKS) + "---|",
    ]
    for name, fig in result["configs"].items():
        checks = fig["correct"]["checks"]
        cells = [
            f"{checks[c]['passed']}/{checks[c]['applied']}" if c in checks else "-" for c in CHECKS
        ]
        wrong = ", ".join(fig["correct"]["incorrect_ids"]) or "none"
        lines.append(f"| `{name}` | " + " | ".join(cells) + f" | {wrong} |")
    overhead = result.get("overhead")
    if overhead and overhead.get("variants"):
        lines += [
            "",
            f"## Orchestration per tool step (in-process, `stop_mode=never` paths, "
            f"{overhead['queries']} queries x {overhead['reps']} repetitions, medians)",
            "",
            "| variant | ms per tool step | vs stock create_agent | range over reps "
            "| same path as stock |",
            "|---|---:|---:|---|---|",
        ]
        for name, fig in overhead["variants"].items():
            low, high = fig["overhead_pct_range"]
            lines.append(
                f"| `{name}`: {fig['description']} | {fig['ms_per_tool_step']:.3f} "
                f"| {fig['overhead_pct']:+.1f}% | {low:+.1f}% .. {high:+.1f}% "
                f"| {'yes' if fig['same_path_as_reference'] else 'no'} |"
            )
        cost = overhead.get("decide") or {}
        if cost:
            lines += [
                "",
                f"`agent.contract.decide()` alone, on the same histories: "
                f"p50 {cost['p50_us']:.0f} us, p95 {cost['p95_us']:.0f} us per tool step "
                f"({cost['tool_steps']} tool steps).",
            ]
    server = result.get("server")
    if server:
        lines += [
            "",
            "## Through `langgraph dev` (threadless `runs.wait`, `stop_mode=hard`)",
            "",
            "| server | clients | runs | runs/s | p50 ms | p95 ms | errors | answer mismatches |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for label, fig in server.items():
            for level, load in fig["levels"].items():
                lines.append(
                    f"| {label} | {level} | {load['runs']} | {load['runs_per_s']:.1f} "
                    f"| {_ms(load['latency_ms'], 'p50')} | {_ms(load['latency_ms'], 'p95')} "
                    f"| {load['errors']} | {load['answer_mismatches']} |"
                )
    lines += ["", "## Targets", "", "| target | measured | status |", "|---|---|---|"]
    for row in result["targets"]:
        lines.append(f"| {row['target']} | {row['measured']} | {_met(row['met'])} |")
    return "\n".join(lines) + "\n"


_COLORS = {"hard": "#2b8a3e", "polish": "#1971c2", "never": "#e8590c", None: "#868e96"}


def chart(result: dict[str, Any], path: Path) -> None:
    """Draw model calls and tokens per query, per configuration, to a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = result["configs"]
    keys = list(configs)[::-1]  # top-down in report order
    names = [
        f"{n}\n{configs[n]['correct']['passed']}/{configs[n]['correct']['of']} correct"
        for n in keys
    ]
    colors = [_COLORS.get(configs[n]["stop_mode"], _COLORS[None]) for n in keys]
    calls = [configs[n]["model_calls"]["mean"] for n in keys]
    inputs = [configs[n]["input_tokens"]["mean"] for n in keys]
    outputs = [configs[n]["output_tokens"]["mean"] for n in keys]

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 6), sharey=True)
    bars = left.barh(names, calls, color=colors)
    left.bar_label(bars, labels=[f"{v:.2f}" for v in calls], padding=3)
    left.set_xlabel("model calls per query (mean)")
    left.set_xlim(0, max(calls) * 1.2 if calls else 1)
    left.set_title("Model calls")

    right.barh(names, inputs, color=colors, label="input tokens")
    stacked = right.barh(
        names, outputs, left=inputs, color=colors, alpha=0.45, hatch="//", label="output tokens"
    )
    right.bar_label(
        stacked,
        labels=[f"{i:.0f} + {o:.0f}" for i, o in zip(inputs, outputs, strict=True)],
        padding=3,
    )
    totals = [i + o for i, o in zip(inputs, outputs, strict=True)]
    right.set_xlim(0, max(totals) * 1.3 if totals else 1)
    right.set_xlabel("tokens per query (mean): input + output (hatched)")
    right.set_title("Tokens")
    for axis in (left, right):
        axis.grid(axis="x", alpha=0.3)
        axis.set_axisbelow(True)
    handles = [
        plt.Rectangle((0, 0), 1, 1, color=_COLORS[k]) for k in ("hard", "polish", "never", None)
    ]
    fig.legend(
        handles,
        ["stop_mode=hard", "stop_mode=polish", "stop_mode=never", "baseline"],
        loc="lower center",
        ncol=4,
        frameon=False,
    )
    qs = result["query_set"]
    fig.suptitle(
        f"Per query, in-process, offline model: {qs['count']} queries "
        f"({_counts(qs['by_outcome'])}; "
        f"{qs['over_cap']} checkouts above the spend cap)",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)


README = Path(__file__).resolve().parent.parent / "README.md"
README_BEGIN = "<!-- bench:results -->"
README_END = "<!-- /bench:results -->"


def readme_block(result: dict[str, Any]) -> str:
    """Render the README's results block: the tables of ``latest.md``, headings demoted."""
    body = markdown(result).split("\n", 1)[1]  # drop the "# Benchmark results" title
    body = body.replace("\n## ", "\n#### ").strip()
    return f"{README_BEGIN}\n{body}\n{README_END}"


def update_readme(text: str, result: dict[str, Any]) -> str:
    """Return README text whose results block is rendered from ``result``.

    Raises:
        ValueError: If the README has no results block.
    """
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        msg = f"README has no {README_BEGIN} ... {README_END} block"
        raise ValueError(msg)
    return text[:start] + readme_block(result) + text[end + len(README_END) :]


def write(result: dict[str, Any], out: Path) -> dict[str, Path]:
    """Write ``latest.json``, ``latest.md`` and ``latest.png`` into ``out``.

    Returns:
        The paths written, by kind.
    """
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "latest.json", "md": out / "latest.md", "png": out / "latest.png"}
    paths["json"].write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    paths["md"].write_text(markdown(result), "utf-8")
    chart(result, paths["png"])
    return paths
