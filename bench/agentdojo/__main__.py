"""``python -m bench.agentdojo``: the AgentDojo benchmark; writes ``bench/results/agentdojo.*``.

With the defaults it also refreshes the AgentDojo block of ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.agentdojo.report import README, goals, totals_table, update_readme, write
from bench.agentdojo.run import FAULT_RATE, SEED, run_all
from bench.agentdojo.suites import SUITES

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results"
TRACING_VARIABLES = ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING_V2")


def _rate(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        msg = f"must be between 0 and 1, got {value}"
        raise argparse.ArgumentTypeError(msg)
    return value


def parser() -> argparse.ArgumentParser:
    """Return the command's argument parser."""
    p = argparse.ArgumentParser(prog="python -m bench.agentdojo", description=__doc__)
    p.add_argument(
        "--suites",
        default=",".join(SUITES),
        help="comma-separated suites (default: all four)",
    )
    p.add_argument(
        "--fault-rate", type=_rate, default=FAULT_RATE, help="share of calls that time out once"
    )
    p.add_argument("--seed", type=int, default=SEED, help="seed of the fault draws")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder")
    p.add_argument("--quiet", action="store_true", help="print only the table")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print its table and goals, write the results."""
    args = parser().parse_args(argv)
    for name in TRACING_VARIABLES:
        os.environ[name] = "false"  # nothing leaves the machine, even with tracing configured
    # One warning per invalid artifact would bury the table; the runs count them instead.
    logging.getLogger("stop_on_artifact").setLevel(logging.ERROR)
    suites = tuple(s.strip() for s in args.suites.split(",") if s.strip())
    unknown = sorted(set(suites) - set(SUITES))
    if unknown:
        parser().error(f"unknown suite(s): {', '.join(unknown)}; choose from {', '.join(SUITES)}")
    result = run_all(
        suites=suites,
        rate=args.fault_rate,
        seed=args.seed,
        progress=(lambda line: None) if args.quiet else (lambda line: print(line, flush=True)),
    )
    paths = write(result, args.out)
    if vars(args) == vars(parser().parse_args([])) | {"quiet": args.quiet}:
        README.write_text(update_readme(README.read_text("utf-8"), result), "utf-8")
        paths["readme"] = README
    print("\n".join(totals_table(result)))
    status = {True: "met", False: "NOT met", None: "not measured"}
    for goal in goals(result):
        print(f"[{status[goal['met']]}] {goal['goal']}: {goal['measured']}")
    print(f"took {result['meta']['duration_s']} s; wrote " + ", ".join(map(str, paths.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
