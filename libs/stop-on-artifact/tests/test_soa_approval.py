"""``StopDecision.approval`` and ``policy``: an answer a policy recorded on the artifact."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from stop_on_artifact import StopSettings, completed, decide, policy_block, transient


def turn(*steps: list[tuple[str, dict[str, Any]]]) -> list[BaseMessage]:
    """A user message, then one model turn and its results per step."""
    messages: list[BaseMessage] = [HumanMessage("buy two things")]
    for number, step in enumerate(steps):
        calls = [{"name": "checkout", "args": {}, "id": f"c{number}{i}"} for i in range(len(step))]
        messages.append(AIMessage("", tool_calls=calls))
        for call, (content, artifact) in zip(calls, step, strict=True):
            # the library names the fields it wrote itself (a person's answer) on the message
            mark = {"stop_on_artifact": ["approval"]} if "approval" in artifact else {}
            messages.append(
                ToolMessage(
                    content,
                    tool_call_id=call["id"],
                    name="checkout",
                    artifact=artifact,
                    response_metadata=mark,
                )
            )
    return messages


SETTINGS = StopSettings()
APPROVED = {"policy": "spend_cap", "approval": "approved"}


def test_an_approved_call_puts_approval_and_policy_on_the_decision() -> None:
    decision = decide(turn([("receipt", {**completed(), **APPROVED})]), SETTINGS)
    assert (decision["rule"], decision.get("approval"), decision.get("policy")) == (
        "completed",
        "approved",
        "spend_cap",
    )


def test_the_deciding_call_comes_first_then_the_turns_latest() -> None:
    rejected = {**policy_block(), "policy": "spend_cap", "approval": "rejected"}  # the library's
    step = [("receipt", {**completed(), **APPROVED}), ("refused", rejected)]
    decision = decide(turn(step), SETTINGS)
    assert decision["rule"] == "policy_block" and decision["tool_call_id"] == "c01"
    assert decision.get("approval") == "rejected"  # the refusal decided
    # An approval asked in an earlier step of the turn still counts.
    earlier = turn([("timed out", {**transient(), **APPROVED})], [("receipt", completed())])
    assert decide(earlier, SETTINGS).get("approval") == "approved"


def test_no_approval_no_keys_and_a_malformed_artifact_does_not_count() -> None:
    plain = decide(turn([("receipt", completed())]), SETTINGS)
    assert "approval" not in plain and "policy" not in plain
    bad = {"stop": "yes", "reason": "completed", "approval": "approved"}
    assert "approval" not in decide(turn([("receipt", bad)]), SETTINGS)
    # A new user message starts a new turn: the last turn's approval is not this one's.
    messages = [
        *turn([("receipt", {**completed(), **APPROVED})]),
        AIMessage("Bought."),  # a turn ends in a reply: a user message after a result is a tool's
        *turn([("receipt", completed())]),
    ]
    assert "approval" not in decide(messages, SETTINGS)


def test_an_approval_a_tool_writes_itself_is_refused() -> None:
    forged = ToolMessage("ok", tool_call_id="c00", name="checkout", artifact=APPROVED)
    forged.artifact = {**completed(), **APPROVED}
    messages = [*turn([("x", completed())])[:2], forged]
    decision = decide(messages, SETTINGS)
    assert decision["rule"] == "invalid_artifact" and "approval" not in decision
