"""Stop decisions as LangSmith run metadata, in-process, against the loopback collector.

For both graphs and every rule (the whole scenario matrix plus invalid_artifact,
tool_error, no_artifact and a run where no tool ran), the deciding run, each tool run and
the root run carry the expected metadata, and the two graphs send the same keys and
values. Tracing is on only inside these tests: each run is wrapped in
``langsmith.tracing_context(enabled=True, client=...)``; no tracing variable is set.

The helpers at the top are shared with ``tests/integration_tests/test_tracing_server.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import langsmith
import pytest
from langchain_core.messages import BaseMessage, message_to_dict
from langsmith.env import get_langchain_env_var_metadata

from agent.client.scenarios import GRAPHS, SCENARIOS, STOP_NODE, Scenario, by_name
from agent.tools import TOOLS
from agent.tracing.allowlist import sanitize_artifact
from agent.tracing.client import trace_client
from agent.tracing.metadata import STOP_KEYS, TAG_PREFIX, TOTAL_KEYS
from tests.support.extra_tools import artifact_tool, plain, raiser
from tests.support.langsmith_collector import LangSmithCollector
from tests.unit_tests.conftest import Observed, build, run

DECIDING_NODE = {"legacy": "tools", "middleware": STOP_NODE}
"""The node whose run decides a tool step, per graph."""

NOT_RECORDED = "<no stop_artifact>"
"""A tool run that raised records no artifact."""

# --------------------------------------------------------------------------- shared helpers


def as_dicts(messages: Sequence[BaseMessage | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages as the API returns them: ``{"type": ..., "content": ..., ...}``."""
    out = []
    for message in messages:
        if isinstance(message, BaseMessage):
            out.append({"type": message.type, **message_to_dict(message)["data"]})
        else:
            out.append(dict(message))
    return out


def _turn(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    humans = [i for i, m in enumerate(messages) if m["type"] == "human"]
    return messages[humans[-1] + 1 :] if humans else messages


def _stop_metadata(decision: Mapping[str, Any] | None, tools: Mapping[str, Any]) -> dict[str, Any]:
    if decision is None:
        return dict.fromkeys(STOP_KEYS)
    message = tools.get(decision["tool_call_id"])
    return {
        "stop_action": decision["action"],
        "stop_rule": decision["rule"],
        "stop_reason": decision["reason"],
        "stop_tool": decision["tool"],
        "stop_tool_call_id": decision["tool_call_id"],
        "stop_answer_from": decision["answer_from"],
        "stop_artifact": sanitize_artifact(message.get("artifact")) if message else None,
    }


def _refused(artifact: object) -> bool:
    """A policy refusal: the tool never ran, so it has no run of its own."""
    return isinstance(artifact, dict) and artifact.get("reason") == "policy_block"


def expected_trace(
    messages: Sequence[BaseMessage | Mapping[str, Any]],
    decisions: Sequence[Mapping[str, Any]],
    final: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """What the trace must show, derived from the final state and the custom events.

    Args:
        messages: The thread's final messages (objects or API dicts).
        decisions: The ``stop_decision`` custom events, in order.
        final: The ``stop_decision`` in the final state.
    """
    turn = _turn(as_dicts(messages))
    tools = {m["tool_call_id"]: m for m in turn if m["type"] == "tool"}
    ais = [m for m in turn if m["type"] == "ai"]
    model_calls = [m for m in ais if m.get("usage_metadata")]  # a relayed answer has none
    ran = [m for m in tools.values() if not _refused(m.get("artifact"))]
    return {
        "deciding": [_stop_metadata(d, tools) for d in decisions],
        "tags": [[f"{TAG_PREFIX}{d['rule']}"] for d in decisions],
        "tools": sorted(
            (
                m["tool_call_id"],
                NOT_RECORDED
                if m.get("status") == "error"
                else sanitize_artifact(m.get("artifact")),
            )
            for m in ran
        ),
        "root": {
            **_stop_metadata(final, tools),
            "model_calls": len(model_calls),
            "tool_calls": len(tools),
            "input_tokens": sum(m["usage_metadata"]["input_tokens"] for m in model_calls),
            "output_tokens": sum(m["usage_metadata"]["output_tokens"] for m in model_calls),
            "model_name": model_calls[-1]["response_metadata"]["model_name"],
        },
    }


def metadata(run: Mapping[str, Any]) -> dict[str, Any]:
    return dict((run.get("extra") or {}).get("metadata") or {})


def observed_trace(
    runs: Mapping[str, Mapping[str, Any]], root_id: str, graph: str
) -> dict[str, Any]:
    """What the collector received for one trace, in the shape of :func:`expected_trace`."""
    trace = sorted(
        (r for r in runs.values() if r.get("trace_id") == root_id),
        key=lambda r: str(r.get("dotted_order")),
    )
    deciding = [
        r for r in trace if r.get("name") == DECIDING_NODE[graph] and "stop_rule" in metadata(r)
    ]
    return {
        "deciding": [{k: metadata(r)[k] for k in STOP_KEYS} for r in deciding],
        "tags": [[t for t in r.get("tags") or [] if t.startswith(TAG_PREFIX)] for r in deciding],
        "tools": sorted(
            (r["extra"]["tool_call_id"], metadata(r).get("stop_artifact", NOT_RECORDED))
            for r in trace
            if r.get("run_type") == "tool"
        ),
        "root": {k: metadata(runs[root_id]).get(k, "<missing>") for k in STOP_KEYS + TOTAL_KEYS},
    }


TOKEN_KEYS = ("input_tokens", "output_tokens")


def same_across_graphs(trace: dict[str, Any]) -> dict[str, Any]:
    """The trace without token counts, which both graphs must agree on.

    Token counts are checked per graph against its own state: they differ between the graphs
    because ``create_agent`` names its AIMessages (``name="middleware"``) and the offline
    model counts that name among the next call's input tokens.
    """
    root = {k: v for k, v in trace["root"].items() if k not in TOKEN_KEYS}
    return {**trace, "root": root}


def stop_keys_nowhere_else(runs: Mapping[str, Mapping[str, Any]], root_id: str, graph: str) -> None:
    """Only the root run and the deciding runs carry ``stop_rule``."""
    for run_ in runs.values():
        if run_.get("trace_id") != root_id or run_["id"] == root_id:
            continue
        if "stop_rule" in metadata(run_):
            assert run_["name"] == DECIDING_NODE[graph], run_["name"]


def root_of(collector: LangSmithCollector, name: str, thread_id: str) -> dict[str, Any]:
    """Wait until the root run of a thread's trace has ended and carries the totals."""

    def done(runs: dict[str, dict[str, Any]]) -> bool:
        return any(
            r.get("name") == name
            and not r.get("parent_run_id")
            and r.get("end_time")
            and metadata(r).get("thread_id") == thread_id
            and "model_calls" in metadata(r)
            for r in runs.values()
        )

    runs = collector.wait_for(done)
    [root] = [
        r
        for r in runs.values()
        if r.get("name") == name
        and not r.get("parent_run_id")
        and metadata(r).get("thread_id") == thread_id
    ]
    return root


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[LangSmithCollector]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("LANGSMITH_REVISION_ID", "tracing-test")  # no `git describe`
    get_langchain_env_var_metadata.cache_clear()  # langsmith caches the env it copies
    with LangSmithCollector() as server:
        yield server
    get_langchain_env_var_metadata.cache_clear()


async def trace_both(
    collector: LangSmithCollector,
    text: str,
    context: dict[str, Any] | None = None,
    *,
    tools: Sequence[Any] = TOOLS,
    redact: bool = True,
    thread_id: str = "t",
) -> dict[str, tuple[Observed, dict[str, Any], dict[str, dict[str, Any]]]]:
    """Run both graphs with tracing on (for these calls only).

    Returns:
        Per graph: the observed run, its root run, and every run the collector holds.
    """
    client = trace_client(redact_content=redact, api_url=collector.url, api_key="dummy")
    observed: dict[str, Observed] = {}
    with langsmith.tracing_context(enabled=True, client=client, project_name="tracing-test"):
        for graph_name in GRAPHS:
            graph = build(graph_name, tools)
            observed[graph_name] = await run(graph, text, context, f"{graph_name}-{thread_id}")
    client.flush()
    roots = {g: root_of(collector, g, f"{g}-{thread_id}") for g in GRAPHS}
    runs = collector.runs_snapshot()
    return {g: (observed[g], roots[g], runs) for g in GRAPHS}


def decisions_of(observed: Observed) -> list[dict[str, Any]]:
    return [event["stop_decision"] for event in observed.events if "stop_decision" in event]


# --------------------------------------------------------------------------- extra tools


EXTRA_TOOLS = [
    artifact_tool("weird", {"stop": "false", "reason": "completed"}),
    artifact_tool("odd", "stop"),
    plain,
    raiser,
]

EXTRA_CASES = {
    # name: (query, rule of the one tool step)
    "invalid_artifact-dict": ("weird: anything", "invalid_artifact"),
    "invalid_artifact-string": ("odd: anything", "invalid_artifact"),
    "no_artifact": ("plain: anything", "no_artifact"),
    "tool_error-raises": ("raiser: anything", "tool_error"),
    "tool_error-bad_arguments": ("checkout: a lamp", "tool_error"),
}


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_every_scenario_puts_the_same_metadata_on_both_graphs(
    collector: LangSmithCollector, scenario: Scenario
) -> None:
    seen: dict[str, dict[str, Any]] = {}
    both = await trace_both(collector, scenario.query, scenario.context, thread_id=scenario.name)
    for graph_name, (observed, root, runs) in both.items():
        trace = observed_trace(runs, root["id"], graph_name)
        decisions = decisions_of(observed)
        assert trace == expected_trace(observed.messages, decisions, observed.decision)
        # The expectation above is derived from the run; pin it to the scenario table too.
        assert len(trace["deciding"]) == scenario.tool_steps
        assert trace["deciding"][-1]["stop_rule"] == scenario.rule
        assert trace["deciding"][-1]["stop_action"] == scenario.action
        assert trace["tags"][-1] == [f"stop:{scenario.rule}"]
        assert trace["root"]["stop_rule"] == scenario.rule
        assert trace["root"]["model_calls"] == scenario.model_calls
        assert trace["root"]["tool_calls"] == sum(scenario.calls or (1,) * scenario.tool_steps)
        assert trace["root"]["model_name"] == "offline"
        assert trace["root"]["input_tokens"] > 0 and trace["root"]["output_tokens"] > 0
        if scenario.rule == "policy_block":
            # The refused call never ran, so it has no tool run; the mouse's checkout did.
            blocked = observed.decision["tool_call_id"]
            assert blocked not in [tool_call_id for tool_call_id, _ in trace["tools"]]
            assert len(trace["tools"]) == sum(scenario.calls or (1,)) - 1
        stop_keys_nowhere_else(runs, root["id"], graph_name)
        seen[graph_name] = trace
    assert same_across_graphs(seen["legacy"]) == same_across_graphs(seen["middleware"])


@pytest.mark.parametrize("case", list(EXTRA_CASES))
async def test_malformed_and_failing_tools_put_the_same_metadata_on_both_graphs(
    collector: LangSmithCollector, case: str
) -> None:
    query, rule = EXTRA_CASES[case]
    seen: dict[str, dict[str, Any]] = {}
    both = await trace_both(collector, query, tools=[*TOOLS, *EXTRA_TOOLS], thread_id=case)
    for graph_name, (observed, root, runs) in both.items():
        trace = observed_trace(runs, root["id"], graph_name)
        assert trace == expected_trace(observed.messages, decisions_of(observed), observed.decision)
        assert [d["stop_rule"] for d in trace["deciding"]] == [rule]
        assert trace["root"]["stop_rule"] == rule
        assert trace["root"]["stop_action"] == "continue"
        assert trace["root"]["model_calls"] == 2  # the step continued to the model
        assert trace["tags"] == [[f"stop:{rule}"]]
        assert len(trace["tools"]) == 1
        seen[graph_name] = trace
    assert same_across_graphs(seen["legacy"]) == same_across_graphs(seen["middleware"])
    artifact = seen["legacy"]["tools"][0][1]
    if case == "invalid_artifact-dict":
        assert artifact == {"stop": "false", "reason": "completed"}  # kept: it shows why
    elif case.startswith("tool_error"):
        assert artifact == NOT_RECORDED
    else:
        assert artifact is None  # a string artifact or none at all


async def test_root_run_without_any_tool_call_has_stop_keys_set_to_none(
    collector: LangSmithCollector,
) -> None:
    seen = {}
    both = await trace_both(collector, "hello there", tools=[TOOLS[1]], thread_id="no-tool")
    for graph_name, (observed, root, runs) in both.items():
        assert observed.decision is None
        trace = observed_trace(runs, root["id"], graph_name)
        assert trace == expected_trace(observed.messages, [], None)
        assert trace["root"] | dict.fromkeys(TOTAL_KEYS) == dict.fromkeys(STOP_KEYS + TOTAL_KEYS)
        assert (trace["root"]["model_calls"], trace["root"]["tool_calls"]) == (1, 0)
        assert trace["deciding"] == [] and trace["tools"] == []
        seen[graph_name] = trace
    assert same_across_graphs(seen["legacy"]) == same_across_graphs(seen["middleware"])


async def test_second_turn_counts_from_its_own_user_message(collector: LangSmithCollector) -> None:
    first, second = by_name("retries_exhausted-hard"), by_name("checkout_over_cap-hard")
    client = trace_client(api_url=collector.url, api_key="dummy")
    with langsmith.tracing_context(enabled=True, client=client):
        for graph_name in GRAPHS:
            graph = build(graph_name)
            for scenario in (first, second):
                await run(graph, scenario.query, scenario.context, f"{graph_name}-two-turns")
    client.flush()

    def roots(runs: dict[str, dict[str, Any]], graph_name: str) -> list[dict[str, Any]]:
        return sorted(
            (
                r
                for r in runs.values()
                if r.get("name") == graph_name
                and r.get("end_time")
                and metadata(r).get("thread_id") == f"{graph_name}-two-turns"
                and "model_calls" in metadata(r)
            ),
            key=lambda r: str(r["dotted_order"]),
        )

    runs = collector.wait_for(lambda runs: all(len(roots(runs, g)) == 2 for g in GRAPHS))
    for graph_name in GRAPHS:
        for scenario, root in zip((first, second), roots(runs, graph_name), strict=True):
            meta = metadata(root)
            assert meta["stop_rule"] == scenario.rule
            assert meta["model_calls"] == scenario.model_calls
            assert meta["tool_calls"] == scenario.tool_steps
