"""In-process runs: every configuration on every query, and the stop-routing overhead.

Graphs run with ``ainvoke`` in one event loop, with no checkpointer, so the figures are
the graph's own orchestration plus the offline model and tools: no HTTP, no queue.
Fairness: each configuration first runs a few warm-up queries (not recorded), then every
query runs under every configuration back to back, in an order shuffled per query with a
fixed seed, so drift (caches, CPU frequency, other load) spreads over all of them.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from tqdm import tqdm

from agent.context import Context
from agent.contract import decide
from bench.configs import Config
from bench.correctness import RunRecord, read_run
from bench.queries import Query
from bench.stats import percentile

WARMUP_QUERIES = 6
OVERHEAD_REPS = 5
DECIDE_REPEATS = 20


async def run_query(config: Config, query: Query) -> RunRecord:
    """Run one query under one configuration and time it."""
    started = time.perf_counter()
    state = await config.graph.ainvoke(
        {"messages": [{"role": "user", "content": query.text}]},
        context=config.context(query.context),
    )
    elapsed = time.perf_counter() - started
    record = read_run(query, config.name, config.verbatim, state["messages"])
    record.latency_s = elapsed
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
    """Run each configuration on a few queries, unrecorded."""
    for config in configs:
        for query in _warmup_set(queries):
            await run_query(config, query)


async def compare(
    configs: Sequence[Config], queries: Sequence[Query], *, seed: int = 0, progress: bool = True
) -> list[RunRecord]:
    """Run every query under every configuration, interleaved.

    Args:
        configs: The configurations.
        queries: The query set.
        seed: Seeds the per-query configuration order.
        progress: Show a progress bar.

    Returns:
        One record per (query, configuration).
    """
    await warm_up(configs, queries)
    rng = random.Random(seed)
    records: list[RunRecord] = []
    with tqdm(
        total=len(configs) * len(queries), desc="in-process", unit="run", disable=not progress
    ) as bar:
        for query in queries:
            order = list(configs)
            rng.shuffle(order)
            for config in order:
                records.append(await run_query(config, query))
                bar.update()
    return records


async def overhead(
    variants: Sequence[Config],
    queries: Sequence[Query],
    *,
    reps: int = OVERHEAD_REPS,
    seed: int = 1,
    progress: bool = True,
) -> dict[str, Any]:
    """Time each variant per tool step against the first one (stock ``create_agent``).

    Only queries where every variant takes the same path are used (all but checkouts above
    the spend cap, which the policy stops). Each repetition runs every query under every
    variant back to back in a shuffled order; per repetition a variant's time per tool step
    is its total time over its total tool steps. The figures are medians over repetitions.

    Args:
        variants: The variants; the first is the reference.
        queries: The query set.
        reps: Repetitions over the whole set.
        seed: Seeds the per-query order.
        progress: Show a progress bar.

    Returns:
        Per variant: ms per tool step, overhead in percent over the reference, and whether
        its paths matched the reference's (same tool steps and model calls per query).
    """
    if reps < 1:
        msg = f"reps must be at least 1, got {reps}"
        raise ValueError(msg)
    eligible = [q for q in queries if not q.over_cap]
    if not eligible:
        return {"queries": 0, "reps": reps, "variants": {}}
    await warm_up(variants, eligible)
    rng = random.Random(seed)
    reference = variants[0].name
    seconds = {v.name: [0.0] * reps for v in variants}
    steps = {v.name: [0] * reps for v in variants}
    same_path = {v.name: True for v in variants}
    with tqdm(
        total=reps * len(eligible) * len(variants),
        desc="overhead",
        unit="run",
        disable=not progress,
    ) as bar:
        for rep in range(reps):
            for query in eligible:
                order = list(variants)
                rng.shuffle(order)
                shape: dict[str, tuple[int, int]] = {}
                for variant in order:
                    record = await run_query(variant, query)
                    seconds[variant.name][rep] += record.latency_s or 0.0
                    steps[variant.name][rep] += record.tool_steps
                    shape[variant.name] = (record.tool_steps, record.model_calls)
                    bar.update()
                for name, value in shape.items():
                    same_path[name] = same_path[name] and value == shape[reference]
    per_step = {
        name: [s / max(n, 1) * 1000 for s, n in zip(seconds[name], steps[name], strict=True)]
        for name in seconds
    }
    out: dict[str, Any] = {}
    for variant in variants:
        name = variant.name
        ratios = [
            mine / ref - 1 for mine, ref in zip(per_step[name], per_step[reference], strict=True)
        ]
        out[name] = {
            "description": variant.description,
            "ms_per_tool_step": round(statistics.median(per_step[name]), 4),
            "overhead_pct": round(statistics.median(ratios) * 100, 2),
            "overhead_pct_range": [round(min(ratios) * 100, 2), round(max(ratios) * 100, 2)],
            "tool_steps_per_rep": steps[name][0],
            "same_path_as_reference": same_path[name],
        }
    return {
        "queries": len(eligible),
        "reps": reps,
        "reference": reference,
        "variants": out,
        "decide": await decide_cost(variants[0], eligible),
    }


async def decide_cost(config: Config, queries: Sequence[Query]) -> dict[str, Any]:
    """Time :func:`agent.contract.decide` alone, once per tool step, on real histories.

    Each query runs once under ``config``; every prefix of its final messages that ends a
    tool step is decided ``DECIDE_REPEATS`` times, with ``stop_mode=never``.

    Returns:
        The median and the 95th percentile, in microseconds, over tool steps.
    """
    per_step: list[float] = []
    for query in queries:
        state = await config.graph.ainvoke(
            {"messages": [{"role": "user", "content": query.text}]},
            context=config.context(query.context),
        )
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
