"""``python -m bench approval``: what asking a person costs, per outcome, on both graphs.

Every query of the set with a purchase over the cap (one-part ``checkout`` and two-part
``checkouts``, whose other part is within the cap) runs three ways in-process, on the
offline model:
``refuse`` (today's default: the policy refuses, one model call), and
``on_policy_block="ask"`` answered with an approve or with a reject. Each run is driven to
its end: every pause is answered the same way (a transient receipt after an approval makes
the model retry, and the retry is over the cap too, so it asks again). Per graph and
outcome it reports model calls, pauses, input and output tokens (``usage_metadata``, as a
provider bills them: the offline model counts the bound tool schemas) and their price under
the benchmark's default profile, and how the run ended. An approved one-part purchase costs
one model call: the receipt is the answer.

It writes ``bench/results/approval.json`` and ``bench/results/approval.md``; it is a
command, not a test (``tests/unit_tests/test_bench.py`` checks the figures it computes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from stop_on_artifact.messages import turn_start

from agent.graphs.legacy import build_legacy
from agent.graphs.middleware import build_middleware
from bench.latency import Profile
from bench.queries import DEFAULT_PATH, Query, load
from client.scenarios import GRAPHS

Way = Literal["refuse", "approve", "reject"]
WAYS: tuple[Way, ...] = ("refuse", "approve", "reject")
REASON = "Over this quarter's budget"
MAX_PAUSES = 10
"""A run still paused after this many answers is reported as stuck (none is, today)."""
OUT = Path(__file__).parent / "results"


def _context(query: Query, way: Way) -> dict[str, Any]:
    return {**query.context, "on_policy_block": "refuse" if way == "refuse" else "ask"}


def _answer(request: dict[str, Any], way: Way) -> dict[str, Any]:
    decision: dict[str, Any] = (
        {"type": "approve"} if way == "approve" else {"type": "reject", "message": REASON}
    )
    return {"decisions": [dict(decision) for _ in request["action_requests"]]}


async def run_one(graph: Any, query: Query, way: Way, thread_id: str) -> dict[str, Any]:
    """Run one query to its end, answering every pause ``way``; return its figures.

    Args:
        graph: A compiled graph with a checkpointer.
        query: An over-cap checkout.
        way: ``refuse``, ``approve`` or ``reject``.
        thread_id: A thread of its own.

    Returns:
        ``model_calls``, ``pauses``, ``input_tokens``, ``output_tokens``, ``rule``,
        ``approval`` (None when nobody was asked).
    """
    config: Any = {"configurable": {"thread_id": thread_id}}
    context = _context(query, way)
    given: Any = {"messages": [{"role": "user", "content": query.text}]}
    pauses = 0
    while True:
        await graph.ainvoke(given, config, context=context)
        snapshot = await graph.aget_state(config)
        if not snapshot.interrupts or pauses >= MAX_PAUSES:
            break
        pauses += 1
        given = Command(resume=_answer(snapshot.interrupts[0].value, way))
    messages = snapshot.values["messages"]
    turn = messages[turn_start(messages) :]
    generated = [m for m in turn if isinstance(m, AIMessage) and m.usage_metadata]
    decision = snapshot.values.get("stop_decision") or {}
    return {
        "model_calls": len(generated),
        "pauses": pauses,
        "input_tokens": sum(
            m.usage_metadata["input_tokens"] for m in generated if m.usage_metadata
        ),
        "output_tokens": sum(
            m.usage_metadata["output_tokens"] for m in generated if m.usage_metadata
        ),
        "rule": decision.get("rule") if not snapshot.interrupts else "still_paused",
        "approval": decision.get("approval"),
    }


def _summary(runs: Sequence[dict[str, Any]], profile: Profile) -> dict[str, Any]:
    def mean(key: str) -> float:
        return round(statistics.fmean(run[key] for run in runs), 2)

    dollars = [profile.dollars(run["input_tokens"], run["output_tokens"]) for run in runs]
    return {
        "runs": len(runs),
        "model_calls": mean("model_calls"),
        "pauses": mean("pauses"),
        "input_tokens": mean("input_tokens"),
        "output_tokens": mean("output_tokens"),
        "usd_per_1k_runs": round(1000 * statistics.fmean(dollars), 4),
        "ended": dict(sorted(Counter(str(run["rule"]) for run in runs).items())),
        "approval": dict(sorted(Counter(str(run["approval"]) for run in runs).items())),
        "one_call": sum(run["model_calls"] == 1 for run in runs),
    }


async def measure(
    queries: Sequence[Query], graphs: Sequence[str] = GRAPHS, profile: Profile | None = None
) -> dict[str, Any]:
    """Run every over-cap checkout of ``queries`` every way on every graph.

    Args:
        queries: The query set; only the queries with a purchase over the cap are used.
        graphs: Graph names.
        profile: Prices for the dollar figures; the benchmark's default when None.

    Returns:
        ``{"queries": n, "by_outcome": {...}, "rows": [...]}``: per graph and way a summary
        over all queries, and one per query class (``kind/outcome``, e.g.
        ``checkout/success``).
    """
    profile = profile or Profile()
    picked = [q for q in queries if q.kind in ("checkout", "checkouts") and q.over_cap]
    rows: list[dict[str, Any]] = []
    for name in graphs:
        builder = build_legacy if name == "legacy" else build_middleware
        graph = builder(checkpointer=InMemorySaver())
        for way in WAYS:
            runs = [
                {
                    # A thread no earlier benchmark used: the purchases' idempotency keys
                    # name it, and the payment record outlives the process.
                    **await run_one(graph, q, way, f"{way}-{q.id}-{uuid.uuid4().hex[:12]}"),
                    "outcome": f"{q.kind}/{q.outcome}",
                }
                for q in picked
            ]
            rows.append({"graph": name, "way": way, "outcome": "all", **_summary(runs, profile)})
            for outcome in sorted({run["outcome"] for run in runs}):
                mine = [run for run in runs if run["outcome"] == outcome]
                rows.append(
                    {"graph": name, "way": way, "outcome": outcome, **_summary(mine, profile)}
                )
    return {"queries": len(picked), "profile": profile.as_dict(), "rows": rows}


def render(result: dict[str, Any]) -> str:
    """Return the result as a Markdown table, one row per graph, way and outcome class."""
    lines = [
        f"Purchases over the cap: {result['queries']} queries, each run to its end "
        "(every pause answered the same way); class: kind/forced outcome.",
        "",
        "| graph | answer | class | runs | model calls | pauses | input tokens | "
        "output tokens | $ / 1k runs | one model call | ended |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in result["rows"]:
        ended = ", ".join(f"{rule} {count}" for rule, count in row["ended"].items())
        lines.append(
            f"| {row['graph']} | {row['way']} | {row['outcome']} | {row['runs']} | "
            f"{row['model_calls']} | {row['pauses']} | {row['input_tokens']} | "
            f"{row['output_tokens']} | {row['usd_per_1k_runs']} | {row['one_call']} | {ended} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the measurement and write ``approval.json`` and ``approval.md``.

    Args:
        argv: ``[--queries PATH] [--out DIR]``.

    Returns:
        0.
    """
    p = argparse.ArgumentParser(prog="python -m bench approval", description=__doc__)
    p.add_argument("--queries", type=Path, default=DEFAULT_PATH, help="query file (JSONL)")
    p.add_argument("--out", type=Path, default=OUT, help="results folder")
    args = p.parse_args(argv)
    result = asyncio.run(measure(load(args.queries)))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "approval.json").write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    table = render(result)
    (args.out / "approval.md").write_text(table, "utf-8")
    sys.stdout.write(table)
    return 0
