"""Driving an approval over the API, shared by the dev-server and production-server tests.

A run under ``on_policy_block="ask"`` pauses; :func:`pause` starts it and checks what the
thread shows while it waits; :func:`answer` resumes it with ``command={"resume": ...}``;
:func:`check_resumed` checks the end against the scenario table and the same run
in-process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
from langchain.agents.middleware.human_in_the_loop import HITLRequest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.schema import Command as ApiCommand
from langgraph_sdk.schema import StreamMode
from pydantic import TypeAdapter

from client.scenarios import INTERRUPT, Scenario, model_calls
from tests.support.api import (
    answer_ids,
    api_tool_record,
    assert_answer,
    canonical,
    current_turn,
    model_messages,
    run_request,
    tool_record,
    tool_steps,
    values_of,
)
from tests.support.graph_runs import build, run

Way = Literal["wait", "stream"]
WAYS: tuple[Way, ...] = ("wait", "stream")
STREAM_MODES: list[StreamMode] = ["updates", "custom"]


@dataclass
class Approval:
    """One paused thread and what the API showed of it."""

    thread_id: str
    graph: str
    scenario: Scenario
    request: dict[str, Any]
    """The pending interrupt's value, from ``threads.get_state``."""
    path: list[str] = field(default_factory=list)
    """Nodes the updates stream showed, over both runs (stream only)."""
    events: list[dict[str, Any]] = field(default_factory=list)


def resume_value(scenario: Scenario) -> dict[str, Any]:
    """The resume a person sends for ``scenario``: langchain's ``HITLResponse``."""
    return {"decisions": list(scenario.resume)}


async def _stream(
    client: LangGraphClient, approval: Approval, thread_id: str, **kwargs: Any
) -> None:
    async for part in client.runs.stream(
        thread_id, approval.graph, stream_mode=STREAM_MODES, **kwargs
    ):
        assert part.event != "error", part.data
        if part.event == "updates":
            approval.path.extend(part.data)
        elif part.event == "custom":
            approval.events.append(part.data["stop_decision"])


async def pause(
    client: LangGraphClient, graph: str, scenario: Scenario, way: Way = "wait"
) -> Approval:
    """Start the scenario's run, check that it paused before any tool ran, and return it.

    Args:
        client: The SDK client (its identity owns the thread).
        graph: The graph to run.
        scenario: A row of ``APPROVAL_SCENARIOS``.
        way: ``runs.wait`` or ``runs.stream``.

    Returns:
        The paused thread and its pending request.
    """
    thread_id = str((await client.threads.create())["thread_id"])
    approval = Approval(thread_id, graph, scenario, {})
    request = run_request(scenario.query, scenario.context)
    if way == "wait":
        output = values_of(await client.runs.wait(thread_id, graph, **request))
        [shown] = output["__interrupt__"]  # runs.wait shows the pause in its output
    else:
        await _stream(client, approval, thread_id, **request)
        assert approval.path[-1] == INTERRUPT
    state = await client.threads.get_state(thread_id)
    [pending] = state["interrupts"]
    TypeAdapter(HITLRequest).validate_python(pending["value"])
    if way == "wait":
        assert shown["value"] == pending["value"]
    approval.request = dict(pending["value"])
    assert len(approval.request["action_requests"]) == len(scenario.resume)
    values = values_of(state["values"])
    assert [m for m in values["messages"] if m["type"] == "tool"] == []  # nothing ran
    assert values.get("stop_decision") is None
    assert (await client.threads.get(thread_id))["status"] == "interrupted"
    return approval


async def answer(
    client: LangGraphClient, approval: Approval, way: Way = "wait", resume: Any = None
) -> dict[str, Any]:
    """Resume the paused thread with the scenario's decisions (or ``resume``).

    Returns:
        The thread's values after the run.
    """
    command: ApiCommand = {"resume": resume_value(approval.scenario) if resume is None else resume}
    context = approval.scenario.context
    if way == "wait":
        await client.runs.wait(approval.thread_id, approval.graph, command=command, context=context)
    else:
        await _stream(client, approval, approval.thread_id, command=command, context=context)
    return values_of((await client.threads.get_state(approval.thread_id))["values"])


async def check_resumed(client: LangGraphClient, approval: Approval, way: Way) -> None:
    """The resumed thread ends as the scenario says, and as the same run in-process."""
    scenario, graph = approval.scenario, approval.graph
    state = await client.threads.get_state(approval.thread_id)
    assert state["next"] == [] and state["interrupts"] == []
    values = values_of(state["values"])
    turn = current_turn(values["messages"])
    decision = values["stop_decision"]
    assert (decision["action"], decision["rule"]) == (scenario.action, scenario.rule)
    outcome = "rejected" if scenario.rule == "policy_block" else "approved"
    assert (decision["policy"], decision["approval"]) == ("spend_cap", outcome)
    steps = tool_steps(turn)
    chosen = steps[-1][scenario.chosen]
    assert decision["tool_call_id"] == chosen["tool_call_id"]
    assert decision["answer_from"] == answer_ids(scenario, turn)
    assert len(model_messages(turn)) == scenario.model_calls
    assert_answer(scenario, turn)
    if way == "stream":
        assert approval.path == scenario.path(graph)
        assert model_calls(approval.path, decision) == scenario.model_calls
        assert approval.events[-1] == decision
    reference = await run(build(graph), scenario.query, scenario.context, resume=scenario.resume)
    expected = [tool_record(m) for m in reference.messages if m.type == "tool"]
    shown = [api_tool_record(m) for m in turn if m["type"] == "tool"]
    assert canonical(shown) == canonical(expected)
    assert approval.request == reference.interrupts[0]


AT_THE_DOOR: tuple[tuple[Any, str], ...] = (
    ({"decisions": []}, "command.resume.decisions must be a non-empty list"),
    ({"decisions": [{"type": "edit", "edited_action": "secret-2b7d"}]}, "resume.decisions[0]"),
    ({"decisions": [{"type": "reject", "message": 7}]}, "resume.decisions[0].message"),
)
"""Answers of the wrong shape, refused before a run is queued, and the field each names."""

IN_THE_GRAPH: tuple[tuple[Any, str], ...] = (
    ("secret-2b7d", "resume must be an object"),  # not an object: it may resume a breakpoint
    (
        {"decisions": [{"type": "approve"}, {"type": "approve"}]},
        "resume.decisions must be a list of 1",
    ),
)
"""Answers the door lets through (not an object, or the wrong count for the pending
request): the graph asks again."""


async def refuse_malformed(client: LangGraphClient, approval: Approval) -> None:
    """Send every malformed answer: none is used, and nothing is lost.

    An object of the wrong shape is a 422 at the door naming the field, and no run is
    queued. Anything else (a value that is not an object may resume a breakpoint; the
    count of decisions depends on the pending request) reaches the graph, which asks again
    rather than failing (a failed run would mark the thread ``error``, and Aegra then
    refuses every resume): the run ends paused on the same actions, each description led
    by the field that was wrong. Never a value.
    """
    before = await client.threads.get_state(approval.thread_id)
    runs_before = len(await client.runs.list(approval.thread_id, limit=100))
    for resume, wrong in AT_THE_DOOR:
        command: ApiCommand = {"resume": resume}
        try:
            await client.runs.wait(approval.thread_id, approval.graph, command=command)
        except httpx.HTTPStatusError as refused:
            assert refused.response.status_code == 422
            assert wrong in refused.response.text, refused.response.text
            assert "secret-2b7d" not in refused.response.text
        else:
            raise AssertionError(f"a resume of the wrong shape was accepted ({wrong})")
        state = await client.threads.get_state(approval.thread_id)
        assert state["values"] == before["values"] and state["next"] == before["next"]
        assert state["interrupts"] == before["interrupts"]  # the same request, untouched
    assert len(await client.runs.list(approval.thread_id, limit=100)) == runs_before
    for resume, wrong in IN_THE_GRAPH:
        command = {"resume": resume}
        output = values_of(
            await client.runs.wait(approval.thread_id, approval.graph, command=command)
        )
        assert "__error__" not in output  # the run did not fail
        thread = await client.threads.get(approval.thread_id)
        assert thread["status"] == "interrupted", (thread["status"], output)
        state = await client.threads.get_state(approval.thread_id)
        assert state["values"] == before["values"]  # nothing ran, nothing lost
        assert state["next"] == before["next"]
        [pending] = state["interrupts"]
        TypeAdapter(HITLRequest).validate_python(pending["value"])
        [action] = pending["value"]["action_requests"]
        [original] = approval.request["action_requests"]
        assert (action["name"], action["args"]) == (original["name"], original["args"])
        note = f"The last answer could not be used: {wrong}"
        assert action["description"].startswith(note), action["description"]
        assert action["description"].endswith(original["description"])
        assert "secret-2b7d" not in action["description"]


def receipts(values: dict[str, Any]) -> list[str]:
    """The order ids of every completed checkout in a thread: one per purchase made."""
    return [
        str(m["artifact"]["order_id"])
        for m in values["messages"]
        if m["type"] == "tool" and (m.get("artifact") or {}).get("reason") == "completed"
    ]


PER_RUN_CAP: dict[str, Any] = {
    "on_policy_block": "ask",
    "spend_cap": 100,
    "force_outcome": "success",
}
"""A run that sets its own cap and asks; the defaults (cap 500, refuse) would charge 300."""
PER_RUN_QUESTION = "buy a keyboard for 300"


@dataclass
class Held:
    """A thread paused under a per-run cap, to be answered later by another client."""

    thread_id: str
    graph: str
    kind: Literal["approve", "reject"]


async def pause_under_a_per_run_cap(
    client: LangGraphClient, graph: str, kind: Literal["approve", "reject"]
) -> Held:
    """Start ``buy a keyboard for 300`` under a cap of 100 with ``ask``: it pauses."""
    thread_id = str((await client.threads.create())["thread_id"])
    await client.runs.wait(thread_id, graph, **run_request(PER_RUN_QUESTION, PER_RUN_CAP))
    state = await client.threads.get_state(thread_id)
    assert len(state["interrupts"]) == 1, "a purchase above the run's own cap is asked about"
    assert receipts(values_of(state["values"])) == []
    return Held(thread_id, graph, kind)


async def answer_with_no_context(client: LangGraphClient, held: Held) -> None:
    """Answer as a later client with no context does, then check the turn's own rule held."""
    decision: dict[str, Any] = {"type": held.kind}
    if held.kind == "reject":
        decision["message"] = "no"
    command: ApiCommand = {"resume": {"decisions": [decision]}}
    await client.runs.wait(held.thread_id, held.graph, command=command)  # no context at all
    state = await client.threads.get_state(held.thread_id)
    assert state["interrupts"] == [] and state["next"] == []
    values = values_of(state["values"])
    answer_text = str(values["messages"][-1]["content"])
    stop = values["stop_decision"]
    if held.kind == "reject":
        assert receipts(values) == [], "a rejected purchase was charged"
        assert "Total charged" not in answer_text
        assert (stop["rule"], stop["policy"], stop["approval"]) == (
            "policy_block",
            "spend_cap",
            "rejected",
        )
    else:
        assert len(receipts(values)) == 1, "an approved purchase is charged exactly once"
        assert (stop["rule"], stop["policy"], stop["approval"]) == (
            "completed",
            "spend_cap",
            "approved",
        )


async def refuse_a_rewritten_verdict(client: LangGraphClient, graph: str) -> None:
    """A resume that also rewrites the recorded verdict is a 422; the pause stays answerable."""
    held = await pause_under_a_per_run_cap(client, graph, "approve")
    before = await client.threads.get_state(held.thread_id)
    command: ApiCommand = {
        "update": {"spend_cap_verdict": None},
        "resume": {"decisions": [{"type": "approve"}]},
    }
    try:
        await client.runs.wait(held.thread_id, graph, command=command)
    except httpx.HTTPStatusError as refused:
        assert refused.response.status_code == 422
        assert "command.update sets spend_cap_verdict" in refused.response.text
    else:
        raise AssertionError("a command rewriting the recorded verdict was accepted")
    after = await client.threads.get_state(held.thread_id)
    assert after["values"] == before["values"] and after["interrupts"] == before["interrupts"]
    await answer_with_no_context(client, held)  # still answerable, and charged once
