"""The forced-outcome matrix, in-process, over both graphs."""

from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage
from stop_on_artifact.testing import (
    ANSWER_SEPARATOR,
    MODEL_CALL_LIMIT_MESSAGE,
)

from agent.policy import REJECTED_MESSAGE, SPEND_CAP_MESSAGE
from client.scenarios import APPROVAL_SCENARIOS, SCENARIOS, Scenario
from tests.support.closing import split_closing
from tests.support.graph_runs import build, run, tool_steps


@pytest.mark.parametrize("scenario", SCENARIOS + APPROVAL_SCENARIOS, ids=lambda s: s.name)
async def test_scenario(graph_name: str, scenario: Scenario) -> None:
    observed = await run(
        build(graph_name), scenario.query, scenario.context, resume=scenario.resume
    )

    assert observed.path == scenario.path(graph_name)
    assert observed.model_calls == scenario.model_calls
    decision = observed.decision
    assert decision is not None
    assert decision["action"] == scenario.action
    assert decision["rule"] == scenario.rule
    steps = tool_steps(observed.messages)
    step = steps[scenario.chosen_step]
    assert decision["tool_call_id"] == step[scenario.chosen].tool_call_id
    assert decision["tool"] == step[scenario.chosen].name
    # One custom event per tool step, the last one equal to the checkpointed decision.
    assert len(observed.events) == scenario.tool_steps
    assert observed.events[-1] == {"stop_decision": decision}

    answer = observed.answer
    assert not answer.tool_calls
    parts = [steps[i][j] for i, j in scenario.answer_parts]
    assert decision["answer_from"] == [m.tool_call_id for m in parts]
    assert decision["unsettled"] == [steps[i][j].tool_call_id for i, j in scenario.unsettled]
    if scenario.ending == "finalize":
        expected = []
        for i, j in scenario.parts:
            part = steps[i][j]
            assert isinstance(part.content, str)
            if (i, j) in scenario.unsettled:
                expected.append(part.artifact["not_done"])  # the tool's own line
            else:
                expected.append(part.content)
        if scenario.closing == "retry_budget":
            body, closing = split_closing(str(answer.content))
            assert len(closing) == len(scenario.unsettled)  # each part left timing out, named
            assert body == ANSWER_SEPARATOR.join(expected)
        elif scenario.closing == "model_call_limit":
            expected.append(MODEL_CALL_LIMIT_MESSAGE)
        if scenario.closing != "retry_budget":
            assert answer.content == ANSWER_SEPARATOR.join(expected)
        assert not answer.usage_metadata  # relayed, not generated
    else:
        assert answer.content not in [m.content for m in steps[-1]]
        assert answer.response_metadata["model_name"] == "offline"
    if scenario.rule == "policy_block":
        chosen = step[scenario.chosen]
        assert isinstance(chosen.content, str)
        assert chosen.content.startswith("**Not purchased: ")
        if scenario.resume:
            assert f"\n\n{REJECTED_MESSAGE}\n\n**Reason given:** " in chosen.content
        else:
            assert chosen.content.endswith(f"\n\n{SPEND_CAP_MESSAGE}")
        assert chosen.artifact["reason"] == "policy_block"
    # A person was asked once, about every blocked call, before any tool of the step ran.
    assert len(observed.interrupts) == (1 if scenario.resume else 0)
    if scenario.resume:
        request = observed.interrupts[0]
        assert len(request["action_requests"]) == len(scenario.resume)
        assert decision["policy"] == "spend_cap"
        outcome = "rejected" if decision["rule"] == "policy_block" else "approved"
        assert decision["approval"] == outcome
    else:
        assert "approval" not in decision and "policy" not in decision


async def test_chosen_tool_is_not_the_last_message(graph_name: str) -> None:
    """Prebuilt create_react_agent answers with messages[-1]; here every settled call does."""
    observed = await run(
        build(graph_name),
        "checkpointer; streaming",
        {"force_outcome": ["fatal", "success"], "parallel_policy": "priority"},
    )
    tool_messages = [m for m in observed.messages if isinstance(m, ToolMessage)]
    assert [m.artifact["reason"] for m in tool_messages] == ["fatal", "completed"]
    assert observed.decision is not None
    assert observed.decision["tool_call_id"] == tool_messages[0].tool_call_id
    assert observed.answer.content == ANSWER_SEPARATOR.join(m.text for m in tool_messages)


async def test_both_graphs_agree_on_every_scenario() -> None:
    for scenario in SCENARIOS + APPROVAL_SCENARIOS:
        seen = []
        for graph_name in ("legacy", "middleware"):
            observed = await run(
                build(graph_name), scenario.query, scenario.context, resume=scenario.resume
            )
            seen.append(
                (
                    observed.agreed,
                    observed.answer.content,
                    observed.model_calls,
                    observed.interrupts,
                )
            )
        assert seen[0] == seen[1], scenario.name


async def test_artifacts_stay_on_tool_messages_and_out_of_content(graph_name: str) -> None:
    observed = await run(build(graph_name), "What is the store?", {"force_outcome": "success"})
    tool_message = next(m for m in observed.messages if isinstance(m, ToolMessage))
    assert tool_message.artifact["stop"] is True
    assert tool_message.artifact["topic"] == "store"
    assert '"stop"' not in tool_message.text
    assert "Store" in tool_message.text


async def test_second_turn_resets_decision_and_retry_budget(graph_name: str) -> None:
    graph = build(graph_name)
    context = {"force_outcome": ["retryable", "retryable", "success"], "max_retries": 2}
    first = await run(graph, "checkpointer", context, thread_id="multi")
    assert first.decision is not None and first.decision["rule"] == "completed"
    # The second turn counts its calls and transient outcomes from zero again.
    second = await run(graph, "streaming", context, thread_id="multi")
    assert second.decision is not None and second.decision["rule"] == "completed"
    assert second.model_calls == 3
    third = await run(graph, "hello there", {"force_outcome": "success"}, thread_id="multi")
    assert third.decision is not None  # search ran: the offline model searches anything
    assert third.decision["rule"] == "fatal"  # nothing in the index matches


async def test_seeded_outcomes_repeat(graph_name: str) -> None:
    first = await run(build(graph_name), "subgraphs", {"seed": 7})
    second = await run(build(graph_name), "subgraphs", {"seed": 7})
    assert first.decision == second.decision
    assert first.path == second.path
