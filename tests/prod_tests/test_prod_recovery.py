"""Crash recovery: ``kill -9`` of the worker that holds a running run.

The session stack runs with :data:`tests.support.prod_server.SHORT_LEASE` (5 s lease,
1 s heartbeat, 1 s reaper), so the run is re-queued within seconds; Aegra's defaults
(30 s, 10 s, 15 s) take up to about 45 s. The run starts again from its last checkpoint
on another worker and finishes; the thread keeps one copy of every message. Three more runs
queued on the thread behind it (``enqueue``), each waiting on either worker, then run one at a
time in their order: one a killed worker held is queued again after its stuck-pending
threshold (3 s here, 120 s by default).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from typing import Any

from langgraph_sdk.client import LangGraphClient

from agent.tools.payments import ledger
from client.cli import user_input
from client.prodserver import PAYMENTS_FILE
from tests.prod_tests.conftest import SLOW_SECONDS
from tests.support.prod_server import ProdServer, sql

PURCHASE = "buy a spare kill-test lamp for 20 and slow: nap"
CLAIMANT = re.compile(r"-(\d+)-worker-\d+$")
FOLLOWERS = 3
FOLLOWER = "How does a checkpointer work? Run"


def claimant(stack: ProdServer, run_id: str) -> int | None:
    """The pid of the worker process whose lease holds the run, if any."""
    claimed = sql(stack, f"SELECT claimed_by FROM runs WHERE run_id = '{run_id}'")
    found = CLAIMANT.search(claimed)
    return int(found[1]) if found else None


async def until(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = await predicate()
        if value:
            return value
        await asyncio.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout}s")


async def test_a_killed_workers_run_completes_on_another_worker_with_the_thread_intact(
    stack: ProdServer, alice: LangGraphClient
) -> None:
    workers = stack.worker_pids()
    assert len(workers) == 2
    thread_id = (await alice.threads.create())["thread_id"]
    # One step, two calls: the purchase completes at once, then the worker dies in the nap.
    run = await alice.runs.create(
        thread_id, "slow", input=user_input(PURCHASE), context={"force_outcome": "success"}
    )
    run_id = run["run_id"]

    async def holder() -> int | None:
        return claimant(stack, run_id)

    victim = await until(holder, 30, "no worker claimed the run")
    assert victim in workers
    queued = [
        await alice.runs.create(
            thread_id,
            "slow",
            input=user_input(f"{FOLLOWER} {n}"),
            context={"force_outcome": "success"},  # one search, no retry
            multitask_strategy="enqueue",
        )
        for n in range(FOLLOWERS)
    ]
    await asyncio.sleep(1.0)  # inside the slow tool now
    os.kill(victim, signal.SIGKILL)
    killed_at = time.monotonic()

    async def new_holder() -> int | None:
        pid = claimant(stack, run_id)
        return pid if pid not in (None, victim) else None

    rescuer = await until(new_holder, 60, "the run was not claimed again")
    requeued = time.monotonic() - killed_at

    async def finished() -> dict[str, Any] | None:
        current = await alice.runs.get(thread_id, run_id)
        return dict(current) if current["status"] not in ("pending", "running") else None

    final = await until(finished, 60, "the run did not finish")
    print(f"\nre-queued {requeued:.1f}s after kill -9; done {time.monotonic() - killed_at:.1f}s")
    print(f"killed worker {victim}, run finished by {rescuer}, workers before {workers}")
    assert final["status"] == "success"
    assert rescuer != victim
    assert requeued < 5 + 1 + 4, "lease 5 s + reaper 1 s, with slack"

    for follower in queued:  # then the runs queued behind it, each after the one before
        await alice.runs.join(thread_id, follower["run_id"])
    values = (await alice.threads.get_state(thread_id))["values"]
    assert isinstance(values, dict)
    messages = values["messages"]
    first = ["human", "ai", "tool", "tool", "ai"]
    assert [m["type"] for m in messages] == first + FOLLOWERS * ["human", "ai", "tool", "ai"]
    assert messages[0]["content"] == PURCHASE
    assert messages[3]["content"] == "slow result for nap"
    humans = [m["content"] for m in messages if m["type"] == "human"]
    assert humans == [PURCHASE, *(f"{FOLLOWER} {n}" for n in range(FOLLOWERS))]
    # The purchase that completed before the kill ran once: its task's result was kept when
    # the step ran again (the payment record saw one request for its key, not a replay).
    [receipt] = [m for m in messages if m["type"] == "tool" and m["name"] == "checkout"]
    assert receipt["artifact"]["reason"] == "completed"
    assert "replayed" not in receipt["artifact"]
    [row] = [r for r in ledger(stack.state / PAYMENTS_FILE) if r.item == "a spare kill-test lamp"]
    assert (row.status, row.requests) == ("completed", 1)
    assert "stop_decision" in values
    runs = await alice.runs.list(thread_id)
    assert [r["status"] for r in runs] == (1 + FOLLOWERS) * ["success"]
    history = await alice.threads.get_history(thread_id, limit=100)
    order = [str((h["metadata"] or {})["run_id"]) for h in reversed(history)]
    ids = [run_id, *(str(f["run_id"]) for f in queued)]
    folded = [run for i, run in enumerate(order) if i == 0 or order[i - 1] != run]
    assert folded == ids  # one at a time, in creation order
    assert (await alice.threads.get(thread_id))["status"] == "idle"
    assert SLOW_SECONDS > 2, "the tool outlasts the wait before the kill"

    async def two_workers_again() -> bool:
        return len(stack.worker_pids()) == 2 and victim not in stack.worker_pids()

    await until(two_workers_again, 60, "uvicorn did not replace the killed worker")
