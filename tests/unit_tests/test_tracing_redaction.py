"""Redacting trace payloads: the walkers, the env switch, the client and its installation."""

from __future__ import annotations

import copy
import functools
import json
import uuid
from dataclasses import dataclass
from typing import Any, cast

import langsmith
import pytest
from langchain_core.load import dumpd
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.tracers.langchain import get_client
from langsmith.env import get_langchain_env_var_metadata
from langsmith.utils import get_env_var

import agent.tracing.client as trace_client_module
from agent.tracing.client import (
    RedactingClient,
    SecretMaskingClient,
    configure_tracing,
    trace_client,
    tracing_requested,
)
from agent.tracing.redaction import (
    ENV_VAR,
    REDACTED,
    redact,
    redact_error,
    redaction_enabled,
    redaction_mode,
    sanitize_artifacts,
)
from tests.support.graph_runs import build, run
from tests.support.langsmith_collector import LangSmithCollector
from tests.support.tracing import metadata

USER = "my passport number is P-planted-user-77"
ARGS = "planted-argument-88"
TOOL = "planted-tool-content-99"
ARTIFACT_SECRET = "sk-planted-artifact-0123456789"
PLANTED = (USER, ARGS, TOOL, ARTIFACT_SECRET, "4242.5")


def conversation() -> list[Any]:
    return [
        SystemMessage("system prompt"),
        HumanMessage(USER, name="Jane Roe"),
        AIMessage(
            "",
            name="middleware",
            tool_calls=[
                {"name": "search", "args": {"query": ARGS}, "id": "call_1", "type": "tool_call"}
            ],
            additional_kwargs={"tool_calls": [{"function": {"arguments": ARGS, "name": "search"}}]},
            usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
            response_metadata={"model_name": "offline", "token_usage": {"total_tokens": 7}},
        ),
        ToolMessage(
            TOOL,
            name="search",
            tool_call_id="call_1",
            artifact={"stop": True, "reason": "completed", "api_key": ARTIFACT_SECRET},
        ),
        AIMessage(
            "",
            tool_calls=[
                {
                    "name": "checkout",
                    "args": {"amount": 4242.5},
                    "id": "call_2",
                    "type": "tool_call",
                }
            ],
        ),
    ]


@dataclass
class Request:
    """Stands in for ``ToolCallRequest``: a dataclass holding messages and a callable."""

    tool_call: dict[str, Any]
    state: dict[str, Any]
    execute: Any


def payloads() -> dict[str, dict[str, Any]]:
    messages = conversation()
    generation = ChatGeneration(message=messages[2], text=USER)
    return {
        "objects": {"messages": messages, "stop_decision": {"action": "stop", "rule": "completed"}},
        "lc_dicts": {"messages": [[dumpd(m) for m in messages]]},
        "llm_result": LLMResult(generations=[[generation]]).model_dump(),
        "role_dicts": {"messages": [{"role": "user", "content": USER}]},
        "tool_inputs": {"query": ARGS, "amount": 4242.5},
        "dataclass": {"request": Request(messages[2].tool_calls[0], {"messages": messages}, print)},
    }


def dumps(value: Any) -> str:
    return json.dumps(value, default=str)


@pytest.mark.parametrize("name", list(payloads()))
def test_redact_hides_every_planted_string_and_never_mutates(name: str) -> None:
    payload = payloads()[name]
    before = dumps(payload)
    redacted = redact(payload)
    assert dumps(payload) == before
    text = dumps(redacted)
    for planted in (*PLANTED, "Jane Roe", "system prompt"):
        assert planted not in text, planted
    assert REDACTED in text


def test_redacted_messages_keep_structure() -> None:
    redacted = redact({"messages": conversation(), "jump_to": "end"})
    system, human, ai, tool, checkout = redacted["messages"]
    assert redacted["jump_to"] == "end"
    assert [m["type"] for m in redacted["messages"]] == ["system", "human", "ai", "tool", "ai"]
    assert human["content"] == REDACTED and human["name"] == REDACTED
    assert ai["content"] == "" and ai["name"] == "middleware"
    assert ai["tool_calls"] == [
        {"name": "search", "args": REDACTED, "id": "call_1", "type": "tool_call"}
    ]
    assert ai["usage_metadata"] == {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    assert ai["response_metadata"] == {"model_name": "offline", "token_usage": {"total_tokens": 7}}
    assert tool["name"] == "search" and tool["tool_call_id"] == "call_1"
    assert tool["artifact"] == {"stop": True, "reason": "completed"}
    assert checkout["tool_calls"][0]["args"] == REDACTED


def test_redact_keeps_lc_constructor_structure() -> None:
    [[_, human, ai, tool, _]] = redact({"messages": [[dumpd(m) for m in conversation()]]})[
        "messages"
    ]
    assert human["id"] == ["langchain", "schema", "messages", "HumanMessage"]
    assert human["kwargs"]["content"] == REDACTED
    assert ai["kwargs"]["tool_calls"][0]["name"] == "search"
    assert tool["kwargs"]["artifact"] == {"stop": True, "reason": "completed"}


def test_redact_survives_cycles_and_depth() -> None:
    loop: dict[str, Any] = {"text": USER}
    loop["self"] = loop
    deep: Any = USER
    for _ in range(100):
        deep = {"d": deep}
    redacted = redact({"loop": loop, "deep": deep, "kept": [{"type": "tool", "content": ""}]})
    assert USER not in dumps(redacted)
    assert redacted["loop"] == REDACTED  # a cycle cannot be serialized: the whole value goes
    assert REDACTED in dumps(redacted["deep"])
    assert redacted["kept"] == [{"type": "tool", "content": ""}]  # its siblings are walked


def test_redact_reads_a_dict_that_only_looks_like_a_message() -> None:
    # A tool schema or an argument may hold {"type": {...}, "content": ...}: not a message.
    redacted = redact({"schema": {"type": {"kind": "x"}, "content": USER, "name": "n"}})
    assert USER not in dumps(redacted)
    assert redacted["schema"]["content"] == REDACTED


def test_sanitize_artifacts_keeps_content_but_not_artifact_secrets() -> None:
    messages = conversation()
    before = copy.deepcopy(messages)
    kept = sanitize_artifacts({"messages": messages, "nested": {"artifact": {"token": "x"}}})
    assert messages == before  # the ToolMessage was serialized, not changed
    assert kept["messages"][1]["content"] == USER
    assert kept["messages"][3]["content"] == TOOL
    assert kept["messages"][3]["artifact"] == {"stop": True, "reason": "completed"}
    assert kept["messages"][2] == messages[2].model_dump(mode="json")  # the rest is kept
    assert kept["nested"]["artifact"] == {}
    assert ARTIFACT_SECRET not in dumps(kept)
    json.dumps(kept)  # plain JSON, as the client sends it


def test_the_walkers_see_json_never_the_objects() -> None:
    request = Request({"name": "search", "args": {"query": ARGS}}, {}, print)
    for hide in (redact, sanitize_artifacts):
        out = hide({"request": request, "client": object()})
        json.dumps(out)
        assert out["request"]["execute"] in (REDACTED, "<builtin_function_or_method>")
        assert "object at 0x" not in dumps(out)  # no repr of an unknown object


def test_redact_error_keeps_only_the_exception_type() -> None:
    assert redact_error(f"RuntimeError('{USER}')\nTraceback ...") == f"RuntimeError: {REDACTED}"
    assert redact_error("\n1 validation error") == REDACTED
    assert redact_error(None) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, True), ("", True), ("true", True), ("1", True), ("FALSE", False), ("no", False)],
)
def test_redaction_switch(raw: str | None, expected: bool) -> None:
    environ = {} if raw is None else {ENV_VAR: raw}
    assert redaction_enabled(environ) is expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, "full"), ("on", "full"), ("secrets", "secrets"), (" Secrets ", "secrets")]
    + [("false", "off"), ("0", "off")],
)
def test_redaction_mode(raw: str | None, expected: str) -> None:
    environ = {} if raw is None else {ENV_VAR: raw}
    assert redaction_mode(environ) == expected
    assert redaction_enabled(environ) is (expected == "full")


def test_redaction_switch_names_the_variable_and_its_values_never_the_value() -> None:
    with pytest.raises(ValueError, match="AGENT_REDACT_TRACES: expected true, secrets or false"):
        redaction_enabled({ENV_VAR: "maybe-sk-planted"})
    with pytest.raises(ValueError) as caught:
        redaction_mode({ENV_VAR: "maybe-sk-planted"})
    assert "maybe" not in str(caught.value)


def test_trace_client_follows_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    options: dict[str, Any] = {
        "api_url": "http://127.0.0.1:9",
        "api_key": "x",
        "auto_batch_tracing": False,
    }
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert isinstance(trace_client(**options), RedactingClient)
    monkeypatch.setenv(ENV_VAR, "secrets")
    assert type(trace_client(**options)) is SecretMaskingClient
    monkeypatch.setenv(ENV_VAR, "false")
    assert type(trace_client(**options)) is langsmith.Client
    assert type(trace_client(mode="secrets", **options)) is SecretMaskingClient
    monkeypatch.setenv(ENV_VAR, "bogus")
    with pytest.raises(ValueError, match=ENV_VAR):
        trace_client(**options)


def test_tracing_requested_reads_the_environment() -> None:
    assert tracing_requested({"LANGSMITH_TRACING": "true"})
    assert tracing_requested({"LANGCHAIN_TRACING_V2": "TRUE"})
    assert not tracing_requested({"LANGSMITH_TRACING": "false"})
    assert not tracing_requested({})


def test_the_client_sends_run_errors_through_the_private_hook() -> None:
    """Both clients override langsmith's ``_hide_run_error``; prove it is called."""
    key = "gsk_plantedErrorKey0000000001"
    with LangSmithCollector() as collector:
        for mode in ("full", "secrets", "off"):
            client = trace_client(mode=mode, api_url=collector.url, api_key="x")
            run_id = uuid.uuid4()
            client.create_run("op", {"q": USER}, "chain", id=run_id, project_name="p")
            client.update_run(run_id, error=f"RuntimeError('{USER} {key}')", end_time=None)
            client.flush()

            def errored(runs: dict[str, dict[str, Any]], rid: str = str(run_id)) -> bool:
                return bool(runs.get(rid, {}).get("error"))

            runs = collector.wait_for(errored)
            error = runs[str(run_id)]["error"]
            assert (error == f"RuntimeError: {REDACTED}") is (mode == "full")
            assert (USER in error) is (mode != "full")
            assert (key in error) is (mode == "off")


def _clear_langsmith_env_cache() -> None:
    """Forget the variables langsmith caches when it reads them.

    ``get_env_var`` is an ``lru_cache`` wrapper, but its ``@overload`` stubs hide that.
    """
    cast("functools._lru_cache_wrapper[str | None]", get_env_var).cache_clear()
    get_langchain_env_var_metadata.cache_clear()


async def test_configure_tracing_installs_the_client_the_server_uses() -> None:
    """The dev-server path in-process: env turns tracing on, no client is passed per run."""
    with LangSmithCollector() as collector, pytest.MonkeyPatch.context() as mp:
        for key, value in collector.env().items():
            mp.setenv(key, value)
        mp.setenv("LANGSMITH_REVISION_ID", "tracing-test")
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        mp.delenv(ENV_VAR, raising=False)
        mp.setattr(trace_client_module, "_configured", None)
        _clear_langsmith_env_cache()
        try:
            client = configure_tracing()
            assert isinstance(client, RedactingClient)
            assert get_client() is client
            assert configure_tracing() is client  # the second graph module keeps it
            question = f"How does a checkpointer work? {USER}"
            await run(build("legacy"), question, {"force_outcome": "success"}, thread_id="global")
            client.flush()
            [root] = [
                r
                for r in collector.wait_for(
                    lambda runs: any(
                        r.get("end_time")
                        and "stop_rule" in metadata(r)
                        and not r.get("parent_run_id")
                        for r in runs.values()
                    )
                ).values()
                if not r.get("parent_run_id")
            ]
            assert metadata(root)["stop_rule"] == "completed"
            assert root["inputs"] == {"messages": [{"role": "user", "content": REDACTED}]}
            assert USER.encode() not in b"".join(collector.run_traffic)
        finally:
            langsmith.configure(client=None)
    _clear_langsmith_env_cache()
    assert configure_tracing() is None  # tracing off: nothing is installed
