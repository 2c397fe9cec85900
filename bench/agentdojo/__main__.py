"""``python -m bench.agentdojo``: the AgentDojo benchmark; writes ``bench/results/agentdojo.*``.

With the defaults it also refreshes the AgentDojo block of ``bench/README.md``.

``--model`` runs the configurations on a real model instead of the replay (see
:mod:`bench.agentdojo.model`): it prints the estimated tokens and dollars first, asks before
calling anything (``--yes`` skips the question; without a terminal it is required), appends
each finished task to ``<out>/agentdojo-<model>.jsonl`` (a rerun resumes; ``--fresh`` starts
over) and writes ``<out>/agentdojo-<model>.json``, never the replay's files.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from bench.agentdojo.harness import REFUSED as REFUSED_BY_PROVIDER
from bench.agentdojo.harness import errored
from bench.agentdojo.model import Journal, confirmed, estimate, parse_price, price, spec
from bench.agentdojo.report import README, goal_line, goals, totals_table, update_readme, write
from bench.agentdojo.run import FAULT_RATE, SEED, chosen_tasks, config_names, run_all
from bench.agentdojo.suites import SUITES
from bench.latency import Profile

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results"
COMMITTED = DEFAULT_OUT / "agentdojo.json"
"""The committed replay run, whose token counts the estimate reads."""
REFUSED = 2
"""Exit status when a model run is not confirmed."""
TRACING_VARIABLES = ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING_V2")


def _rate(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        msg = f"must be between 0 and 1, got {value}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        msg = f"must be at least 1, got {value}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _price(text: str) -> tuple[float, float]:
    try:
        return parse_price(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def parser() -> argparse.ArgumentParser:
    """Return the command's argument parser."""
    p = argparse.ArgumentParser(prog="python -m bench.agentdojo", description=__doc__)
    p.add_argument(
        "--suites",
        "--suite",
        dest="suites",
        default=",".join(SUITES),
        help="comma-separated suites (default: all four)",
    )
    p.add_argument(
        "--tasks", type=_count, default=None, help="run the first N tasks (benchmark order)"
    )
    p.add_argument("--configs", default=None, help="comma-separated configurations (default: all)")
    p.add_argument(
        "--fault-rate", type=_rate, default=FAULT_RATE, help="share of calls that time out once"
    )
    p.add_argument("--seed", type=int, default=SEED, help="seed of the fault draws")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder")
    p.add_argument("--quiet", action="store_true", help="print only the table")
    group = p.add_argument_group("a real model instead of the replay")
    group.add_argument(
        "--model",
        default=None,
        help="provider:model for init_chat_model (groq:llama-3.3-70b-versatile), or an "
        "OpenAI-compatible base URL (http://127.0.0.1:8000/v1, or URL#model)",
    )
    group.add_argument("--model-name", default=None, help="the model's name at a base URL")
    group.add_argument(
        "--price",
        type=_price,
        default=None,
        help="IN,OUT dollars per million tokens (default: the known price, if any)",
    )
    group.add_argument("--yes", action="store_true", help="run without asking")
    group.add_argument("--fresh", action="store_true", help="start over: ignore earlier rows")
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
    names = config_names()
    only = None
    if args.configs is not None:
        if args.model is None:
            parser().error("--configs needs --model (the replay's report judges every one)")
        only = [c.strip() for c in args.configs.split(",") if c.strip()]
        wrong = sorted(set(only) - set(names))
        if wrong:
            parser().error(f"unknown configuration(s): {', '.join(wrong)}; choose from {names}")
    if args.model is not None:
        return run_model(args, suites, only or names)
    result = run_all(
        suites=suites,
        rate=args.fault_rate,
        seed=args.seed,
        progress=(lambda line: None) if args.quiet else (lambda line: print(line, flush=True)),
        limit=args.tasks,
    )
    paths = write(result, args.out)
    if vars(args) == vars(parser().parse_args([])) | {"quiet": args.quiet}:
        README.write_text(update_readme(README.read_text("utf-8"), result), "utf-8")
        paths["readme"] = README
    print("\n".join(totals_table(result)))
    for goal in goals(result):
        print(goal_line(goal))
    print(f"took {result['meta']['duration_s']} s; wrote " + ", ".join(map(str, paths.values())))
    return 0


def run_model(args: argparse.Namespace, suites: tuple[str, ...], configs: list[str]) -> int:
    """Run the configurations on ``--model``: estimate, confirm, run (resuming), report."""
    try:
        model = spec(args.model, args.model_name)
    except ValueError as error:
        parser().error(str(error))
    prices = price(model, args.price)
    chosen = chosen_tasks(suites, args.tasks)
    committed = json.loads(COMMITTED.read_text("utf-8")) if COMMITTED.exists() else {}
    guess = estimate(committed, [(t.suite, t.key) for t in chosen], configs, prices)
    print("\n".join(guess.lines(model, prices)), flush=True)
    options = {
        "model": model.label,
        "fault_rate": args.fault_rate,
        "seed": args.seed,
    }
    journal = Journal(args.out / f"agentdojo-{model.slug}.jsonl", options, fresh=args.fresh)
    kept = [row for row in journal.rows.values() if not errored(row)]
    if kept:
        print(f"  {len(kept)} task runs already in {journal.path}: not run again")
    if len(kept) < len(journal.rows):
        print(f"  {len(journal.rows) - len(kept)} task runs there raised: run again")
    answer = confirmed(args.yes)
    if answer is None:
        print(
            "not a terminal: pass --yes to run the model (it calls the provider, which may "
            "bill for it)",
            file=sys.stderr,
        )
        return REFUSED
    if not answer:
        print("not run", file=sys.stderr)
        return REFUSED
    try:
        chat_model = model.build()
    except Exception as error:  # noqa: BLE001  (a missing package or key: say which, stop)
        first = (str(error).strip().splitlines() or [""])[0]
        print(
            f"{model.label} could not be built ({type(error).__name__}): {first}", file=sys.stderr
        )
        return 1
    unit = prices or (0.0, 0.0)
    profile = Profile(model=model.label, input_usd_per_m=unit[0], output_usd_per_m=unit[1])
    try:
        result = _run_all_on(chat_model, model.label, args, suites, profile, journal, configs)
    except Exception as error:
        if getattr(error, "status_code", None) not in REFUSED_BY_PROVIDER:
            raise
        print(f"the provider refused the key ({type(error).__name__}): stopped", file=sys.stderr)
        return 1
    result["model"]["price_per_million"] = list(prices) if prices else None
    path = args.out / f"agentdojo-{model.slug}.json"
    path.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", "utf-8")
    print("\n".join(totals_table(result)))
    print(f"model {model.label}, no oracle; the no-loss mapping is fitted (derived by the replay)")
    for row in result["marking"]:
        if row["suite"] == "total" or row["config"] == "stop/when_marked":
            print(
                f"marks {row['config']} {row['suite']}: right {row['right']}, too early "
                f"{row['too early']}, missed {row['missed']}, spurious {row['spurious']}, "
                f"errored {row['errored']}; "
                f"precision {row['precision']}, recall {row['recall']}"
            )
    if result["model"]["errored"]:
        print(
            f"{len(result['model']['errored'])} run(s) raised (counted with the requests and "
            "calls they made, not as marks): a rerun runs them again"
        )
    print(f"took {result['meta']['duration_s']} s; wrote {path} and {journal.path}")
    return 0


def _run_all_on(
    chat_model: BaseChatModel,
    label: str,
    args: argparse.Namespace,
    suites: tuple[str, ...],
    profile: Profile,
    journal: Journal,
    configs: list[str],
) -> dict[str, Any]:
    return run_all(
        suites=suites,
        rate=args.fault_rate,
        seed=args.seed,
        profile=profile,
        progress=(lambda line: None) if args.quiet else (lambda line: print(line, flush=True)),
        limit=args.tasks,
        model=chat_model,
        model_label=label,
        journal=journal,
        only=configs,
    )


if __name__ == "__main__":
    sys.exit(main())
