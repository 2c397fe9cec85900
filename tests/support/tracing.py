"""Reading stop metadata out of what the loopback LangSmith collector received.

Shared by the tracing tests in-process (``tests/unit_tests/test_tracing_*.py``), through
``langgraph dev`` (``tests/integration_tests/test_tracing_server.py``) and on the
production server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import langsmith

from agent.tools import TOOLS
from agent.tracing.client import trace_client
from agent.tracing.metadata import STOP_KEYS, TAG_PREFIX, TOTAL_KEYS
from agent.tracing.redaction import RedactionMode
from client.scenarios import GRAPHS, STOP_LAYERS
from tests.support.extra_tools import artifact_tool, plain, raiser
from tests.support.graph_runs import Observed, build, run
from tests.support.langsmith_collector import LangSmithCollector

DECIDING_NODE = {"legacy": ("tools",), "middleware": STOP_LAYERS}
"""The run that decides a tool step, per graph (a node, or the stop's model-call layer)."""

NOT_RECORDED = "<no stop_artifact>"
"""A tool run that raised records no artifact."""

# --------------------------------------------------------------------------- shared helpers


def metadata(run: Mapping[str, Any]) -> dict[str, Any]:
    return dict((run.get("extra") or {}).get("metadata") or {})


def trace_ended(runs: Mapping[str, Mapping[str, Any]], root_id: str) -> bool:
    """Whether the root run and every run of its trace have arrived ended.

    Waiting for the root alone is not enough: the client sends runs from a background
    queue, so a child's patch (its tags, its end) can still be on its way when the
    root's has arrived.
    """
    root = runs.get(root_id)
    if not root or not root.get("end_time") or "model_calls" not in metadata(root):
        return False
    return all(r.get("end_time") for r in runs.values() if r.get("trace_id") == root_id)


def observed_trace(
    runs: Mapping[str, Mapping[str, Any]], root_id: str, graph: str
) -> dict[str, Any]:
    """What the collector received for one trace, in the shape of :func:`expected_trace`."""
    trace = sorted(
        (r for r in runs.values() if r.get("trace_id") == root_id),
        key=lambda r: str(r.get("dotted_order")),
    )
    deciding = [
        r for r in trace if r.get("name") in DECIDING_NODE[graph] and "stop_rule" in metadata(r)
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
"""Root-run totals that differ between the graphs (see :func:`same_across_graphs`)."""


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
            assert run_["name"] in DECIDING_NODE[graph], run_["name"]


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


async def trace_both(
    collector: LangSmithCollector,
    text: str,
    context: dict[str, Any] | None = None,
    *,
    tools: Sequence[Any] = TOOLS,
    redact: bool = True,
    mode: RedactionMode | None = None,
    thread_id: str = "t",
    project: str = "tracing-test",
) -> dict[str, tuple[Observed, dict[str, Any], dict[str, dict[str, Any]]]]:
    """Run both graphs with tracing on (for these calls only), into the project ``project``.

    ``mode`` (``full``, ``secrets``, ``off``) overrides ``redact`` (``full`` or ``off``).

    Returns:
        Per graph: the observed run, its root run, and every run the collector holds.
    """
    client = trace_client(redact_content=redact, mode=mode, api_url=collector.url, api_key="dummy")
    observed: dict[str, Observed] = {}
    with langsmith.tracing_context(enabled=True, client=client, project_name=project):
        for graph_name in GRAPHS:
            graph = build(graph_name, tools)
            observed[graph_name] = await run(graph, text, context, f"{graph_name}-{thread_id}")
    client.flush()
    roots = {g: root_of(collector, g, f"{g}-{thread_id}") for g in GRAPHS}
    runs = collector.runs_snapshot()
    return {g: (observed[g], roots[g], runs) for g in GRAPHS}


def decisions_of(observed: Observed) -> list[dict[str, Any]]:
    return [event["stop_decision"] for event in observed.events if "stop_decision" in event]


EXTRA_TOOLS = [
    artifact_tool("weird", {"stop": "false", "reason": "completed"}),
    artifact_tool("odd", "stop"),
    plain,
    raiser,
]

EXTRA_CASES = {
    # name: (query, rule of the one tool step)
    "invalid_artifact-dict": ("weird: anything", "invalid_artifact"),
    "not_the_contract-string": ("odd: anything", "no_artifact"),  # a tool's own artifact
    "no_artifact": ("plain: anything", "no_artifact"),
    "tool_error-raises": ("raiser: anything", "tool_error"),
    "tool_error-bad_arguments": ("checkout: a lamp", "tool_error"),
}


def _transient(attempt: int) -> dict[str, Any]:
    return {"stop": False, "reason": "transient", "attempt": attempt, "status": 503}


def _stop(
    action: str,
    rule: str,
    reason: str | None,
    tool: str,
    call: str,
    answer_from: list[str],
    artifact: dict[str, Any] | None,
    unsettled: list[str] | None = None,
    policy: str | None = None,
    approval: str | None = None,
) -> dict[str, Any]:
    return {
        "stop_action": action,
        "stop_rule": rule,
        "stop_reason": reason,
        "stop_tool": tool,
        "stop_tool_call_id": call,
        "stop_answer_from": answer_from,
        "stop_unsettled": unsettled or [],
        "stop_artifact": artifact,
        "stop_policy": policy,
        "stop_approval": approval,
    }


_RETRY_1 = _stop("continue", "transient", "transient", "search", "call_1_0", [], _transient(0))
_RETRY_2 = _stop("continue", "transient", "transient", "search", "call_3_0", [], _transient(1))
_BUDGET = _stop(
    "stop", "retry_budget", "transient", "search", "call_5_0", [], _transient(2), ["call_5_0"]
)
_CAP = {"stop": True, "reason": "policy_block", "policy": "spend_cap", "cap": 500.0}
_RECEIPT = {"stop": True, "reason": "completed", "attempt": 1, "order_id": "ORD-8756256A"}
_BLOCK = _stop(
    "stop", "policy_block", "policy_block", "checkout", "call_1_0", ["call_1_0", "call_1_1"], _CAP
)
_WEIRD = {"stop": "false", "reason": "completed"}
_INVALID = _stop("continue", "invalid_artifact", None, "weird", "call_1_0", [], _WEIRD)
_RAISED = _stop("continue", "tool_error", None, "raiser", "call_1_0", [], None)

EXPECTED_TRACES: dict[str, dict[str, Any]] = {
    # scenario or extra case: what observed_trace shows, without token counts (both graphs)
    "retries_exhausted-polish": {
        "deciding": [_RETRY_1, _RETRY_2, _BUDGET],
        "tags": [["stop:transient"], ["stop:transient"], ["stop:retry_budget"]],
        "tools": [
            ["call_1_0", _transient(0)],
            ["call_3_0", _transient(1)],
            ["call_5_0", _transient(2)],
        ],
        "root": {**_BUDGET, "model_calls": 3, "tool_calls": 3, "model_name": "offline"},
    },
    "parallel-policy_block_and_receipt": {
        "deciding": [_BLOCK],
        "tags": [["stop:policy_block"]],
        # the refused checkout never ran: only the mouse's has a tool run
        "tools": [["call_1_1", {**_RECEIPT, "amount": 20.0}]],
        "root": {**_BLOCK, "model_calls": 1, "tool_calls": 2, "model_name": "offline"},
    },
    "invalid_artifact-dict": {
        "deciding": [_INVALID],
        "tags": [["stop:invalid_artifact"]],
        "tools": [["call_1_0", _WEIRD]],  # kept as sent: it shows why it was invalid
        "root": {**_INVALID, "model_calls": 2, "tool_calls": 1, "model_name": "offline"},
    },
    "tool_error-raises": {
        "deciding": [_RAISED],
        "tags": [["stop:tool_error"]],
        "tools": [["call_1_0", NOT_RECORDED]],
        "root": {**_RAISED, "model_calls": 2, "tool_calls": 1, "model_name": "offline"},
    },
}
"""Literal expectations for representative runs: a retry budget spent over three steps, a
policy refusal beside a completed call, an invalid artifact, a raising tool."""


def as_json(trace: dict[str, Any]) -> dict[str, Any]:
    """A trace with tuples as lists, as :data:`EXPECTED_TRACES` writes them."""
    return {**trace, "tools": [list(pair) for pair in trace["tools"]]}


def matches_events(trace: dict[str, Any], decisions: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the deciding runs' metadata says what the ``stop_decision`` events said."""
    fields = ("action", "rule", "reason", "tool", "tool_call_id", "answer_from", "unsettled")
    said = [
        {
            **{f"stop_{f}": d[f] for f in fields},
            "stop_policy": d.get("policy"),
            "stop_approval": d.get("approval"),
        }
        for d in decisions
    ]
    shown = [{k: v for k, v in run.items() if k != "stop_artifact"} for run in trace["deciding"]]
    return said == shown


PASTED_SECRETS: dict[str, tuple[str, str]] = {
    # kind: (what a user pastes, the part that must not reach a trace)
    "groq key": ("gsk_PlantedGroqKey0a1b2c3d4e5f", "gsk_PlantedGroqKey0a1b2c3d4e5f"),
    "openai key": ("sk-proj-PlantedOpenAi9z8y7x6w", "sk-proj-PlantedOpenAi9z8y7x6w"),
    "langsmith key": (
        "lsv2_pt_0123456789abcdef0123456789abcdef_a1b2c3d4e5",
        "lsv2_pt_0123456789abcdef0123456789abcdef_a1b2c3d4e5",
    ),
    "bearer token": ("Authorization: Bearer Zt0kenPlanted.9981-xy", "Zt0kenPlanted.9981-xy"),
    "jwt": (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.c2lnbmF0dXJlUGxhbnRlZA",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.c2lnbmF0dXJlUGxhbnRlZA",
    ),
    "card number": ("card 4242 4242 4242 4242 exp 12/29", "4242 4242 4242 4242"),
    "url password": ("postgres://app:Pl4ntedDbPw77@db.internal:5432/app", "Pl4ntedDbPw77"),
    "password field": ("password=Hunter2Planted!", "Hunter2Planted!"),
}
"""Secret-shaped strings a user might paste, each with the substring the ``secrets`` trace
mode must mask; ``agent/tracing/masking.py`` must keep the words around them."""
