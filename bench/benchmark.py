"""The whole benchmark: in-process comparison, overhead, dev server, targets."""

from __future__ import annotations

import asyncio
import inspect
import os
import platform
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from bench import configs as configs_module
from bench import inprocess, latency, report, savings, server
from bench.latency import Profile, TimedOfflineModel, serving
from bench.queries import Query, describe

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("langgraph", "langchain", "langchain-core", "langgraph-api", "langgraph-cli",
            "langgraph-sdk")  # fmt: skip


def _versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "missing"
    return out


def _paragraphs(doc: str | None) -> list[str]:
    """Split a docstring into paragraphs, each on one line."""
    return [" ".join(part.split()) for part in inspect.cleandoc(doc or "").split("\n\n")]


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


async def run(
    queries: Sequence[Query],
    *,
    query_path: Path,
    skip_server: bool = False,
    skip_prod: bool = False,
    reps: int = inprocess.OVERHEAD_REPS,
    overhead_queries: int = inprocess.OVERHEAD_QUERIES,
    profile: Profile | None = None,
    concurrency: int = inprocess.CONCURRENCY,
    server_options: Mapping[str, Any] | None = None,
    progress: bool = True,
    command: str | None = None,
    model: BaseChatModel | None = None,
) -> dict[str, Any]:
    """Run every part of the benchmark and return the result document.

    Args:
        queries: The query set.
        query_path: Where it came from (recorded in the result).
        skip_server: Leave out both servers.
        skip_prod: Leave out the production server only.
        reps: Repetitions of the overhead measurement.
        overhead_queries: Queries per overhead repetition.
        profile: Model latency and prices; Groq ``llama-3.3-70b-versatile`` by default.
        concurrency: Runs in flight at once in the comparison.
        server_options: Keyword arguments for :func:`bench.server.measure` (levels,
            repeats, window_s, warmup_s), to shrink the server part.
        progress: Show progress bars.
        command: The command line to record; ``sys.argv`` by default.
        model: The model of the in-process comparison (every configuration over the
            queries); the offline model, timed by ``profile``, by default. The one-at-a-time
            runs, the overhead and the servers keep the offline model.

    Returns:
        The result: ``meta``, ``query_set``, ``configs``, ``overhead``, ``server``,
        ``targets``.
    """
    profile = profile or Profile()
    started = time.perf_counter()
    timings: dict[str, float] = {}
    model = model or TimedOfflineModel(latency=profile)
    configs = configs_module.configurations(model)
    with serving(model):
        records = await inprocess.compare(
            configs, queries, concurrency=concurrency, progress=progress
        )
    timings["in_process_s"] = round(time.perf_counter() - started, 2)

    mark = time.perf_counter()
    alone = await inprocess.unloaded(configs_module.configurations(), queries, progress=progress)
    timings["one_at_a_time_s"] = round(time.perf_counter() - mark, 2)

    mark = time.perf_counter()
    overhead = await inprocess.overhead(
        configs_module.overhead_variants(),
        queries,
        reps=reps,
        count=overhead_queries,
        progress=progress,
    )
    timings["overhead_s"] = round(time.perf_counter() - mark, 2)

    summary = report.per_config(configs, queries, records, profile, alone)
    expected = {
        (config.graph_id, r.query_id): r.answer
        for config in configs
        if config.stop_mode == "hard" and not config.extra  # the servers run plain hard
        for r in records
        if r.config == config.name
    }
    server_figures: dict[str, Any] | None = None
    if not skip_server:
        mark = time.perf_counter()
        server_figures = await server.measure(
            queries, expected=expected, progress=progress, **dict(server_options or {})
        )
        timings["server_s"] = round(time.perf_counter() - mark, 2)
    prod_figures: dict[str, Any] | None = None
    if not (skip_server or skip_prod):
        mark = time.perf_counter()
        prod_figures = await server.measure(
            queries,
            expected=expected,
            progress=progress,
            kind="prod",
            **dict(server_options or {}),
        )
        timings["prod_server_s"] = round(time.perf_counter() - mark, 2)

    result: dict[str, Any] = {
        "meta": {
            "command": command or shlex.join(["python", "-m", "bench", *sys.argv[1:]]),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "versions": _versions(),
            "duration_s": round(time.perf_counter() - started, 2),
            "phases_s": timings,
            "profile": profile.as_dict(),
            "concurrency": concurrency,
            "method": {
                "in_process": _paragraphs(inprocess.__doc__)[1],
                "latency": _paragraphs(latency.__doc__)[1],
                "overhead": _paragraphs(inprocess.overhead.__doc__)[1],
                "server": None if skip_server else " ".join(_paragraphs(server.__doc__)[1:]),
            },
        },
        "query_set": {"path": _shown(query_path), **describe(queries)},
        "configs": summary,
        "overhead": overhead,
        "server": server_figures,
        "prod_server": prod_figures,
    }
    result["savings"] = savings.compare(queries, records, profile, report.query_class)
    result["targets"] = report.targets(queries, records, summary, server_figures, prod_figures)
    served = [
        i for i, row in enumerate(result["targets"]) if row["name"].endswith("server_no_errors")
    ]
    result["targets"].insert(
        served[0] if served else len(result["targets"]), savings.target(result["savings"])
    )
    result["meta"]["duration_s"] = round(time.perf_counter() - started, 2)
    return result


def run_sync(queries: Sequence[Query], **kwargs: Any) -> dict[str, Any]:
    """Run :func:`run` in a fresh event loop."""
    return asyncio.run(run(queries, **kwargs))
