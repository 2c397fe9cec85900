"""``python -m bench``: run the benchmark and write ``bench/results/latest.*``.

``python -m bench approval`` measures asking a person instead (:mod:`bench.approval`).

``--model`` (``make bench MODEL=...``) puts a real model in the in-process comparison, the
part that counts model calls, tokens and dollars: every configuration answers the queries
with that model (an ``init_chat_model`` string or an OpenAI-compatible ``URL#model``, as
for ``python -m bench.agentdojo``; ``--model-name`` stays the profile's label). The
one-at-a-time runs and the overhead keep the offline model (they time the library, not the
model), and the servers are left out (they load their own model). Before any call it
prints the estimated tokens and dollars (the committed offline run's, scaled to the
queries) and asks; ``--yes`` skips the question, and without a terminal it is required.
The results go to ``bench/results/model-<model>/``, never over the committed ``latest.*``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from bench import server
from bench.agentdojo.model import confirmed, cost_line, parse_price, price, spec
from bench.benchmark import run_sync
from bench.inprocess import CONCURRENCY, OVERHEAD_QUERIES, OVERHEAD_REPS
from bench.latency import Profile
from bench.queries import DEFAULT_PATH, load
from bench.report import README, update_readme, write

DEFAULT_OUT = Path(__file__).parent / "results"
COMMITTED = DEFAULT_OUT / "latest.json"
"""The committed offline run, whose token counts a model run's estimate reads."""
TRACING_VARIABLES = ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING_V2")
QUICK: dict[str, Any] = {
    "limit": 24,
    "reps": 3,
    "overhead_queries": 6,
    "levels": [1, 4],
    "repeats": 3,
    "window": 1.0,
    "warmup": 0.5,
}
"""What ``--quick`` sets: a small run that checks the machinery, not the figures."""


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        msg = f"must be at least 1, got {value}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _nonnegative(text: str) -> float:
    value = float(text)
    if value < 0:
        msg = f"must not be negative, got {value}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _rate(text: str) -> float:
    value = float(text)
    if value <= 0:
        msg = f"must be positive, got {value}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _levels(text: str) -> list[int]:
    return [_positive(part) for part in text.split(",") if part.strip()]


def parser() -> argparse.ArgumentParser:
    """Return the command's argument parser."""
    default = Profile()
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--queries", type=Path, default=DEFAULT_PATH, help="query file (JSONL)")
    p.add_argument("--limit", type=_positive, default=None, help="use the first N queries")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder")
    p.add_argument(
        "--quick", action="store_true", help=f"a small run to check the machinery: {QUICK}"
    )
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    group = p.add_argument_group("model profile (defaults: Groq llama-3.3-70b-versatile)")
    group.add_argument("--model-name", default=default.model, help="label of the profile")
    group.add_argument(
        "--ttft",
        type=_nonnegative,
        default=default.ttft_s,
        help="time to first token, s (default %(default)s)",
    )
    group.add_argument(
        "--prefill-tps",
        type=_rate,
        default=default.prefill_tps,
        help="input tokens per second (default %(default)s)",
    )
    group.add_argument(
        "--decode-tps",
        type=_rate,
        default=default.decode_tps,
        help="output tokens per second (default %(default)s)",
    )
    group.add_argument(
        "--input-price",
        type=_nonnegative,
        default=default.input_usd_per_m,
        help="$ per million input tokens (default %(default)s)",
    )
    group.add_argument(
        "--output-price",
        type=_nonnegative,
        default=default.output_usd_per_m,
        help="$ per million output tokens (default %(default)s)",
    )
    group.add_argument(
        "--concurrency",
        type=_positive,
        default=CONCURRENCY,
        help="runs in flight at once in the comparison (default %(default)s)",
    )
    group = p.add_argument_group("a real model in the comparison (see the module's docstring)")
    group.add_argument(
        "--model", default=None, help="provider:model, or an OpenAI-compatible URL#model"
    )
    group.add_argument(
        "--price", default=None, help="IN,OUT dollars per million tokens (default: known price)"
    )
    group.add_argument("--yes", action="store_true", help="run the model without asking")
    group = p.add_argument_group("overhead")
    group.add_argument(
        "--reps",
        type=_positive,
        default=None,
        help=f"interleaved repetitions (default {OVERHEAD_REPS})",
    )
    group.add_argument(
        "--overhead-queries",
        type=_positive,
        default=None,
        help=f"queries per repetition (default {OVERHEAD_QUERIES})",
    )
    group = p.add_argument_group("servers (langgraph dev, then make prod, at the same levels)")
    group.add_argument(
        "--skip-server", action="store_true", help="leave out both servers (dev and prod)"
    )
    group.add_argument(
        "--skip-prod", action="store_true", help="leave out the production server (make prod)"
    )
    group.add_argument(
        "--server-levels",
        type=_levels,
        default=None,
        help=f"clients per level, comma-separated (default {server.LEVELS})",
    )
    group.add_argument(
        "--server-repeats",
        type=_positive,
        default=None,
        help=f"windows per level (default {server.REPEATS})",
    )
    group.add_argument(
        "--server-window",
        type=_rate,
        default=None,
        help=f"seconds per window (default {server.WINDOW_S})",
    )
    group.add_argument(
        "--server-warmup",
        type=_nonnegative,
        default=None,
        help=f"warm-up seconds per level (default {server.WARMUP_S})",
    )
    return p


def _pick(value: Any, quick: bool, key: str, default: Any) -> Any:
    if value is not None:
        return value
    return QUICK[key] if quick else default


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["approval"]:
        from bench import approval  # a separate command: over-cap checkouts under ask

        return approval.main(argv[1:])
    args = parser().parse_args(argv)
    for name in TRACING_VARIABLES:
        os.environ[name] = "false"  # nothing leaves the machine, even with tracing configured
    limit = _pick(args.limit, args.quick, "limit", None)
    queries = load(args.queries, limit)
    model = None
    out = args.out
    if args.model is not None:
        built = _model(args, len(queries))
        if isinstance(built, int):
            return built
        model, prices, label = built
        args.skip_server = True  # the servers load their own model
        if args.out == DEFAULT_OUT:
            out = DEFAULT_OUT / f"model-{spec(args.model).slug}"
        args.model_name = label
        args.input_price, args.output_price = prices or (0.0, 0.0)
    profile = Profile(
        model=args.model_name,
        ttft_s=args.ttft,
        prefill_tps=args.prefill_tps,
        decode_tps=args.decode_tps,
        input_usd_per_m=args.input_price,
        output_usd_per_m=args.output_price,
    )
    result = run_sync(
        queries,
        query_path=args.queries,
        skip_server=args.skip_server,
        skip_prod=args.skip_prod,
        reps=_pick(args.reps, args.quick, "reps", OVERHEAD_REPS),
        overhead_queries=_pick(
            args.overhead_queries, args.quick, "overhead_queries", OVERHEAD_QUERIES
        ),
        profile=profile,
        concurrency=args.concurrency,
        server_options={
            "levels": _pick(args.server_levels, args.quick, "levels", server.LEVELS),
            "repeats": _pick(args.server_repeats, args.quick, "repeats", server.REPEATS),
            "window_s": _pick(args.server_window, args.quick, "window", server.WINDOW_S),
            "warmup_s": _pick(args.server_warmup, args.quick, "warmup", server.WARMUP_S),
        },
        progress=not args.no_progress,
        model=model,
    )
    paths = write(result, out)
    defaults = {**vars(parser().parse_args([])), "no_progress": args.no_progress}
    if vars(args) == defaults:
        # The committed results are bench/README.md's: keep its tables in step with them.
        README.write_text(update_readme(README.read_text("utf-8"), result), "utf-8")
        paths["readme"] = README
    for row in result["targets"]:
        status = {True: "met", False: "NOT met", None: "not measured"}[row["met"]]
        print(f"[{status}] {row['target']}: {row['measured']}")
    print(
        f"took {result['meta']['duration_s']:.0f} s; wrote " + ", ".join(map(str, paths.values()))
    )
    return 0


def _model(
    args: argparse.Namespace, queries: int
) -> tuple[BaseChatModel, tuple[float, float] | None, str] | int:
    """Return the model, its price and label after the estimate and the confirmation.

    Returns the exit status instead when the run is not confirmed.
    """
    try:
        chosen = spec(args.model)
        override = parse_price(args.price) if args.price else None
    except ValueError as error:
        parser().error(str(error))
    prices = price(chosen, override)
    committed = json.loads(COMMITTED.read_text("utf-8")) if COMMITTED.exists() else {}
    configs: dict[str, Any] = committed.get("configs", {})
    count = int(committed.get("query_set", {}).get("count", queries))
    share = queries / max(1, count)

    def total(key: str) -> int:
        return round(sum(float(c[key]["total"]) for c in configs.values()) * share)

    sent, written = total("input_tokens"), total("output_tokens")
    print(
        f"estimate for {chosen.label}: {len(configs)} configurations x {queries} queries, "
        f"{total('model_calls')} model calls, {sent:,} input and {written:,} output tokens "
        "(the committed offline run's counts, bench/results/latest.json, scaled to the queries)"
    )
    print(f"  {cost_line(sent, written, prices)}")
    answer = confirmed(args.yes)
    if answer is None:
        print("not a terminal: pass --yes to run the model", file=sys.stderr)
        return 2
    if not answer:
        print("not run", file=sys.stderr)
        return 2
    return chosen.build(), prices, chosen.label


if __name__ == "__main__":
    sys.exit(main())
