"""Approvals through the real `langgraph dev`: pause, show, resume, refuse what cannot run.

Every row of ``APPROVAL_SCENARIOS`` on both graphs, started and resumed through
`runs.wait` and through `runs.stream`: the thread shows one pending human-in-the-loop
request and no tool result while it waits, and ends as the same run in-process. A
malformed resume is asked again, naming the field, and loses nothing; a second resume
after the answer is refused at the door (409, naming the thread); on a server with keys, only the
thread's owner can see or answer the request; traced into the loopback collector, the
paused run's root run says ``stop_approval="asked"`` and the resumed one the outcome.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.schema import Command as ApiCommand

from agent.auth import API_KEYS_ENV
from agent.runs import answered as refusal_of
from client.scenarios import APPROVAL_SCENARIOS, GRAPHS, Scenario, by_name
from tests.support.api import run_request, values_of
from tests.support.approval import (
    WAYS,
    Approval,
    Way,
    answer,
    check_resumed,
    pause,
    receipts,
    refuse_malformed,
)
from tests.support.dev_server import dev_server
from tests.support.langsmith_collector import LangSmithCollector
from tests.support.ownership import status_of
from tests.support.tracing import metadata, trace_ended

CASES = [(s, g, w) for s in APPROVAL_SCENARIOS for g in GRAPHS for w in WAYS]


@pytest.fixture(scope="module")
async def answered(client: LangGraphClient) -> dict[tuple[str, str, str], Approval]:
    """Every case paused and answered, all at once (the queue, not the graphs, sets the pace)."""
    gate = asyncio.Semaphore(12)

    async def one(scenario: Scenario, graph: str, way: Way) -> Approval:
        async with gate:
            approval = await pause(client, graph, scenario, way)
            await answer(client, approval, way)
            return approval

    done = await asyncio.gather(*(one(s, g, w) for s, g, w in CASES))
    return {(s.name, g, w): a for (s, g, w), a in zip(CASES, done, strict=True)}


@pytest.mark.parametrize(
    ("scenario", "graph", "way"), CASES, ids=[f"{s.name}-{g}-{w}" for s, g, w in CASES]
)
async def test_an_approval_pauses_and_resumes_over_the_api(
    client: LangGraphClient,
    answered: dict[tuple[str, str, str], Approval],
    scenario: Scenario,
    graph: str,
    way: Way,
) -> None:
    await check_resumed(client, answered[(scenario.name, graph, way)], way)


async def malformed_resumes_lose_nothing(client: LangGraphClient, graph: str) -> None:
    approval = await pause(client, graph, by_name("approval-approve"))
    await refuse_malformed(client, approval)
    # The answer still goes through, and charges once.
    values = await answer(client, approval)
    assert len(receipts(values)) == 1
    await check_resumed(client, approval, "wait")
    # Nothing is pending any more: the door refuses another resume before a run exists.
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await client.runs.wait(
            approval.thread_id, graph, command={"resume": {"decisions": [{"type": "approve"}]}}
        )
    assert caught.value.response.status_code == 409
    assert caught.value.response.json() == {"detail": refusal_of(approval.thread_id)}
    assert (await client.threads.get(approval.thread_id))["status"] == "idle"
    final = values_of((await client.threads.get_state(approval.thread_id))["values"])
    assert receipts(final) == receipts(values)


async def test_a_malformed_resume_is_asked_again_and_the_thread_stays_paused(
    client: LangGraphClient,
) -> None:
    await asyncio.gather(*(malformed_resumes_lose_nothing(client, graph) for graph in GRAPHS))


# ---------------------------------------------------------------------------------------
# Owners only.

ALICE_KEY = "approval-alice-61d0a3"
BOB_KEY = "approval-bob-0c93fe"


@pytest.fixture(scope="module")
async def clients() -> AsyncIterator[tuple[LangGraphClient, LangGraphClient]]:
    env = {API_KEYS_ENV: f"{ALICE_KEY}:alice,{BOB_KEY}:bob"}
    with dev_server(env=env) as server:
        alice = get_client(url=server.url, api_key=ALICE_KEY)
        bob = get_client(url=server.url, api_key=BOB_KEY)
        yield alice, bob
        await alice.aclose()
        await bob.aclose()


async def test_only_the_owner_sees_and_answers_a_pending_approval(
    clients: tuple[LangGraphClient, LangGraphClient],
) -> None:
    alice, bob = clients
    for graph in GRAPHS:
        approval = await pause(alice, graph, by_name("approval-approve"))
        before = await alice.threads.get_state(approval.thread_id)
        attempts = {
            "threads.get_state": bob.threads.get_state(approval.thread_id),
            "runs.wait resume": bob.runs.wait(
                approval.thread_id, graph, command={"resume": {"decisions": [{"type": "approve"}]}}
            ),
            "runs.stream resume": _drain(
                bob, approval.thread_id, graph, {"decisions": [{"type": "reject"}]}
            ),
        }
        for name, attempt in attempts.items():
            with pytest.raises(httpx.HTTPStatusError) as caught:
                await attempt
            assert status_of(caught.value) == 404, name
        assert await alice.threads.get_state(approval.thread_id) == before  # untouched
        values = await answer(alice, approval)
        assert len(receipts(values)) == 1
        await check_resumed(alice, approval, "wait")


async def _drain(client: LangGraphClient, thread_id: str, graph: str, resume: object) -> None:
    async for _ in client.runs.stream(thread_id, graph, command={"resume": resume}):
        pass


# ---------------------------------------------------------------------------------------
# The trace: through the server, the root run of each run is the API's run.

REASON_SECRET = "reason-text-4e1b: not this quarter"


async def _traced_run(client: LangGraphClient, thread_id: str, graph: str, **request: Any) -> str:
    run_id = ""
    async for part in client.runs.stream(thread_id, graph, stream_mode=["custom"], **request):
        assert part.event != "error", part.data
        if part.event == "metadata":
            run_id = str(part.data["run_id"])
    return run_id


async def test_the_root_runs_say_asked_then_the_outcome_never_the_reason() -> None:
    scenario = by_name("approval-approve")
    with LangSmithCollector() as collector, dev_server(env=collector.env()) as server:
        client = get_client(url=server.url)
        runs: dict[tuple[str, str], tuple[str, str]] = {}
        for graph in GRAPHS:
            for kind in ("approve", "reject"):
                thread_id = str((await client.threads.create())["thread_id"])
                request = run_request(scenario.query, scenario.context)
                paused = await _traced_run(client, thread_id, graph, **request)
                decision: dict[str, Any] = {"type": kind}
                if kind == "reject":
                    decision["message"] = REASON_SECRET
                command: ApiCommand = {"resume": {"decisions": [decision]}}
                resumed = await _traced_run(
                    client, thread_id, graph, command=command, context=scenario.context
                )
                runs[graph, kind] = (paused, resumed)
        await client.aclose()
        ids = [run_id for pair in runs.values() for run_id in pair]
        seen = collector.wait_for(lambda got: all(trace_ended(got, i) for i in ids), timeout=60)
        for (_graph, kind), (paused, resumed) in runs.items():
            asked, answered = metadata(seen[paused]), metadata(seen[resumed])
            assert (asked["stop_policy"], asked["stop_approval"]) == ("spend_cap", "asked")
            assert asked["stop_rule"] is None and asked["model_calls"] == 1
            outcome = "approved" if kind == "approve" else "rejected"
            assert (answered["stop_policy"], answered["stop_approval"]) == ("spend_cap", outcome)
            assert answered["stop_rule"] == ("completed" if kind == "approve" else "policy_block")
        assert REASON_SECRET.encode() not in b"".join(collector.run_traffic)
