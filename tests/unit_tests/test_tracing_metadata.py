"""Stop decisions as LangSmith run metadata, in-process, against the loopback collector.

For both graphs and every rule (the whole scenario matrix plus invalid_artifact,
tool_error, no_artifact and a run where no tool ran), the deciding run, each tool run and
the root run carry the metadata the scenario table and the stream's ``stop_decision``
events say, representative runs match literal expectations, and the two graphs send the
same keys and values. Tracing is on only inside these tests: each run is wrapped in
``langsmith.tracing_context(enabled=True, client=...)``; no tracing variable is set.
"""

from __future__ import annotations

from typing import Any

import langsmith
import pytest
from langchain_core.messages import ToolMessage

from agent.tools import TOOLS
from agent.tracing.client import trace_client
from agent.tracing.metadata import STOP_KEYS, TOTAL_KEYS
from client.scenarios import GRAPHS, SCENARIOS, Scenario, by_name
from tests.support.graph_runs import build, run
from tests.support.langsmith_collector import LangSmithCollector
from tests.support.tracing import (
    EXPECTED_TRACES,
    EXTRA_CASES,
    EXTRA_TOOLS,
    NOT_RECORDED,
    as_json,
    decisions_of,
    matches_events,
    metadata,
    observed_trace,
    same_across_graphs,
    stop_keys_nowhere_else,
    trace_both,
)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_every_scenario_puts_the_same_metadata_on_both_graphs(
    collector: LangSmithCollector, scenario: Scenario
) -> None:
    seen: dict[str, dict[str, Any]] = {}
    both = await trace_both(collector, scenario.query, scenario.context, thread_id=scenario.name)
    for graph_name, (observed, root, runs) in both.items():
        trace = observed_trace(runs, root["id"], graph_name)
        assert matches_events(trace, decisions_of(observed))
        assert len(trace["deciding"]) == scenario.tool_steps
        assert trace["deciding"][-1]["stop_rule"] == scenario.rule
        assert trace["deciding"][-1]["stop_action"] == scenario.action
        assert trace["tags"][-1] == [f"stop:{scenario.rule}"]
        assert trace["root"]["stop_rule"] == scenario.rule
        assert trace["root"]["model_calls"] == scenario.model_calls
        assert trace["root"]["tool_calls"] == sum(scenario.calls or (1,) * scenario.tool_steps)
        assert trace["root"]["model_name"] == "offline"
        assert trace["root"]["input_tokens"] > 0 and trace["root"]["output_tokens"] > 0
        decision = observed.decision
        assert decision is not None
        results = [m for m in observed.messages[1:] if isinstance(m, ToolMessage)]
        # A refused call never ran, so it has no tool run; the other calls did.
        refused = [m.tool_call_id for m in results if m.artifact.get("reason") == "policy_block"]
        if scenario.rule == "policy_block":
            assert decision["tool_call_id"] in refused
        ran = [m.tool_call_id for m in results if m.tool_call_id not in refused]
        assert sorted(ran) == [tool_call_id for tool_call_id, _ in trace["tools"]]
        assert len(trace["tools"]) == sum(scenario.calls or (1,) * scenario.tool_steps) - len(
            refused
        )
        assert trace["root"]["stop_unsettled"] == decision["unsettled"]
        stop_keys_nowhere_else(runs, root["id"], graph_name)
        seen[graph_name] = trace
    assert same_across_graphs(seen["legacy"]) == same_across_graphs(seen["middleware"])
    if scenario.name in EXPECTED_TRACES:
        assert as_json(same_across_graphs(seen["legacy"])) == EXPECTED_TRACES[scenario.name]


@pytest.mark.parametrize("case", list(EXTRA_CASES))
async def test_malformed_and_failing_tools_put_the_same_metadata_on_both_graphs(
    collector: LangSmithCollector, case: str
) -> None:
    query, rule = EXTRA_CASES[case]
    seen: dict[str, dict[str, Any]] = {}
    both = await trace_both(collector, query, tools=[*TOOLS, *EXTRA_TOOLS], thread_id=case)
    for graph_name, (observed, root, runs) in both.items():
        trace = observed_trace(runs, root["id"], graph_name)
        assert matches_events(trace, decisions_of(observed))
        assert [d["stop_rule"] for d in trace["deciding"]] == [rule]
        assert trace["root"]["stop_rule"] == rule
        assert trace["root"]["stop_action"] == "continue"
        assert trace["root"]["model_calls"] == 2  # the step continued to the model
        assert trace["tags"] == [[f"stop:{rule}"]]
        assert len(trace["tools"]) == 1
        seen[graph_name] = trace
    assert same_across_graphs(seen["legacy"]) == same_across_graphs(seen["middleware"])
    if case in EXPECTED_TRACES:
        assert as_json(same_across_graphs(seen["legacy"])) == EXPECTED_TRACES[case]
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
        assert trace["tags"] == []
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
