"""100 runs over 25 threads from 16 clients at once, on the production server.

Every run streams on its own client; runs on one thread take turns (one run at a time per
thread, as the API requires), runs on different threads overlap across both workers.
Each run's input carries a marker: a thread must end holding exactly its own four, each
answered, and no run may fail.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langgraph_sdk import get_client

from client.cli import Observation, stream_run
from client.scenarios import GRAPHS, SCENARIOS
from tests.prod_tests.conftest import ALICE_KEY
from tests.support.prod_server import ProdServer

CLIENTS, THREADS, RUNS_PER_THREAD = 16, 25, 4
SCENARIO = next(s for s in SCENARIOS if s.action == "stop" and s.rule == "completed")


def human_texts(values: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in values.get("messages", []) if m["type"] == "human"]


async def test_100_runs_over_25_threads_from_16_clients_fail_none_and_never_cross(
    stack: ProdServer,
) -> None:
    clients = [get_client(url=stack.url, api_key=ALICE_KEY) for _ in range(CLIENTS)]
    try:
        threads = [(await clients[0].threads.create())["thread_id"] for _ in range(THREADS)]
        graph_of = {t: GRAPHS[i % len(GRAPHS)] for i, t in enumerate(threads)}
        queries = {
            t: [f"{SCENARIO.query} [{t[:8]}-{n}]" for n in range(RUNS_PER_THREAD)] for t in threads
        }
        jobs: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        for n in range(RUNS_PER_THREAD):
            for thread_id in threads:
                jobs.put_nowait((thread_id, queries[thread_id][n]))
        turn = {t: asyncio.Lock() for t in threads}
        failures: list[str] = []
        seen: list[tuple[str, str, Observation]] = []

        async def client_loop(index: int) -> None:
            client = clients[index]
            while not jobs.empty():
                thread_id, query = jobs.get_nowait()
                async with turn[thread_id]:
                    try:
                        observed = await stream_run(
                            client,
                            graph_of[thread_id],
                            query,
                            dict(SCENARIO.context),
                            thread_id=thread_id,
                        )
                    except Exception as error:  # noqa: BLE001 - every failure is counted
                        failures.append(f"{thread_id} {query}: {type(error).__name__}: {error}")
                        continue
                seen.append((thread_id, query, observed))

        started = time.monotonic()
        await asyncio.gather(*(client_loop(i) for i in range(CLIENTS)))
        elapsed = time.monotonic() - started
        print(f"\n{len(seen)} runs in {elapsed:.1f}s ({len(seen) / elapsed:.1f} runs/s)")

        assert failures == []
        assert len(seen) == THREADS * RUNS_PER_THREAD
        for thread_id, query, observed in seen:
            # Right after its own run, under the thread's turn: the run answered its query.
            assert human_texts(observed.values)[-1] == query
            assert observed.decision is not None
            assert (observed.decision["action"], observed.decision["rule"]) == (
                SCENARIO.action,
                SCENARIO.rule,
            )
            assert observed.answer, (thread_id, query)
        for thread_id in threads:
            state = await clients[0].threads.get_state(thread_id)
            values = state["values"]
            assert isinstance(values, dict)
            assert sorted(human_texts(values)) == sorted(queries[thread_id])
            runs = await clients[0].runs.list(thread_id, limit=20)
            assert [r["status"] for r in runs] == ["success"] * RUNS_PER_THREAD
    finally:
        for client in clients:
            await client.aclose()
