"""A decision holds where it was made, in-process on both graphs.

A turn runs under the context it started with, whatever a resume sends (nothing, the
defaults, or other values), and a person's answer applies to the verdict recorded at the
pause: a reject is never charged, an approve is charged once. The same through both
servers: tests/integration_tests/test_api_turn_holds.py and tests/prod_tests.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.types import Command

from agent.auth import run_request_problems
from agent.graphs.commands import CommandError
from agent.policy import APPROVED_KEY, VERDICT_KEY
from agent.turn import RECORDS, TURN_CONTEXT_KEY
from tests.support.graph_runs import build

PER_RUN = {"on_policy_block": "ask", "spend_cap": 100, "force_outcome": "success"}
"""A run that sets its own cap and asks: the defaults (500, refuse) would charge 300."""
QUESTION = "buy a keyboard for 300"

RESUME_CONTEXTS: dict[str, dict[str, Any] | None] = {
    "none": None,
    "empty": {},
    "other values": {"on_policy_block": "refuse", "spend_cap": 1000, "force_outcome": "fatal"},
}
"""What a later client may send with its resume: none of it changes the paused turn."""


def config(thread_id: str = "t") -> Any:
    return {"configurable": {"thread_id": thread_id}}


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def tool_messages(state: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


def charged(state: dict[str, Any]) -> list[str]:
    return [
        str(m.artifact["order_id"])
        for m in tool_messages(state)
        if isinstance(m.artifact, dict) and m.artifact.get("reason") == "completed"
    ]


async def paused(graph_name: str, context: dict[str, Any] = PER_RUN) -> Any:
    graph = build(graph_name)
    await graph.ainvoke(user(QUESTION), config(), context=context)
    snapshot = await graph.aget_state(config())
    assert len(snapshot.interrupts) == 1, "a purchase above the run's own cap is asked about"
    return graph


async def test_the_pause_records_the_turns_context_and_the_verdict(graph_name: str) -> None:
    graph = await paused(graph_name)
    values = (await graph.aget_state(config())).values
    assert values[TURN_CONTEXT_KEY] == {**PER_RUN, "model": "offline"}
    verdict = values[VERDICT_KEY]
    assert verdict["refused"] == [] and verdict["carried"] == []
    [asked] = verdict["asked"]
    assert (asked["policy"], asked["fields"]) == ("spend_cap", {"cap": 100})
    assert (
        asked["action"]
        == (await graph.aget_state(config())).interrupts[0].value["action_requests"][0]
    )  # what the person is shown is what was recorded
    assert tool_messages(values) == []


@pytest.mark.parametrize("sent", RESUME_CONTEXTS, ids=list(RESUME_CONTEXTS))
async def test_a_reject_is_never_charged_whatever_the_resume_sends(
    graph_name: str, sent: str
) -> None:
    graph = await paused(graph_name)
    reject: Command[Any] = Command(resume={"decisions": [{"type": "reject", "message": "no"}]})
    state = await graph.ainvoke(reject, config(), context=RESUME_CONTEXTS[sent])
    assert charged(state) == []
    decision = state["stop_decision"]
    assert (decision["rule"], decision["policy"], decision["approval"]) == (
        "policy_block",
        "spend_cap",
        "rejected",
    )
    assert "Total charged" not in state["messages"][-1].text


@pytest.mark.parametrize("sent", RESUME_CONTEXTS, ids=list(RESUME_CONTEXTS))
async def test_an_approve_is_charged_once_under_the_turns_settings(
    graph_name: str, sent: str
) -> None:
    graph = await paused(graph_name)
    approve: Command[Any] = Command(resume={"decisions": [{"type": "approve"}]})
    state = await graph.ainvoke(approve, config(), context=RESUME_CONTEXTS[sent])
    assert len(charged(state)) == 1  # the turn's force_outcome=success, not the resume's fatal
    decision = state["stop_decision"]
    assert (decision["rule"], decision["approval"]) == ("completed", "approved")


async def test_forced_outcomes_and_retries_hold_across_the_resume(graph_name: str) -> None:
    # The CLI case: asked with --force-outcome fatal --max-retries 0, answered with no context.
    context = {"on_policy_block": "ask", "force_outcome": "fatal", "max_retries": 0}
    graph = build(graph_name)
    await graph.ainvoke(user("buy a standing desk for 900"), config(), context=context)
    approve: Command[Any] = Command(resume={"decisions": [{"type": "approve"}]})
    state = await graph.ainvoke(approve, config())
    assert [m.artifact["reason"] for m in tool_messages(state)] == ["fatal"]
    assert state["stop_decision"]["rule"] == "fatal"


async def test_the_next_turn_starts_under_its_own_context(graph_name: str) -> None:
    graph = await paused(graph_name)
    approve: Command[Any] = Command(resume={"decisions": [{"type": "approve"}]})
    await graph.ainvoke(approve, config())
    # A new user message is a new turn: the defaults (cap 500, refuse) apply to it.
    state = await graph.ainvoke(user(QUESTION), config(), context={"force_outcome": "success"})
    kept = (await graph.aget_state(config())).values[TURN_CONTEXT_KEY]
    assert kept == {"force_outcome": "success", "model": "offline"}
    assert TURN_CONTEXT_KEY not in state and VERDICT_KEY not in state  # records, not output
    assert len(charged(state)) == 2 and state["stop_decision"]["rule"] == "completed"


async def test_a_resume_with_other_context_is_logged_by_field_name_only(
    graph_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    graph = await paused(graph_name)
    reject: Command[Any] = Command(resume={"decisions": [{"type": "reject"}]})
    sent = {"spend_cap": 987654, "on_policy_block": "refuse"}
    with caplog.at_level("WARNING", logger="agent.turn"):
        await graph.ainvoke(reject, config(), context=sent)
    [record] = [r for r in caplog.records if r.name == "agent.turn"]
    assert "on_policy_block, spend_cap" in record.getMessage()
    assert "987654" not in record.getMessage()


def test_the_records_are_the_policys_own_keys() -> None:
    assert RECORDS == (TURN_CONTEXT_KEY, "stop_turn", VERDICT_KEY, APPROVED_KEY)


@pytest.mark.parametrize("key", RECORDS)
@pytest.mark.parametrize("where", ["input", "command.update"])
def test_no_request_may_write_a_record_at_the_door(key: str, where: str) -> None:
    value = {key: {"on_policy_block": "refuse", "secret": "s3cr3t-41"}}
    fields: dict[str, Any] = (
        {"input": value} if where == "input" else {"command": {"update": value, "resume": None}}
    )
    for request in ({"kwargs": fields}, fields):  # langgraph dev's shape, then Aegra's
        [problem] = run_request_problems(request)
        assert problem.startswith(f"{where} sets {key}:") and "s3cr3t" not in problem


async def test_a_command_that_rewrites_the_verdict_is_refused_in_process(graph_name: str) -> None:
    graph = await paused(graph_name)
    before = await graph.aget_state(config())
    sneaky: Command[Any] = Command(
        update={VERDICT_KEY: None, TURN_CONTEXT_KEY: {"spend_cap": 10_000}},
        resume={"decisions": [{"type": "approve"}]},
    )
    with pytest.raises(CommandError, match="command.update sets turn_context, spend_cap_verdict"):
        await graph.ainvoke(sneaky, config())
    after = await graph.aget_state(config())
    assert after.values == before.values and len(after.interrupts) == 1
