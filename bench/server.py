"""Through the dev server: throughput and latency under concurrent ``langgraph_sdk`` clients.

The project's own ``langgraph.json`` is served by the real ``langgraph dev`` (see
``tests.support.dev_server``), once as the CLI starts it (one run at a time) and once with
``--n-jobs-per-worker 8``. At each concurrency level, that many SDK clients (one
``get_client`` each) send threadless ``runs.wait`` calls back to back until the level's run
budget is spent; queries cycle through the query set and alternate between the two graphs,
all with ``stop_mode=hard``. A run counts as an error when the call raises or the final
state has no answer; an answer that differs from the in-process answer counts as a mismatch.

These figures measure the server's in-memory queue as much as the graph: its scheduler
sleeps 0.5 s after every look that found no queued run (``langgraph_runtime_inmem``,
``Runs.next``), so one sequential client waits about a second per run however short the run,
while a saturated server keeps finding queued runs and takes them at once.

The production server (``make prod``: Aegra, 2 workers, PostgreSQL, Redis) is loaded the
same way beside it. Its ``runs.wait`` polls for the run's end every 2 s, so its sequential
latency is about 2 s; ``python -m bench.server --mode stream`` streams instead, which does
not wait on that poll, and prints both servers' figures without touching the results.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal

from langgraph_sdk import get_client
from tqdm import tqdm

from bench.queries import Query
from bench.stats import latency_ms
from tests.support.dev_server import dev_server
from tests.support.prod_server import prod_server, state_folder

GRAPHS: tuple[str, ...] = ("legacy", "middleware")
PROD: tuple[str, ...] = ("make prod",)
"""The flags that stand for the production server rather than ``langgraph dev``."""
SERVERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("1 job (CLI default)", ()),
    ("8 jobs (--n-jobs-per-worker 8)", ("--n-jobs-per-worker", "8")),
    ("production (Aegra, 2 workers)", PROD),
)
Mode = Literal["wait", "stream"]
LEVELS: tuple[int, ...] = (1, 8, 32)
WARMUP_RUNS = 2
CLIENT_TIMEOUT_S = 300.0


def runs_for(concurrency: int) -> int:
    """Return the run budget of a concurrency level: 10 runs, or 4 per client."""
    return max(10, 4 * concurrency)


def _answer(result: object) -> str | None:
    if not isinstance(result, dict) or "__error__" in result:
        return None
    messages = result.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return None
    content = messages[-1].get("content")
    return content if isinstance(content, str) and content else None


async def load_level(
    url: str,
    queries: Sequence[Query],
    concurrency: int,
    runs: int,
    expected: Mapping[tuple[str, str], str] | None = None,
    bar: tqdm[Any] | None = None,
    mode: Mode = "wait",
) -> dict[str, Any]:
    """Drive ``runs`` runs through ``concurrency`` concurrent SDK clients.

    Args:
        url: The server's base URL.
        queries: Queries to cycle through.
        concurrency: Number of clients sending at once.
        runs: Total runs at this level.
        expected: In-process answers keyed by (graph, query id), to count mismatches.
        bar: A progress bar to advance per run.
        mode: ``wait`` (``runs.wait``) or ``stream`` (``runs.stream`` of the values).

    Returns:
        Runs per second, latency p50/p95/mean in ms, error and mismatch counts.
    """
    clients = [
        get_client(url=url, api_key=None, timeout=CLIENT_TIMEOUT_S) for _ in range(concurrency)
    ]
    next_index = iter(range(runs))
    latencies: list[float] = []
    errors: list[str] = []
    mismatches = 0

    async def worker(client: Any) -> None:
        nonlocal mismatches
        for index in next_index:
            query = queries[index % len(queries)]
            graph = GRAPHS[index % len(GRAPHS)]
            started = time.perf_counter()
            run = {
                "input": {"messages": [{"role": "user", "content": query.text}]},
                "context": {**query.context, "stop_mode": "hard"},
            }
            result: Any = None
            try:
                if mode == "wait":
                    result = await client.runs.wait(None, graph, **run)
                else:
                    async for part in client.runs.stream(None, graph, stream_mode="values", **run):
                        if part.event == "values":
                            result = part.data
            except Exception as exc:  # noqa: BLE001 - every failure is an error to count
                result = None
                errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
            latencies.append(time.perf_counter() - started)
            answer = _answer(result)
            if result is not None and answer is None:
                errors.append(f"no answer in the final state of {graph}/{query.id}")
            elif answer is not None and expected and (graph, query.id) in expected:
                mismatches += answer != expected[(graph, query.id)]
            if bar is not None:
                bar.update()

    started = time.perf_counter()
    try:
        await asyncio.gather(*(worker(client) for client in clients))
    finally:
        wall = time.perf_counter() - started
        for client in clients:
            await client.aclose()
    return {
        "clients": concurrency,
        "runs": runs,
        "wall_s": round(wall, 3),
        "runs_per_s": round(runs / wall, 2) if wall > 0 else 0.0,
        "latency_ms": latency_ms(latencies),
        "errors": len(errors),
        "error_samples": sorted(set(errors))[:5],
        "answer_mismatches": mismatches,
    }


async def measure(
    queries: Sequence[Query],
    *,
    servers: Sequence[tuple[str, Sequence[str]]] = SERVERS,
    levels: Sequence[int] = LEVELS,
    runs: Mapping[int, int] | None = None,
    expected: Mapping[tuple[str, str], str] | None = None,
    warmup: int = WARMUP_RUNS,
    progress: bool = True,
    mode: Mode = "wait",
) -> dict[str, Any]:
    """Start each server in turn and load it at each concurrency level.

    Args:
        queries: Queries to cycle through.
        servers: (label, extra CLI flags) per server.
        levels: Concurrency levels.
        runs: Run budget per level; :func:`runs_for` by default.
        expected: In-process answers keyed by (graph, query id).
        warmup: Sequential runs per server before measuring, not recorded.
        progress: Show a progress bar.
        mode: ``wait`` or ``stream``; see :func:`load_level`.

    Returns:
        Per server label: start time, flags, and per level (as a string key) the figures.
    """
    budget = {level: (runs or {}).get(level, runs_for(level)) for level in levels}
    total = len(servers) * (warmup + sum(budget.values()))
    out: dict[str, Any] = {}
    with tqdm(total=total, desc="servers", unit="run", disable=not progress) as bar:
        for label, args in servers:
            started = time.perf_counter()
            with serving(args) as url:
                start_s = time.perf_counter() - started
                warm = await load_level(url, queries, 1, warmup, expected, bar, mode)
                figures = {
                    str(level): await load_level(
                        url, queries, level, budget[level], expected, bar, mode
                    )
                    for level in levels
                }
            out[label] = {
                "flags": list(args),
                "start_s": round(start_s, 2),
                "warmup_errors": warm["errors"],
                "levels": figures,
            }
    return out


@contextmanager
def serving(args: Sequence[str]) -> Iterator[str]:
    """Start ``langgraph dev`` with ``args``, or the production stack for :data:`PROD`.

    Yields:
        The server's URL.
    """
    if tuple(args) == PROD:
        with state_folder() as state, prod_server(state) as stack:
            yield stack.url
    else:
        with dev_server(args=list(args)) as server:
            yield server.url


def main(argv: Sequence[str] | None = None) -> int:
    """Print both servers' figures at the same client levels; writes nothing."""
    from bench.queries import DEFAULT_PATH, load

    parser = argparse.ArgumentParser(prog="python -m bench.server", description=__doc__)
    parser.add_argument("--mode", choices=["wait", "stream"], default="wait")
    parser.add_argument("--levels", default="1,8,32", help="client counts, comma-separated")
    args = parser.parse_args(argv)
    levels = [int(level) for level in args.levels.split(",")]
    figures = asyncio.run(
        measure(load(DEFAULT_PATH), servers=SERVERS[1:], levels=levels, mode=args.mode)
    )
    print(f"| server ({args.mode}) | clients | runs | runs/s | p50 ms | p95 ms | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, server in figures.items():
        for level, load_ in server["levels"].items():
            ms = load_["latency_ms"]
            print(
                f"| {label} | {level} | {load_['runs']} | {load_['runs_per_s']:.1f} "
                f"| {ms['p50']:.0f} | {ms['p95']:.0f} | {load_['errors']} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
