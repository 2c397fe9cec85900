"""A full restart (server, PostgreSQL and Redis) keeps threads, runs, state and store items.

A stack of its own, in a state folder of its own: the first start writes, everything
stops, a second start on the same folder reads it all back and continues a thread. A run
stopped mid-step (a purchase done, a slow call still running) finishes after the restart,
and the purchase is not made again.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agent.tools.payments import ledger
from client.cli import stream_run, user_input
from client.prodserver import PAYMENTS_FILE
from client.scenarios import GRAPHS, SCENARIOS
from tests.support.prod_server import SHORT_LEASE, prod_server, state_folder, write_config

SCENARIO = SCENARIOS[0]
MID_STEP = "buy a spare restart-test lamp for 20 and slow: nap"
"""One step, two calls: the purchase completes at once, the nap outlasts the stop."""
HELD_GRAPH = """
import asyncio
from pathlib import Path

from langchain_core.tools import tool

from agent.graphs.legacy import build_legacy
from agent.tools import TOOLS

RELEASE = Path(__file__).with_name("release")


@tool
async def slow(query: str) -> str:
    \"\"\"Wait until the test releases it, then answer.\"\"\"
    while not RELEASE.exists():
        await asyncio.sleep(0.1)
    return f"slow result for {query}"


graph = build_legacy([*TOOLS, slow])
"""
"""A legacy graph whose ``slow`` call lasts until a file next to it exists: past any stop."""


async def snapshot(url: str, thread_ids: list[str], assistant_id: str) -> dict[str, Any]:
    client = get_client(url=url)
    try:
        return {
            "threads": [await client.threads.get(t) for t in thread_ids],
            "values": [(await client.threads.get_state(t))["values"] for t in thread_ids],
            "runs": [
                [(r["run_id"], r["status"]) for r in await client.runs.list(t)] for t in thread_ids
            ],
            "item": await client.store.get_item(["kept"], "note"),
            "assistant": await client.assistants.get(assistant_id),
        }
    finally:
        await client.aclose()


async def _mid_step(client: LangGraphClient) -> tuple[str, str]:
    """Start :data:`MID_STEP` and return once its slow call is running."""
    thread_id = str((await client.threads.create())["thread_id"])
    run = await client.runs.create(
        thread_id, "slow", input=user_input(MID_STEP), context={"force_outcome": "success"}
    )
    deadline = time.monotonic() + 30
    while (await client.runs.get(thread_id, run["run_id"]))["status"] != "running":
        assert time.monotonic() < deadline, "the run never started"
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.5)  # the purchase is done; the held call is not
    return thread_id, str(run["run_id"])


async def test_a_full_restart_keeps_threads_runs_state_and_store_items(tmp_path: Path) -> None:
    (tmp_path / "held_graph.py").write_text(HELD_GRAPH, "utf-8")
    config = write_config(tmp_path, {"slow": f"{tmp_path / 'held_graph.py'}:graph"})
    with state_folder() as state:
        with prod_server(state, SHORT_LEASE, config=config) as first:
            client = get_client(url=first.url)
            slow_thread, slow_run = await _mid_step(client)
            waited = (await client.threads.create(metadata={"topic": "restart"}))["thread_id"]
            await client.runs.wait(
                waited, GRAPHS[0], input=user_input(SCENARIO.query), context=SCENARIO.context
            )
            streamed = await stream_run(client, GRAPHS[1], SCENARIO.query, dict(SCENARIO.context))
            await client.store.put_item(["kept"], "note", {"text": "still here"})
            assistant = await client.assistants.create(GRAPHS[1], name="kept assistant")
            await client.aclose()
            thread_ids = [waited, streamed.thread_id]
            before = await snapshot(first.url, thread_ids, assistant["assistant_id"])

        with prod_server(state, SHORT_LEASE, config=config) as second:
            after = await snapshot(second.url, thread_ids, assistant["assistant_id"])
            assert after == before
            assert [len(runs) for runs in after["runs"]] == [1, 1]
            assert all(v["stop_decision"]["rule"] == SCENARIO.rule for v in after["values"])
            assert after["item"]["value"] == {"text": "still here"}

            # The checkpoints carry on: a second turn on a restored thread sees the first.
            client = get_client(url=second.url)
            again = await stream_run(
                client, GRAPHS[0], SCENARIO.query, dict(SCENARIO.context), thread_id=waited
            )
            await client.aclose()
            assert [m["type"] for m in again.values["messages"]].count("human") == 2
            assert again.decision is not None and again.decision["rule"] == SCENARIO.rule

            # The run stopped mid-step runs again and finishes; the purchase it had made is
            # not made again.
            (tmp_path / "release").touch()
            client = get_client(url=second.url)
            await client.runs.join(slow_thread, slow_run)
            finished = await client.runs.get(slow_thread, slow_run)
            values = (await client.threads.get_state(slow_thread))["values"]
            await client.aclose()
            assert finished["status"] == "success", finished["status"]
            assert isinstance(values, dict)
            tools = [m for m in values["messages"] if m["type"] == "tool"]
            assert [m["name"] for m in tools] == ["checkout", "slow"]
            assert "replayed" not in tools[0]["artifact"]
            [row] = [r for r in ledger(state / PAYMENTS_FILE) if r.item.endswith("lamp")]
            assert (row.status, row.requests) == ("completed", 1)
