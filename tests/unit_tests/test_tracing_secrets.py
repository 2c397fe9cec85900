"""Planted secrets never reach the collector while redaction is on, in-process, both graphs.

Secrets are planted in the user's message, in tool content, in artifact fields, in an
exception's text and in environment variables. With ``AGENT_REDACT_TRACES`` on none of
them is in any ``/runs*`` request; with it off the content arrives, the artifact and
environment secrets still do not, and the metadata is the same as with it on. With
``AGENT_REDACT_TRACES=secrets`` the content arrives too, but every secret-shaped string a
user pasted (:data:`tests.support.tracing.PASTED_SECRETS`) is masked, and the metadata is
the same again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import langsmith
import pytest
from langchain_core.tools import tool
from langsmith.env import get_langchain_env_var_metadata

from agent.models import load_model
from agent.tools import TOOLS
from agent.tracing.metadata import STOP_KEYS, TOTAL_KEYS
from client.scenarios import GRAPHS
from tests.support.fake_groq import FakeGroq
from tests.support.graph_runs import build, run
from tests.support.langsmith_collector import LangSmithCollector
from tests.support.tracing import (
    PASTED_SECRETS,
    metadata,
    observed_trace,
    trace_both,
)

USER_SECRET = "my-planted-user-passphrase-5521"
TOOL_SECRET = "planted-tool-content-secret-7781"
KEY_SECRET = "planted-artifact-key-field-3141"
VALUE_SECRET = "sk-planted-artifact-value-2718"
ERROR_SECRET = "planted-exception-text-1618"
ENV_SECRET = "sk-planted-env-langsmith-1414"
GROQ_SECRET = "gsk_planted0groq0key0000000001"
CONTENT_SECRETS = (USER_SECRET, TOOL_SECRET, ERROR_SECRET)
ALWAYS_HIDDEN = (KEY_SECRET, VALUE_SECRET, ENV_SECRET, GROQ_SECRET)


@tool(response_format="content_and_artifact")
def leaky(query: str) -> tuple[str, dict[str, Any]]:
    """Answer with a secret in the content and in the artifact."""
    artifact = {
        "stop": True,
        "reason": "completed",
        "api_key": KEY_SECRET,
        "note": VALUE_SECRET,
        "topic": "vault",
    }
    return f"{TOOL_SECRET}: {query}", artifact


@tool(response_format="content_and_artifact")
def exploding(query: str) -> tuple[str, dict[str, Any]]:
    """Raise with a secret in the exception text."""
    raise ConnectionError(f"upstream said {ERROR_SECRET} for {query}")


OFFLINE = {"model": "offline"}
CASES: dict[str, tuple[str, dict[str, Any], str]] = {
    # name: (user text, context, final rule)
    "leaky": (f"leaky: {USER_SECRET}", OFFLINE, "completed"),
    # polish: the model quotes the tool's content in its answer (and streams it)
    "leaky-polish": (f"leaky: {USER_SECRET}", {**OFFLINE, "stop_mode": "polish"}, "completed"),
    "exploding": (f"exploding: {USER_SECRET}", OFFLINE, "tool_error"),
}


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[LangSmithCollector]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("LANGSMITH_REVISION_ID", "tracing-test")
    # langsmith copies LANGSMITH_* variables into run metadata unless the name looks secret
    monkeypatch.setenv("LANGSMITH_PLANTED_NOTE", ENV_SECRET)
    monkeypatch.setenv("GROQ_API_KEY", GROQ_SECRET)  # makes Groq the default model...
    monkeypatch.setenv("GROQ_API_BASE", "http://127.0.0.1:9")  # ...so never let it leave
    get_langchain_env_var_metadata.cache_clear()
    with LangSmithCollector() as server:
        yield server
    get_langchain_env_var_metadata.cache_clear()


def traffic(collector: LangSmithCollector) -> bytes:
    return b"".join(collector.run_traffic)


async def test_the_environment_secret_is_a_real_threat(collector: LangSmithCollector) -> None:
    """A plain client copies the planted variable into run metadata: the scrubber matters."""
    client = langsmith.Client(api_url=collector.url, api_key="dummy")
    with langsmith.tracing_context(enabled=True, client=client):
        await run(build("legacy", [*TOOLS, leaky]), *CASES["leaky"][:2], thread_id="plain")
    client.flush()
    root_of_plain = collector.wait_for(
        lambda runs: any(metadata(r).get("LANGSMITH_PLANTED_NOTE") for r in runs.values())
    )
    assert root_of_plain
    assert ENV_SECRET.encode() in traffic(collector)
    assert USER_SECRET.encode() in traffic(collector)


@pytest.mark.parametrize("case", list(CASES))
async def test_redaction_on_keeps_every_planted_secret_out(
    collector: LangSmithCollector, case: str
) -> None:
    text, context, rule = CASES[case]
    both = await trace_both(
        collector, text, context, tools=[*TOOLS, leaky, exploding], thread_id=case
    )
    sent = traffic(collector)
    for secret in CONTENT_SECRETS + ALWAYS_HIDDEN:
        assert secret.encode() not in sent, secret
    assert b"[redacted]" in sent
    assert collector.errors == []
    for graph_name, (_, root, runs) in both.items():
        trace = observed_trace(runs, root["id"], graph_name)
        assert trace["root"]["stop_rule"] == rule
        if rule == "completed":
            assert trace["tools"] == [
                (
                    trace["root"]["stop_tool_call_id"],
                    {"stop": True, "reason": "completed", "topic": "vault"},
                )
            ]
        else:
            [tool_run] = [
                r
                for r in runs.values()
                if r.get("name") == "exploding" and r.get("trace_id") == root["id"]
            ]
            assert tool_run["error"] == "ConnectionError: [redacted]"
        assert "LANGSMITH_PLANTED_NOTE" not in metadata(root)


@pytest.mark.parametrize("case", list(CASES))
async def test_redaction_off_sends_content_but_not_keys_and_keeps_metadata(
    collector: LangSmithCollector, case: str
) -> None:
    tools = [*TOOLS, leaky, exploding]
    text, context, rule = CASES[case]
    on = await trace_both(collector, text, context, tools=tools, thread_id=f"{case}-on")
    off = await trace_both(
        collector, text, context, tools=tools, redact=False, thread_id=f"{case}-off"
    )
    sent = traffic(collector)
    for secret in (USER_SECRET, TOOL_SECRET if rule == "completed" else ERROR_SECRET):
        assert secret.encode() in sent, secret
    for secret in ALWAYS_HIDDEN:
        assert secret.encode() not in sent, secret
    for graph_name in GRAPHS:
        traces = [
            observed_trace(runs, root["id"], graph_name)
            for _, root, runs in (on[graph_name], off[graph_name])
        ]
        assert traces[0] == traces[1]
        roots = [metadata(both[graph_name][1]) for both in (on, off)]
        assert [{k: r[k] for k in STOP_KEYS + TOTAL_KEYS} for r in roots] == [traces[0]["root"]] * 2


@pytest.mark.parametrize("case", list(CASES))
async def test_secrets_mode_keeps_content_masks_every_pasted_secret_and_keeps_metadata(
    collector: LangSmithCollector, case: str
) -> None:
    tools = [*TOOLS, leaky, exploding]
    text, context, rule = CASES[case]
    pasted = " ".join(p for p, _ in PASTED_SECRETS.values())
    text = f"{text} {pasted}"  # in the message, the tool's arguments, content and error
    full = await trace_both(collector, text, context, tools=tools, thread_id=f"{case}-full")
    sent_full = traffic(collector)
    collector.clear()
    masked = await trace_both(
        collector, text, context, tools=tools, mode="secrets", thread_id=f"{case}-secrets"
    )
    sent = traffic(collector)
    # Content is kept: the user's words and the tool's text (or its error's) arrive...
    for kept in (USER_SECRET, TOOL_SECRET if rule == "completed" else ERROR_SECRET):
        assert kept.encode() in sent, kept
        assert kept.encode() not in sent_full, kept
    # ...every pasted secret is masked, and keys never leave, as in the other modes.
    for kind, (_, secret) in PASTED_SECRETS.items():
        assert secret.encode() not in sent, kind
    for secret in ALWAYS_HIDDEN:
        assert secret.encode() not in sent, secret
    assert b"[redacted]" in sent
    assert collector.errors == []
    # The stop metadata and the trace's shape are what full redaction gives.
    for graph_name in GRAPHS:
        traces = [
            observed_trace(runs, root["id"], graph_name)
            for _, root, runs in (full[graph_name], masked[graph_name])
        ]
        assert traces[0] == traces[1]
        roots = [metadata(both[graph_name][1]) for both in (full, masked)]
        assert [{k: r[k] for k in STOP_KEYS + TOTAL_KEYS} for r in roots] == [traces[0]["root"]] * 2
        assert traces[1]["root"]["stop_rule"] == rule
        # The masked user message arrives with its words in place.
        _, root, runs = masked[graph_name]
        user = root["inputs"]["messages"][0]["content"]
        assert user.startswith(CASES[case][0]) and "[redacted]" in user


async def test_provider_key_never_reaches_a_trace(
    collector: LangSmithCollector, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real ChatGroq against the loopback Groq: the key is sent to Groq, never traced."""
    with FakeGroq() as groq:
        monkeypatch.setenv("GROQ_API_BASE", groq.url)
        load_model.cache_clear()  # the cached ChatGroq must read this base URL
        try:
            for redact in (True, False):
                both = await trace_both(
                    collector,
                    "How does a checkpointer work?",
                    {"model": "groq:llama-3.3-70b-versatile", "force_outcome": "success"},
                    redact=redact,
                    thread_id=f"groq-{redact}",
                )
                for graph_name, (observed, root, runs) in both.items():
                    served = observed.messages[1].response_metadata["model_name"]
                    assert served != "offline"
                    assert metadata(root)["model_name"] == served
                    assert metadata(root)["stop_rule"] == "completed"
                    assert metadata(root)["input_tokens"] > 0
                    assert observed_trace(runs, root["id"], graph_name)["root"]["model_calls"] == 1
        finally:
            load_model.cache_clear()
        assert groq.auth_headers and set(groq.auth_headers) == {f"Bearer {GROQ_SECRET}"}
    sent = traffic(collector)
    assert GROQ_SECRET.encode() not in sent
    assert b"ChatGroq" in sent  # the model's own runs were traced
