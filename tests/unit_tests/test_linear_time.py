"""No regex or loop over caller text is quadratic: the worst input for each, at two sizes.

Each input is built at 31.25 KB and at 1 MB, 32x the size, and each call is timed at both.
Linear work grows about 32x; a quadratic scan grows about 1024x, and at 1 MB it takes
minutes (the old ``buy ... for`` pattern blocked the server for 22 s on 96 KB). A call
fails when its time grows more than 181x (32 ** 1.5, halfway between the two on a log
scale). Linear calls measured up to 2x their size ratio on this 2-core machine (a 1 MB
text leaves the caches that the small one fits in), so the sizes are far apart: 4x apart,
a linear call came to 8.6x, as fast as a quadratic one at 3x apart.

The judgement is a ratio, not a bound in seconds, and the times are the thread's CPU time,
so a slow or busy machine does not make it flaky. A call whose 1 MB time is under the
noise floor passes, since no quadratic scan of 1 MB is that fast. The small input is timed
as the best of a few runs. Noise only adds time, so one run of the big input within the
bound settles it; a ratio over the bound is measured again, and fails if the big input's
best run is still over.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from agent.context import Context
from agent.models import OfflineChatModel, parse_buy
from agent.question import read_question
from agent.tools import TOOLS
from agent.tools.markdown import escape_math, label
from agent.tools.search import knowledge_base, lookup
from agent.tracing.allowlist import (
    is_sensitive_key,
    looks_secret,
    sanitize_artifact,
    scrub_metadata,
)
from agent.tracing.masking import mask_secrets
from agent.tracing.redaction import mask_payload_secrets, redact, sanitize_artifacts
from client.terminal import plain_text

T = TypeVar("T")

BIG = 1_000_000
SMALL = BIG // 32
GROWTH_BOUND = (BIG / SMALL) ** 1.5  # 181: linear grows ~32x, quadratic ~1024x
NOISE_FLOOR_SECONDS = 0.02  # a 1 MB call this fast is linear, whatever the ratio says
RUNS = 3  # best of: the fastest run is the one no pause of the machine got into

Text = Callable[[int], str]


def rep(unit: str, tail: str = "", head: str = "") -> Text:
    """``head``, then ``unit`` repeated to the size, then ``tail``."""
    return lambda size: head + unit * (size // len(unit)) + tail


def timed(call: Callable[[], Any]) -> float:
    """One run of ``call``: this thread's CPU seconds, with the garbage collector held off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.thread_time()
        call()
        return time.thread_time() - start
    finally:
        if enabled:
            gc.enable()


def growth_ratio(call: Callable[[T], Any], make: Callable[[int], T]) -> tuple[float, str]:
    """How many times longer ``call`` takes on ``make(BIG)`` than on ``make(SMALL)``.

    With what was measured, for a failure message. A big time under the noise floor
    counts as ratio 1.
    """
    small, big = make(SMALL), make(BIG)
    small_time = min(timed(lambda: call(small)) for _ in range(RUNS))
    big_time = float("inf")
    ratio = float("inf")
    for _ in range(RUNS):
        big_time = min(big_time, timed(lambda: call(big)))
        if big_time < NOISE_FLOOR_SECONDS:
            return 1.0, f"{big_time * 1000:.1f} ms at {BIG:,} chars"
        ratio = big_time / max(small_time, 1e-9)
        if ratio < GROWTH_BOUND:
            break
    return ratio, (
        f"{BIG // SMALL}x the input took {ratio:.0f}x the time "
        f"({small_time * 1000:.2f} ms at {SMALL:,} chars, {big_time * 1000:.1f} ms at {BIG:,})"
    )


def assert_linear(call: Callable[[T], Any], make: Callable[[int], T]) -> None:
    ratio, measured = growth_ratio(call, make)
    assert ratio < GROWTH_BOUND, measured


# Each input defeats one pattern: a run that never closes, or a prefix repeated so that a
# backtracking engine restarts its scan at every repetition.
BUY_INPUTS = {
    "buy-repeated": rep("buy "),
    "buy-for-no-amount": rep("buy for "),
    "buy-then-spaces": rep(" ", "for", head="buy x"),
    "buy-long-amount": rep("9", head="buy x for "),
    "buy-commas": rep(",", head="buy x for 1"),
}

SECRET_INPUTS = {
    "letters": rep("a"),
    "letters-then-at": rep("a", "@"),
    "dotted": rep("a."),
    "at-runs": rep("a@"),
    "at-then-dots": rep("a.", head="@"),
    "url-userinfo": rep("://a:"),
    "scheme-letters": rep("a", "://"),
    "jwt-headers": rep("eyJ-"),
    "jwt-headers-dot": rep("-eyJ", "."),
    "jwt-segments": rep("eyJaaaaa."),
    "pem-begin": rep("-----BEGIN"),
    "pem-letters": rep("A", head="-----BEGIN "),
    "spaces": rep(" ", "x"),
    "digits": rep("1 "),
    "ssn-like": rep("123-45-"),
    "bearer": rep(" ", head="Bearer"),
    "key-prefixes": rep("sk-"),
    # langsmith's DEFAULT_SECRET_RULES, as looks_secret uses them
    "header-spaces": rep(" ", head="authorization"),
    "header-colon-spaces": rep(" ", head="x-api-key:"),
    "headers-repeated": rep("authorization="),
    "aws-prefixes": rep("AKIA"),
    "stripe-prefixes": rep("sk_live_"),
    "stripe-no-boundary": rep("a", "_", head="sk_live_"),
    "langsmith-prefixes": rep("lsv2_pt_"),
    "github-prefixes": rep("ghp_"),
    "sendgrid-dots": rep("SG."),
}


@pytest.mark.parametrize("text", BUY_INPUTS.values(), ids=BUY_INPUTS.keys())
def test_parse_buy_is_linear(text: Text) -> None:
    assert_linear(parse_buy, text)


@pytest.mark.parametrize("value", SECRET_INPUTS.values(), ids=SECRET_INPUTS.keys())
def test_looks_secret_is_linear(value: Text) -> None:
    assert_linear(looks_secret, value)
    assert_linear(lambda v: scrub_metadata({"note": v}), value)


MASK_INPUTS = {
    **SECRET_INPUTS,
    "card-groups": rep("4242 "),
    "card-dashes": rep("4242-"),
    "digits-run": rep("1"),
    "amex-like": rep("3782 822463 "),
    "jwt-chain": rep("eyJaaaaa.eyJbbbbb"),
    "names": rep("password"),
    "names-equals": rep("password="),
    "names-quotes": rep("token:'"),
    "url-passwords": rep("://a:b"),
    "url-no-at": rep("b", head="://a:"),
    "bearers": rep("Bearer "),
    "pem-begins": rep("-----BEGIN PRIVATE KEY-----"),
    "pem-unclosed": rep("A", head="-----BEGIN PRIVATE KEY-----"),
    "pem-end-unclosed": rep("-----END ", head="-----BEGIN PRIVATE KEY-----"),
    "all-masked": rep("gsk_abcdefgh "),
}


@pytest.mark.parametrize("value", MASK_INPUTS.values(), ids=MASK_INPUTS.keys())
def test_masking_secrets_is_linear(value: Text) -> None:
    assert_linear(mask_secrets, value)
    assert_linear(lambda v: mask_payload_secrets({"messages": [HumanMessage(v)]}), value)


@pytest.mark.parametrize(
    "key", [rep("A"), rep("Aa"), rep("a1"), rep("_")], ids=["A", "Aa", "a1", "_"]
)
def test_sensitive_key_check_is_linear(key: Text) -> None:
    assert_linear(is_sensitive_key, key)
    note = rep("a@")
    assert_linear(lambda k: sanitize_artifact({k: 1, "note": note(len(k))}), key)


# Each defeats one step of reading a question into parts (agent/question.py): words to
# cut at, lone marks, prices, back references, topic names and aliases, lines just short
# enough to be cut word by word (by topic, or into sentences that only tell), and parts past
# the cap.
PART_INPUTS = {
    "words": rep("a "),
    "connectives": rep("and "),
    "commas": rep("a, "),
    "lone-marks": rep(" ,"),
    "sentences": rep("a. "),
    "also-runs": rep("a, and also "),
    "purchases-joined": rep("buy a for 1 and "),
    "prices": rep("for 1 "),
    "buy-then-prices": rep("x for 1 ", head="buy "),
    "questions-joined": rep("what is x and "),
    "back-references": rep("what it and "),
    "topics-joined": rep("store and "),
    "topic-then-words": rep(" and x", head="store"),
    "topic-pairs": rep("checkpointer, "),
    "shifting-case": rep("\u0130 and "),
    "cuttable-lines": rep("what it and " * 80 + "\n"),
    "cuttable-topic-lines": rep("store and x and " * 60 + "\n"),
    "lines": rep("a\n"),
    "tool-names": rep("search:"),
    "aliases-joined": rep("interrupciones y "),
    "topic-lines": rep("checkpointer or store, " * 60 + "\n"),
    "joining-phrases": rep("as well as "),
    "wants-then-prices": rep("I'd like a for 1, "),
    "unit-prices": rep("buy 3 x for 1 each and "),
    "telling-lines": rep("I am a. " * 200 + "\n"),
    "accented": rep("¿cómo é "),
    # Rule 5: a clause beside a topic, each naming something; a sequence phrase each time.
    "clauses-beside-topics": rep("store, then x y, "),
    "sequence-phrases": rep("x after that store followed by "),
    "articles-after-topics": rep("store puis le x "),
    "telling-topic-lines": rep("I store" + ", x y" * 450 + "\n"),  # each cut asks if it tells
}


@pytest.mark.parametrize("text", PART_INPUTS.values(), ids=PART_INPUTS.keys())
def test_reading_a_question_is_linear(text: Text) -> None:
    tools = {"checkout", "search"}
    kb = knowledge_base()
    assert_linear(lambda t: read_question(t, tools, kb), text)


WORST_MESSAGES = {
    **BUY_INPUTS,
    **PART_INPUTS,
    "tags-unclosed": rep("<"),
    "tags-open-runs": rep("<a"),
    "direct-no-colon": rep("a"),
    "direct-spaces": rep(" "),
    "parts": rep(";"),
    "dollars": rep("$"),
    "escaped-dollars": rep("\\$"),
}


def answer_history(text: str) -> Sequence[BaseMessage]:
    call = {"name": "search", "args": {"query": "x"}, "id": "c1", "type": "tool_call"}
    return [
        HumanMessage(text),
        AIMessage("", tool_calls=[call]),
        ToolMessage(text, tool_call_id="c1"),
    ]


@pytest.mark.parametrize("text", WORST_MESSAGES.values(), ids=WORST_MESSAGES.keys())
def test_offline_model_reply_is_linear(text: Text) -> None:
    model = OfflineChatModel().bind_tools(TOOLS)
    no_tools = OfflineChatModel()
    assert_linear(lambda t: model.invoke([HumanMessage(t)]), text)
    # The answer path summarizes the question and the tool content.
    assert_linear(no_tools.invoke, lambda size: answer_history(text(size)))
    assert_linear(lambda t: no_tools.invoke([HumanMessage(t)]), text)


@pytest.mark.parametrize(
    "value",
    [rep("a"), rep(" ", "x"), rep("a", " ", head="groq:")],
    ids=["letters", "spaces", "groq-letters"],
)
def test_context_model_check_is_linear(value: Text) -> None:
    def validate(model: str) -> None:
        with pytest.raises(ValueError, match="model"):
            Context(model=model)

    assert_linear(validate, value)


def test_search_lookup_and_redaction_are_linear() -> None:
    assert_linear(lookup, rep("checkpoint"))
    assert_linear(lookup, rep("puntos de control y InMemoryStore "))  # aliases, camel case
    # Word forms: words that stem to a name's first word, a name of two words cut short,
    # and one word of suffixes that each strip leaves for the next.
    assert_linear(lookup, rep("streams streamed "))
    assert_linear(lookup, rep("text text-splitters "))
    assert_linear(lookup, rep("s", "inged"))
    message = rep("a@")
    assert_linear(lambda t: redact({"messages": [HumanMessage(t)]}), message)
    assert_linear(lambda t: sanitize_artifacts({"messages": [HumanMessage(t)]}), message)


DOLLAR_INPUTS = {
    "dollars": rep("$"),
    "backslashes": rep("\\"),
    "backslashes-then-dollar": rep("\\", "$"),
    "escaped-dollars": rep("\\$"),
    "escaped-backslash-dollars": rep("\\\\$"),
}


@pytest.mark.parametrize("text", DOLLAR_INPUTS.values(), ids=DOLLAR_INPUTS.keys())
def test_escaping_dollar_signs_is_linear(text: Text) -> None:
    assert_linear(escape_math, text)
    assert_linear(label, text)
    assert_linear(lambda t: plain_text(escape_math(t)), text)


# Code spans and fences: runs that never close, alternating run lengths, a fence per line.
PLAIN_INPUTS = {
    "unclosed-span": rep("\\*", head="`"),
    "ticks-and-escapes": rep("`\\*``\\|"),
    "fence-lines": rep("```\n\\*\n"),
    "one-long-line": rep("a\\*b`"),
}


@pytest.mark.parametrize("text", PLAIN_INPUTS.values(), ids=PLAIN_INPUTS.keys())
def test_plain_text_for_a_pipe_is_linear(text: Text) -> None:
    assert_linear(plain_text, text)


def quadratic(text: str) -> int:
    """Rescans the text from the start at every step: the shape these tests catch."""
    step = 125
    return sum(len(text[:end].rstrip()) for end in range(0, len(text), step))


def test_the_ratio_catches_a_quadratic_scan() -> None:
    with pytest.raises(AssertionError, match="took"):
        assert_linear(quadratic, rep("a "))
