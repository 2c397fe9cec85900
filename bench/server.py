"""Through the dev server: throughput and latency under concurrent ``langgraph_sdk`` clients.

The real ``langgraph dev`` (CLI defaults: one run at a time) serves the project's graphs
and stock ``create_agent`` (``bench/served.py``) from a temporary config the benchmark
writes beside its own working folder; the project's ``langgraph.json`` is not changed.
Two kinds of run: threadless ``runs.wait`` and threaded ones (a new thread per run, kept by
the server's checkpointer; the thread is made before the timer starts). At each
concurrency level, that many SDK clients (one ``get_client`` each) first warm the server
up at that level, then send runs back to back for a fixed window, three windows in a row;
each run takes the next graph in turn, so the graphs share the same load. All runs use
``stop_mode=hard``; queries cycle through the query set. A run counts as an error when the
call raises or the final state has no answer; an answer that differs from the in-process
answer counts as a mismatch.

These figures measure the servers' queues as much as the graph. The in-memory runtime's
scheduler sleeps 0.5 s after every look that found no queued run (``Runs.next``), so a
sequential client would wait up to half a second per run; the project's HTTP app shortens
that pause to 20 ms on ``langgraph dev`` (:mod:`agent.frameworks.langgraph_runtime_inmem`).

The production server (``make prod``: Aegra, 2 workers, PostgreSQL, Redis; see
``tests.support.prod_server``) is loaded the same way, at the same levels, on the project's
two graphs. Aegra's ``runs.wait`` would look for the run's end every 2 s; each worker looks
every 10 to 50 ms instead (:mod:`agent.frameworks.aegra`). The threaded runs keep their
checkpoints in PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from langgraph_sdk import get_client
from tqdm import tqdm

from bench.queries import Query
from bench.stats import latency_ms
from tests.support.dev_server import CONFIG, ROOT, dev_server
from tests.support.prod_server import prod_server, state_folder

GRAPHS: tuple[str, ...] = ("legacy", "middleware", "create_agent")
PROD_GRAPHS: tuple[str, ...] = ("legacy", "middleware")
"""The production server serves ``aegra.json``: the project's graphs, no bench graph."""
MODES: tuple[str, ...] = ("threadless", "threaded")
LEVELS: tuple[int, ...] = (1, 8, 32)
REPEATS = 3
WINDOW_S = 10.0
WARMUP_S = 3.0
CLIENT_TIMEOUT_S = 300.0
SERVER = "langgraph dev, CLI defaults (one run at a time), in-memory runtime"
PROD_SERVER = "Aegra, 2 uvicorn workers, PostgreSQL and Redis on loopback"
Kind = Literal["dev", "prod"]
LABELS: dict[str, str] = {"dev": SERVER, "prod": PROD_SERVER}


@contextmanager
def serving(kind: Kind) -> Iterator[str]:
    """Start the dev server (with the bench graphs) or the production stack.

    Yields:
        The server's URL; everything started is stopped when the block ends.
    """
    if kind == "prod":
        with state_folder() as state, prod_server(state) as stack:
            yield stack.url
    else:
        with bench_config() as config, dev_server(config=config) as server:
            yield server.url


@contextmanager
def bench_config() -> Iterator[Path]:
    """Write a temporary config: the project's ``langgraph.json`` plus the bench graphs.

    Yields:
        The config's path, removed when the block ends.
    """
    config = json.loads(CONFIG.read_text("utf-8"))
    config["dependencies"] = [str(ROOT)]
    config["graphs"] = {**config["graphs"], "create_agent": "bench.served:graph"}
    if isinstance(config.get("env"), str):
        config["env"] = str(ROOT / config["env"])
    with tempfile.TemporaryDirectory(prefix="soa-bench-config-") as folder:
        path = Path(folder) / "langgraph.json"
        path.write_text(json.dumps(config, indent=2), "utf-8")
        yield path


def _answer(result: object) -> str | None:
    if not isinstance(result, dict) or "__error__" in result:
        return None
    messages = result.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return None
    content = messages[-1].get("content")
    return content if isinstance(content, str) and content else None


async def load_window(
    url: str,
    queries: Sequence[Query],
    concurrency: int,
    seconds: float,
    *,
    threaded: bool,
    graphs: Sequence[str] = GRAPHS,
    expected: Mapping[tuple[str, str], str] | None = None,
    counter: Iterator[int] | None = None,
    stream: bool = False,
) -> dict[str, Any]:
    """Drive ``concurrency`` concurrent SDK clients for ``seconds``.

    A run that starts before the window closes counts; the window's length is the time
    until the last one finished. Run ``i`` sends query ``i`` to graph ``i`` (both modulo
    their counts), ``i`` taken from ``counter`` so that windows carry on the rotation.
    ``stream`` streams each run's values (``runs.stream``) instead of ``runs.wait``.

    Returns:
        Per graph: runs, runs per second, latency p50/p95/mean in ms, errors and mismatches;
        and the window's totals.
    """
    clients = [
        get_client(url=url, api_key=None, timeout=CLIENT_TIMEOUT_S) for _ in range(concurrency)
    ]
    counter = counter if counter is not None else itertools.count()
    latencies: dict[str, list[float]] = {g: [] for g in graphs}
    errors: dict[str, list[str]] = {g: [] for g in graphs}
    mismatches = dict.fromkeys(graphs, 0)
    deadline = time.perf_counter() + seconds

    async def worker(client: Any) -> None:
        while time.perf_counter() < deadline:
            index = next(counter)
            query = queries[index % len(queries)]
            graph = graphs[index % len(graphs)]
            result: object = None
            started = time.perf_counter()
            try:
                thread_id = None
                if threaded:
                    thread_id = (await client.threads.create())["thread_id"]
                    started = time.perf_counter()  # the run is timed, not the thread's creation
                request: dict[str, Any] = {
                    "input": {"messages": [{"role": "user", "content": query.text}]},
                    "context": {**query.context, "stop_mode": "hard"},
                }
                if stream:
                    parts = client.runs.stream(thread_id, graph, stream_mode="values", **request)
                    async for part in parts:
                        if part.event == "values":
                            result = part.data
                else:
                    result = await client.runs.wait(thread_id, graph, **request)
            except Exception as exc:  # noqa: BLE001 - every failure is an error to count
                errors[graph].append(f"{type(exc).__name__}: {str(exc)[:200]}")
                result = None
            latencies[graph].append(time.perf_counter() - started)
            answer = _answer(result)
            if result is not None and answer is None:
                errors[graph].append(f"no answer in the final state of {graph}/{query.id}")
            elif answer is not None and expected and (graph, query.id) in expected:
                mismatches[graph] += answer != expected[(graph, query.id)]

    started = time.perf_counter()
    try:
        await asyncio.gather(*(worker(client) for client in clients))
    finally:
        wall = time.perf_counter() - started
        for client in clients:
            await client.aclose()
    per_graph = {
        g: {
            "runs": len(latencies[g]),
            "runs_per_s": round(len(latencies[g]) / wall, 2) if wall > 0 else 0.0,
            "latency_ms": latency_ms(latencies[g]),
            "errors": len(errors[g]),
            "error_samples": sorted(set(errors[g]))[:3],
            "answer_mismatches": mismatches[g],
        }
        for g in graphs
    }
    runs = sum(len(v) for v in latencies.values())
    return {
        "wall_s": round(wall, 3),
        "runs": runs,
        "runs_per_s": round(runs / wall, 2) if wall > 0 else 0.0,
        "errors": sum(len(v) for v in errors.values()),
        "answer_mismatches": sum(mismatches.values()),
        "graphs": per_graph,
    }


async def measure(
    queries: Sequence[Query],
    *,
    levels: Sequence[int] = LEVELS,
    modes: Sequence[str] = MODES,
    repeats: int = REPEATS,
    window_s: float = WINDOW_S,
    warmup_s: float = WARMUP_S,
    graphs: Sequence[str] | None = None,
    expected: Mapping[tuple[str, str], str] | None = None,
    progress: bool = True,
    kind: Kind = "dev",
    stream: bool = False,
) -> dict[str, Any]:
    """Start one server and load it, per mode and level: a warm-up, then ``repeats`` windows.

    Args:
        queries: Queries to cycle through.
        levels: Concurrency levels.
        modes: ``threadless`` and/or ``threaded``.
        repeats: Measured windows per level.
        window_s: Seconds per window.
        warmup_s: Seconds of unrecorded load at the level before its windows.
        graphs: Graph ids to alternate; by default every graph the server serves.
        expected: In-process answers keyed by (graph, query id).
        progress: Show a progress bar (one tick per window).
        kind: ``dev`` (``langgraph dev``) or ``prod`` (the ``make prod`` stack).
        stream: Stream each run's values instead of ``runs.wait`` (see :func:`load_window`).

    Returns:
        The setup and, per mode and level (as a string key), the warm-up's error count and
        every window's figures.
    """
    graphs = tuple(graphs or (PROD_GRAPHS if kind == "prod" else GRAPHS))
    out: dict[str, Any] = {
        "server": LABELS[kind],
        "graphs": list(graphs),
        "repeats": repeats,
        "window_s": window_s,
        "warmup_s": warmup_s,
        "modes": {},
    }
    total = len(modes) * len(levels) * repeats
    with tqdm(total=total, desc=f"{kind} server", unit="window", disable=not progress) as bar:
        started = time.perf_counter()
        with serving(kind) as url:
            out["start_s"] = round(time.perf_counter() - started, 2)
            counter = itertools.count()
            for mode in modes:
                threaded = mode == "threaded"
                per_level: dict[str, Any] = {}
                for level in levels:
                    warm = await load_window(
                        url,
                        queries,
                        level,
                        warmup_s,
                        threaded=threaded,
                        graphs=graphs,
                        counter=counter,
                        stream=stream,
                    )
                    windows = []
                    for _ in range(repeats):
                        windows.append(
                            await load_window(
                                url,
                                queries,
                                level,
                                window_s,
                                threaded=threaded,
                                graphs=graphs,
                                expected=expected,
                                counter=counter,
                                stream=stream,
                            )
                        )
                        bar.update()
                    per_level[str(level)] = {"warmup_errors": warm["errors"], "repeats": windows}
                out["modes"][mode] = per_level
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Print both servers' threadless figures at the same levels, waited or streamed."""
    from bench.queries import DEFAULT_PATH, load

    parser = argparse.ArgumentParser(
        prog="python -m bench.server",
        description="Load langgraph dev and the production server (make prod) at the same "
        "client levels and print runs/s and latency; writes nothing.",
    )
    parser.add_argument("--mode", choices=["wait", "stream"], default="wait")
    parser.add_argument("--levels", default="1,8,32", help="client counts, comma-separated")
    parser.add_argument("--window", type=float, default=WINDOW_S, help="seconds per window")
    args = parser.parse_args(argv)
    levels = [int(level) for level in args.levels.split(",")]
    print(f"| server | clients | {args.mode} runs/s | p50 ms | p95 ms | errors |")
    print("|---|---:|---:|---:|---:|---:|")
    kinds: tuple[Kind, ...] = ("dev", "prod")
    for kind in kinds:
        figures = asyncio.run(
            measure(
                load(DEFAULT_PATH),
                levels=levels,
                modes=("threadless",),
                repeats=1,
                window_s=args.window,
                kind=kind,
                stream=args.mode == "stream",
                progress=False,
            )
        )
        for level, level_figures in figures["modes"]["threadless"].items():
            window = level_figures["repeats"][0]
            graph_figures = list(window["graphs"].values())
            p50 = max(g["latency_ms"].get("p50", 0) for g in graph_figures)
            p95 = max(g["latency_ms"].get("p95", 0) for g in graph_figures)
            print(
                f"| {LABELS[kind]} | {level} | {window['runs_per_s']} | {p50:.0f} | "
                f"{p95:.0f} | {window['errors']} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
