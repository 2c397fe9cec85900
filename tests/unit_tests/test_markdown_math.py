"""Every text the project writes for a person, rendered as Agent Chat UI's page renders it.

The page renders Markdown with remark-math, where the text between two ``$`` is a formula:
"for $900.00; the limit is $500.00" shows as "for 900.00;*thelimitis*500.00". markdown-it's
CommonMark preset with ``dollarmath`` (``$...$`` inline, ``$$...$$`` display math) is the
closest offline reading of it. Without GFM tables a receipt's rows are one paragraph, the
strictest reading: an amount must not pair with the next row's.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin

from agent.models import OfflineChatModel
from agent.tools.checkout import receipt
from agent.tools.markdown import escape_math, excerpt, label, plain
from client.cli import describe_approval
from client.scenarios import ASK
from client.terminal import plain_text
from tests.support.graph_runs import build, run

PAGE = MarkdownIt("commonmark").use(dollarmath_plugin)
UNESCAPED_DESCRIPTION = (
    "Approve this purchase above the spending limit? **a standing desk** for $900.00; "
    "the limit is $500.00."
)


def tokens(markdown: str) -> list[Token]:
    """Every token of the parsed text, inline children included."""
    found: list[Token] = []
    stack = list(reversed(PAGE.parse(markdown)))
    while stack:
        token = stack.pop()
        found.append(token)
        stack.extend(reversed(token.children or []))
    return found


def shown(markdown: str) -> str:
    """Return the visible text of ``markdown`` as the page renders it; fail on any math."""
    math = [token.type for token in tokens(markdown) if token.type.startswith("math")]
    rendered = PAGE.render(markdown)
    assert not math, f"rendered as math ({math}): {markdown!r}"
    assert 'class="math' not in rendered
    return html.unescape(re.sub(r"<[^>]*>", "", rendered))


def assert_reads_plainly(markdown: str, *amounts: str) -> str:
    """Assert ``markdown`` renders no math and shows each amount with a plain ``$``."""
    visible = shown(markdown)
    for amount in amounts:
        assert amount in visible, f"{amount!r} not shown in {visible!r}"
    assert "\\$" not in visible  # no escape left showing
    return visible


def test_the_check_fails_on_an_unescaped_text() -> None:
    with pytest.raises(AssertionError, match="math"):
        assert_reads_plainly(UNESCAPED_DESCRIPTION, "$900.00", "$500.00")
    table = "| Item | Amount |\n| :--- | ---: |\n| a desk | $900.00 |\n| **Total** | **$900.00** |"
    with pytest.raises(AssertionError, match="math"):
        assert_reads_plainly(table, "$900.00")
    with pytest.raises(AssertionError, match="math"):
        assert_reads_plainly("$$900$$", "$900")
    assert_reads_plainly(escape_math(UNESCAPED_DESCRIPTION), "$900.00", "$500.00")


def test_escape_math_escapes_each_dollar_once() -> None:
    assert escape_math("for $9; the limit is $5") == r"for \$9; the limit is \$5"
    assert escape_math(r"already \$5") == r"already \$5"  # one escape, not two
    assert escape_math(r"a backslash \\$5") == r"a backslash \\\$5"  # \\ escapes the backslash
    assert escape_math(r"\\\$5") == r"\\\$5"
    assert escape_math("$$") == r"\$\$"
    assert escape_math("no dollar") == "no dollar"
    for text in ("$5 and $6", r"\$5 and $6", r"\\$", "$", "", "a $ b $$ c"):
        once = escape_math(text)
        assert escape_math(once) == once
        shown(once)


def test_caller_text_cannot_open_math() -> None:
    assert plain("a $5 and $6 thing") == r"a \$5 and \$6 thing"
    assert excerpt("costs $5 and $6") == r"costs \$5 and \$6"
    assert assert_reads_plainly(label("Not purchased: a $5 and $6 gift (x)"), "$5", "$6")
    # A caller's own backslash before a dollar shows as typed.
    assert shown(plain(r"typed \$5 and $6")).strip() == r"typed \$5 and $6"
    assert escape_math(plain("$5 and $6")) == plain("$5 and $6")


def test_a_receipt_reads_plainly() -> None:
    text = receipt("a $5 and $6 gift card", 900, "ORD-1")
    visible = assert_reads_plainly(text, "$900.00", "a $5 and $6 gift card")
    assert visible.count("$900.00") == 2  # the row and the total


async def test_the_answers_read_plainly(graph_name: str) -> None:
    context: dict[str, Any] = {"spend_cap": 1000, "force_outcome": "success"}
    bought = await run(build(graph_name), "buy a standing desk for 900", context)
    assert bought.answer.text.startswith("# Thank you for your order")
    assert_reads_plainly(bought.answer.text, "$900.00")

    refused = await run(build(graph_name), "buy a standing desk for 900", {"spend_cap": 500})
    assert refused.decision is not None and refused.decision["rule"] == "policy_block"
    assert_reads_plainly(refused.answer.text, "Not purchased: a standing desk ($900.00)")

    # The refusal and the mouse's not-done line in one answer: two amounts, one paragraph apart.
    context = {"spend_cap": 500, "force_outcome": ["success", "transient"]}
    undone = await run(build(graph_name), "buy a laptop for 900; buy a mouse for 20", context)
    assert undone.decision is not None and undone.decision["rule"] == "retry_budget"
    assert_reads_plainly(
        undone.answer.text,
        "Not purchased: a laptop ($900.00)",
        "Not purchased: a mouse ($20.00): the payment service timed out",
    )

    found = await run(build(graph_name), "what costs $5 and $6", {"force_outcome": "success"})
    assert_reads_plainly(found.answer.text, "Nothing found for “what costs $5 and $6”")


async def test_the_approval_request_and_a_rejection_read_plainly(graph_name: str) -> None:
    reject = {"type": "reject", "message": "over $5 and $6, see *policy*"}
    observed = await run(build(graph_name), "buy a standing desk for 900", ASK, resume=[reject])
    [request] = observed.interrupts
    [action] = request["action_requests"]
    assert_reads_plainly(
        action["description"], "a standing desk for $900.00; the limit is $500.00."
    )
    assert observed.decision is not None and observed.decision["approval"] == "rejected"
    assert_reads_plainly(
        observed.answer.text,
        "Not purchased: a standing desk ($900.00)",
        "Reason given: over $5 and $6, see *policy*",
    )


def checkout_call(call_id: str, item: str, amount: float) -> Any:
    args = {"item": item, "amount": amount}
    return {"name": "checkout", "args": args, "id": call_id, "type": "tool_call"}


async def test_the_offline_model_answers_read_plainly(graph_name: str) -> None:
    # It writes the answer itself under "never": each declined card, by its content.
    context = {"stop_mode": "never", "spend_cap": 1000, "force_outcome": "fatal"}
    observed = await run(build(graph_name), "buy a laptop for 900; buy a mouse for 20", context)
    answer = observed.answer.text
    assert answer.startswith("Here is what I found. ")
    assert_reads_plainly(answer, "a laptop ($900.00)", "a mouse ($20.00)")

    model = OfflineChatModel()
    asked = model.invoke([HumanMessage("buy a desk for $900 if it is under $500")]).text
    assert asked.startswith("I could not look that up with a tool.")
    assert_reads_plainly(asked, "buy a desk for $900 if it is under $500")

    not_done = escape_math(f"{label('Not purchased: a mouse ($20.00)')}: timed out")
    history = [
        HumanMessage("buy a mouse for 20"),
        AIMessage("", tool_calls=[checkout_call("c1", "a mouse", 20)]),
        ToolMessage(
            "timed out",
            tool_call_id="c1",
            name="checkout",
            artifact={"stop": False, "reason": "transient", "not_done": not_done},
        ),
    ]
    relayed = model.invoke(history).text
    assert relayed.count("\\$") == 1  # the tool's escape, kept once
    assert_reads_plainly(relayed, "Not purchased: a mouse ($20.00)")


def test_the_terminal_shows_plain_dollar_signs() -> None:
    text = "**a standing desk** for $900.00; the limit is $500.00"
    assert plain_text(escape_math(text)) == text
    assert plain_text("a \\* and `code \\*`") == "a * and `code \\*`"
    request = {
        "action_requests": [{"name": "checkout", "description": escape_math(text)}],
        "review_configs": [{"action_name": "checkout", "allowed_decisions": ["approve"]}],
    }
    assert describe_approval(request).splitlines()[1] == f"  1. checkout (approve): {text}"
