"""``make e2e``: the check matrix against a ``langgraph dev`` server on real Groq.

Does nothing, and says so, when ``GROQ_API_KEY`` is not set. Otherwise it starts the
project's own ``langgraph.json`` under ``langgraph dev`` on a free loopback port (its
log and persistence in a temporary folder), runs ``python -m client check``'s
matrix with ``model=groq:llama-3.3-70b-versatile``, prints the table and stops the
server.

A real model picks its own tool calls, so only the scenarios whose decision the artifact
alone settles are run (one forced outcome for every call, and a rule that stops at the
first tool step), and only the decision's action and rule are compared.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence

from langgraph_sdk import get_client

from agent.context import GROQ_DEFAULT_MODEL
from client.cli import check, render
from client.devserver import serve
from client.scenarios import GRAPHS, SCENARIOS, Scenario

CONCURRENCY = 2
"""Runs in flight at once by default: low, to stay inside Groq's free-tier rate limits."""


def settled_by_artifact(scenario: Scenario) -> bool:
    """Return whether any model that calls the tool gets this scenario's decision.

    True for one forced outcome applied to every call (not a list, which depends on
    how many calls the model makes) and a rule that stops at the first tool step
    (completed, fatal, policy_block): retries, ``stop_mode="never"`` and parallel calls
    depend on the model's own choices.

    Args:
        scenario: A row of :data:`client.scenarios.SCENARIOS`.

    Returns:
        Whether the scenario belongs in the real-model check.
    """
    forced = scenario.context.get("force_outcome")
    return (
        isinstance(forced, str)
        and "parallel" not in scenario.tags
        and scenario.action == "stop"
        and scenario.rule in ("completed", "fatal", "policy_block")
    )


async def _check(url: str, scenarios: Sequence[Scenario], concurrency: int) -> int:
    client = get_client(url=url, api_key=None)
    try:
        rows = await check(
            client,
            GRAPHS,
            scenarios,
            model=GROQ_DEFAULT_MODEL,
            compare="decision",
            concurrency=concurrency,
        )
    finally:
        await client.aclose()
    print(render(rows), end="")
    return 0 if all(row.ok for row in rows) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the real-Groq check, or explain why it did nothing.

    Args:
        argv: Arguments without the program name; ``sys.argv[1:]`` when None.

    Returns:
        0 when every compared row matches or nothing ran; 1 on a mismatch.
    """
    parser = argparse.ArgumentParser(prog="python -m client.e2e", description=__doc__)
    parser.add_argument(
        "--concurrency", type=int, default=CONCURRENCY, help="runs in flight at once"
    )
    args = parser.parse_args(argv)
    if not os.environ.get("GROQ_API_KEY"):
        print(
            "make e2e did nothing: GROQ_API_KEY is not set.\n"
            "It runs the check matrix against a langgraph dev server on real Groq "
            f"({GROQ_DEFAULT_MODEL}). Export GROQ_API_KEY and run it again."
        )
        return 0
    scenarios = [s for s in SCENARIOS if settled_by_artifact(s)]
    base = os.environ.get("GROQ_API_BASE") or "Groq's default endpoint"
    print(
        f"make e2e: {len(scenarios)} scenarios x {len(GRAPHS)} graphs on {GROQ_DEFAULT_MODEL} "
        f"via {base}.\n"
        "Only scenarios the artifact alone settles are run (one forced outcome, a rule that "
        "stops at the first tool step); a real model picks its own tool calls, so the "
        "decision's action and rule are compared and the path and model calls are shown.\n"
        f"scenarios: {', '.join(s.name for s in scenarios)}\n"
    )
    # The server inherits this environment: GROQ_API_KEY included.
    with serve(args=["--n-jobs-per-worker", str(args.concurrency)]) as server:
        return asyncio.run(_check(server.url, scenarios, args.concurrency))


if __name__ == "__main__":
    sys.exit(main())
