"""The artifact allowlist and the metadata scrubber: what may reach a trace."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import stop_on_artifact as stopping
from hypothesis import given, settings
from hypothesis import strategies as st
from langsmith.anonymizer import DEFAULT_SECRET_RULES

from agent.tracing.allowlist import (
    LANGSMITH_RULES_LEFT_OUT,
    MAX_FIELDS,
    MAX_STRING_CHARS,
    is_sensitive_key,
    looks_secret,
    sanitize_artifact,
    scrub_metadata,
)

SECRET_VALUES = [
    "sk-planted-0123456789abcdef",
    "sk_live_0123456789abcdef",
    "gsk_0123456789abcdefABCDEF",
    "lsv2_pt_0123456789abcdef",
    "ghp_0123456789abcdefABCDEF",
    "xoxb-0123456789-abcdef",
    "AKIAABCDEFGHIJKLMNOP",
    "AIzaSyA0123456789abcdef",
    "Bearer abc.def.ghi",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig",
    "-----BEGIN RSA PRIVATE KEY-----",
    "https://user:hunter2@db.example.com/x",
    "jane.doe@example.com",
    "write to jane.doe@example.com today",
    "123-45-6789",
    "4111 1111 1111 1111",
    "4111111111111111",
]

PLAIN_VALUES = [
    "completed",
    "checkpointer",
    "no_match",
    "card_declined",
    "spend_cap",
    "ORD-1A714A15",
    "task-12345",
    "01a2284b-24b7-7592-a58f-4b0db0563235",
    "http://127.0.0.1:2024",
    "2026-01-01",
]


@pytest.mark.parametrize("value", SECRET_VALUES)
def test_secret_looking_values_are_recognized(value: str) -> None:
    assert looks_secret(value)


@pytest.mark.parametrize("value", PLAIN_VALUES)
def test_ordinary_values_are_not(value: str) -> None:
    assert not looks_secret(value)


@pytest.mark.parametrize(
    "key",
    [
        "api_key",
        "apiKey",
        "API_KEY",
        "x-api-key",
        "apikey",
        "auth_token",
        "token",
        "client_secret",
        "password",
        "Authorization",
        "user_email",
        "phone",
        "ssn",
        "card_number",
        "session_cookie",
        "LANGSMITH_API_KEY",
        "credentials",
    ],
)
def test_sensitive_keys(key: str) -> None:
    assert is_sensitive_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "stop",
        "reason",
        "input_tokens",
        "output_tokens",
        "max_tokens",
        "monkey",
        "keyboard_layout",
        "stop_tool_call_id",
        "model_name",
        "topic",
        "cause",
        "order_id",
        "status",
        "thread_id",
    ],
)
def test_ordinary_keys(key: str) -> None:
    assert not is_sensitive_key(key)


def test_contract_artifacts_pass_unchanged() -> None:
    for artifact in (
        stopping.completed(attempt=1, topic="checkpointer", chars=3631),
        stopping.transient(attempt=0, status=503),
        stopping.fatal(attempt=0, cause="card_declined"),
        stopping.policy_block(rule="spend_cap", cap=500.0),
        stopping.completed(attempt=0, order_id="ORD-1A714A15", amount=40.0),
    ):
        assert sanitize_artifact(artifact) == artifact
        # An MCP tool's artifact (langchain-mcp-adapters) holds it one level down.
        assert sanitize_artifact({"structured_content": artifact}) == artifact


def test_sanitizer_keeps_an_allowlist_and_drops_the_rest() -> None:
    artifact = {
        "note": "x",
        "reason": "completed",
        "stop": True,
        "api_key": "plain-looking-value",
        "authToken": "abc",
        "customer_email": "someone",
        "echo": "sk-planted-0123456789",
        "contact": "jane.doe@example.com",
        "long": "y" * (MAX_STRING_CHARS + 1),
        "nested": {"a": 1},
        "listed": [1, 2],
        "nan": float("nan"),
        "bad key": 1,
        "k" * 41: 1,
        3: "int key",
        "ratio": 0.5,
        "none": None,
    }
    before = copy.deepcopy(artifact)
    sanitized = sanitize_artifact(artifact)
    assert sanitized == {
        "stop": True,
        "reason": "completed",
        "note": "x",
        "ratio": 0.5,
        "none": None,
    }
    assert list(sanitized)[:2] == ["stop", "reason"]
    assert repr(artifact) == repr(before)  # never changed in place (nan != nan, so repr)


def test_invalid_artifacts_stay_visible_but_non_dicts_become_none() -> None:
    assert sanitize_artifact({"stop": "false", "reason": "finished"}) == {
        "stop": "false",
        "reason": "finished",
    }
    for artifact in ("stop", ["stop"], None, 3, ("stop", "completed")):
        assert sanitize_artifact(artifact) is None


def test_sanitizer_caps_the_number_of_fields() -> None:
    artifact = {"stop": True, "reason": "completed"} | {f"f{i}": i for i in range(40)}
    sanitized = sanitize_artifact(artifact)
    assert sanitized is not None and len(sanitized) == MAX_FIELDS
    assert sanitized["stop"] is True and sanitized["reason"] == "completed"


SECRET = "sk-planted-artifact-0123456789"
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=80),
    st.just(SECRET),
    st.just(f"prefix {SECRET} suffix"),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.one_of(st.text(max_size=45), st.integers()), values, max_size=24))
def test_sanitized_artifacts_are_small_scalars_and_never_carry_the_secret(
    artifact: dict[Any, Any],
) -> None:
    before = repr(artifact)
    sanitized = sanitize_artifact(artifact)
    assert repr(artifact) == before
    assert sanitized is not None and len(sanitized) <= MAX_FIELDS
    assert set(sanitized) <= set(artifact)
    for key, value in sanitized.items():
        assert isinstance(key, str) and not is_sensitive_key(key)
        assert value is None or isinstance(value, bool | int | float | str)
        assert not isinstance(value, str) or len(value) <= MAX_STRING_CHARS
    assert SECRET not in json.dumps(sanitized)


def test_metadata_scrubber_drops_only_credentials_and_personal_data() -> None:
    metadata = {
        "thread_id": "01a2284b-24b7-7592-a58f-4b0db0563235",
        "stop_rule": "completed",
        "stop_artifact": {"stop": True, "reason": "completed"},
        "input_tokens": 12,
        "LANGSMITH_NOTE": "sk-planted-env-0123456789",
        "LANGSMITH_ENDPOINT": "https://user:hunter2@ls.example.com",
        "api_key": "anything",
        "owner_email": "someone",
        "model_name": "offline",
    }
    scrubbed = scrub_metadata(metadata)
    assert scrubbed == {
        k: metadata[k]
        for k in ("thread_id", "stop_rule", "stop_artifact", "input_tokens", "model_name")
    }
    assert "LANGSMITH_NOTE" in metadata  # a new dict; the input is unchanged


def test_langsmith_secret_rules_are_used_and_the_left_out_ones_still_exist() -> None:
    patterns = [rule["pattern"].pattern for rule in DEFAULT_SECRET_RULES]
    for prefix in LANGSMITH_RULES_LEFT_OUT:
        assert sum(p.startswith(prefix) for p in patterns) == 1, prefix
    # found by langsmith's rules, not by this project's own patterns
    assert looks_secret("npm_" + "a1" * 18)
    assert looks_secret("token ya29.a0AfH6SMBx")
    assert looks_secret("SG." + "a" * 22 + "." + "b" * 43)
    assert looks_secret("x-api-key: abcdefgh1234")
    assert not looks_secret("completed")
