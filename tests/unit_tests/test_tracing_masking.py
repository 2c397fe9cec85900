"""``AGENT_REDACT_TRACES=secrets``: content kept, secret-shaped substrings masked.

:func:`agent.tracing.masking.mask_secrets` on every kind of pasted secret, on look-alikes it
must keep, and :func:`agent.tracing.redaction.mask_payload_secrets` on the payloads the
langsmith client hands over (message objects, tool calls, artifacts). Linear time is held
in ``test_linear_time.py``.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent.tracing.masking import MASK, luhn, mask_secrets
from agent.tracing.redaction import mask_payload_secrets
from tests.support.tracing import PASTED_SECRETS


@pytest.mark.parametrize("kind", list(PASTED_SECRETS))
def test_every_pasted_secret_is_masked_and_the_words_around_it_kept(kind: str) -> None:
    pasted, secret = PASTED_SECRETS[kind]
    text = f"Hello, here it is: {pasted} -- thanks!"
    masked = mask_secrets(text)
    assert secret not in masked
    assert MASK in masked
    assert masked.startswith("Hello, here it is: ")
    assert masked.endswith(" -- thanks!")


@pytest.mark.parametrize(
    "kept",
    [
        "How does a checkpointer work?",
        "task-force and desk-lamp ask-me",  # 'sk-' inside a word
        "input_tokens=12, max tokens: 500",  # a count, not a token
        "order 1700000000000 at 2026-12-01",  # 13 digits failing Luhn: a timestamp
        "call alice@example.com",  # personal data, not a secret: full redaction hides it
        "https://example.com/path?q=1",
        "Bearer",
        "",
    ],
)
def test_look_alikes_are_kept(kept: str) -> None:
    assert mask_secrets(kept) == kept


def test_private_keys_and_several_secrets_in_one_text() -> None:
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n-----END RSA PRIVATE KEY-----"
    text = f"one {pem} two {PASTED_SECRETS['groq key'][0]} three"
    assert mask_secrets(text) == f"one {MASK} two {MASK} three"
    unclosed = "x -----BEGIN PRIVATE KEY-----\nMIIBOgIBAAJBAK"
    assert mask_secrets(unclosed) == f"x {MASK}"


def test_luhn() -> None:
    assert luhn("4242424242424242")
    assert luhn("378282246310005")
    assert not luhn("4242424242424241")


def test_payloads_keep_content_and_structure_and_mask_secrets() -> None:
    secret = PASTED_SECRETS["groq key"][0]
    call = {"name": "search", "args": {"query": f"key {secret}"}, "id": "c1", "type": "tool_call"}
    human = HumanMessage(f"my key is {secret}, what now?")
    tool = ToolMessage(
        f"found {secret}",
        tool_call_id="c1",
        artifact={"stop": True, "reason": "completed", "api_key": "x", "chars": 10},
    )
    payload = {"messages": [human, AIMessage("", tool_calls=[call]), tool], "n": 3}
    before = repr(payload)
    out = mask_payload_secrets(payload)
    assert repr(payload) == before  # never changed
    messages = out["messages"]
    assert messages[0]["content"] == f"my key is {MASK}, what now?"
    assert messages[1]["tool_calls"][0]["args"] == {"query": f"key {MASK}"}
    assert messages[1]["tool_calls"][0]["name"] == "search"
    assert messages[2]["content"] == f"found {MASK}"
    assert messages[2]["artifact"] == {"stop": True, "reason": "completed", "chars": 10}
    assert out["n"] == 3
    assert secret not in repr(out)
