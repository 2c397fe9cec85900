"""``python -m bench``: run the benchmark and write ``bench/results/latest.*``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.benchmark import run_sync
from bench.inprocess import OVERHEAD_REPS
from bench.queries import DEFAULT_PATH, load
from bench.report import README, update_readme, write

DEFAULT_OUT = Path(__file__).parent / "results"
TRACING_VARIABLES = ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING_V2")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        msg = f"must be at least 1, got {value}"
        raise argparse.ArgumentTypeError(msg)
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--queries", type=Path, default=DEFAULT_PATH, help="query file (JSONL)")
    parser.add_argument("--limit", type=_positive, default=None, help="use the first N queries")
    parser.add_argument("--skip-server", action="store_true", help="leave out langgraph dev")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder")
    parser.add_argument(
        "--reps", type=_positive, default=OVERHEAD_REPS, help="overhead repetitions"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    args = parser.parse_args(argv)

    for name in TRACING_VARIABLES:
        os.environ[name] = "false"  # nothing leaves the machine, even with tracing configured
    queries = load(args.queries, args.limit)
    result = run_sync(
        queries,
        query_path=args.queries,
        skip_server=args.skip_server,
        reps=args.reps,
        progress=not args.no_progress,
    )
    paths = write(result, args.out)
    if args.out == DEFAULT_OUT and args.queries == DEFAULT_PATH and args.limit is None:
        # The committed results are the README's: keep its tables in step with them.
        README.write_text(update_readme(README.read_text("utf-8"), result), "utf-8")
        paths["readme"] = README
    for row in result["targets"]:
        status = {True: "met", False: "NOT met", None: "not measured"}[row["met"]]
        print(f"[{status}] {row['target']}: {row['measured']}")
    print(
        f"took {result['meta']['duration_s']:.0f} s; wrote " + ", ".join(map(str, paths.values()))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
