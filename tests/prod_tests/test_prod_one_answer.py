"""One answer per pause on the production server, with two workers racing.

A purchase pauses for approval; two answers to it are sent at once (``approve`` + ``approve``,
or ``approve`` + ``reject``), ten rounds of each per graph, every round at the same time as
the others so the answers land on both workers. The answers name every multitask strategy
(or none): an answer is always run as ``reject``. Exactly one answer is taken and runs; the
other is refused with 409 and :func:`agent.runs.answered`, which names the thread, before a
run is created. The purchase is made exactly once when the taken answer approves and never
when it rejects: counted in the thread's state and history, in the runs the server recorded,
and in the ``checkout`` tool runs traced to the loopback LangSmith collector. The thread ends
``idle`` and says what the taken answer decided.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import httpx
from langgraph_sdk.client import LangGraphClient

from agent.runs import CONFLICT, STRATEGIES, answered
from client.scenarios import GRAPHS, by_name
from tests.support.api import values_of
from tests.support.approval import Approval, pause, receipts
from tests.support.langsmith_collector import LangSmithCollector

ROUNDS = 10
APPROVE = by_name("approval-approve")
REJECT = by_name("approval-reject")
PAIRS = {"approve+approve": (APPROVE, APPROVE), "approve+reject": (APPROVE, REJECT)}
NAMED = (None, *STRATEGIES)
"""The strategy an answer names: round ``k`` sends ``NAMED[k % 5]`` and ``NAMED[(k + 1) % 5]``."""


@dataclass
class Round:
    """One paused thread, the two answers sent to it at once, and what each got."""

    approval: Approval
    pair: str
    taken: list[str]
    """The decision type of each answer that ran (one, when the server keeps the rule)."""
    refusals: list[httpx.Response]


async def _answer(
    client: LangGraphClient, approval: Approval, decision: dict[str, Any], strategy: Any
) -> Any:
    return await client.runs.wait(
        approval.thread_id,
        approval.graph,
        command={"resume": {"decisions": [decision]}},
        context=approval.scenario.context,
        multitask_strategy=strategy,
    )


async def _race(client: LangGraphClient, graph: str, pair: str, k: int) -> Round:
    approval = await pause(client, graph, APPROVE)
    decisions = [scenario.resume[0] for scenario in PAIRS[pair]]
    named = (NAMED[k % len(NAMED)], NAMED[(k + 1) % len(NAMED)])
    outcomes = await asyncio.gather(
        *(_answer(client, approval, d, s) for d, s in zip(decisions, named, strict=True)),
        return_exceptions=True,
    )
    taken, refusals = [], []
    for decision, outcome in zip(decisions, outcomes, strict=True):
        if isinstance(outcome, httpx.HTTPStatusError):
            refusals.append(outcome.response)
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            taken.append(str(decision["type"]))
    return Round(approval, pair, taken, refusals)


def _charges(messages: list[dict[str, Any]]) -> list[str]:
    """The ids of the ``checkout`` calls that charged (their result carries an order id)."""
    return [
        str(m["tool_call_id"])
        for m in messages
        if m["type"] == "tool" and (m.get("artifact") or {}).get("order_id")
    ]


async def _check(client: LangGraphClient, one: Round) -> tuple[str, list[str]]:
    """Check one round from the API; return its thread and the run ids the server recorded."""
    thread_id = one.approval.thread_id
    assert len(one.taken) == 1, (one.pair, one.taken, [r.text for r in one.refusals])
    [refused] = one.refusals
    assert refused.status_code == CONFLICT
    assert answered(thread_id) in refused.text and thread_id in refused.text
    [decision] = one.taken

    thread = await client.threads.get(thread_id)
    assert thread["status"] == "idle"
    state = await client.threads.get_state(thread_id)
    assert state["next"] == [] and state["interrupts"] == []
    values = values_of(state["values"])
    stop = values["stop_decision"]
    if decision == "approve":
        assert len(receipts(values)) == 1
        assert (stop["rule"], stop["approval"]) == ("completed", "approved")
    else:
        assert receipts(values) == []
        assert (stop["rule"], stop["approval"]) == ("policy_block", "rejected")
    executed = _charges(values["messages"])
    assert len(executed) == (1 if decision == "approve" else 0)
    history = await client.threads.get_history(thread_id, limit=100)
    ran = {
        call for snapshot in history for call in _charges(values_of(snapshot["values"])["messages"])
    }
    assert ran == set(executed), "no other checkout ever ran on the thread"

    runs = await client.runs.list(thread_id, limit=100)  # the pause and the one answer taken
    assert sorted(run["status"] for run in runs) == ["interrupted", "success"]
    return thread_id, [str(run["run_id"]) for run in runs]


async def test_of_two_answers_sent_at_once_to_one_pause_exactly_one_runs(
    alice: LangGraphClient, collector: LangSmithCollector
) -> None:
    started = time.monotonic()
    rounds = await asyncio.gather(
        *(_race(alice, graph, pair, k) for graph in GRAPHS for pair in PAIRS for k in range(ROUNDS))
    )
    raced = time.monotonic() - started
    checked = await asyncio.gather(*(_check(alice, one) for one in rounds))
    taken = {pair: [one.taken[0] for one in rounds if one.pair == pair] for pair in PAIRS}
    print(f"\n{len(rounds)} races in {raced:.1f}s; taken: {taken}")

    # What the server traced: every run of every thread, and each checkout it executed.
    run_ids = {run_id for _, ids in checked for run_id in ids}
    traced = collector.wait_for(
        lambda runs: all(runs.get(run_id, {}).get("end_time") for run_id in run_ids), timeout=60
    )
    for (thread_id, _), one in zip(checked, rounds, strict=True):
        checkouts = [
            run
            for run in traced.values()
            if run.get("name") == "checkout"
            and ((run.get("extra") or {}).get("metadata") or {}).get("thread_id") == thread_id
        ]
        # The tool ran (and charged) exactly once on an approval, never on a rejection.
        assert len(checkouts) == (1 if one.taken == ["approve"] else 0), (one.pair, one.taken)
        assert all(run["outputs"]["output"]["artifact"]["order_id"] for run in checkouts)
