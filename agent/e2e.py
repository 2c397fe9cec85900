"""``make e2e``: the check matrix against a ``langgraph dev`` server on real Groq.

Does nothing, and says so, when ``GROQ_API_KEY`` is not set. Otherwise it starts the
project's own ``langgraph.json`` under ``langgraph dev`` on a free loopback port (its
log and persistence in a temporary folder), runs ``python -m agent.client check``'s
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
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
from langgraph_sdk import get_client

from agent.client import check, render
from agent.context import GROQ_DEFAULT_MODEL
from agent.scenarios import GRAPHS, SCENARIOS, Scenario

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 90.0
CONCURRENCY = 2
"""Runs in flight at once by default: low, to stay inside Groq's free-tier rate limits."""


def settled_by_artifact(scenario: Scenario) -> bool:
    """Return whether any model that calls the tool gets this scenario's decision.

    True for one forced outcome applied to every call (not a list, which depends on
    how many calls the model makes) and a rule that stops at the first tool step
    (completed, fatal, policy_block): retries, ``stop_mode="never"`` and parallel calls
    depend on the model's own choices.

    Args:
        scenario: A row of :data:`agent.scenarios.SCENARIOS`.

    Returns:
        Whether the scenario belongs in the real-model check.
    """
    forced = scenario.context.get("force_outcome")
    return (
        isinstance(forced, str)
        and scenario.action == "stop"
        and scenario.rule in ("completed", "fatal", "policy_block")
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/ok", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


@contextmanager
def dev_server(args: Sequence[str] = ()) -> Iterator[str]:
    """Serve the project's ``langgraph.json`` with ``langgraph dev`` until the block ends.

    The server inherits this process's environment (``GROQ_API_KEY`` included).

    Args:
        args: Extra ``langgraph dev`` flags.

    Yields:
        The server's URL.

    Raises:
        RuntimeError: If the server exits or does not answer ``/ok`` in time; the message
            holds the end of its log.
    """
    folder = Path(tempfile.mkdtemp(prefix="soa-e2e-"))
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = folder / "server.log"
    command = [
        sys.executable, "-m", "langgraph_cli", "dev",
        "--config", str(ROOT / "langgraph.json"),
        "--host", "127.0.0.1", "--port", str(port),
        "--no-browser", "--no-reload", *args,
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _answers(url):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = "\n".join(log_path.read_text("utf-8", "replace").splitlines()[-40:])
                msg = f"langgraph dev did not start at {url}:\n{tail}"
                raise RuntimeError(msg)
            time.sleep(0.2)
        yield url
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=15)
        shutil.rmtree(folder, ignore_errors=True)


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
    parser = argparse.ArgumentParser(prog="python -m agent.e2e", description=__doc__)
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
    with dev_server(["--n-jobs-per-worker", str(args.concurrency)]) as url:
        return asyncio.run(_check(url, scenarios, args.concurrency))


if __name__ == "__main__":
    sys.exit(main())
