"""Turning run records into figures, targets, and the three result files.

``latest.json`` holds every figure; ``latest.md`` the tables ``bench/README.md`` quotes;
``latest.png`` the chart of dollars and p50 wall time per configuration.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.configs import Config
from bench.correctness import CHECKS, RunRecord, summary_of_checks
from bench.latency import Profile
from bench.queries import SPECIAL, Query
from bench.savings import markdown as savings_markdown
from bench.stats import latency_ms, mean_total, percentile

CLASSES: tuple[str, ...] = ("success", "transient", "fatal", "over_cap", *SPECIAL)
"""Query classes in per-class tables: the forced outcome, ``over_cap`` for a checkout
refused by the spend cap whatever was forced, or the query's special class (see
:data:`bench.queries.SPECIAL`)."""
MAX_LISTED_IDS = 10
TOKEN_SHARE_TARGET = 0.25
CHEAPER_TARGET = 0.60
FASTER_TARGET = 0.40
ORCHESTRATION_TARGET = 0.01
REFERENCE = "create_agent"
VERDICTS: tuple[str, ...] = ("wrong", "partial", "charged", "unreadable")


def query_class(query: Query) -> str:
    """Return the class a query is reported under."""
    if query.special is not None:
        return query.special
    return "over_cap" if query.over_cap else query.outcome


def _seconds(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "p50": round(percentile(values, 50), 4),
        "p95": round(percentile(values, 95), 4),
        "mean": round(statistics.fmean(values), 4),
    }


def _share(orchestration: Sequence[float], model: Sequence[float]) -> float | None:
    """Orchestration's share of wall time when the two simply add up."""
    total = sum(orchestration) + sum(model)
    return round(sum(orchestration) / total, 5) if orchestration and total else None


def per_config(
    configs: Sequence[Config],
    queries: Sequence[Query],
    records: Sequence[RunRecord],
    profile: Profile,
    unloaded: dict[str, list[float]] | None = None,
) -> dict[str, Any]:
    """Aggregate the records of each configuration.

    Args:
        configs: The configurations.
        queries: The query set.
        records: One record per (query, configuration), latency profile applied.
        profile: The profile the records ran with (for prices).
        unloaded: Per configuration, seconds per query of one-at-a-time runs with the model
            answering at once (see :func:`bench.inprocess.unloaded`).

    Returns:
        Per configuration name: model calls, tokens, tool calls (mean and total), model
        calls per class, every correctness check (passed / applied, first failing query
        ids), verdict counts, wall time with the latency profile, its orchestration part,
        and dollars per 1,000 queries at the profile's prices.
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
        checks = summary_of_checks(mine)
        for name, figures in checks.items():
            figures["failed_ids"] = [r.query_id for r in mine if r.checks.get(name) is False][
                :MAX_LISTED_IDS
            ]
        walls = [r.latency_s for r in mine if r.latency_s is not None]
        orchestration = [r.latency_s - r.simulated_s for r in mine if r.latency_s is not None]
        dollars = [profile.dollars(r.input_tokens, r.output_tokens) for r in mine]
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
            "checks": checks,
            "verdicts": {v: sum(r.verdict == v for r in mine) for v in VERDICTS},
            "wall_s": _seconds(walls),
            "model_s": _seconds([r.simulated_s for r in mine]),
            "orchestration_ms": latency_ms(orchestration),
            "orchestration_share": round(sum(orchestration) / sum(walls), 5) if walls else None,
            "unloaded_orchestration_ms": latency_ms((unloaded or {}).get(config.name, [])),
            "unloaded_orchestration_share": _share(
                (unloaded or {}).get(config.name, []), [r.simulated_s for r in mine]
            ),
            "usd_per_1000": round(1000 * statistics.fmean(dollars), 4) if dollars else 0.0,
        }
    return out


def _row(name: str, target: str, measured: str, met: bool | None) -> dict[str, Any]:
    return {"name": name, "target": target, "measured": measured, "met": met}


def targets(
    queries: Sequence[Query],
    records: Sequence[RunRecord],
    summary: dict[str, Any],
    server: dict[str, Any] | None,
    prod: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Check the targets against the measured figures.

    Returns:
        One entry per target: ``name``, ``target``, ``measured`` (text), ``met`` (None when
        not measured in this run).
    """
    by_id = {q.id: q for q in queries}
    rows: list[dict[str, Any]] = []
    hard = [name for name, figures in summary.items() if figures["stop_mode"] == "hard"]
    ours = [name for name, figures in summary.items() if figures["stop_mode"] is not None]
    ref = summary.get(REFERENCE)

    counted = [
        r for r in records
        if r.config in hard and by_id[r.query_id].outcome in ("success", "fatal")
    ]  # fmt: skip
    off = [r for r in counted if r.model_calls != 1]
    rows.append(
        _row(
            "hard_one_model_call",
            "stop_mode=hard: exactly 1 model call for every success and fatal query",
            f"{len(counted) - len(off)} of {len(counted)} runs ({', '.join(hard)}) made exactly 1"
            + (f"; off: {sorted({r.query_id for r in off})[:MAX_LISTED_IDS]}" if off else ""),
            bool(counted) and not off,
        )
    )

    shares: dict[str, float] = {}
    for graph in ("legacy", "middleware"):
        hard_tokens = summary.get(f"{graph}/hard", {}).get("input_tokens", {}).get("total")
        never_tokens = summary.get(f"{graph}/never", {}).get("input_tokens", {}).get("total")
        if hard_tokens is not None and never_tokens:
            shares[graph] = hard_tokens / never_tokens
    rows.append(
        _row(
            "hard_input_tokens",
            f"hard uses <= {TOKEN_SHARE_TARGET:.0%} of never's input tokens (tool schemas counted)",
            ", ".join(f"{g}: {s:.1%}" for g, s in shares.items()) or "not measured",
            all(s <= TOKEN_SHARE_TARGET for s in shares.values()) if shares else None,
        )
    )

    cheaper = {
        n: 1 - summary[n]["usd_per_1000"] / ref["usd_per_1000"]
        for n in hard
        if ref and ref["usd_per_1000"]
    }
    rows.append(
        _row(
            "hard_cheaper",
            f"hard at least {CHEAPER_TARGET:.0%} cheaper in $ than stock create_agent",
            "; ".join(
                f"{n}: {c:.1%} cheaper (${summary[n]['usd_per_1000']:.3f} vs "
                f"${ref['usd_per_1000']:.3f} per 1,000 queries)"
                for n, c in cheaper.items()
                if ref
            )
            or "not measured",
            all(c >= CHEAPER_TARGET for c in cheaper.values()) if cheaper else None,
        )
    )

    faster = {
        n: 1 - summary[n]["wall_s"]["p50"] / ref["wall_s"]["p50"]
        for n in hard
        if ref and ref["wall_s"].get("p50")
    }
    rows.append(
        _row(
            "hard_faster_p50",
            f"hard at least {FASTER_TARGET:.0%} faster than stock create_agent at p50 wall time",
            "; ".join(
                f"{n}: {f:.1%} faster ({summary[n]['wall_s']['p50'] * 1000:.0f} vs "
                f"{ref['wall_s']['p50'] * 1000:.0f} ms)"
                for n, f in faster.items()
                if ref
            )
            or "not measured",
            all(f >= FASTER_TARGET for f in faster.values()) if faster else None,
        )
    )

    share = {n: summary[n]["orchestration_share"] for n in hard}
    measured_share = {n: s for n, s in share.items() if s is not None}

    def _alone(name: str) -> str:
        alone = summary[name].get("unloaded_orchestration_share")
        return "" if alone is None else f"; one run at a time: {alone:.2%}"

    rows.append(
        _row(
            "orchestration_share",
            f"orchestration (all but simulated model time) <= {ORCHESTRATION_TARGET:.0%} of "
            "hard's wall time (judged under load)",
            "; ".join(
                f"{n}: {s:.2%} under load (p50 "
                f"{summary[n]['orchestration_ms'].get('p50', 0):.1f} ms a query){_alone(n)}"
                for n, s in measured_share.items()
            )
            or "not measured",
            all(s <= ORCHESTRATION_TARGET for s in measured_share.values())
            if measured_share
            else None,
        )
    )

    failing = {
        (n, check): figures
        for n in ours
        for check, figures in summary[n]["checks"].items()
        if figures["passed"] != figures["applied"]
    }
    applied = sum(len(summary[n]["checks"]) for n in ours)
    rows.append(
        _row(
            "stop_capable_correct",
            "every stop-capable configuration passes 100% of every check that applies",
            (
                "; ".join(f"{n} {c}: {f['passed']}/{f['applied']}" for (n, c), f in failing.items())
                if failing
                else f"{applied} (configuration, check) pairs over {len(ours)} configurations, "
                "all 100%"
            ),
            not failing if ours else None,
        )
    )

    for name, what, figures, skipped in (
        (
            "server_no_errors",
            "the dev server answers every run at every level, threaded and threadless: 0 errors",
            server,
            "not measured (--skip-server)",
        ),
        (
            "prod_server_no_errors",
            "the production server (`make prod`) answers every run at every level, threaded "
            "and threadless: 0 errors",
            prod,
            "not measured (--skip-server or --skip-prod)",
        ),
    ):
        windows = [
            window
            for levels in ((figures or {}).get("modes") or {}).values()
            for level_figures in levels.values()
            for window in level_figures["repeats"]
        ]
        errors = sum(w["errors"] for w in windows)
        runs = sum(w["runs"] for w in windows)
        mismatches = sum(w["answer_mismatches"] for w in windows)
        rows.append(
            _row(
                name,
                what,
                f"{errors} errors, {mismatches} answer mismatches in {runs} runs"
                if windows
                else skipped,
                errors == 0 if windows else None,
            )
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


def _ci(figures: dict[str, Any] | None, unit: str = "", digits: int = 0) -> str:
    """Render ``{"median": m, "ci95": [lo, hi]}`` as ``m [lo, hi]``."""
    if not figures:
        return "-"
    ci = figures.get("ci95")
    text = f"{figures['median']:,.{digits}f}{unit}"
    return f"{text} [{ci[0]:,.{digits}f}, {ci[1]:,.{digits}f}]" if ci else text


def _spread(values: Sequence[float], digits: int = 1) -> str:
    """Render repeats as ``median (min..max)``."""
    if not values:
        return "-"
    return (
        f"{statistics.median(values):.{digits}f} "
        f"({min(values):.{digits}f}..{max(values):.{digits}f})"
    )


def _verdicts(fig: dict[str, Any]) -> str:
    parts = [f"{n} {v}" for v, n in fig["verdicts"].items() if n]
    return ", ".join(parts) or "none"


def markdown(result: dict[str, Any]) -> str:
    """Render the result as the markdown tables ``bench/README.md`` quotes."""
    meta = result["meta"]
    qs = result["query_set"]
    profile = meta["profile"]
    lines = [
        "# Benchmark results",
        "",
        f"`{meta['command']}` on {meta['cpus']} CPU(s), Python {meta['python']}, "
        f"langgraph {meta['versions']['langgraph']}, langchain {meta['versions']['langchain']}, "
        f"langgraph-api {meta['versions']['langgraph-api']}; took {meta['duration_s']:.0f} s.",
        f"Query set: `{qs['path']}`, {qs['count']} queries: {_counts(qs['by_outcome'])}; "
        f"{_counts(qs['by_kind'])}; {qs['over_cap']} with a checkout above the spend cap"
        + (f"; of them {_counts(qs['by_special'])}" if qs.get("by_special") else "")
        + ".",
        f"Model profile `{profile['model']}`: {profile['ttft_s'] * 1000:.0f} ms to first token, "
        f"{profile['prefill_tps']:,.0f} input tokens/s, {profile['decode_tps']:,.0f} output "
        f"tokens/s; ${profile['input_usd_per_m']:.2f} / ${profile['output_usd_per_m']:.2f} per "
        f"million input / output tokens. {meta['concurrency']} runs in flight at once.",
        "",
        "## Per configuration (in-process, model latency simulated)",
        "",
        "| configuration | $ / 1,000 queries | p50 s | p95 s | orchestration p50 ms "
        "| orchestration share | one at a time: p50 ms, share | model calls / query "
        "| input tokens / query | output tokens / query | wrong / partial / charged over cap |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, fig in result["configs"].items():
        share = fig["orchestration_share"]
        alone = fig.get("unloaded_orchestration_share")
        alone_text = (
            "-" if alone is None else f"{_ms(fig['unloaded_orchestration_ms'], 'p50')}, {alone:.2%}"
        )
        lines.append(
            f"| `{name}` | {fig['usd_per_1000']:.3f} | {fig['wall_s'].get('p50', 0):.3f} "
            f"| {fig['wall_s'].get('p95', 0):.3f} | {_ms(fig['orchestration_ms'], 'p50')} "
            f"| {'-' if share is None else f'{share:.2%}'} | {alone_text} "
            f"| {fig['model_calls']['mean']:.2f} "
            f"| {fig['input_tokens']['mean']:.0f} | {fig['output_tokens']['mean']:.0f} "
            f"| {_verdicts(fig)} |"
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
    lines += savings_markdown(result.get("savings") or {})
    lines += [
        "",
        "## Correctness, per check (passed / applicable runs)",
        "",
        "| configuration | " + " | ".join(CHECKS) + " |",
        "|---|" + "---:|" * len(CHECKS),
    ]
    failures: list[str] = []
    for name, fig in result["configs"].items():
        checks = fig["checks"]
        cells = [
            f"{checks[c]['passed']}/{checks[c]['applied']}" if c in checks else "-" for c in CHECKS
        ]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
        failures += [
            f"`{name}` {c}: {', '.join(checks[c]['failed_ids'])}"
            for c in CHECKS
            if c in checks and checks[c]["failed_ids"]
        ]
    if failures:
        lines += ["", "First failing queries: " + "; ".join(failures) + "."]
    overhead = result.get("overhead")
    if overhead and overhead.get("modes"):
        lines += [
            "",
            f"## Orchestration per tool step (in-process, offline model, `stop_mode=never` "
            f"paths, {overhead['queries']} queries x {overhead['reps']} interleaved repetitions; "
            "median [bootstrap 95% interval])",
        ]
        for mode, variants in overhead["modes"].items():
            lines += [
                "",
                f"`{'invoke' if mode == 'sync' else 'ainvoke'}` ({mode}):",
                "",
                "| variant | wall us / tool step | CPU us / tool step | extra wall us vs stock "
                "| extra CPU us vs stock | wall vs stock | same path as stock |",
                "|---|---:|---:|---:|---:|---:|---|",
            ]
            for name, fig in variants.items():
                if "skipped" in fig:
                    lines.append(f"| `{name}`: {fig['description']} | {fig['skipped']} "
                                 "| - | - | - | - | - |")  # fmt: skip
                    continue
                lines.append(
                    f"| `{name}`: {fig['description']} | {_ci(fig['wall_us_per_tool_step'])} "
                    f"| {_ci(fig['cpu_us_per_tool_step'])} "
                    f"| {_ci(fig['wall_extra_us_per_tool_step'])} "
                    f"| {_ci(fig['cpu_extra_us_per_tool_step'])} "
                    f"| {_ci(fig['wall_overhead_pct'], '%', 1)} "
                    f"| {'yes' if fig['same_path_as_reference'] else 'no'} |"
                )
        lines += [
            "",
            "Where the cost comes from (extra us per tool step over stock `create_agent`, "
            "median [95% interval]; `decide` is timed alone):",
            "",
            "| component | what it is | sync wall | sync CPU | async wall | async CPU |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for row in overhead.get("decomposition", []):
            lines.append(
                f"| `{row['component']}` | {row['what']} | {_ci(row['sync'])} "
                f"| {_ci(row.get('sync_cpu'))} | {_ci(row['async'])} "
                f"| {_ci(row.get('async_cpu'))} |"
            )
    for key, title in (
        ("server", "Through `langgraph dev`"),
        ("prod_server", "Through `make prod`"),
    ):
        lines += _server_table(result.get(key), title)
    lines += ["", "## Targets", "", "| target | measured | status |", "|---|---|---|"]
    for row in result["targets"]:
        lines.append(f"| {row['target']} | {row['measured']} | {_met(row['met'])} |")
    return "\n".join(lines) + "\n"


def _server_table(server: dict[str, Any] | None, title: str) -> list[str]:
    """Render one server's windows: per mode, level and graph, median (min..max)."""
    if not server or not server.get("modes"):
        return []
    lines = [
        "",
        f"## {title} ({server['server']}; `stop_mode=hard`; "
        f"{server['repeats']} repeats of {server['window_s']:.0f} s per level after "
        f"{server['warmup_s']:.0f} s of warm-up at that level; median (min..max) over "
        "repeats)",
        "",
        "| runs | clients | graph | its runs / window | all graphs' runs/s | p50 ms "
        "| p95 ms | errors | answer mismatches |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, levels in server["modes"].items():
        for level, figures in levels.items():
            repeats = figures["repeats"]
            for graph in server["graphs"]:
                per = [r["graphs"][graph] for r in repeats if graph in r["graphs"]]
                lines.append(
                    f"| {mode} | {level} | `{graph}` | {_spread([p['runs'] for p in per], 0)} "
                    f"| {_spread([r['runs_per_s'] for r in repeats])} "
                    f"| {_spread([p['latency_ms'].get('p50', 0) for p in per], 0)} "
                    f"| {_spread([p['latency_ms'].get('p95', 0) for p in per], 0)} "
                    f"| {sum(p['errors'] for p in per)} "
                    f"| {sum(p['answer_mismatches'] for p in per)} |"
                )
    return lines


_COLORS = {"hard": "#2b8a3e", "polish": "#1971c2", "never": "#e8590c", None: "#868e96"}


def chart(result: dict[str, Any], path: Path) -> None:
    """Draw $ per 1,000 queries and p50 wall time per configuration, bad answers marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    configs = result["configs"]
    keys = list(configs)[::-1]  # top-down in report order

    def label(name: str) -> str:
        bad = _verdicts(configs[name])
        return f"{name}\n{'all checks pass' if bad == 'none' else bad}"

    names = [label(n) for n in keys]
    colors = [_COLORS.get(configs[n]["stop_mode"], _COLORS[None]) for n in keys]
    flawed = [_verdicts(configs[n]) != "none" for n in keys]
    dollars = [configs[n]["usd_per_1000"] for n in keys]
    p50 = [configs[n]["wall_s"].get("p50", 0.0) for n in keys]
    p95 = [configs[n]["wall_s"].get("p95", 0.0) for n in keys]

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 6.5), sharey=True)
    bars = left.barh(names, dollars, color=colors)
    for bar, bad in zip(bars, flawed, strict=True):
        if bad:
            bar.set_hatch("xx")
            bar.set_edgecolor("#c92a2a")
    left.bar_label(bars, labels=[f"${v:.3f}" for v in dollars], padding=3)
    left.set_xlim(0, max(dollars) * 1.25 if dollars else 1)
    left.set_xlabel("$ per 1,000 queries (lower is better)")
    left.set_title("What it costs")
    bars = right.barh(names, p50, color=colors)
    for bar, bad in zip(bars, flawed, strict=True):
        if bad:
            bar.set_hatch("xx")
            bar.set_edgecolor("#c92a2a")
    right.scatter(p95, names, marker="|", s=200, color="black", label="p95", zorder=3)
    right.bar_label(bars, labels=[f"{v:.2f} s" for v in p50], padding=3)
    right.set_xlim(0, max([*p95, *p50]) * 1.25 if p50 else 1)
    right.set_xlabel("wall time per query, p50 bar, p95 tick (lower is better)")
    right.set_title("How long a user waits")
    for axis in (left, right):
        axis.grid(axis="x", alpha=0.3)
        axis.set_axisbelow(True)
    handles = [Rectangle((0, 0), 1, 1, color=_COLORS[k]) for k in ("hard", "polish", "never", None)]
    handles.append(Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="#c92a2a",
                             hatch="xx"))  # fmt: skip
    fig.legend(
        handles,
        ["stop_mode=hard", "stop_mode=polish", "stop_mode=never", "baseline",
         "some answers wrong, partial or charged over the cap"],
        loc="lower center",
        ncol=5,
        frameon=False,
        fontsize=9,
    )  # fmt: skip
    qs = result["query_set"]
    profile = result["meta"]["profile"]
    fig.suptitle(
        f"{qs['count']} queries ({_counts(qs['by_outcome'])}), model latency and price of "
        f"{profile['model']}",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)


README = Path(__file__).resolve().parent / "README.md"
"""``bench/README.md``: the benchmark's page, which holds the results block."""
README_BEGIN = "<!-- bench:results -->"
README_END = "<!-- /bench:results -->"


def readme_block(result: dict[str, Any]) -> str:
    """Render the results block of ``bench/README.md``: ``latest.md``, headings demoted."""
    body = markdown(result).split("\n", 1)[1]  # drop the "# Benchmark results" title
    body = body.replace("\n## ", "\n#### ").strip()
    return f"{README_BEGIN}\n{body}\n{README_END}"


def update_readme(text: str, result: dict[str, Any]) -> str:
    """Return ``bench/README.md`` text whose results block is rendered from ``result``.

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
