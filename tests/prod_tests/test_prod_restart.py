"""A full restart (server, PostgreSQL and Redis) keeps threads, runs, state and store items.

A stack of its own, in a state folder of its own: the first start writes, everything
stops, a second start on the same folder reads it all back and continues a thread.
"""

from __future__ import annotations

from typing import Any

from langgraph_sdk import get_client

from client.cli import stream_run, user_input
from client.scenarios import GRAPHS, SCENARIOS
from tests.support.prod_server import prod_server, state_folder

SCENARIO = SCENARIOS[0]


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


async def test_a_full_restart_keeps_threads_runs_state_and_store_items() -> None:
    with state_folder() as state:
        with prod_server(state) as first:
            client = get_client(url=first.url)
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

        with prod_server(state) as second:
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
