"""In-process runs: every configuration on every query, and the orchestration overhead.

Graphs run with ``ainvoke`` in one event loop, with no checkpointer, so the figures are
the graph's own orchestration plus the model and tools: no HTTP, no queue. In the
comparison every model call sleeps as long as the latency profile says (see
:mod:`bench.latency`), and up to ``concurrency`` runs are in flight at once, the way a
service handles queries against a hosted model. Fairness: each configuration first runs
a few warm-up queries (not recorded), then every (query, configuration) pair is started in
one order shuffled with a fixed seed, so drift and load spread over all of them.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from stop_on_artifact import decide
from tqdm import tqdm

from agent.context import Context
from bench.configs import Config
from bench.correctness import RunRecord, read_run
from bench.latency import simulated_seconds
from bench.queries import Query
from bench.stats import median_ci, percentile

WARMUP_QUERIES = 6
CONCURRENCY = 32
OVERHEAD_REPS = 20
OVERHEAD_QUERIES = 24
DECIDE_REPEATS = 20


def _input(query: Query) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": query.text}]}


async def run_query(config: Config, query: Query) -> RunRecord:
    """Run one query under one configuration and time it."""
    started = time.perf_counter()
    state = await config.graph.ainvoke(_input(query), context=config.context(query.context))
    elapsed = time.perf_counter() - started
    record = read_run(query, config.name, config.verbatim, state["messages"])
    record.latency_s = elapsed
    record.simulated_s = simulated_seconds(state["messages"])
    decision = state.get("stop_decision")
    record.saved = dict(decision["saved"]) if decision and "saved" in decision else None
    return record


def _warmup_set(queries: Sequence[Query]) -> list[Query]:
    """A few queries covering as many (kind, outcome) pairs as the set has."""
    seen: set[tuple[str, str]] = set()
    picked: list[Query] = []
    for query in queries:
        key = (query.kind, query.outcome)
        if key not in seen:
            seen.add(key)
            picked.append(query)
    return picked[:WARMUP_QUERIES] or list(queries[:WARMUP_QUERIES])


async def warm_up(configs: Sequence[Config], queries: Sequence[Query]) -> None:
    """Run each configuration on a few queries, unrecorded; configurations side by side."""

    async def one(config: Config) -> None:
        for query in _warmup_set(queries):
            await run_query(config, query)

    await asyncio.gather(*(one(config) for config in configs))


async def unloaded(
    configs: Sequence[Config], queries: Sequence[Query], *, progress: bool = True
) -> dict[str, list[float]]:
    """Time every query under every configuration one run at a time, model answering at once.

    With the offline model's instant answers a run's wall time is its orchestration, with
    no other run competing for the event loop.

    Returns:
        Per configuration name, seconds per query in query order.
    """
    await warm_up(configs, queries)
    out: dict[str, list[float]] = {c.name: [] for c in configs}
    with tqdm(
        total=len(configs) * len(queries), desc="one at a time", unit="run", disable=not progress
    ) as bar:
        for query in queries:
            for config in configs:
                record = await run_query(config, query)
                out[config.name].append(record.latency_s or 0.0)
                bar.update()
    return out


async def compare(
    configs: Sequence[Config],
    queries: Sequence[Query],
    *,
    concurrency: int = CONCURRENCY,
    seed: int = 0,
    progress: bool = True,
) -> list[RunRecord]:
    """Run every query under every configuration, interleaved, ``concurrency`` at a time.

    Args:
        configs: The configurations.
        queries: The query set.
        concurrency: Most runs in flight at once.
        seed: Seeds the order.
        progress: Show a progress bar.

    Returns:
        One record per (query, configuration), in query order then configuration order.
    """
    await warm_up(configs, queries)
    pairs = [(q, c) for q in queries for c in configs]
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    records: list[RunRecord | None] = [None] * len(pairs)
    gate = asyncio.Semaphore(concurrency)
    with tqdm(total=len(pairs), desc="in-process", unit="run", disable=not progress) as bar:

        async def one(index: int) -> None:
            query, config = pairs[index]
            async with gate:
                records[index] = await run_query(config, query)
            bar.update()

        await asyncio.gather(*(one(i) for i in order))
    return [r for r in records if r is not None]


# ---------------------------------------------------------------------------------------
# Overhead: the offline model, no sleeps, so what is timed is orchestration.


def _overhead_set(queries: Sequence[Query], count: int) -> list[Query]:
    """Up to ``count`` queries every variant runs along the same path, spread over kinds."""
    eligible = [q for q in queries if not q.over_cap]
    by_key: dict[tuple[str, str], list[Query]] = {}
    for query in eligible:
        by_key.setdefault((query.kind, query.outcome), []).append(query)
    picked: list[Query] = []
    while len(picked) < min(count, len(eligible)):
        for group in by_key.values():
            if group and len(picked) < count:
                picked.append(group.pop(0))
    return picked


def _sync_capable(config: Config) -> bool:
    """Whether the graph runs under ``invoke`` (the legacy graph's nodes are async only)."""
    return config.graph_id != "legacy"


def _timed_sync(config: Config, query: Query) -> tuple[float, float, int, int]:
    cpu, wall = time.process_time(), time.perf_counter()
    state = config.graph.invoke(_input(query), context=config.context(query.context))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, *_shape(state["messages"])


async def _timed_async(config: Config, query: Query) -> tuple[float, float, int, int]:
    cpu, wall = time.process_time(), time.perf_counter()
    state = await config.graph.ainvoke(_input(query), context=config.context(query.context))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, *_shape(state["messages"])


def _shape(messages: Sequence[Any]) -> tuple[int, int]:
    steps = sum(1 for m in messages if isinstance(m, AIMessage) and m.tool_calls)
    calls = sum(1 for m in messages if isinstance(m, AIMessage) and m.usage_metadata)
    return steps, calls


def _figures(values: Sequence[float], scale: float = 1.0, digits: int = 1) -> dict[str, Any]:
    summary = median_ci([v * scale for v in values])
    return {
        "median": round(summary["median"], digits),
        "ci95": [round(x, digits) for x in summary["ci95"]],
    }


async def overhead(
    variants: Sequence[Config],
    queries: Sequence[Query],
    *,
    reps: int = OVERHEAD_REPS,
    count: int = OVERHEAD_QUERIES,
    seed: int = 1,
    progress: bool = True,
) -> dict[str, Any]:
    """Time orchestration per tool step, sync and async apart, against stock ``create_agent``.

    The offline model answers at once, so what is timed is the graph: nodes, hooks, wrap
    layers, tools. A few queries every variant runs along the same path (no over-cap
    checkouts, which the policy stops) are chosen across kinds and outcomes. Each
    repetition runs every query under every variant, ``invoke`` and ``ainvoke`` each, in an
    order shuffled per query; per repetition a variant's time per tool step is its total
    wall (``perf_counter``) or CPU (``process_time``, all threads) time over its tool steps.
    Figures are medians over repetitions with a bootstrap 95% interval; the difference from
    stock is taken per repetition, then summarized the same way.

    Args:
        variants: The variants; the first is the reference.
        queries: The query set.
        reps: Repetitions.
        count: Queries per repetition.
        seed: Seeds the order.
        progress: Show a progress bar.

    Returns:
        Per mode (``sync``, ``async``) and variant: us per tool step (wall, CPU), the
        difference from stock in us and percent, whether its paths matched stock's; plus
        ``decide()`` alone and the decomposition of the stop routing's cost.
    """
    if reps < 1:
        msg = f"reps must be at least 1, got {reps}"
        raise ValueError(msg)
    chosen = _overhead_set(queries, count)
    if not chosen:
        return {"queries": 0, "reps": reps, "modes": {}}
    await warm_up(variants, chosen)
    for variant in variants:  # the sync path warms up too
        if _sync_capable(variant):
            for query in chosen[:3]:
                _timed_sync(variant, query)
    rng = random.Random(seed)
    reference = variants[0].name
    modes = ("sync", "async")
    keys = [(mode, v.name) for mode in modes for v in variants]
    wall = {k: [0.0] * reps for k in keys}
    cpu = {k: [0.0] * reps for k in keys}
    steps = {k: [0] * reps for k in keys}
    same_path = dict.fromkeys(keys, True)
    runnable = {(mode, v.name): mode == "async" or _sync_capable(v) for mode in modes
                for v in variants}  # fmt: skip
    total = reps * len(chosen) * sum(runnable.values())
    with tqdm(total=total, desc="overhead", unit="run", disable=not progress) as bar:
        for rep in range(reps):
            for query in chosen:
                order = [k for k in keys if runnable[k]]
                rng.shuffle(order)
                shape: dict[tuple[str, str], tuple[int, int]] = {}
                by_name = {v.name: v for v in variants}
                for key in order:
                    mode, name = key
                    if mode == "sync":
                        w, c, n, calls = _timed_sync(by_name[name], query)
                    else:
                        w, c, n, calls = await _timed_async(by_name[name], query)
                    wall[key][rep] += w
                    cpu[key][rep] += c
                    steps[key][rep] += n
                    shape[key] = (n, calls)
                    bar.update()
                for key, value in shape.items():
                    ref = shape.get((key[0], reference))
                    same_path[key] = same_path[key] and value == ref
    out: dict[str, Any] = {}
    for mode in modes:
        ref_key = (mode, reference)
        per_variant: dict[str, Any] = {}
        for variant in variants:
            key = (mode, variant.name)
            if not runnable[key]:
                per_variant[variant.name] = {
                    "description": variant.description,
                    "skipped": "its nodes are async only: invoke is not supported",
                }
                continue
            figures: dict[str, Any] = {
                "description": variant.description,
                "tool_steps_per_rep": steps[key][0],
                "same_path_as_reference": same_path[key],
            }
            for clock, table in (("wall", wall), ("cpu", cpu)):
                per_step = [t / max(s, 1) for t, s in zip(table[key], steps[key], strict=True)]
                ref_step = [
                    t / max(s, 1) for t, s in zip(table[ref_key], steps[ref_key], strict=True)
                ]
                figures[f"{clock}_us_per_tool_step"] = _figures(per_step, 1e6)
                figures[f"{clock}_extra_us_per_tool_step"] = _figures(
                    [m - r for m, r in zip(per_step, ref_step, strict=True)], 1e6
                )
                figures[f"{clock}_overhead_pct"] = _figures(
                    [m / r - 1 for m, r in zip(per_step, ref_step, strict=True)], 100.0
                )
            per_variant[variant.name] = figures
        out[mode] = per_variant
    result: dict[str, Any] = {
        "queries": len(chosen),
        "reps": reps,
        "reference": reference,
        "modes": out,
        "decide": await decide_cost(variants[0], chosen),
    }
    result["decomposition"] = decomposition(result)
    return result


DECOMPOSITION: tuple[tuple[str, str], ...] = (
    ("noop_hook", "a no-op before_model hook with can_jump_to: the extra node per model call"),
    ("noop_model_wrap", "a no-op wrap_model_call layer"),
    ("noop_tool_wrap", "a no-op wrap_tool_call layer"),
    ("stop_routing", "StopOnArtifactMiddleware as shipped (never): a wrap_model_call, decide()"),
    (
        "middleware",
        "the middleware graph: 5 middleware (3 model wraps, 4 tool wraps, an after_model hook)",
    ),
    ("legacy", "the legacy graph: decide() inside its tools node, one finalize node"),
)


def decomposition(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Explain the stop routing's cost: extra us per tool step of each layer alone.

    Returns:
        One row per component: its name, what it is, and per mode the median extra wall
        (``sync``, ``async``) and CPU (``sync_cpu``, ``async_cpu``) time per tool step over
        stock with its interval (None where not run).
    """
    rows: list[dict[str, Any]] = []
    for name, what in DECOMPOSITION:
        row: dict[str, Any] = {"component": name, "what": what}
        for mode in ("sync", "async"):
            figures = result["modes"].get(mode, {}).get(name, {})
            row[mode] = figures.get("wall_extra_us_per_tool_step")
            row[f"{mode}_cpu"] = figures.get("cpu_extra_us_per_tool_step")
        rows.append(row)
    cost = result.get("decide") or {}
    if cost:
        rows.append(
            {
                "component": "decide",
                "what": "stop_on_artifact.decide() alone, timed directly",
                **dict.fromkeys(
                    ("sync", "async", "sync_cpu", "async_cpu"),
                    {"median": cost["p50_us"], "ci95": None},
                ),
            }
        )
    return rows


async def decide_cost(config: Config, queries: Sequence[Query]) -> dict[str, Any]:
    """Time :func:`stop_on_artifact.decide` alone, once per tool step, on real histories.

    Each query runs once under ``config``; every prefix of its final messages that ends a
    tool step is decided ``DECIDE_REPEATS`` times, with ``stop_mode=never``.

    Returns:
        The median and the 95th percentile, in microseconds, over tool steps.
    """
    per_step: list[float] = []
    for query in queries:
        state = await config.graph.ainvoke(_input(query), context=config.context(query.context))
        messages = state["messages"]
        context = Context.model_validate({**query.context, "stop_mode": "never"})
        ends = [
            i
            for i in range(1, len(messages))
            if isinstance(messages[i], AIMessage) and isinstance(messages[i - 1], ToolMessage)
        ]
        for end in ends:
            prefix = messages[:end]
            started = time.perf_counter()
            for _ in range(DECIDE_REPEATS):
                decide(prefix, context)
            per_step.append((time.perf_counter() - started) / DECIDE_REPEATS)
    if not per_step:
        return {}
    return {
        "tool_steps": len(per_step),
        "p50_us": round(percentile(per_step, 50) * 1e6, 2),
        "p95_us": round(percentile(per_step, 95) * 1e6, 2),
    }
