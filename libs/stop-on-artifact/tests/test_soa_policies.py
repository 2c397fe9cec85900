"""Policies: refuse, ask, approve, reject, malformed answers, a resume after a restart.

Every agent test runs on the hand-built graph (``PolicyGate``, langgraph 0.6.6 too) and on
``create_agent`` (``PolicyMiddleware``, langchain 1.x).
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from soa_policy_graphs import REFUSAL, REJECTED, Shop, Till, build, spend_cap
from stop_on_artifact import Block, PolicyGate, resume_problem, tool_policy
from stop_on_artifact._approval import decisions_problem
from stop_on_artifact._decision import ANSWER_SEPARATOR
from stop_on_artifact._policies import PolicyError, ToolPolicy
from stop_on_artifact.testing import approve, pending_approval, reject

ASK = Shop(on_block="ask")


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def thread(name: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def tool_messages(result: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def paused(kind: str, text: str, **options: Any) -> tuple[Any, Till, dict[str, Any]]:
    till = Till()
    agent = build(kind, till.tools, checkpointer=InMemorySaver(), **options)
    agent.invoke(user(text), thread(), context=ASK)
    request = pending_approval(agent, thread())
    assert request is not None, "the step is paused for a person"
    assert till.charged == [], "no tool of the step ran before the answer"
    return agent, till, request


def test_a_refused_call_never_runs_and_the_rest_of_the_turn_is_answered(kind: str) -> None:
    till = Till()
    agent = build(kind, till.tools)
    result = agent.invoke(user("desk 900; pen 5"), context=Shop())
    assert till.charged == ["pen"]
    refused, bought = tool_messages(result)
    assert (refused.content, refused.artifact) == (
        REFUSAL,
        {"stop": True, "reason": "policy_block", "policy": "spend_cap", "cap": 500},
    )
    assert bought.content == "Bought pen."
    decision = result["stop_decision"]
    assert decision["rule"] == "policy_block" and "approval" not in decision  # nobody asked
    assert result["messages"][-1].content == f"{REFUSAL}{ANSWER_SEPARATOR}Bought pen."


def test_ask_pauses_once_with_the_human_in_the_loop_request(kind: str) -> None:
    asked: list[str] = []
    _, _, request = paused(kind, "desk 900; pen 5", asked=asked)
    assert request == {
        "action_requests": [
            {
                "name": "checkout",
                "args": {"item": "desk", "amount": 900.0},
                "description": "Buy desk for 900.00?",
            }
        ],
        "review_configs": [{"action_name": "checkout", "allowed_decisions": ["approve", "reject"]}],
    }
    assert asked == ["spend_cap"]


def test_approve_runs_the_call_once_and_records_it(kind: str) -> None:
    agent, till, _ = paused(kind, "desk 900; pen 5")
    result = agent.invoke(approve(), thread(), context=ASK)
    assert sorted(till.charged) == ["desk", "pen"]
    desk, pen = tool_messages(result)
    assert desk.artifact == {
        "stop": True,
        "reason": "completed",
        "policy": "spend_cap",
        "approval": "approved",
    }
    assert "approval" not in pen.artifact
    decision = result["stop_decision"]
    assert (decision["rule"], decision.get("approval"), decision.get("policy")) == (
        "completed",
        "approved",
        "spend_cap",
    )
    assert pending_approval(agent, thread()) is None


def test_reject_never_runs_and_answers_with_the_reason_escaped_and_cut(kind: str) -> None:
    agent, till, _ = paused(kind, "desk 900; pen 5")
    reason = "Too *dear*: $900 is " + "x" * 300
    result = agent.invoke(reject(reason), thread(), context=ASK)
    assert till.charged == ["pen"]
    desk, pen = tool_messages(result)
    assert isinstance(desk.content, str)
    assert desk.content.startswith(f"{REJECTED}\n\n**Reason given:** Too \\*dear\\*: \\$900 is x")
    assert desk.content.endswith("x…") and len(desk.content) < len(REJECTED) + 240
    assert desk.artifact == {
        "stop": True,
        "reason": "policy_block",
        "policy": "spend_cap",
        "cap": 500,
        "approval": "rejected",
    }
    assert reason[:10] not in str(result["stop_decision"])  # the text never reaches the record
    assert pen.content == "Bought pen."
    assert result["stop_decision"]["rule"] == "policy_block"
    assert result["stop_decision"].get("approval") == "rejected"


def test_a_reject_without_reason_and_a_resume_under_another_context(kind: str) -> None:
    agent, till, _ = paused(kind, "desk 900")
    # The resume's context would let the desk through: the recorded verdict holds.
    result = agent.invoke(reject(), thread(), context=Shop(cap=10_000))
    assert till.charged == []
    [desk] = tool_messages(result)
    assert desk.content == REJECTED


@pytest.mark.parametrize(
    ("answer", "field"),
    [
        ("yes", "resume must be an object"),
        ({"decisions": []}, "resume.decisions must be a list of 1 decision(s)"),
        ({"decisions": [{"type": "maybe"}]}, "resume.decisions[0].type must be one of"),
        ({"decisions": [{"type": "reject", "message": 3}]}, "resume.decisions[0].message"),
    ],
)
def test_a_malformed_answer_keeps_the_step_paused_naming_the_field(
    kind: str, answer: Any, field: str
) -> None:
    agent, till, first = paused(kind, "desk 900")
    agent.invoke(Command(resume=answer), thread(), context=ASK)
    again = pending_approval(agent, thread())
    assert again is not None and till.charged == []
    [action] = again["action_requests"]
    assert action["description"].startswith("The last answer could not be used: " + field)
    assert action["description"].endswith("\n\nBuy desk for 900.00?")
    assert again["review_configs"] == first["review_configs"]
    agent.invoke(approve(), thread(), context=ASK)
    assert till.charged == ["desk"]


def test_several_asked_calls_in_one_step_one_pause(kind: str) -> None:
    agent, till, request = paused(kind, "desk 900; chair 700; pen 5")
    assert [a["args"]["item"] for a in request["action_requests"]] == ["desk", "chair"]
    decisions = {"decisions": [{"type": "reject", "message": "no"}, {"type": "approve"}]}
    result = agent.invoke(Command(resume=decisions), thread(), context=ASK)
    assert sorted(till.charged) == ["chair", "pen"]
    desk, chair, pen = tool_messages(result)
    assert desk.content == f"{REJECTED}\n\n**Reason given:** no"
    assert chair.artifact["approval"] == "approved"
    assert pen.content == "Bought pen."


def test_a_resume_after_a_checkpointer_round_trip(kind: str) -> None:
    saver = InMemorySaver()
    till = Till()
    build(kind, till.tools, checkpointer=saver).invoke(user("desk 900"), thread(), context=ASK)
    restarted = build(kind, till.tools, checkpointer=saver)  # a new graph object: a restart
    assert pending_approval(restarted, thread()) is not None
    result = restarted.invoke(approve(), thread())
    assert till.charged == ["desk"]
    assert result["stop_decision"].get("approval") == "approved"


def test_an_approved_call_that_timed_out_is_retried_without_asking_again(kind: str) -> None:
    till = Till(timeouts=1)
    agent = build(kind, till.tools, checkpointer=InMemorySaver())
    agent.invoke(user("desk 900"), thread(), context=ASK)
    result = agent.invoke(approve(), thread(), context=ASK)
    assert pending_approval(agent, thread()) is None, "the retry is carried, not asked"
    assert till.charged == ["desk"]
    timed_out, bought = tool_messages(result)
    assert timed_out.artifact["approval"] == bought.artifact["approval"] == "approved"


async def test_the_async_gate() -> None:
    till = Till()
    agent = build("router", till.tools, checkpointer=InMemorySaver(), asynchronous=True)
    await agent.ainvoke(user("desk 900; pen 5"), thread(), context=ASK)
    assert till.charged == []
    result = await agent.ainvoke(approve(), thread(), context=ASK)
    assert sorted(till.charged) == ["desk", "pen"]
    assert [m.tool_call_id for m in tool_messages(result)] == ["c1_0", "c1_1"]


def test_the_first_blocking_policy_in_list_order_decides() -> None:
    @tool_policy("first")
    def first(call: Any, context: Any) -> Block:
        return Block(refusal="first says no", description="?")

    second = ToolPolicy("second", lambda call, context: Block(refusal="2", description="?"))
    till = Till()
    agent = build("router", till.tools, policies=[first, second])
    [refused] = tool_messages(agent.invoke(user("pen 5"), context=Shop()))
    assert (refused.content, refused.artifact["policy"]) == ("first says no", "first")


def test_bad_policies_are_refused_naming_the_field() -> None:
    secret = "sk-secret-9f"
    with pytest.raises(PolicyError, match=r"ToolPolicy\.name") as caught:
        ToolPolicy(secret, lambda c, x: None)
    assert secret not in str(caught.value)
    with pytest.raises(PolicyError, match=r"ToolPolicy\.on_block"):
        ToolPolicy("cap", lambda c, x: None, on_block="maybe")  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match=r"ToolPolicy\.tools"):
        ToolPolicy("cap", lambda c, x: None, tools="checkout")  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match=r"Block\.fields"):
        Block(refusal="no", description="?", fields={"cap": [1]})  # type: ignore[dict-item]
    with pytest.raises(PolicyError, match="distinct names"):
        PolicyGate(policies=[spend_cap, spend_cap])
    with pytest.raises(PolicyError, match="^name"):
        PolicyGate(policies=[spend_cap], name="a b")
    with pytest.raises(PolicyError, match=r"ToolPolicy\.on_block must return"):
        ToolPolicy("cap", lambda c, x: Block(refusal="", description=""), lambda x: "x").mode(None)  # type: ignore[arg-type,return-value]


def test_the_response_checks() -> None:
    assert decisions_problem({"decisions": [{"type": "approve"}]}, 1) is None
    assert resume_problem({"id-1": {"decisions": [{"type": "approve"}]}}) is None
    problem = resume_problem({"id-1": {"decisions": [{"type": "sk-secret"}]}})
    assert problem is not None and problem.startswith("resume.<interrupt id>.decisions[0].type")
    assert "sk-secret" not in problem
