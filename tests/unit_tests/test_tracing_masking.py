"""``AGENT_REDACT_TRACES=secrets``: content kept, secret-shaped substrings masked.

:func:`agent.tracing.masking.mask_secrets` on every kind of pasted secret, on look-alikes it
must keep, and :func:`agent.tracing.redaction.mask_payload_secrets` on the payloads the
langsmith client hands over (message objects, tool calls, artifacts). The trace
``docs/tracing.md`` shows for each mode is rebuilt through the loopback collector and
compared with the page. Linear time is held in ``test_linear_time.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import langsmith
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent.tracing.client import trace_client
from agent.tracing.masking import MASK, luhn, mask_secrets
from agent.tracing.redaction import RedactionMode, mask_payload_secrets
from tests.support.graph_runs import build, run
from tests.support.langsmith_collector import LangSmithCollector
from tests.support.tracing import PASTED_SECRETS, metadata


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


DOCS = Path(__file__).resolve().parents[2] / "docs" / "tracing.md"
DOCS_TEXT = "search: checkpointer, my key is gsk_PlantedGroqKey0a1b2c3d4e5f"
CUT = ", ..."
"""How docs/tracing.md cuts a long content short."""


def documented_traces() -> dict[RedactionMode, dict[str, Any]]:
    """The three JSON traces of docs/tracing.md's "One trace, three ways", by mode."""
    section = DOCS.read_text("utf-8").split("### One trace, three ways", 1)[1]
    blocks = re.findall(r"`AGENT_REDACT_TRACES=(\w+)`\n\n```json\n(.*?)\n```", section, re.S)
    names: dict[str, RedactionMode] = {"true": "full", "secrets": "secrets", "false": "off"}
    return {names[value]: json.loads(block) for value, block in blocks}


async def test_the_documented_trace_of_each_mode_is_what_the_collector_receives() -> None:
    documented = documented_traces()
    assert set(documented) == {"full", "secrets", "off"}
    with LangSmithCollector() as collector, pytest.MonkeyPatch.context() as mp:
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        for mode, doc in documented.items():
            client = trace_client(mode=mode, api_url=collector.url, api_key="dummy")
            with langsmith.tracing_context(enabled=True, client=client, project_name="docs"):
                context = {"model": "offline", "force_outcome": "success"}
                await run(build("legacy"), DOCS_TEXT, context, f"docs-{mode}")
            client.flush()

            def done(runs: dict[str, dict[str, Any]]) -> bool:
                roots = [r for r in runs.values() if not r.get("parent_run_id")]
                return any(r.get("end_time") and "model_calls" in metadata(r) for r in roots)

            runs = collector.wait_for(done)
            [root] = [r for r in runs.values() if not r.get("parent_run_id")]
            [tool] = [r for r in runs.values() if r.get("name") == "search"]
            output = tool["outputs"]["output"]
            documented_output = doc["search.outputs"]["output"]
            content = documented_output.pop("content")
            assert root["inputs"] == doc["root.inputs"], mode
            assert tool["inputs"] == doc["search.inputs"], mode
            assert {k: output[k] for k in documented_output} == documented_output, mode
            if content.endswith(CUT):
                assert output["content"].startswith(content.removesuffix(CUT)), mode
            else:
                assert output["content"] == content, mode
            collector.clear()
