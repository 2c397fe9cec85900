"""The checks at the door, without a server: ``agent.auth`` on run requests, ``agent.http`` on
framework 422s and on the dev server's own routes.

The servers' tests (``tests/integration_tests/test_api_bad_input.py``,
``tests/prod_tests/test_prod_bad_input.py``, ``test_dev_routes.py``) hold the same promises
through real requests; these pin the shapes each server hands over.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.datastructures import Headers

from agent.auth import STREAM_MODES, run_request_problems
from agent.http import refusal, rewrite_validation_error
from tests.support.bad_input import BAD_RUNS, GOOD_INPUT, SECRET

KEYS = {"k-alice": "alice"}


def dev_value(body: dict[str, Any]) -> dict[str, Any]:
    """What langgraph-api hands the ``threads.create_run`` handler: the run under ``kwargs``."""
    return {"thread_id": None, "metadata": body.get("metadata"), "kwargs": body}


def cron_value(body: dict[str, Any]) -> dict[str, Any]:
    """What langgraph-api hands the ``crons.create`` handler: the run under ``payload``."""
    return {"schedule": "0 0 1 1 *", "payload": body}


CHECKED = [c for c in BAD_RUNS if c.field not in ("metadata", "config")]
"""The cases the handler refuses; the servers' own validation refuses the other two."""


@pytest.mark.parametrize("shape", [dev_value, cron_value, dict], ids=["dev", "cron", "aegra"])
@pytest.mark.parametrize("case", CHECKED, ids=[c.name for c in CHECKED])
def test_every_bad_run_is_named_never_quoted(case: Any, shape: Any) -> None:
    problems = run_request_problems(shape({"input": GOOD_INPUT, **case.body}))
    assert problems and all(case.field in p for p in problems), problems
    assert SECRET not in " ".join(problems)


@pytest.mark.parametrize(
    "body",
    [
        {"input": GOOD_INPUT},
        {"input": None, "command": {"resume": 1}},
        {"input": GOOD_INPUT, "context": {"stop_mode": "polish", "unknown_key": [1]}},
        {"input": GOOD_INPUT, "stream_mode": sorted(STREAM_MODES)},
        {"input": GOOD_INPUT, "context": {"force_outcome": ["transient", "success"]}},
    ],
)
def test_good_runs_pass(body: dict[str, Any]) -> None:
    assert run_request_problems(dev_value(body)) == []
    assert run_request_problems(body) == []


JSONSCHEMA_422 = (
    f'"{SECRET}" is not of type "object"\n\nFailed validating "type" in '
    'schema["components"]["schemas"]["RunCreateStateless"]["properties"]["metadata"]\n\n'
    f'On instance["metadata"]:\n    "{SECRET}"'
)
PYDANTIC_422 = [
    {
        "type": "dict_type",
        "loc": ["body", "config"],
        "msg": "Input should be a valid dictionary",
        "input": SECRET,
        "ctx": {"error": SECRET},
    },
    {"type": "x", "loc": ["body", "metadata", SECRET], "msg": "m", "input": [SECRET]},
]


def test_framework_422s_are_rewritten_to_name_the_field_without_the_value() -> None:
    rewritten = rewrite_validation_error(json.dumps({"detail": JSONSCHEMA_422}).encode())
    assert rewritten is not None
    body, summary = rewritten
    assert json.loads(body) == {"detail": "metadata: expected an object"}
    assert summary == "metadata: expected an object"
    rewritten = rewrite_validation_error(json.dumps({"detail": PYDANTIC_422}).encode())
    assert rewritten is not None
    assert SECRET not in rewritten[0].decode() and SECRET not in rewritten[1]
    items = json.loads(rewritten[0])["detail"]
    assert items[0]["loc"] == ["body", "config"] and "expected an object" in items[0]["msg"]
    assert items[1]["loc"] == ["body", "metadata", "..."]  # a key that could be a secret


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[]", b'{"detail": "context.stop_mode: Input should be ..."}', b"{}"],
)
def test_other_422s_are_left_alone(body: bytes) -> None:
    assert rewrite_validation_error(body) is None


@pytest.mark.parametrize(
    ("path", "headers", "expected"),
    [
        ("/deploy", {"origin": "https://attacker.example"}, 401),  # the key first
        ("/deploy", {"x-api-key": "k-alice", "origin": "https://attacker.example"}, 403),
        ("/deploy", {"x-api-key": "k-alice", "origin": "https://smith.langchain.com"}, None),
        ("/internal/truncate", {"x-api-key": "k-alice"}, 404),  # closed for every key
        ("/internal/debug/thread/x", {}, 401),
    ],
)
def test_guarded_routes_check_the_key_before_the_origin(
    path: str, headers: dict[str, str], expected: int | None
) -> None:
    refused = refusal(Headers(headers), "POST", KEYS, path)
    assert (refused[0] if refused else None) == expected
