"""``python -m bench.client_start``: how long ``python -m client`` takes before the server works.

Two figures, each from fresh interpreters (``sys.executable``, the project's Python), run one
after another, ``--reps`` times each:

- **Start-up**: the wall time of ``python -m client --help``, of each subcommand's
  ``--help`` and of a bad flag's error (exit 2), next to ``python -c pass`` (the
  interpreter's own start, which every command pays).
- **Overhead per question**: what a question costs the client besides the server's work,
  measured without a server: a fresh interpreter imports what ``ask`` imports
  (:mod:`client.cli`, then ``langgraph_sdk`` and so ``httpx``), parses
  ``ask "<question>" --force-outcome success``, builds the run context, opens and closes the
  API client, and prints a checkout receipt (:func:`agent.tools.checkout.receipt`) twice: as
  a terminal shows it (rendered through ``rich`` on a pseudo-terminal) and as a pipe gets it.
  The network round trips on loopback and the run itself are the server's part and are
  left out.

It prints one table: per command the median, the fastest and the slowest run in ms, and the
targets (``--help``, each subcommand's and a bad flag's under 1 s; the overhead per question
under 1.5 s) with whether the median meets them. It writes nothing. A benchmark, not a test:
the figures move with what else the machine runs.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPS = 5
STARTUP_TARGET_S = 1.0
QUESTION_TARGET_S = 1.5

QUESTION_PROBE = """
import asyncio, os, sys
from client import cli, terminal

args = cli.parser().parse_args(["ask", "buy a gaming chair for 250", "--force-outcome", "success"])
context = cli.context_from(args)

async def connect() -> None:
    await cli.connect(cli.DEFAULT_URL).aclose()

asyncio.run(connect())
answer = sys.stdin.read()
leader, follower = os.openpty()
with os.fdopen(follower, "w") as screen:
    terminal.show(answer, screen)
os.close(leader)
with open(os.devnull, "w") as pipe:
    terminal.show(answer, pipe)
"""
"""What a question runs in the client besides the server's work (see the module docstring)."""


@dataclass(frozen=True)
class Command:
    """One command timed.

    Attributes:
        name: How the table names it.
        argv: Arguments after the interpreter.
        status: The exit status it must end with (a wrong one stops the benchmark).
        target: The wall time in seconds its median must stay under; None for the baseline.
        stdin: What it reads on standard input.
    """

    name: str
    argv: tuple[str, ...]
    status: int = 0
    target: float | None = STARTUP_TARGET_S
    stdin: str = ""


def commands(answer: str) -> list[Command]:
    """Return the commands timed, the baseline first and the question last.

    Args:
        answer: The answer the question's probe prints.
    """
    client = ("-m", "client")
    return [
        Command("python -c pass", ("-c", "pass"), target=None),
        Command("client --help", (*client, "--help")),
        *(
            Command(f"client {name} --help", (*client, name, "--help"))
            for name in ("ask", "check", "answer", "report")
        ),
        Command("client --no-such-flag", (*client, "--no-such-flag"), status=2),
        Command(
            "question overhead", ("-c", QUESTION_PROBE), target=QUESTION_TARGET_S, stdin=answer
        ),
    ]


def time_once(command: Command) -> float:
    """Run a command in a fresh interpreter; return its wall time in seconds.

    Raises:
        RuntimeError: If it ends with another status than the command expects.
    """
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *command.argv],
        cwd=ROOT,
        input=command.stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != command.status:
        msg = f"{command.name}: exit status {done.returncode}, expected {command.status}"
        raise RuntimeError(msg)
    return elapsed


def measure(items: Sequence[Command], reps: int) -> dict[str, list[float]]:
    """Time each command ``reps`` times, the commands interleaved; return seconds per name."""
    times: dict[str, list[float]] = {command.name: [] for command in items}
    for _ in range(reps):
        for command in items:
            times[command.name].append(time_once(command))
    return times


def render(items: Sequence[Command], times: dict[str, list[float]]) -> str:
    """Return the table: median, fastest, slowest (ms) and the target per command."""
    lines = [
        "| command | median ms | fastest ms | slowest ms | target | met |",
        "|---|---:|---:|---:|---|---|",
    ]
    for command in items:
        seconds = times[command.name]
        median = statistics.median(seconds)
        target = "" if command.target is None else f"< {command.target * 1000:.0f} ms"
        met = "" if command.target is None else ("yes" if median < command.target else "NO")
        lines.append(
            f"| {command.name} | {median * 1000:.0f} | {min(seconds) * 1000:.0f} | "
            f"{max(seconds) * 1000:.0f} | {target} | {met} |"
        )
    return "\n".join(lines)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        msg = "--reps must be at least 1"
        raise argparse.ArgumentTypeError(msg)
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Time the client's start-up and its overhead per question; print the table.

    Args:
        argv: Arguments without the program name; ``sys.argv[1:]`` when None.

    Returns:
        0 when every median meets its target, 1 when one does not.
    """
    parser = argparse.ArgumentParser(
        prog="python -m bench.client_start", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--reps", type=_positive, default=REPS, help=f"runs per command ({REPS})")
    args = parser.parse_args(argv)
    from agent.tools.checkout import receipt

    items = commands(receipt("a **gaming chair**", 250, "ORD-1"))
    times = measure(items, args.reps)
    print(f"python -m client, {args.reps} runs per command, each in a fresh interpreter:")
    print(render(items, times))
    missed = [
        c.name
        for c in items
        if c.target is not None and statistics.median(times[c.name]) >= c.target
    ]
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
