"""Invalid artifacts, raising tools and the spend cap, through both graphs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool

from agent.policy import SPEND_CAP_MESSAGE
from agent.tools import TOOLS, topics
from agent.tools.checkout import receipt
from agent.tools.search import knowledge_base, lookup, render_page
from tests.support.extra_tools import SECRET, artifact_tool, plain, raiser
from tests.unit_tests.conftest import build, run


@pytest.mark.parametrize(
    "artifact",
    [
        {"stop": "false", "reason": "completed"},
        {"stop": True},
        {"stop": True, "reason": "finished"},
        {"reason": "completed"},
    ],
    ids=["stop-string", "no-reason", "unknown-reason", "no-stop"],
)
async def test_invalid_artifact_goes_back_to_the_model(
    graph_name: str, artifact: Any, caplog: pytest.LogCaptureFixture
) -> None:
    graph = build(graph_name, [*TOOLS, artifact_tool("weird", artifact)])
    observed = await run(graph, "weird: anything")
    assert observed.decision is not None
    assert observed.decision["rule"] == "invalid_artifact"
    assert observed.decision["action"] == "continue"
    assert observed.model_calls == 2
    assert SECRET not in caplog.text
    assert "invalid artifact from tool 'weird'" in caplog.text


@pytest.mark.parametrize(
    "artifact", ["stop", ["a", "document"], {"exit_code": 0}], ids=["string", "list", "own-dict"]
)
async def test_a_tools_own_artifact_is_no_contract_and_goes_back_to_the_model(
    graph_name: str, artifact: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # A retriever's documents or a shell's exit code: not the contract, a plain input.
    graph = build(graph_name, [*TOOLS, artifact_tool("weird", artifact)])
    observed = await run(graph, "weird: anything")
    assert observed.decision is not None and observed.decision["rule"] == "no_artifact"
    assert observed.model_calls == 2
    assert "invalid artifact" not in caplog.text


async def test_missing_artifact_goes_back_to_the_model(graph_name: str) -> None:
    observed = await run(build(graph_name, [*TOOLS, plain]), "plain: x")
    assert observed.decision is not None and observed.decision["rule"] == "no_artifact"
    assert observed.model_calls == 2


async def test_raising_tool_never_ends_as_success(graph_name: str) -> None:
    observed = await run(build(graph_name, [*TOOLS, raiser]), "raiser: x")
    assert observed.decision is not None
    assert (observed.decision["action"], observed.decision["rule"]) == ("continue", "tool_error")
    tool_message = next(m for m in observed.messages if isinstance(m, ToolMessage))
    assert tool_message.status == "error"
    assert SECRET not in tool_message.text  # the exception's text is not echoed
    assert "RuntimeError" in tool_message.text
    assert observed.model_calls == 2


async def test_spend_cap_runs_before_the_tool(graph_name: str) -> None:
    calls: list[float] = []

    @tool("checkout", response_format="content_and_artifact")
    def spy_checkout(item: str, amount: float) -> tuple[str, dict[str, Any]]:
        """Record the call; a real checkout would charge here."""
        calls.append(amount)
        return "charged", {"stop": True, "reason": "completed"}

    graph = build(graph_name, [TOOLS[0], spy_checkout])
    blocked = await run(graph, "buy a boat for 9000", {"spend_cap": 100}, thread_id="a")
    assert calls == []
    assert blocked.decision is not None and blocked.decision["rule"] == "policy_block"
    refusal = f"**Not purchased: a boat (\\$9,000.00)**\n\n{SPEND_CAP_MESSAGE}"
    assert blocked.answer.content == refusal
    allowed = await run(graph, "buy a boat for 90", {"spend_cap": 100}, thread_id="b")
    assert calls == [90.0]
    assert allowed.decision is not None and allowed.decision["rule"] == "completed"


async def test_policy_block_stops_even_in_never_and_polish(graph_name: str) -> None:
    for mode in ("never", "polish"):
        observed = await run(
            build(graph_name), "buy a car for 20000", {"stop_mode": mode}, thread_id=mode
        )
        assert observed.decision is not None and observed.decision["rule"] == "policy_block"
        assert observed.model_calls == 1
        assert isinstance(observed.answer.content, str)
        assert observed.answer.content.endswith(f"\n\n{SPEND_CAP_MESSAGE}")


def test_knowledge_base_shape() -> None:
    topics = knowledge_base()
    assert len(topics) >= 30
    for name in ("checkpointer", "interrupts", "streaming", "middleware", "subgraphs", "store"):
        assert name in topics
    assert lookup("Tell me about STREAMING please") == "streaming"
    assert lookup("quantum pastry recipes") is None


@pytest.mark.parametrize(
    ("query", "topic"),
    [
        ("las interrupciones en LangGraph?", "interrupts"),  # an alias, in Spanish
        ("Wie funktionieren Unterbrechungen?", "interrupts"),
        ("les points de contrôle", "checkpointer"),
        ("les points de controle", "checkpointer"),  # accents do not matter
        ("How does an interrupt work?", "interrupts"),  # the singular names it too
        ("Is InMemoryStore persistent?", "store"),  # a camel-case part of a word
        ("a vector store or a checkpointer", "vector indexes"),  # the first, the longest
        ("What is the recommended way to restore a graph?", None),  # inside words: no
    ],
)
def test_lookup_reads_names_and_aliases_at_word_starts(query: str, topic: str | None) -> None:
    assert lookup(query) == topic


@pytest.mark.parametrize(
    ("query", "topic"),
    [
        # A verb, a plural, -ing and -ed: each form of a topic's word names it.
        ("How do I stream tokens?", "streaming"),
        ("Can a graph stream its updates?", "streaming"),
        ("The model's output streams too slowly", "streaming"),
        ("only the final answer is streamed", "streaming"),
        ("Why are my runs not traced?", "langsmith tracing"),
        ("How do I trace a run?", "langsmith tracing"),
        ("Which embedding model do you suggest?", "embeddings"),
        ("Is the state stored between runs?", "store"),
        ("What are text splitters for?", "text splitters"),  # a plural of a name of two words
        ("two tool calls in one turn", "tool calling"),
        ("human in the loop", "human-in-the-loop"),  # its words, apart
        ("How do stream modes differ?", "streaming"),
        ("a streaming run, a streamed run", "streaming"),
        # A form is read only at a word's end, and two words of a name follow each other.
        ("What is the recommended way to restore a graph?", None),
        ("a textured splitter", None),
        ("text. Splitters", None),
    ],
)
def test_lookup_reads_a_topic_by_its_common_word_forms(query: str, topic: str | None) -> None:
    assert lookup(query) == topic


@pytest.mark.parametrize(
    ("words", "stem"),
    [
        (("stream", "streams", "streamed", "streaming"), "stream"),
        (("trace", "traces", "traced", "tracing"), "trac"),
        (("embed", "embeds", "embedded", "embedding", "embeddings"), "embed"),
        (("store", "stores", "stored", "storing"), "stor"),
        (("index", "indexes"), "index"),
        (("query", "queries"), "query"),
        (("interrupt", "interrupts", "interrupted", "interrupting"), "interrupt"),
    ],
)
def test_a_words_forms_share_one_stem(words: tuple[str, ...], stem: str) -> None:
    assert {topics.stem(word) for word in words} == {stem}


@pytest.mark.parametrize("word", ["is", "uses", "status", "class", "thing", "bus", "red"])
def test_a_short_or_unsuffixed_word_keeps_its_form(word: str) -> None:
    assert topics.stem(word) == word


def test_every_alias_names_one_topic() -> None:
    names: dict[str, str] = {}
    for topic, page in knowledge_base().items():
        for alias in page.get("aliases", []):
            assert alias == alias.lower() and alias.strip() == alias, alias
            assert names.setdefault(alias, topic) == topic, alias
            assert lookup(alias) == topic, alias


async def test_checkout_receipt_is_customer_ready_markdown(graph_name: str) -> None:
    observed = await run(build(graph_name), "buy a desk lamp for 40", {"force_outcome": "success"})
    receipt = observed.answer.content
    assert isinstance(receipt, str)
    assert receipt.startswith("# Thank you for your order\n")
    checkout_message = observed.messages[-2]
    assert isinstance(checkout_message, ToolMessage)
    order_id = checkout_message.artifact["order_id"]
    assert f"Order **{order_id}**" in receipt
    assert r"| a desk lamp | \$40.00 |" in receipt  # \$: math-rendering Markdown shows $
    assert r"| **Total charged** | **\$40.00** |" in receipt
    assert "<" not in receipt  # no HTML: most chat UIs print it raw


def test_search_page_is_markdown_not_json() -> None:
    page = render_page(knowledge_base()["checkpointer"])
    with pytest.raises(ValueError):
        json.loads(page)
    lines = page.splitlines()
    assert lines[0] == "# Checkpointers"
    assert "## What a checkpointer does" in lines
    assert "## Available implementations" in lines
    fence = lines.index("```python")
    assert lines[fence + 1] == "from langgraph.checkpoint.memory import InMemorySaver"
    assert "```" in lines[fence + 2 :]
    assert "\\n" not in page  # real newlines in the code sample, no escapes
    assert "- interrupts" in lines  # related topics as a list


def test_item_names_cannot_break_the_receipt_table() -> None:
    text = receipt("a | pipe <b>bold</b>\nline", 5, "ORD-1")
    row = next(line for line in text.splitlines() if line.startswith("| a"))
    assert row == r"| a \| pipe \<b\>bold\</b\> line | \$5.00 |"


@pytest.mark.parametrize(
    ("query", "forced", "first_line"),
    [
        ("what is a flux capacitor", "success", "**Nothing found for “what is a flux capacitor”**"),
        ("store", "fatal", "**Could not search for “store”**"),
        (
            "# **x** " + "y" * 200,
            "fatal",
            "**Could not search for “\\# \\*\\*x\\*\\* " + "y" * 49 + "…**",
        ),
    ],
)
async def test_a_failure_names_the_part_it_answers(
    query: str, forced: str, first_line: str
) -> None:
    observed = await run(build("legacy"), query, {"force_outcome": forced})
    assert observed.decision is not None and observed.decision["rule"] == "fatal"
    assert isinstance(observed.answer.content, str)
    assert observed.answer.content.splitlines()[0] == first_line
