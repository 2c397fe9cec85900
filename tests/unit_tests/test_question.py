"""The offline model reads every part of a question, however a person joins them."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent import question
from agent.models import OfflineChatModel, parse_buy
from agent.question import MAX_PARTS, TOO_MANY, UNCLEAR_TITLE, amount, read_question
from agent.tools import TOOLS
from agent.tools.checkout import CURRENCY_MESSAGE, checkout
from agent.tools.search import knowledge_base, lookup, topic_index
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
    # A clause beside a topic that names nothing of its own asks about the topic.
    "Explain checkpointers, with examples": [search("Explain checkpointers, with examples")],
    "the pros and cons of checkpointers": [search("the pros and cons of checkpointers")],
    "Qu'est-ce qu'un checkpointer et comment le configurer ?": [
        search("Qu'est-ce qu'un checkpointer et comment le configurer ?")
    ],
    "Explain streaming in detail, with code": [search("Explain streaming in detail, with code")],
    # A topic named only to set the context stays with the question it sets.
    "I use a checkpointer, and my app is slow. Why?": [
        search("I use a checkpointer, and my app is slow. Why?")
    ],
    # Pasted data beside a question (a key, a card, a connection string) is no part.
    "How does a checkpointer work? password=Hunter2x card 4242 4242 4242 4242": [
        search("How does a checkpointer work? password=Hunter2x card 4242 4242 4242 4242")
    ],
    "Explain streaming. Authorization: Bearer Zt0ken.99-xy postgres://app:pw1@db:5432/app": [
        search(
            "Explain streaming. Authorization: Bearer Zt0ken.99-xy postgres://app:pw1@db:5432/app"
        )
    ],
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
# Read by what it names: every topic (by name or alias, in English, Spanish, German and
# French) and every item with a price; a sentence that only sets the context is not searched.

Asked = tuple[Any, ...]
"""``("search", topic)`` or ``("checkout", item, total)``."""


def topic(name: str) -> Asked:
    return ("search", name)


def item(name: str, total: float) -> Asked:
    return ("checkout", name, total)


def asked(text: str) -> list[Asked]:
    """What the calls ask: each search by the topic it finds (its text if none), each buy."""
    out: list[Asked] = []
    for name, args in calls(text):
        if name == "search":
            out.append(("search", lookup(args["query"]) or args["query"]))
        else:
            out.append((name, args["item"], args["amount"]))
    return out


REPORTED: dict[str, list[Asked]] = {
    # A part vanished: the interrupts.
    "¿Cómo funcionan los checkpointers y las interrupciones en LangGraph?": [
        topic("checkpointer"),
        topic("interrupts"),
    ],
    # A sentence that only sets the context was searched ("Nothing found for ...").
    "I am building a support bot. It runs on one server. How does a checkpointer work?": [
        topic("checkpointer")
    ],
    # "I'd like X for $N" is a purchase, not a search.
    "I'd like a laptop for $300, and a mouse for $20": [
        item("a laptop", 300.0),
        item("a mouse", 20.0),
    ],
    # A quantity at a unit price: 3 x 4.50, not "3 coffees for 20".
    "buy 3 coffees for 4.50 each": [item("3 coffees", 13.5)],
    # Other joining words, two purchases in one sentence, a choice, German and French.
    "tell me about checkpointers as well as interrupts": [
        topic("checkpointer"),
        topic("interrupts"),
    ],
    "Explain checkpointers plus interrupts.": [topic("checkpointer"), topic("interrupts")],
    "Tell me about streaming; also subgraphs": [topic("streaming"), topic("subgraphs")],
    "What is a checkpointer? Then explain interrupts.": [
        topic("checkpointer"),
        topic("interrupts"),
    ],
    "checkpointer, then interrupts, then streaming": [
        topic("checkpointer"),
        topic("interrupts"),
        topic("streaming"),
    ],
    "buy a laptop for 300 plus a mouse for 20": [item("a laptop", 300.0), item("a mouse", 20.0)],
    "buy a laptop for 300 as well as a mouse for 20": [
        item("a laptop", 300.0),
        item("a mouse", 20.0),
    ],
    "Should I use a checkpointer or a store?": [topic("checkpointer"), topic("store")],
    "Wie funktionieren Checkpointer und Unterbrechungen?": [
        topic("checkpointer"),
        topic("interrupts"),
    ],
    "Comment fonctionnent les checkpointers et les interruptions ?": [
        topic("checkpointer"),
        topic("interrupts"),
    ],
    # A topic under another form of its word: "stream" is the page "streaming".
    "How do I stream tokens?": [topic("streaming")],
    "How are runs traced, and how do I stream tokens?": [
        topic("langsmith tracing"),
        topic("streaming"),
    ],
    "Which embedding model, and are the stored threads kept?": [
        topic("embeddings"),
        topic("store"),
        topic("threads"),
    ],
}

HELD_OUT: dict[str, list[Asked]] = {
    "Estoy creando un bot de soporte. ¿Cómo funciona un checkpointer?": [topic("checkpointer")],
    "Hola, ¿qué son los reducers y cómo se usan los subgrafos?": [
        topic("reducers"),
        topic("subgraphs"),
    ],
    "Quiero comprar un portátil por 300 y un ratón por 20": [
        item("un portátil", 300.0),
        item("un ratón", 20.0),
    ],
    "compra 2 cafés por 3,50 cada uno": [item("2 cafés", 7.0)],
    "We run LangGraph in production. How do interrupts and streaming work together?": [
        topic("interrupts"),
        topic("streaming"),
    ],
    "Could you explain the Send API as well as the Functional API?": [
        topic("send api"),
        topic("functional api"),
    ],
    "I'd like two monitors for 150 each and a desk lamp for $40": [
        item("two monitors", 300.0),
        item("a desk lamp", 40.0),
    ],
    "Ich möchte einen Laptop für 300 kaufen und eine Maus für 20": [
        item("einen Laptop", 300.0),
        item("eine Maus", 20.0),
    ],
    "Je voudrais une souris pour 20 et un clavier pour 45": [
        item("une souris", 20.0),
        item("un clavier", 45.0),
    ],
    "Ich baue einen Support-Bot. Wie funktioniert ein Checkpointer?": [topic("checkpointer")],
    "Je construis un bot. Comment marchent les sous-graphes et le streaming ?": [
        topic("subgraphs"),
        topic("streaming"),
    ],
    "Qu'est-ce qu'un checkpointer et qu'est-ce qu'une interruption ?": [
        topic("checkpointer"),
        topic("interrupts"),
    ],
    "What's the difference between short-term memory and the store?": [
        topic("short-term memory"),
        topic("store"),
    ],
    # One thing stays one: a follow-up that points back, or says two words in Spanish.
    "¿Qué es un checkpointer y cómo funciona?": [topic("checkpointer")],
    "Was ist ein Checkpointer und wie funktioniert er?": [topic("checkpointer")],
    "Qu'est-ce qu'un checkpointer et comment ça marche ?": [topic("checkpointer")],
    # Context that the question points back to stays with it.
    "My graph has a checkpointer. Why does it lose state?": [topic("checkpointer")],
    # A part that names nothing is still asked, never dropped.
    "What is a checkpointer and how long is shipping?": [
        topic("checkpointer"),
        ("search", "how long is shipping?"),
    ],
    # A message that only tells is still looked up, as before.
    "I am building a support bot.": [("search", "I am building a support bot.")],
    # A want whose price does not end it is no purchase.
    "I need a checkpointer for 2 graphs": [topic("checkpointer")],
    # More written apart: Spanish context, German and French joining words, a choice.
    "Necesito entender el streaming. ¿Y los subgrafos?": [topic("streaming"), topic("subgraphs")],
    "¿Debo usar un checkpointer o el store?": [topic("checkpointer"), topic("store")],
    "Erkläre Streaming sowie Subgraphen.": [topic("streaming"), topic("subgraphs")],
    "Explique-moi le streaming puis les interruptions.": [
        topic("streaming"),
        topic("interrupts"),
    ],
    "Our team uses LangGraph. We deploy to one server. Can you explain interrupts?": [
        topic("interrupts")
    ],
    "checkpointers vs stores?": [topic("checkpointer"), topic("store")],
    "What are reducers; how do subgraphs work; what is streaming?": [
        topic("reducers"),
        topic("subgraphs"),
        topic("streaming"),
    ],
    "I want 2 mice for $10 each plus a keyboard for 45": [
        item("2 mice", 20.0),
        item("a keyboard", 45.0),
    ],
    "Achète une souris pour 20 puis un clavier pour 45": [
        item("une souris", 20.0),
        item("un clavier", 45.0),
    ],
    "I'd like a coffee for $4.50; what is a checkpointer?": [
        item("a coffee", 4.5),
        topic("checkpointer"),
    ],
    # The "which" of a choice points back to it: not a search of its own.
    "Interrupts or breakpoints, which should I use?": [topic("interrupts")],
    "¿Checkpointer o store, cuál debo usar?": [topic("checkpointer"), topic("store")],
    "Checkpointer ou store, lequel dois-je utiliser ?": [topic("checkpointer"), topic("store")],
}


@pytest.mark.parametrize("question", REPORTED, ids=str)
def test_every_part_a_person_asks_is_read(question: str) -> None:
    assert asked(question) == REPORTED[question]


@pytest.mark.parametrize("question", HELD_OUT, ids=str)
def test_phrasings_written_apart_from_the_rules_are_read(question: str) -> None:
    assert asked(question) == HELD_OUT[question]


def expected_lines(parts: list[Asked]) -> list[str]:
    """What a hard stop's answer shows for each part: the page's title or the receipt's row."""
    lines = []
    for part in parts:
        if part[0] == "search":
            lines.append(f"# {knowledge_base()[part[1]]['title']}\n")
        else:
            lines.append(rf"| {part[1]} | \${part[2]:,.2f} |")
    return lines


ANSWERED = {
    question: parts
    for question, parts in {**REPORTED, **HELD_OUT}.items()
    if all(part[0] == "checkout" or part[1] in knowledge_base() for part in parts)
}


@pytest.mark.parametrize("question", ANSWERED, ids=str)
async def test_the_answer_holds_every_part_in_order(graph_name: str, question: str) -> None:
    observed = await run(build(graph_name), question, {"force_outcome": "success"})
    assert observed.decision is not None and observed.decision["rule"] == "completed"
    answer = observed.answer.content
    assert isinstance(answer, str)
    assert "Nothing found" not in answer
    assert in_order(answer, *expected_lines(ANSWERED[question]))


NOT_FOUND = {
    "What is a checkpointer and how long is shipping?": (
        "# Checkpointers\n",
        "Nothing found for “how long is shipping?”",
    ),
    "How long is shipping, and how do interrupts work?": (
        "Nothing found for “How long is shipping”",
        "# Interrupts\n",
    ),
    # A clause the knowledge base lacks beside one it has, in each shape a sequence or a
    # list is written: the reported "first ..., then ..." and a new shape for each like it.
    "First explain sharding, then checkpointers.": (
        "Nothing found for “First explain sharding”",
        "# Checkpointers\n",
    ),
    "first sharding, then checkpointers": (
        "Nothing found for “first sharding”",
        "# Checkpointers\n",
    ),
    "Checkpointers first, then sharding": ("# Checkpointers\n", "Nothing found for “sharding”"),
    "Tell me about sharding and then about interrupts": (
        "Nothing found for “Tell me about sharding”",
        "# Interrupts\n",
    ),
    "Explain sharding and checkpointers": (
        "Nothing found for “Explain sharding”",
        "# Checkpointers\n",
    ),
    "After sharding, explain the store.": ("Nothing found for “After sharding”", "# Store"),
    "Before streaming, explain sharding": ("# Streaming\n", "Nothing found for “explain sharding”"),
    "Before I look at sharding, what is a reducer?": (
        "Nothing found for “Before I look at sharding”",
        "# Reducers",
    ),
    "sharding, after that checkpointers": ("Nothing found for “sharding”", "# Checkpointers\n"),
    "Explain subgraphs. Also sharding.": ("# Subgraphs\n", "Nothing found for “sharding.”"),
    "Explain sharding. Then streaming.": ("Nothing found for “Explain sharding.”", "# Streaming\n"),
    "checkpointers followed by sharding": ("# Checkpointers\n", "Nothing found for “sharding”"),
    "Sharding along with interrupts?": ("Nothing found for “Sharding”", "# Interrupts\n"),
    "Explain the store together with sharding": ("# Store", "Nothing found for “sharding”"),
    "sharding in addition to subgraphs": ("Nothing found for “sharding”", "# Subgraphs\n"),
    "Explain sharding besides reducers": ("Nothing found for “Explain sharding”", "# Reducers"),
    "Zuerst Sharding, dann Checkpointer.": (
        "Nothing found for “Zuerst Sharding”",
        "# Checkpointers\n",
    ),
    "D'abord le sharding, puis les interruptions.": (
        "Nothing found for “D'abord le sharding”",
        "# Interrupts\n",
    ),
    "Explique les checkpointers, puis le sharding": (
        "# Checkpointers\n",
        "Nothing found for “le sharding”",
    ),
    "Primero el sharding, luego los subgrafos.": (
        "Nothing found for “Primero el sharding”",
        "# Subgraphs\n",
    ),
}


@pytest.mark.parametrize("question", NOT_FOUND, ids=str)
async def test_a_part_nothing_answers_is_named_in_its_place(graph_name: str, question: str) -> None:
    observed = await run(build(graph_name), question, {"force_outcome": "success"})
    answer = observed.answer.content
    assert isinstance(answer, str)
    assert in_order(answer, *NOT_FOUND[question])


@pytest.mark.parametrize("question", NOT_FOUND, ids=str)
def test_every_clause_that_names_something_is_its_own_search(question: str) -> None:
    """One search per part: the one that names a topic finds it, the other finds none."""
    found = [lookup(args["query"]) for name, args in calls(question) if name == "search"]
    assert len(found) == len(NOT_FOUND[question]) == 2
    assert [topic is None for topic in found] == [
        piece.startswith("Nothing found") for piece in NOT_FOUND[question]
    ]


def test_a_choice_between_two_purchases_is_asked_about() -> None:
    answer = unclear("buy a laptop for 300 or a mouse for 20")
    assert "“or a mouse for 20”" in answer


def test_a_unit_price_is_shown_with_its_count() -> None:
    answer = unclear("buy 3 coffees for 4.50 each and a mouse")
    assert r"1. Understood: buy “3 coffees” for \$13.50 (3 × \$4.50)." in answer


@pytest.mark.parametrize(
    ("question", "says"),
    [
        ("buy coffees for 4.50 each", "gives a price for each item but no count I can read"),
        ("buy coffees for 4.50 each", "“buy 3 coffees for 4.50 each”"),
        ("buy a laptop for 1.200", "has no price I can read"),  # a thousand, or 1.2?
        ("buy a laptop for 1.200", "for example “buy a laptop for 20”"),
    ],
)
def test_a_price_it_could_misread_is_asked_about(question: str, says: str) -> None:
    assert says in unclear(question)


@pytest.mark.parametrize(
    ("word", "value"),
    [
        ("300", 300.0),
        ("$1,200", 1200.0),
        ("$1,250.50", 1250.5),
        ("4.50", 4.5),
        ("4,50", 4.5),  # a decimal comma
        ("1.200", None),  # a thousands dot or three decimals: not guessed
        ("1,2,3", None),
        ("12,3456", None),
        ("x1", None),
    ],
)
def test_amounts(word: str, value: float | None) -> None:
    assert amount(word) == value


async def test_a_question_with_no_count_runs_no_tool(graph_name: str) -> None:
    observed = await run(build(graph_name), "buy coffees for 4.50 each", {})
    assert not [m for m in observed.messages if isinstance(m, ToolMessage)]
    answer = observed.answer.content
    assert isinstance(answer, str) and answer.startswith(UNCLEAR_TITLE)


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


@pytest.mark.parametrize(
    "text",
    [
        "I use a checkpointer, and my app is slow. Why?",
        "Hola, gracias. I want the store ? it",
        "We run it ¿qué es? my store, thanks , we need x",
    ],
)
def test_a_span_tells_as_its_part_would(text: str) -> None:
    """The bisecting check rule 5 uses agrees with the part's own, on every span."""
    piece = question._Piece(text, topic_index())
    for low in range(len(piece.words)):
        for high in range(low, len(piece.words)):
            assert piece.tells(low, high) == question._tells(
                piece, low, high, piece.slice(low, high)
            ), (low, high)


# ---------------------------------------------------------------------------------------
# Money in another currency (#63): read with its currency, named, never charged as dollars.


@pytest.mark.parametrize(
    ("question", "value", "currency"),
    [
        ("achète une chaise pour 45 euros", 45.0, "EUR"),
        ("buy a chair for €45", 45.0, "EUR"),
        ("buy a chair for 45€", 45.0, "EUR"),
        ("buy a chair for EUR 45", 45.0, "EUR"),
        ("buy a chair for £4,50", 4.5, "GBP"),
        ("kaufe einen Stuhl für 45 Pfund", 45.0, "GBP"),
        ("buy 3 coffees for 4.50 euros each", 13.5, "EUR"),
        ("achète une chaise pour 45", 45.0, "USD"),
        ("compra una silla por 45 dólares", 45.0, "USD"),  # another language, dollars
        ("buy a chair for $45", 45.0, "USD"),
    ],
)
def test_a_price_is_read_with_its_currency(question: str, value: float, currency: str) -> None:
    (part,) = read_question(question, ["checkout", "search"]).parts
    assert (part.kind, part.problem, part.amount, part.currency) == (
        "purchase",
        None,
        value,
        currency,
    )
    (call,) = reply(question).tool_calls
    assert call["args"].get("currency", "USD") == currency  # dollars are the default


async def test_a_price_in_euros_is_named_and_not_charged(graph_name: str) -> None:
    context = {"force_outcome": "success", "spend_cap": 10}  # the cap is in dollars: not read
    observed = await run(build(graph_name), "achète une chaise pour 45 euros", context)
    assert observed.decision is not None and observed.decision["rule"] == "fatal"
    assert observed.answer.content == (
        "**Not purchased: une chaise (45.00 euros)**\n\n"
        + CURRENCY_MESSAGE.format(currency="euros")
    )
    (result,) = [m for m in observed.messages if isinstance(m, ToolMessage)]
    assert result.artifact["cause"] == "currency" and "order_id" not in result.artifact


async def test_without_a_currency_the_same_words_charge_dollars(graph_name: str) -> None:
    observed = await run(
        build(graph_name), "achète une chaise pour 45", {"force_outcome": "success"}
    )
    assert observed.decision is not None and observed.decision["rule"] == "completed"
    assert "| une chaise | \\$45.00 |" in str(observed.answer.content)


def test_a_code_the_shop_has_no_name_for_is_named_as_given() -> None:
    args = {"item": "a chair", "amount": 45.0, "currency": "SEK", "messages": []}
    result = checkout.invoke({"type": "tool_call", "name": "checkout", "id": "c1", "args": args})
    text, artifact = str(result.content), result.artifact
    assert text.startswith("**Not purchased: a chair (45.00 SEK)**")
    assert CURRENCY_MESSAGE.format(currency="SEK") in text
    assert artifact["reason"] == "fatal" and artifact["currency"] == "SEK"


def test_a_refusal_example_uses_the_persons_own_amount() -> None:
    assert "for example “buy a chair for 45”" in unclear("buy a chair for 45 bananas")
    assert "for example “buy 3 coffees for 4.50 each”" in unclear("buy coffees for 4.50 each")
    understood = unclear("buy a chair for 45 euros and a mouse")
    assert "1. Understood: buy “a chair” for 45.00 euros." in understood
