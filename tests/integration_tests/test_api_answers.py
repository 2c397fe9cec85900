"""What a person reads after a hard stop, over the API: Markdown, and every part answered."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient
from stop_on_artifact.testing import ANSWER_SEPARATOR

from agent.policy import SPEND_CAP_MESSAGE
from agent.tools.checkout import CURRENCY_MESSAGE
from client.scenarios import GRAPHS
from tests.support.api import current_turn, model_messages, text, user_input
from tests.support.closing import retry_closing


async def ask(
    client: LangGraphClient, graph: str, question: str, context: dict[str, Any]
) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """Run one question on a new thread; return the answer, the decision and the turn."""
    thread_id = (await client.threads.create())["thread_id"]
    output = await client.runs.wait(thread_id, graph, input=user_input(question), context=context)
    assert isinstance(output, dict)
    turn = current_turn(output["messages"])
    return text(turn[-1]), output["stop_decision"], turn


def tool_calls(turn: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls in the order the model issued them."""
    return [c for m in turn if m["type"] == "ai" for c in m.get("tool_calls") or []]


def tool_ids(turn: list[dict[str, Any]]) -> list[str]:
    """Tool call ids in the order the model issued them."""
    return [c["id"] for c in tool_calls(turn)]


@pytest.mark.parametrize("graph", GRAPHS)
async def test_a_success_answer_is_markdown_with_a_real_code_block(
    client: LangGraphClient, graph: str
) -> None:
    answer, decision, turn = await ask(
        client, graph, "What is a checkpointer in LangGraph?", {"force_outcome": "success"}
    )
    assert decision["rule"] == "completed"
    assert len(model_messages(turn)) == 1
    assert answer.startswith("# Checkpointers\n")
    with pytest.raises(json.JSONDecodeError):
        json.loads(answer)
    assert "\n```python\nfrom langgraph.checkpoint.memory import InMemorySaver\n" in answer
    assert "\\n" not in answer  # real newlines, not escapes
    assert "\n## " in answer


@pytest.mark.parametrize("graph", GRAPHS)
async def test_a_two_part_question_answers_both_parts_in_call_order(
    client: LangGraphClient, graph: str
) -> None:
    answer, decision, turn = await ask(
        client, graph, "checkpointer; interrupts", {"force_outcome": "success"}
    )
    assert len(model_messages(turn)) == 1
    assert decision["answer_from"] == tool_ids(turn)
    assert len(decision["answer_from"]) == 2
    first, second = answer.split(ANSWER_SEPARATOR)
    assert first.startswith("# Checkpointers\n")
    assert second.startswith("# Interrupts\n")


@pytest.mark.parametrize("graph", GRAPHS)
async def test_a_part_that_timed_out_is_retried_then_both_parts_answer(
    client: LangGraphClient, graph: str
) -> None:
    answer, decision, turn = await ask(
        client,
        graph,
        "checkpointer; interrupts",
        {"force_outcome": ["success", "transient", "success"]},
    )
    assert len(model_messages(turn)) == 2
    issued = tool_ids(turn)
    assert len(issued) == 3  # two parts, then the retry of the second alone
    assert decision["answer_from"] == [issued[0], issued[2]]
    parts = answer.split(ANSWER_SEPARATOR)
    assert [p.splitlines()[0] for p in parts] == ["# Checkpointers", "# Interrupts"]
    assert "timed out" not in answer and "unavailable" not in answer


@pytest.mark.parametrize("graph", GRAPHS)
async def test_a_refused_purchase_stands_beside_the_receipt_of_the_other(
    client: LangGraphClient, graph: str
) -> None:
    answer, decision, turn = await ask(
        client,
        graph,
        "buy a laptop for 900; buy a mouse for 20",
        {"force_outcome": "success", "spend_cap": 500},
    )
    assert decision["rule"] == "policy_block"
    assert decision["answer_from"] == tool_ids(turn)
    refusal, receipt = answer.split(ANSWER_SEPARATOR)
    assert refusal == f"**Not purchased: a laptop (\\$900.00)**\n\n{SPEND_CAP_MESSAGE}"
    assert receipt.startswith("# Thank you for your order\n")
    assert r"| a mouse | \$20.00 |" in receipt
    assert "laptop" not in receipt and "<" not in answer


@pytest.mark.parametrize("graph", GRAPHS)
async def test_a_spent_retry_budget_keeps_the_part_that_was_settled(
    client: LangGraphClient, graph: str
) -> None:
    answer, decision, turn = await ask(
        client,
        graph,
        "checkpointer; interrupts",
        {"force_outcome": ["success", "transient"], "max_retries": 2},
    )
    assert decision["rule"] == "retry_budget"
    assert decision["answer_from"] == tool_ids(turn)[:1]
    assert decision["unsettled"] == tool_ids(turn)[-1:]
    settled, not_done, closing = answer.split(ANSWER_SEPARATOR)
    assert settled.startswith("# Checkpointers\n")
    assert not_done.startswith("**Not searched: “interrupts”**: the knowledge base timed out")
    assert closing == retry_closing("search", 3, "part 2 of 2")  # its part, not the whole


@pytest.mark.parametrize("graph", GRAPHS)
async def test_a_refusal_waits_for_the_retry_of_its_sibling(
    client: LangGraphClient, graph: str
) -> None:
    answer, decision, turn = await ask(
        client,
        graph,
        "buy a laptop for 900; buy a mouse for 20",
        {"force_outcome": ["success", "transient", "success"], "spend_cap": 500},
    )
    assert len(model_messages(turn)) == 2
    issued = tool_ids(turn)
    assert len(issued) == 3  # the laptop is never re-issued; the mouse is retried once
    assert (decision["rule"], decision["tool_call_id"]) == ("policy_block", issued[0])
    assert (decision["answer_from"], decision["unsettled"]) == ([issued[0], issued[2]], [])
    refusal, receipt = answer.split(ANSWER_SEPARATOR)
    assert refusal == f"**Not purchased: a laptop (\\$900.00)**\n\n{SPEND_CAP_MESSAGE}"
    assert receipt.startswith("# Thank you for your order\n")
    assert r"| a mouse | \$20.00 |" in receipt


@pytest.mark.parametrize("graph", GRAPHS)
async def test_a_purchase_that_keeps_timing_out_is_named_as_not_done(
    client: LangGraphClient, graph: str
) -> None:
    answer, decision, turn = await ask(
        client,
        graph,
        "buy a laptop for 900; buy a mouse for 20",
        {"force_outcome": ["success", "transient"], "spend_cap": 500},
    )
    issued = tool_ids(turn)
    assert decision["rule"] == "retry_budget"
    assert (decision["answer_from"], decision["unsettled"]) == ([issued[0]], [issued[-1]])
    assert answer.split(ANSWER_SEPARATOR) == [
        f"**Not purchased: a laptop (\\$900.00)**\n\n{SPEND_CAP_MESSAGE}",
        "**Not purchased: a mouse (\\$20.00)**: the payment service timed out; nothing was "
        "charged. Ask again to retry.",
        retry_closing("checkout", 3, "part 2 of 2"),
    ]


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("policy", ["any", "priority"])
async def test_a_stop_at_once_names_the_part_left_undone(
    client: LangGraphClient, graph: str, policy: str
) -> None:
    answer, decision, turn = await ask(
        client,
        graph,
        "checkpointer; interrupts",
        {"force_outcome": ["success", "transient"], "parallel_policy": policy},
    )
    assert len(model_messages(turn)) == 1
    issued = tool_ids(turn)
    assert (decision["answer_from"], decision["unsettled"]) == ([issued[0]], [issued[1]])
    page, not_done = answer.split(ANSWER_SEPARATOR)
    assert page.startswith("# Checkpointers\n")
    assert not_done == (
        "**Not searched: “interrupts”**: the knowledge base timed out before it answered. "
        "Ask again to retry."
    )


@pytest.mark.parametrize("graph", GRAPHS)
async def test_a_retried_first_part_comes_first(client: LangGraphClient, graph: str) -> None:
    answer, decision, turn = await ask(
        client,
        graph,
        "checkpointer; interrupts",
        {"force_outcome": ["transient", "fatal", "success"]},
    )
    issued = tool_ids(turn)
    assert decision["answer_from"] == [issued[2], issued[1]]  # the question's order
    first, second = answer.split(ANSWER_SEPARATOR)
    assert first.startswith("# Checkpointers\n")
    assert second.startswith("**Could not search for “interrupts”**")


async def test_both_graphs_give_the_same_answers(client: LangGraphClient) -> None:
    cases: list[tuple[str, dict[str, Any]]] = [
        ("checkpointer; interrupts", {"force_outcome": ["success", "transient", "success"]}),
        ("buy a laptop for 900; buy a mouse for 20", {"force_outcome": "success"}),
        ("store; streaming", {"force_outcome": ["fatal", "success"]}),
        (
            "buy a laptop for 900; buy a mouse for 20",
            {"force_outcome": ["success", "transient"], "spend_cap": 500},
        ),
        ("checkpointer; interrupts", {"force_outcome": ["transient", "fatal", "success"]}),
    ]
    for question, context in cases:
        answers = [(await ask(client, g, question, context))[0] for g in GRAPHS]
        assert answers[0] == answers[1], question


@pytest.mark.parametrize("graph", GRAPHS)
async def test_a_spent_retry_budget_names_the_part_it_stopped_retrying(
    client: LangGraphClient, graph: str
) -> None:
    """Seed 0: the keyboard times out twice, the mouse is bought on its retry (#63)."""
    answer, decision, turn = await ask(
        client, graph, "buy a keyboard for 30 and a mouse for 20", {"seed": 0}
    )
    assert decision["rule"] == "retry_budget"
    not_done, receipt, closing = answer.split(ANSWER_SEPARATOR)
    assert not_done.startswith("**Not purchased: a keyboard (\\$30.00)**")
    assert receipt.startswith("# Thank you for your order") and "| a mouse |" in receipt
    assert closing == retry_closing("checkout", 2, "part 1 of 2")  # the keyboard's, not all


@pytest.mark.parametrize("graph", GRAPHS)
async def test_a_price_in_euros_is_named_and_never_charged_as_dollars(
    client: LangGraphClient, graph: str
) -> None:
    """#63: the person's own amount, in their currency; without one it is dollars."""
    answer, decision, turn = await ask(
        client, graph, "achète une chaise pour 45 euros", {"force_outcome": "success"}
    )
    assert decision["rule"] == "fatal"
    calls = tool_calls(turn)
    assert [c["args"] for c in calls] == [{"item": "une chaise", "amount": 45.0, "currency": "EUR"}]
    assert answer == (
        "**Not purchased: une chaise (45.00 euros)**\n\n"
        + CURRENCY_MESSAGE.format(currency="euros")
    )
    assert "$" not in answer and "Thank you" not in answer
    answer, decision, _ = await ask(
        client, graph, "achète une chaise pour 45", {"force_outcome": "success"}
    )
    assert decision["rule"] == "completed"
    assert "| une chaise | \\$45.00 |" in answer
