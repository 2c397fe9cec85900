"""One run at a time per thread on the production server, under each multitask strategy.

Twenty threads get two runs each, created back to back while the first runs (half name
``enqueue``, half name no strategy: langgraph-api's default is ``enqueue``): no turn is lost,
both questions and both answers are in the thread in order, and the thread's checkpoints
show the second run only after the last of the first. Then, with a run of the ``slow`` graph
in flight (its tool sleeps :data:`tests.prod_tests.conftest.SLOW_SECONDS`), a second run
under each strategy: ``reject`` is refused with 409 and langgraph-api's own words
(:data:`agent.runs.BUSY`); ``enqueue`` runs after the first; ``interrupt`` ends the first as
``interrupted``, keeping what it did, and runs; ``rollback`` deletes the first run and its
checkpoints, and runs. Every thread ends ``idle``.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.schema import MultitaskStrategy

from agent.runs import BUSY, CONFLICT
from client.scenarios import GRAPHS, SCENARIOS
from tests.prod_tests.conftest import SLOW_SECONDS
from tests.support.api import run_request, user_input, values_of
from tests.support.ownership import status_of

THREADS = 20
SCENARIO = next(s for s in SCENARIOS if s.action == "stop" and s.rule == "completed")


def _humans(values: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in values["messages"] if m["type"] == "human"]


async def _run_order(client: LangGraphClient, thread_id: str) -> list[str]:
    """The run id of each of the thread's checkpoints, oldest first, repeats folded."""
    history = await client.threads.get_history(thread_id, limit=100)
    order: list[str] = []
    for snapshot in reversed(history):
        run_id = str((snapshot["metadata"] or {})["run_id"])
        if not order or order[-1] != run_id:
            order.append(run_id)
    return order


async def _two_runs(client: LangGraphClient, index: int) -> bool:
    graph = GRAPHS[index % len(GRAPHS)]
    strategy: MultitaskStrategy | None = "enqueue" if index % 2 else None
    thread_id = str((await client.threads.create())["thread_id"])
    queries = [f"{SCENARIO.query} [{index}-{n}]" for n in range(2)]
    runs = [
        await client.runs.create(
            thread_id,
            graph,
            multitask_strategy=strategy,
            **run_request(query, dict(SCENARIO.context)),
        )
        for query in queries
    ]
    ids = [str(run["run_id"]) for run in runs]
    for run_id in ids:
        await client.runs.join(thread_id, run_id)
    first, second = [await client.runs.get(thread_id, run_id) for run_id in ids]
    assert (first["status"], second["status"]) == ("success", "success")
    assert (await client.threads.get(thread_id))["status"] == "idle"
    values = values_of((await client.threads.get_state(thread_id))["values"])
    assert _humans(values) == queries  # both turns, in order
    kinds = [m["type"] for m in values["messages"]]
    assert kinds == 2 * ["human", "ai", "tool", "ai"], kinds  # each question answered
    assert await _run_order(client, thread_id) == ids  # never two at once
    # Whether the second was queued behind a run in flight (created before the first ended).
    return _moment(second["created_at"]) < _moment(first["updated_at"])


def _moment(value: object) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


async def test_two_runs_on_each_of_20_threads_take_turns_and_lose_none(
    alice: LangGraphClient,
) -> None:
    started = time.monotonic()
    queued = await asyncio.gather(*(_two_runs(alice, i) for i in range(THREADS)))
    print(f"\n{2 * THREADS} runs in {time.monotonic() - started:.1f}s; {sum(queued)} queued")
    assert sum(queued) >= THREADS // 2, "the second run was created while the first ran"


# A run of the slow graph in flight, and a second run under each strategy.

SLOW_QUESTION = "slow: nap"


async def _slow_run_in_its_tool(client: LangGraphClient) -> tuple[str, str]:
    """Start a slow run; return its thread and id once its tool is running."""
    thread_id = str((await client.threads.create())["thread_id"])
    run = await client.runs.create(thread_id, "slow", input=user_input(SLOW_QUESTION))
    deadline = time.monotonic() + 30
    while True:
        messages = values_of((await client.threads.get_state(thread_id))["values"] or {})
        last = (messages.get("messages") or [{}])[-1]
        if last.get("type") == "ai" and last.get("tool_calls"):
            return thread_id, str(run["run_id"])
        assert time.monotonic() < deadline, "the slow run did not reach its tool"
        await asyncio.sleep(0.1)


async def _second(client: LangGraphClient, thread_id: str, strategy: MultitaskStrategy) -> str:
    run = await client.runs.create(
        thread_id,
        "slow",
        multitask_strategy=strategy,
        **run_request(SCENARIO.query, dict(SCENARIO.context)),
    )
    await client.runs.join(thread_id, run["run_id"])
    assert (await client.runs.get(thread_id, run["run_id"]))["status"] == "success"
    assert (await client.threads.get(thread_id))["status"] == "idle"
    return str(run["run_id"])


async def _kinds(client: LangGraphClient, thread_id: str) -> list[tuple[str, str]]:
    values = values_of((await client.threads.get_state(thread_id))["values"])
    return [(m["type"], str(m["content"])) for m in values["messages"]]


async def _reject(client: LangGraphClient) -> None:
    thread_id, first = await _slow_run_in_its_tool(client)
    try:
        await client.runs.create(
            thread_id, "slow", multitask_strategy="reject", input=user_input("hello")
        )
    except httpx.HTTPStatusError as refused:
        assert status_of(refused) == CONFLICT
        assert BUSY in refused.response.text
    else:
        raise AssertionError("a run under reject was accepted beside a run in flight")
    assert [r["run_id"] for r in await client.runs.list(thread_id)] == [first]  # none created
    assert (await client.runs.get(thread_id, first))["status"] == "running"
    await client.runs.cancel(thread_id, first, wait=True)  # no need to wait for the nap
    assert (await client.threads.get(thread_id))["status"] == "idle"


async def _enqueue(client: LangGraphClient) -> None:
    thread_id, first = await _slow_run_in_its_tool(client)
    second = await _second(client, thread_id, "enqueue")
    assert (await client.runs.get(thread_id, first))["status"] == "success"
    assert await _run_order(client, thread_id) == [first, second]
    kinds = await _kinds(client, thread_id)
    assert kinds[:3] == [("human", SLOW_QUESTION), ("ai", ""), ("tool", "slow result for nap")]
    assert kinds[4] == ("human", SCENARIO.query)
    assert [kind for kind, _ in kinds] == 2 * ["human", "ai", "tool", "ai"]


async def _interrupt(client: LangGraphClient) -> None:
    thread_id, first = await _slow_run_in_its_tool(client)
    started = time.monotonic()
    second = await _second(client, thread_id, "interrupt")
    assert time.monotonic() - started < SLOW_SECONDS, "the second run did not wait out the nap"
    assert (await client.runs.get(thread_id, first))["status"] == "interrupted"
    assert await _run_order(client, thread_id) == [first, second]
    kinds = await _kinds(client, thread_id)
    # What the first run did before it was interrupted stays; its tool never answered.
    assert kinds[:3] == [("human", SLOW_QUESTION), ("ai", ""), ("human", SCENARIO.query)]
    assert ("tool", "slow result for nap") not in kinds


async def _rollback(client: LangGraphClient) -> None:
    thread_id, first = await _slow_run_in_its_tool(client)
    started = time.monotonic()
    second = await _second(client, thread_id, "rollback")
    assert time.monotonic() - started < SLOW_SECONDS, "the second run did not wait out the nap"
    try:
        await client.runs.get(thread_id, first)
    except httpx.HTTPStatusError as gone:
        assert status_of(gone) == 404
    else:
        raise AssertionError("the rolled back run is still there")
    assert [r["run_id"] for r in await client.runs.list(thread_id)] == [second]
    assert await _run_order(client, thread_id) == [second]  # its checkpoints are gone
    kinds = await _kinds(client, thread_id)
    assert [kind for kind, _ in kinds] == ["human", "ai", "tool", "ai"]
    assert kinds[0] == ("human", SCENARIO.query)


async def test_each_multitask_strategy_beside_a_run_in_flight(alice: LangGraphClient) -> None:
    started = time.monotonic()
    await asyncio.gather(_reject(alice), _enqueue(alice), _interrupt(alice), _rollback(alice))
    print(f"\nfour strategies in {time.monotonic() - started:.1f}s")
