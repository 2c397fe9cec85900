"""No regex or loop over caller text is quadratic: 1 MB of the worst input for each.

A quadratic scan of 1 MB takes minutes (the old ``buy ... for`` pattern blocked the
server for 22 s on 96 KB); a linear one takes milliseconds. The bound is generous, so a
busy machine does not make these flaky, and still catches quadratic behaviour.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

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
from client.cli import for_terminal

MB = 1_000_000
BOUND_SECONDS = 1.0


def mb(unit: str, tail: str = "") -> str:
    """``unit`` repeated to 1 MB, then ``tail``."""
    return unit * (MB // len(unit)) + tail


def timed(call: Callable[[], Any]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


# Each input defeats one pattern: a run that never closes, or a prefix repeated so that a
# backtracking engine restarts its scan at every repetition.
BUY_INPUTS = {
    "buy-repeated": mb("buy "),
    "buy-for-no-amount": mb("buy for "),
    "buy-then-spaces": "buy x" + mb(" ", "for"),
    "buy-long-amount": "buy x for " + mb("9"),
    "buy-commas": "buy x for 1" + mb(","),
}

SECRET_INPUTS = {
    "letters": mb("a"),
    "letters-then-at": mb("a", "@"),
    "dotted": mb("a."),
    "at-runs": mb("a@"),
    "at-then-dots": "@" + mb("a."),
    "url-userinfo": mb("://a:"),
    "scheme-letters": mb("a", "://"),
    "jwt-headers": mb("eyJ-"),
    "jwt-headers-dot": mb("-eyJ", "."),
    "jwt-segments": mb("eyJaaaaa."),
    "pem-begin": mb("-----BEGIN"),
    "pem-letters": "-----BEGIN " + mb("A"),
    "spaces": mb(" ", "x"),
    "digits": mb("1 "),
    "ssn-like": mb("123-45-"),
    "bearer": "Bearer" + mb(" "),
    "key-prefixes": mb("sk-"),
    # langsmith's DEFAULT_SECRET_RULES, as looks_secret uses them
    "header-spaces": "authorization" + mb(" "),
    "header-colon-spaces": "x-api-key:" + mb(" "),
    "headers-repeated": mb("authorization="),
    "aws-prefixes": mb("AKIA"),
    "stripe-prefixes": mb("sk_live_"),
    "stripe-no-boundary": "sk_live_" + mb("a", "_"),
    "langsmith-prefixes": mb("lsv2_pt_"),
    "github-prefixes": mb("ghp_"),
    "sendgrid-dots": mb("SG."),
}


@pytest.mark.parametrize("text", BUY_INPUTS.values(), ids=BUY_INPUTS.keys())
def test_parse_buy_is_linear(text: str) -> None:
    assert timed(lambda: parse_buy(text)) < BOUND_SECONDS


@pytest.mark.parametrize("value", SECRET_INPUTS.values(), ids=SECRET_INPUTS.keys())
def test_looks_secret_is_linear(value: str) -> None:
    assert timed(lambda: looks_secret(value)) < BOUND_SECONDS
    assert timed(lambda: scrub_metadata({"note": value})) < BOUND_SECONDS


MASK_INPUTS = {
    **SECRET_INPUTS,
    "card-groups": mb("4242 "),
    "card-dashes": mb("4242-"),
    "digits-run": mb("1"),
    "amex-like": mb("3782 822463 "),
    "jwt-chain": mb("eyJaaaaa.eyJbbbbb"),
    "names": mb("password"),
    "names-equals": mb("password="),
    "names-quotes": mb("token:'"),
    "url-passwords": mb("://a:b"),
    "url-no-at": "://a:" + mb("b"),
    "bearers": mb("Bearer "),
    "pem-begins": mb("-----BEGIN PRIVATE KEY-----"),
    "pem-unclosed": "-----BEGIN PRIVATE KEY-----" + mb("A"),
    "pem-end-unclosed": "-----BEGIN PRIVATE KEY-----" + mb("-----END "),
    "all-masked": mb("gsk_abcdefgh "),
}


@pytest.mark.parametrize("value", MASK_INPUTS.values(), ids=MASK_INPUTS.keys())
def test_masking_secrets_is_linear(value: str) -> None:
    assert timed(lambda: mask_secrets(value)) < BOUND_SECONDS
    assert timed(lambda: mask_payload_secrets({"messages": [HumanMessage(value)]})) < BOUND_SECONDS


@pytest.mark.parametrize("key", [mb("A"), mb("Aa"), mb("a1"), mb("_")])
def test_sensitive_key_check_is_linear(key: str) -> None:
    assert timed(lambda: is_sensitive_key(key)) < BOUND_SECONDS
    assert timed(lambda: sanitize_artifact({key: 1, "note": mb("a@")})) < BOUND_SECONDS


# Each defeats one step of reading a question into parts (agent/question.py): words to
# cut at, lone marks, prices, back references, topic names, lines just short enough to be
# cut word by word, and parts past the cap.
PART_INPUTS = {
    "words": mb("a "),
    "connectives": mb("and "),
    "commas": mb("a, "),
    "lone-marks": mb(" ,"),
    "sentences": mb("a. "),
    "also-runs": mb("a, and also "),
    "purchases-joined": mb("buy a for 1 and "),
    "prices": mb("for 1 "),
    "buy-then-prices": "buy " + mb("x for 1 "),
    "questions-joined": mb("what is x and "),
    "back-references": mb("what it and "),
    "topics-joined": mb("store and "),
    "topic-then-words": "store" + mb(" and x"),
    "topic-pairs": mb("checkpointer, "),
    "shifting-case": mb("\u0130 and "),
    "cuttable-lines": mb("what it and " * 80 + "\n"),
    "cuttable-topic-lines": mb("store and x and " * 60 + "\n"),
    "lines": mb("a\n"),
    "tool-names": mb("search:"),
}


@pytest.mark.parametrize("text", PART_INPUTS.values(), ids=PART_INPUTS.keys())
def test_reading_a_question_is_linear(text: str) -> None:
    tools = {"checkout", "search"}
    assert timed(lambda: read_question(text, tools, knowledge_base())) < BOUND_SECONDS


WORST_MESSAGES = {
    **BUY_INPUTS,
    **PART_INPUTS,
    "tags-unclosed": mb("<"),
    "tags-open-runs": mb("<a"),
    "direct-no-colon": mb("a"),
    "direct-spaces": mb(" "),
    "parts": mb(";"),
    "dollars": mb("$"),
    "escaped-dollars": mb("\\$"),
}


@pytest.mark.parametrize("text", WORST_MESSAGES.values(), ids=WORST_MESSAGES.keys())
def test_offline_model_reply_is_linear(text: str) -> None:
    model = OfflineChatModel().bind_tools(TOOLS)
    no_tools = OfflineChatModel()
    assert timed(lambda: model.invoke([HumanMessage(text)])) < BOUND_SECONDS
    # The answer path summarizes the question and the tool content.
    call = {"name": "search", "args": {"query": "x"}, "id": "c1", "type": "tool_call"}
    history = [
        HumanMessage(text),
        AIMessage("", tool_calls=[call]),
        ToolMessage(text, tool_call_id="c1"),
    ]
    assert timed(lambda: no_tools.invoke(history)) < BOUND_SECONDS
    assert timed(lambda: no_tools.invoke([HumanMessage(text)])) < BOUND_SECONDS


@pytest.mark.parametrize("value", [mb("a"), mb(" ", "x"), "groq:" + mb("a", " ")])
def test_context_model_check_is_linear(value: str) -> None:
    def validate() -> None:
        with pytest.raises(ValueError, match="model"):
            Context(model=value)

    assert timed(validate) < BOUND_SECONDS


def test_search_lookup_and_redaction_are_linear() -> None:
    query = mb("checkpoint")
    assert timed(lambda: lookup(query)) < BOUND_SECONDS
    message = HumanMessage(mb("a@"))
    assert timed(lambda: redact({"messages": [message]})) < BOUND_SECONDS
    assert timed(lambda: sanitize_artifacts({"messages": [message]})) < BOUND_SECONDS


DOLLAR_INPUTS = {
    "dollars": mb("$"),
    "backslashes": mb("\\"),
    "backslashes-then-dollar": mb("\\", "$"),
    "escaped-dollars": mb("\\$"),
    "escaped-backslash-dollars": mb("\\\\$"),
}


@pytest.mark.parametrize("text", DOLLAR_INPUTS.values(), ids=DOLLAR_INPUTS.keys())
def test_escaping_dollar_signs_is_linear(text: str) -> None:
    assert timed(lambda: escape_math(text)) < BOUND_SECONDS
    assert timed(lambda: label(text)) < BOUND_SECONDS
    assert timed(lambda: for_terminal(escape_math(text))) < BOUND_SECONDS
