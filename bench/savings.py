"""What a hard stop saved, estimated by the library and measured against ``never``.

Every query runs under ``stop_mode=hard`` and ``stop_mode=never`` on each graph, so the
saving is measured: the ``never`` run's model calls, input and output tokens minus the
``hard`` run's, priced with the latency profile's prices. The estimate is what the hard run's
decision recorded (``stop_decision["saved"]``: the skipped calls, their tokens from the turn's
messages and the last call's usage, see the library's ``estimate_saving``) minus what the
``never`` run's recorded (a policy refusal, a spent retry budget and the model-call cap stop
in every mode, so both record them), priced alike. Both are summed per query class and in
total, and the estimate is judged against the measurement within :data:`TOLERANCE` for each
figure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bench.correctness import RunRecord
from bench.latency import Profile
from bench.queries import Query

TOLERANCE = 0.10
"""How far the estimated saving may be from the measured one, as a share of the measured."""

FIGURES: tuple[str, ...] = ("model_calls", "input_tokens", "output_tokens", "usd")
GRAPHS: tuple[str, ...] = ("legacy", "middleware")


def _zero() -> dict[str, float]:
    return dict.fromkeys(FIGURES, 0.0)


def _add(into: dict[str, float], calls: int, inputs: int, outputs: int, profile: Profile) -> None:
    into["model_calls"] += calls
    into["input_tokens"] += inputs
    into["output_tokens"] += outputs
    into["usd"] += profile.dollars(inputs, outputs)


def _judge(estimated: Mapping[str, float], measured: Mapping[str, float]) -> dict[str, Any]:
    """Return the estimate's error per figure and whether each is within the tolerance."""
    error: dict[str, float | None] = {}
    for name in FIGURES:
        if measured[name]:
            error[name] = round(estimated[name] / measured[name] - 1, 4)
        else:
            error[name] = None if estimated[name] else 0.0  # None: saved nothing, estimated some
    within = all(e is not None and abs(e) <= TOLERANCE for e in error.values())
    return {"error": error, "within": within}


def _rounded(figures: Mapping[str, float]) -> dict[str, float]:
    return {k: round(v, 6) if k == "usd" else int(v) for k, v in figures.items()}


def compare(
    queries: Sequence[Query],
    records: Sequence[RunRecord],
    profile: Profile,
    classify: Callable[[Query], str],
) -> dict[str, Any]:
    """Sum the estimated and the measured saving of ``hard`` over ``never``, per graph.

    Args:
        queries: The query set.
        records: Every in-process run of the comparison.
        profile: The prices to put the tokens in dollars.
        classify: The class a query is reported under.

    Returns:
        Per graph: ``total`` and ``by_class``, each with ``queries``, ``estimated``,
        ``measured`` (calls, input and output tokens, dollars), ``error`` (estimated over
        measured minus one, per figure) and ``within`` (every error within the tolerance).
        Graphs missing either mode are left out.
    """
    by_id = {q.id: q for q in queries}
    runs = {(r.config, r.query_id): r for r in records}
    result: dict[str, Any] = {}
    for graph in GRAPHS:
        hard_name, never_name = f"{graph}/hard", f"{graph}/never"
        pairs = [
            (by_id[query_id], hard, runs[(never_name, query_id)])
            for (config, query_id), hard in runs.items()
            if config == hard_name and (never_name, query_id) in runs
        ]
        if not pairs:
            continue
        totals: dict[str, dict[str, Any]] = {}
        for query, hard, never in sorted(pairs, key=lambda p: p[0].id):
            for key in ("total", classify(query)):
                row = totals.setdefault(
                    key, {"queries": 0, "estimated": _zero(), "measured": _zero()}
                )
                row["queries"] += 1
                ours, theirs = hard.saved or {}, never.saved or {}
                calls, inputs, outputs = (ours.get(k, 0) - theirs.get(k, 0) for k in FIGURES[:3])
                _add(row["estimated"], calls, inputs, outputs, profile)
                _add(
                    row["measured"],
                    never.model_calls - hard.model_calls,
                    never.input_tokens - hard.input_tokens,
                    never.output_tokens - hard.output_tokens,
                    profile,
                )
        judged = {
            key: {
                "queries": row["queries"],
                "estimated": _rounded(row["estimated"]),
                "measured": _rounded(row["measured"]),
                **_judge(row["estimated"], row["measured"]),
            }
            for key, row in totals.items()
        }
        total = judged.pop("total")
        result[graph] = {"total": total, "by_class": dict(sorted(judged.items()))}
    return result


def misses(savings: Mapping[str, Any]) -> list[str]:
    """Return ``graph/class: figure`` for every figure outside the tolerance."""
    found = []
    for graph, figures in savings.items():
        for key, row in [("total", figures["total"]), *figures["by_class"].items()]:
            for name, error in row["error"].items():
                if error is None or abs(error) > TOLERANCE:
                    found.append(f"{graph}/{key}: {name}")
    return found


WHY_NOT = (
    "output tokens (and so dollars): the estimate counts an answer as long as the content the "
    "stop returns, as a model restating it would write; the offline model's answer after the "
    "tools is one line per part, so `never` writes far fewer output tokens than a hosted model "
    "would"
)
"""Why the output figures miss on the offline model, said where they miss."""


def target(savings: Mapping[str, Any]) -> dict[str, Any]:
    """Return the benchmark's target row for the estimate (the report's ``targets`` shape)."""
    missed = misses(savings)
    measured = "; ".join(
        f"{graph}: calls {row['total']['error']['model_calls']:+.1%}, input tokens "
        f"{row['total']['error']['input_tokens']:+.1%}, output tokens "
        f"{row['total']['error']['output_tokens']:+.1%}, $ {row['total']['error']['usd']:+.1%}"
        for graph, row in savings.items()
    )
    if missed:
        outside = sorted({m.split(": ")[1] for m in missed})
        measured += f"; outside for {', '.join(outside)} ({len(missed)} cells)"
        if set(outside) <= {"output_tokens", "usd"}:
            measured += f"; why: {WHY_NOT}"
    return {
        "name": "saving_estimate",
        "target": (
            f"the estimated saving of hard over never within {TOLERANCE:.0%} of the measured, "
            "in total and per class (calls, input and output tokens, $)"
        ),
        "measured": measured or "not measured",
        "met": (not missed) if savings else None,
    }


def _cell(row: Mapping[str, Any], name: str) -> str:
    est, meas, error = row["estimated"][name], row["measured"][name], row["error"][name]
    form = ".4f" if name == "usd" else ",.0f"
    off = "n/a" if error is None else f"{error:+.0%}"
    return f"{est:{form}} / {meas:{form}} ({off})"


def markdown(savings: Mapping[str, Any]) -> list[str]:
    """Render the estimated and measured savings as a table per graph."""
    if not savings:
        return []
    lines = [
        "",
        "## What a hard stop saved: estimated / measured against `never` (error)",
        "",
        "| graph | class | queries | model calls | input tokens | output tokens | $ | within "
        f"{TOLERANCE:.0%} |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for graph, figures in savings.items():
        for key, row in [("total", figures["total"]), *figures["by_class"].items()]:
            cells = " | ".join(_cell(row, name) for name in FIGURES)
            lines.append(
                f"| `{graph}` | {key} | {row['queries']} | {cells} | "
                f"{'yes' if row['within'] else 'no'} |"
            )
    if misses(savings):
        lines += ["", f"Where not: {WHY_NOT}."]
    return lines
