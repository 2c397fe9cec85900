"""``on_policy_block="ask"`` in-process: the pause, the request, the resume, the record.

The scenario table (``APPROVAL_SCENARIOS``) is run by test_matrix and test_golden; this
module checks what the table cannot: the request against langchain's own types, that
nothing runs before the answer, malformed answers, escaping, and the trace metadata.
"""

from __future__ import annotations

import json
from typing import Any

import langsmith
import pytest
from langchain.agents.middleware.human_in_the_loop import HITLRequest, HITLResponse
from langchain_core.messages import ToolMessage
from langgraph.types import Command
from pydantic import TypeAdapter
from stop_on_artifact import resume_problem
from stop_on_artifact._approval import ResumeError, decisions_problem, read_decisions, with_problem

from agent.auth import run_request_problems
from agent.graphs.commands import CommandError
from agent.tracing.client import trace_client
from client.scenarios import ASK, GRAPHS
from tests.support.graph_runs import build
from tests.support.langsmith_collector import LangSmithCollector
from tests.support.tracing import metadata

PARALLEL = "buy a laptop for 900; buy a mouse for 20"
SECRET_REASON = "reason-5f3e: call me on +1 555 0100"


def config(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def tool_messages(state: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


async def paused(graph_name: str, text: str = PARALLEL, thread_id: str = "t") -> Any:
    graph = build(graph_name)
    await graph.ainvoke(user(text), config(thread_id), context=ASK)
    return graph


async def test_the_pause_comes_before_any_tool_of_the_step(graph_name: str) -> None:
    graph = await paused(graph_name)
    snapshot = await graph.aget_state(config("t"))
    # Nothing ran: not the blocked laptop, not the mouse within the cap.
    assert tool_messages(snapshot.values) == []
    assert snapshot.values.get("stop_decision") is None
    assert len(snapshot.interrupts) == 1
    request = snapshot.interrupts[0].value
    TypeAdapter(HITLRequest).validate_python(request)  # langchain's own schema
    assert [a["args"] for a in request["action_requests"]] == [{"item": "a laptop", "amount": 900}]
    assert request["review_configs"] == [
        {"action_name": "checkout", "allowed_decisions": ["approve", "reject"]}
    ]
    description = request["action_requests"][0]["description"]
    assert "a laptop" in description and r"\$900.00" in description and r"\$500.00" in description


async def test_refuse_is_the_default_and_never_pauses(graph_name: str) -> None:
    graph = build(graph_name)
    context = {key: value for key, value in ASK.items() if key != "on_policy_block"}
    state = await graph.ainvoke(user(PARALLEL), config("t"), context=context)
    assert (await graph.aget_state(config("t"))).interrupts == ()
    assert state["stop_decision"]["rule"] == "policy_block"
    assert "approval" not in state["stop_decision"]


@pytest.mark.parametrize(
    ("resume", "field"),
    [
        ("yes", "resume must be an object"),
        ({"decisions": "approve"}, "resume.decisions must be a list of 1"),
        ({"decisions": [{"type": "approve"}] * 2}, "resume.decisions must be a list of 1"),
        ({"decisions": ["approve-9d1c"]}, "resume.decisions[0] must be an object"),
        ({"decisions": [{"type": "edit-9d1c"}]}, "resume.decisions[0].type must be one of"),
        ({"decisions": [{"type": "respond", "message": "x"}]}, "resume.decisions[0].type"),
        ({"decisions": [{"type": "reject", "message": ["9d1c"]}]}, "resume.decisions[0].message"),
    ],
)
async def test_a_malformed_resume_is_refused_naming_the_field_and_the_thread_stays_paused(
    graph_name: str, resume: Any, field: str
) -> None:
    graph = await paused(graph_name)
    before = await graph.aget_state(config("t"))
    await graph.ainvoke(Command(resume=resume), config("t"), context=ASK)  # no failed run
    after = await graph.aget_state(config("t"))
    assert after.values == before.values  # nothing ran, nothing lost
    assert after.next == before.next
    [asked] = after.interrupts  # asked again: the same actions, saying what was wrong
    [first] = before.interrupts
    TypeAdapter(HITLRequest).validate_python(asked.value)
    assert asked.value == with_problem(first.value, str(decisions_problem(resume, 1)))
    description = asked.value["action_requests"][0]["description"]
    assert description.startswith(f"The last answer could not be used: {field}")
    assert "9d1c" not in description  # never what the caller sent
    # Still answerable: approve once, and the purchase happens once.
    state = await graph.ainvoke(
        Command(resume={"decisions": [{"type": "approve"}]}), config("t"), context=ASK
    )
    assert state["stop_decision"]["rule"] == "completed"
    assert [m.artifact["reason"] for m in tool_messages(state)] == ["completed", "completed"]


async def test_a_resume_keyed_by_interrupt_id_is_checked_too(graph_name: str) -> None:
    graph = await paused(graph_name)
    pending = (await graph.aget_state(config("t"))).interrupts[0].id
    await graph.ainvoke(Command(resume={pending: {"decisions": [{}]}}), config("t"), context=ASK)
    [asked] = (await graph.aget_state(config("t"))).interrupts
    assert asked.id != pending
    assert asked.value["action_requests"][0]["description"].startswith(
        "The last answer could not be used: resume.decisions[0].type"
    )
    answer = {asked.id: {"decisions": [{"type": "reject"}]}}
    state = await graph.ainvoke(Command(resume=answer), config("t"), context=ASK)
    assert state["stop_decision"]["rule"] == "policy_block"
    assert state["stop_decision"]["approval"] == "rejected"
    assert "Reason given" not in tool_messages(state)[0].text  # no reason, no line


async def test_the_reason_is_escaped_and_cut_in_the_content_only(graph_name: str) -> None:
    graph = await paused(graph_name, "buy a standing desk for 900")
    reason = "*bold* [link](http://x) <b>" + "z" * 1_000_000
    reject = {"decisions": [{"type": "reject", "message": reason}]}
    state = await graph.ainvoke(Command(resume=reject), config("t"), context=ASK)
    [refusal] = tool_messages(state)
    line = refusal.text.split("**Reason given:** ", 1)[1]
    assert line.startswith(r"\*bold\* \[link\](http://x) \<b\>")
    assert line.endswith("…") and len(line) < 260
    assert refusal.artifact == {
        "stop": True,
        "reason": "policy_block",
        "policy": "spend_cap",
        "cap": 500.0,
        "approval": "rejected",
    }
    assert state["messages"][-1].text == refusal.text  # the refusal is the answer


async def test_the_item_is_escaped_and_cut_in_the_description(graph_name: str) -> None:
    item = "desk | <img src=x> **now**" + " pad" * 100
    graph = await paused(graph_name, f"buy {item} for 900")
    request = (await graph.aget_state(config("t"))).interrupts[0].value
    description = request["action_requests"][0]["description"]
    assert r"desk \| \<img src=x\> \*\*now\*\*" in description
    assert "…" in description and len(description) < 400


def test_decision_checks_name_fields_and_accept_langchains_response() -> None:
    response = {"decisions": [{"type": "approve"}, {"type": "reject", "message": "no"}]}
    TypeAdapter(HITLResponse).validate_python(response)  # the shape langchain defines
    assert decisions_problem(response, 2) is None
    assert read_decisions(response, 2) == response["decisions"]
    with pytest.raises(ResumeError, match=r"^resume\.decisions must be a list of 3"):
        read_decisions(response, 3)


async def test_the_command_guard_lets_a_pending_approval_be_answered_once(graph_name: str) -> None:
    graph = await paused(graph_name, "buy a standing desk for 900")
    approve: Command[Any] = Command(resume={"decisions": [{"type": "approve"}]})
    state = await graph.ainvoke(approve, config("t"), context=ASK)
    assert [m.artifact["reason"] for m in tool_messages(state)] == ["completed"]
    with pytest.raises(CommandError, match="not interrupted"):  # nothing pending any more
        await graph.ainvoke(approve, config("t"), context=ASK)
    after = await graph.aget_state(config("t"))
    assert len(tool_messages(after.values)) == 1  # charged once


async def test_the_trace_records_policy_and_outcome_never_the_reason(
    collector: LangSmithCollector,
) -> None:
    client = trace_client(api_url=collector.url, api_key="dummy")
    outcomes = {"approve": "approved", "reject": "rejected"}
    with langsmith.tracing_context(enabled=True, client=client, project_name="approval-test"):
        for graph_name in GRAPHS:
            graph = build(graph_name)
            for kind in outcomes:
                thread = config(f"{graph_name}-{kind}")
                await graph.ainvoke(user("buy a standing desk for 900"), thread, context=ASK)
                decision = {"type": kind, "message": SECRET_REASON} if kind == "reject" else {}
                answer = {"decisions": [{"type": kind, **decision}]}
                await graph.ainvoke(Command(resume=answer), thread, context=ASK)
    client.flush()

    def roots(runs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {
            str(metadata(r).get("thread_id")): metadata(r)
            for r in runs.values()
            if not r.get("parent_run_id") and r.get("end_time") and metadata(r).get("stop_rule")
        }

    def paused(runs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            metadata(r)
            for r in runs.values()
            if not r.get("parent_run_id")
            and r.get("end_time")
            and metadata(r).get("stop_approval") == "asked"
        ]

    runs = collector.wait_for(lambda runs: len(roots(runs)) == len(paused(runs)) == 2 * len(GRAPHS))
    for root in paused(runs):  # the run that paused says so, and decided nothing yet
        assert (root["stop_policy"], root["stop_rule"], root["model_calls"]) == (
            "spend_cap",
            None,
            1,
        )
    for thread_id, root in roots(runs).items():
        graph_name, kind = thread_id.split("-")
        assert root["stop_policy"] == "spend_cap", thread_id
        assert root["stop_approval"] == outcomes[kind], thread_id
        assert root["stop_rule"] == ("completed" if kind == "approve" else "policy_block")
        assert root["model_calls"] == 1
    every_metadata = json.dumps([metadata(r) for r in runs.values()])
    assert "reason-5f3e" not in every_metadata
    # The redacting client keeps it out of inputs and outputs too (the resume is an input).
    assert "reason-5f3e" not in json.dumps(runs, default=str)


@pytest.mark.parametrize("on_policy_block", [None, "refuse"])
async def test_an_answer_is_honoured_without_the_paused_runs_context(
    graph_name: str, on_policy_block: str | None
) -> None:
    """Agent Chat UI resumes with no context: the defaults would refuse what was approved."""
    graph = await paused(graph_name, "buy a standing desk for 900")
    resume_context: dict[str, Any] = {"force_outcome": "success"}
    if on_policy_block is not None:
        resume_context["on_policy_block"] = on_policy_block
    approve: Command[Any] = Command(resume={"decisions": [{"type": "approve"}]})
    state = await graph.ainvoke(approve, config("t"), context=resume_context)
    assert state["stop_decision"]["rule"] == "completed"
    assert state["stop_decision"]["approval"] == "approved"


def test_only_an_approved_call_that_timed_out_carries_its_approval_to_the_retry() -> None:
    from langchain_core.messages import AIMessage, HumanMessage
    from stop_on_artifact import completed, transient
    from stop_on_artifact._policies import screen

    from agent.context import Context
    from agent.policy import spend_cap

    call = {"name": "checkout", "args": {"item": "desk", "amount": 900}, "id": "c1"}
    issued = [HumanMessage("buy a desk for 900"), AIMessage("", tool_calls=[call])]
    retry = {**call, "id": "c2"}

    def result(artifact: dict[str, Any]) -> ToolMessage:
        mark = {"stop_on_artifact": ["approval"]}  # the library wrote the approval itself
        return ToolMessage(
            "...", tool_call_id="c1", name="checkout", artifact=artifact, response_metadata=mark
        )

    def carried(messages: list[Any]) -> bool:
        context = Context(on_policy_block="ask")
        verdict = screen([retry], [spend_cap], context, messages)  # type: ignore[list-item]
        assert verdict is not None
        return verdict["carried"] == ["c2"] and not verdict["asked"]

    timed_out = result({**transient(attempt=0), "approval": "approved", "policy": "spend_cap"})
    charged = result({**completed(attempt=0), "approval": "approved", "policy": "spend_cap"})
    assert carried([*issued, timed_out])
    assert not carried([*issued, charged])  # never approves a second charge
    assert not carried([*issued, result(transient(attempt=0))])
    forged = {**transient(attempt=0), "approval": "approved", "policy": "spend_cap"}
    by_the_tool = ToolMessage("...", tool_call_id="c1", name="checkout", artifact=forged)
    assert not carried([*issued, by_the_tool])  # an approval only the library may write
    # A new user message starts a new turn: nothing carries over.
    assert not carried([*issued, timed_out, AIMessage("Not paid."), HumanMessage("again")])


@pytest.mark.parametrize(
    ("resume", "problem"),
    [
        ({"decisions": [{"type": "approve"}]}, None),
        ({"decisions": [{"type": "approve"}, {"type": "reject", "message": "no"}]}, None),
        ({"0f1e": {"decisions": [{"type": "reject"}]}}, None),
        ("secret-77", "resume must be an object"),
        ({"decisions": []}, "resume.decisions must be a non-empty list"),
        ({"decisions": "secret-77"}, "resume.decisions must be a non-empty list"),
        ({"decisions": [{"type": "edit"}]}, "resume.decisions[0].type must be one of"),
        ({"0f1e": {"decisions": [{}]}}, "resume.<interrupt id>.decisions[0].type"),
    ],
)
def test_the_door_checks_the_shape_of_a_resume_never_quoting_it(
    resume: Any, problem: str | None
) -> None:
    found = resume_problem(resume)
    if problem is None:
        assert found is None
        assert run_request_problems({"kwargs": {"command": {"resume": resume}}}) == []
        return
    assert found is not None and found.startswith(problem)
    assert "secret-77" not in found and "0f1e" not in found
    refusals = run_request_problems({"command": {"resume": resume}})  # Aegra's shape
    if isinstance(resume, dict):
        assert refusals == [f"command.{found}"]
    else:  # not an object: it may resume a breakpoint, so the graph judges it
        assert refusals == []
