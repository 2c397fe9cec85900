"""The offline model reads every part of a question, however a person joins them."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent.models import OfflineChatModel, parse_buy
from agent.question import MAX_PARTS, TOO_MANY, UNCLEAR_TITLE, read_question
from agent.tools import TOOLS
from agent.tools.checkout import checkout
from bench.queries import load
from tests.support.graph_runs import build, run

Call = tuple[str, dict[str, Any]]


def reply(text: str, tools: list[Any] = TOOLS) -> AIMessage:
    message = OfflineChatModel().bind_tools(tools).invoke([HumanMessage(text)])
    assert isinstance(message, AIMessage)
    return message


def calls(text: str) -> list[Call]:
    return [(call["name"], call["args"]) for call in reply(text).tool_calls]


def buy(item: str, amount: float) -> Call:
    return "checkout", {"item": item, "amount": amount}


def search(query: str) -> Call:
    return "search", {"query": query}


LAPTOP_AND_MOUSE = [buy("a laptop", 300.0), buy("a mouse", 20.0)]

PHRASINGS: dict[str, list[Call]] = {
    "buy a laptop for 300 and a mouse for 20": LAPTOP_AND_MOUSE,
    "buy a laptop for 300 and buy a mouse for 20": LAPTOP_AND_MOUSE,
    "buy a laptop for $300, and a mouse for $20": LAPTOP_AND_MOUSE,
    "buy a laptop for 300\nbuy a mouse for 20": LAPTOP_AND_MOUSE,
    "buy a laptop for 300\na mouse for 20": LAPTOP_AND_MOUSE,
    "I want to buy a laptop for 300 and a mouse for 20": LAPTOP_AND_MOUSE,
    "buy a laptop for 300, also buy a mouse for 20": LAPTOP_AND_MOUSE,
    "buy a laptop for 300\nalso buy a mouse for 20": LAPTOP_AND_MOUSE,
    "buy a laptop for 300. Also a mouse for 20.": LAPTOP_AND_MOUSE,
    "Can you buy a laptop for 300 and a mouse for 20?": LAPTOP_AND_MOUSE,
    "buy a laptop for 300 please, and a mouse for 20 dollars": LAPTOP_AND_MOUSE,
    "buy a laptop for 300; buy a mouse for 20": LAPTOP_AND_MOUSE,  # ";" still separates
    "buy a laptop for 300; a mouse for 20": LAPTOP_AND_MOUSE,
    "I'd like to buy a desk for 20, a lamp for 30 and a chair for 40": [
        buy("a desk", 20.0),
        buy("a lamp", 30.0),
        buy("a chair", 40.0),
    ],
    "buy a laptop for 300.00 and a monitor for $1,200": [
        buy("a laptop", 300.0),
        buy("a monitor", 1200.0),
    ],
    "buy a mouse for 20 and what is the refund policy": [
        buy("a mouse", 20.0),
        search("what is the refund policy"),
    ],
    "what is the refund policy and buy a mouse for 20": [
        search("what is the refund policy"),
        buy("a mouse", 20.0),
    ],
    "what is the refund policy and how long is shipping": [
        search("what is the refund policy"),
        search("how long is shipping"),
    ],
    "What is a checkpointer? How do interrupts work?": [
        search("What is a checkpointer?"),
        search("How do interrupts work?"),
    ],
    # Two knowledge-base topics joined by "and" or commas are two searches.
    "checkpointer and interrupts": [search("checkpointer"), search("interrupts")],
    "tell me about checkpointers, interrupts and streaming": [
        search("tell me about checkpointers"),
        search("interrupts"),
        search("streaming"),
    ],
    # One thing stays one part.
    "buy salt and pepper for 5": [buy("salt and pepper", 5.0)],
    "buy salt and pepper for 5 and a mouse for 20": [
        buy("salt and pepper", 5.0),
        buy("a mouse", 20.0),
    ],
    "buy a case for my phone for 15": [buy("a case for my phone", 15.0)],
    "Please buy a red chair for $1,250.50": [buy("a red chair", 1250.5)],
    "what is a checkpointer and how does it work": [
        search("what is a checkpointer and how does it work")
    ],
    "How does a checkpointer work?": [search("How does a checkpointer work?")],
    "what should I buy": [search("what should I buy")],
    "human-in-the-loop, explained": [search("human-in-the-loop, explained")],
    # After ";" a bare topic stays a search, as it always was.
    "buy a laptop for 900; buy a mouse for 20; store": [
        buy("a laptop", 900.0),
        buy("a mouse", 20.0),
        search("store"),
    ],
}


@pytest.mark.parametrize("question", PHRASINGS, ids=lambda q: q.replace("\n", "\\n"))
def test_one_call_per_thing_asked(question: str) -> None:
    assert calls(question) == PHRASINGS[question]


def test_a_named_tool_takes_the_rest_of_its_line() -> None:
    assert calls("search: tool calling and tool node") == [search("tool calling and tool node")]
    assert calls("buy a laptop for 300 and search: streaming") == [
        buy("a laptop", 300.0),
        search("streaming"),
    ]


def test_the_benchmarks_questions_are_read_as_before() -> None:
    """Every bench query gives the calls the ``;``-only reading gave (same draw keys)."""
    for query in load():
        parts = [part.strip() for part in query.text.split(";")]
        expected = []
        for part in parts:
            purchase = parse_buy(part)
            expected.append(buy(*purchase) if purchase else search(part))
        assert calls(query.text) == expected, query.id
        assert len(expected) == query.parts, query.id


# ---------------------------------------------------------------------------------------
# When it cannot tell: no call, and an answer that says what it read and what it did not.


def unclear(text: str, tools: list[Any] = TOOLS) -> str:
    message = reply(text, tools)
    assert not message.tool_calls, "nothing is done when a part cannot be read"
    assert isinstance(message.content, str)
    assert message.content.startswith(UNCLEAR_TITLE)
    return message.content


def in_order(text: str, *pieces: str) -> bool:
    places = [text.find(piece) for piece in pieces]
    return -1 not in places and places == sorted(places)


def test_a_purchase_without_a_price_makes_no_call_and_says_how_to_write_it() -> None:
    answer = unclear("buy a laptop and a mouse")
    assert "“buy a laptop and a mouse” has no price" in answer
    assert "“buy a mouse for 20”" in answer


def test_the_answer_names_every_part_in_order() -> None:
    answer = unclear("buy a laptop for 300 and a mouse")
    understood = "1. Understood: buy “a laptop” for \\$300.00"
    assert in_order(answer, understood, "2. Not clear: “a mouse”")
    assert "“buy a mouse for 20” to buy it, or “what is a mouse” to look it up" in answer
    answer = unclear("what is a checkpointer and buy a desk")
    assert in_order(answer, "1. Understood: look up “what is a checkpointer”", "2. Not clear")
    assert "“buy a desk for 20”" in answer


@pytest.mark.parametrize(
    ("question", "says"),
    [
        ("buy a gift for 2 kids for 30", "I could not read “kids for 30” after the price"),
        ("buy for 20", "does not say what to buy"),
        ("can you buy a laptop", "“can you buy a laptop” has no price"),
        ("buy a laptop for 300 or a mouse for 20", "“or a mouse for 20”"),
        ("buy a laptop for 9" + "9" * 400, "has no price I can read"),  # not a finite number
    ],
)
def test_words_it_cannot_read_are_named(question: str, says: str) -> None:
    assert says in unclear(question)


def test_a_part_no_bound_tool_can_do_is_named() -> None:
    answer = unclear("buy a mouse for 20 and what is a checkpointer", [checkout])
    assert in_order(answer, "Understood: buy “a mouse”", "“what is a checkpointer”: none of")


def test_caller_text_is_quoted_escaped_and_no_amount_opens_math() -> None:
    answer = unclear("buy a *bold* [link](x) <b>desk</b> for 10 and a `lamp` | x")
    assert r"“a \*bold\* \[link\](x) \<b\>desk\</b\>”" in answer
    assert r"“a \`lamp\` \| x”" in answer
    assert "*bold*" not in answer and "<b>" not in answer
    dollars = unclear("buy a laptop for $300 and a mouse")
    assert all(dollars[i - 1] == "\\" for i, char in enumerate(dollars) if char == "$")


def test_too_many_parts_make_no_call() -> None:
    message = reply("; ".join(["store"] * (MAX_PARTS + 1)))
    assert not message.tool_calls and message.content == TOO_MANY
    assert len(reply("; ".join(["store"] * MAX_PARTS)).tool_calls) == MAX_PARTS


def test_the_reading_is_frozen_and_in_order() -> None:
    reading = read_question("buy a laptop for 300 and a mouse", {"checkout", "search"})
    assert [(p.kind, p.item, p.amount, p.problem) for p in reading.parts] == [
        ("purchase", "a laptop", 300.0, None),
        ("purchase", "a mouse", None, "unclear"),
    ]
    assert not reading.clear
    with pytest.raises(AttributeError):
        reading.parts[0].item = "x"  # type: ignore[misc]


# ---------------------------------------------------------------------------------------
# Both graphs, in-process.


async def test_both_purchases_are_answered_in_order(graph_name: str) -> None:
    observed = await run(
        build(graph_name),
        "buy a laptop for 300 and a mouse for 20",
        {"force_outcome": "success"},
    )
    receipts = [m for m in observed.messages if isinstance(m, ToolMessage)]
    assert sorted(m.name or "" for m in receipts) == ["checkout", "checkout"]
    assert observed.decision is not None and observed.decision["rule"] == "completed"
    answer = observed.answer.content
    assert isinstance(answer, str)
    assert answer.count("# Thank you for your order") == 2
    assert in_order(answer, r"| a laptop | \$300.00 |", r"| a mouse | \$20.00 |")


async def test_a_question_it_cannot_read_runs_no_tool(graph_name: str) -> None:
    observed = await run(
        build(graph_name), "buy a laptop for 300 and a mouse", {"force_outcome": "success"}
    )
    assert not [m for m in observed.messages if isinstance(m, ToolMessage)]
    assert observed.model_calls == 1
    answer = observed.answer.content
    assert isinstance(answer, str) and answer.startswith(UNCLEAR_TITLE)
    assert in_order(answer, "“a laptop”", "“a mouse”")
