"""Golden transcripts: every scenario's normalized run, diffed against tests/unit_tests/golden.

Regenerate after an intended change with ``UPDATE_GOLDEN=1 make test`` and review the diff.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from client.scenarios import APPROVAL_SCENARIOS, SCENARIOS, Scenario
from tests.support.graph_runs import Observed, build, run

GOLDEN = Path(__file__).parent / "golden"


def normalize_message(message: BaseMessage) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": message.type, "content": message.content}
    if isinstance(message, AIMessage) and message.tool_calls:
        entry["tool_calls"] = [{"name": c["name"], "args": c["args"]} for c in message.tool_calls]
    if isinstance(message, ToolMessage):
        entry.update(name=message.name, status=message.status, artifact=message.artifact)
    return entry


def transcript(observed: Observed) -> dict[str, Any]:
    decision = dict(observed.decision or {})
    decision.pop("tool_call_id", None)  # an id: normalized away
    entry: dict[str, Any] = {
        "path": observed.path,
        "model_calls": observed.model_calls,
        "stop_decision": decision,
        "events": [e["stop_decision"]["rule"] for e in observed.events],
        "messages": [normalize_message(m) for m in observed.messages],
    }
    if observed.interrupts:
        entry["interrupts"] = observed.interrupts  # the approval requests, as a person sees them
    return entry


@pytest.mark.parametrize("scenario", SCENARIOS + APPROVAL_SCENARIOS, ids=lambda s: s.name)
async def test_golden_transcript(graph_name: str, scenario: Scenario) -> None:
    observed = await run(
        build(graph_name), scenario.query, scenario.context, resume=scenario.resume
    )
    actual = json.dumps(transcript(observed), indent=2, sort_keys=True) + "\n"
    path = GOLDEN / graph_name / f"{scenario.name}.json"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, "utf-8")
    assert path.exists(), f"missing golden transcript {path}; run with UPDATE_GOLDEN=1"
    expected = path.read_text("utf-8")
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(True), actual.splitlines(True), str(path), "actual"
            )
        )
        pytest.fail(f"transcript changed:\n{diff}")
