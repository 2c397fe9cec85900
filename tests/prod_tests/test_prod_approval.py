"""Approvals on the production server: pause, show, resume, owners only, and a full restart.

The session stack (keys on) serves the approval scenarios on both graphs, waited and
streamed, the same as ``langgraph dev`` (tests/integration_tests/test_api_approval.py); a
malformed resume is asked again and loses nothing (a failed run would: Aegra refuses to
resume a thread whose last run failed); another identity gets 404. A stack of its own
is stopped entirely (server, PostgreSQL, Redis) while approvals are pending: after the
restart the requests are still there, and answering them makes each purchase once. A
purchase asked under a run's own cap and answered later by another client with no context
(after a restart too) is never charged on reject and charged once on approve.
"""

from __future__ import annotations

from typing import Literal

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.schema import Command as ApiCommand

from agent.runs import CONFLICT, answered
from client.scenarios import GRAPHS, by_name
from tests.prod_tests.conftest import ALICE_KEY, BOB_KEY
from tests.support.api import values_of
from tests.support.approval import (
    WAYS,
    Approval,
    Way,
    answer,
    answer_with_no_context,
    check_resumed,
    pause,
    pause_under_a_per_run_cap,
    receipts,
    refuse_a_rewritten_verdict,
    refuse_malformed,
)
from tests.support.ownership import status_of
from tests.support.prod_server import ProdServer, prod_server, state_folder

PICKED = ("approval-approve", "approval-reject", "approval-parallel_reject_and_receipt")


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("name", PICKED)
@pytest.mark.parametrize("graph", GRAPHS)
async def test_an_approval_pauses_and_resumes_on_the_production_server(
    alice: LangGraphClient, graph: str, name: str, way: Way
) -> None:
    approval = await pause(alice, graph, by_name(name), way)
    await answer(alice, approval, way)
    await check_resumed(alice, approval, way)


async def test_a_malformed_resume_is_asked_again_and_the_thread_stays_paused(
    alice: LangGraphClient,
) -> None:
    for graph in GRAPHS:
        approval = await pause(alice, graph, by_name("approval-approve"))
        await refuse_malformed(alice, approval)
        values = await answer(alice, approval)  # Aegra still takes the resume
        assert len(receipts(values)) == 1
        await check_resumed(alice, approval, "wait")


async def test_only_the_owner_sees_and_answers_a_pending_approval(
    alice: LangGraphClient, stack: ProdServer
) -> None:
    bob = get_client(url=stack.url, api_key=BOB_KEY)
    try:
        for graph in GRAPHS:
            approval = await pause(alice, graph, by_name("approval-approve"))
            before = await alice.threads.get_state(approval.thread_id)
            approve: ApiCommand = {"resume": {"decisions": [{"type": "approve"}]}}
            for attempt in (
                bob.threads.get_state(approval.thread_id),
                bob.runs.wait(approval.thread_id, graph, command=approve),
                bob.runs.create(approval.thread_id, graph, command=approve),
            ):
                with pytest.raises(httpx.HTTPStatusError) as caught:
                    await attempt
                assert status_of(caught.value) == 404
            assert await alice.threads.get_state(approval.thread_id) == before
            values = await answer(alice, approval)
            assert len(receipts(values)) == 1
    finally:
        await bob.aclose()


async def test_a_later_answer_with_no_context_applies_to_what_was_asked(
    alice: LangGraphClient, stack: ProdServer
) -> None:
    held = [await pause_under_a_per_run_cap(alice, g, k) for g in GRAPHS for k in KINDS]
    later = get_client(url=stack.url, api_key=ALICE_KEY)  # the owner, from another client
    try:
        for one in held:
            await answer_with_no_context(later, one)
    finally:
        await later.aclose()


KINDS: tuple[Literal["approve", "reject"], ...] = ("reject", "approve")


async def test_no_request_may_rewrite_what_a_person_was_asked(alice: LangGraphClient) -> None:
    for graph in GRAPHS:
        await refuse_a_rewritten_verdict(alice, graph)


async def _pending(url: str, approvals: list[Approval]) -> list[object]:
    client = get_client(url=url)
    try:
        return [(await client.threads.get_state(a.thread_id))["interrupts"] for a in approvals]
    finally:
        await client.aclose()


async def test_a_pending_approval_survives_a_full_restart_and_charges_once() -> None:
    names = ("approval-approve", "approval-parallel_approve_and_receipt")
    with state_folder() as state:
        with prod_server(state) as first:
            client = get_client(url=first.url)
            approvals = [await pause(client, g, by_name(n)) for g in GRAPHS for n in names]
            held = [await pause_under_a_per_run_cap(client, g, k) for g in GRAPHS for k in KINDS]
            await client.aclose()
            before = await _pending(first.url, approvals)

        with prod_server(state) as second:
            assert await _pending(second.url, approvals) == before  # nothing lost
            client = get_client(url=second.url)
            for one in held:  # asked under a per-run cap, answered after the restart, no context
                await answer_with_no_context(client, one)
            for approval in approvals:
                values = await answer(client, approval)
                # Every purchase once: the laptop, and the mouse beside it.
                assert len(receipts(values)) == sum(approval.scenario.calls or (1,))
                await check_resumed(client, approval, "wait")
                # Nothing is pending any more: another answer is refused before a run exists.
                with pytest.raises(httpx.HTTPStatusError) as caught:
                    await client.runs.wait(
                        approval.thread_id,
                        approval.graph,
                        command={"resume": {"decisions": [{"type": "approve"}]}},
                    )
                assert status_of(caught.value) == CONFLICT
                assert answered(approval.thread_id) in caught.value.response.text
            done = [await client.threads.get_state(a.thread_id) for a in approvals]
            await client.aclose()

        with prod_server(state) as third:  # and a restart after the answer changes nothing
            client = get_client(url=third.url)
            for approval, state_before in zip(approvals, done, strict=True):
                values = values_of((await client.threads.get_state(approval.thread_id))["values"])
                assert receipts(values) == receipts(values_of(state_before["values"]))
            await client.aclose()
