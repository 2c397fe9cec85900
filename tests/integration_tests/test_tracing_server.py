"""Stop metadata and redaction through the real `langgraph dev`, traced into the collector.

Two servers serve the project's own graphs plus two graphs built with extra tools (an
invalid artifact, no artifact, a raising tool, a tool that leaks secrets), from a config
written next to them in a temporary folder. Their environment plants secrets
(``GROQ_API_KEY``, a ``LANGSMITH_*`` variable the langsmith client copies into metadata,
a custom variable) and points Groq at the loopback ``FakeGroq``. The redacting server runs
every scenario, every extra rule, the secret-bearing tools and one Groq run on both graphs;
the root run of each trace is the API's ``run_id``. The server with
``AGENT_REDACT_TRACES=false`` reruns the secret-bearing cases: content arrives, keys do
not, and the metadata is the same. The server with ``AGENT_REDACT_TRACES=secrets`` reruns
them with secret-shaped strings pasted into the message: content arrives, every pasted
secret is masked, and the metadata is the same again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from agent.tracing.metadata import FEEDBACK_KEYS, SAVED_KEYS, STOP_KEYS, TOTAL_KEYS
from agent.tracing.prices import PRICES, usd
from client.scenarios import GRAPHS, SCENARIOS
from tests.support.api import user_input, values_of
from tests.support.dev_server import CONFIG, ROOT, dev_server
from tests.support.fake_groq import FakeGroq
from tests.support.langsmith_collector import LangSmithCollector
from tests.support.tracing import (
    EXPECTED_TRACES,
    EXTRA_CASES,
    PASTED_SECRETS,
    as_json,
    matches_events,
    metadata,
    observed_trace,
    same_across_graphs,
    stop_keys_nowhere_else,
    trace_ended,
)

USER_SECRET = "my-planted-user-passphrase-6631"
TOOL_SECRET = "planted-tool-content-secret-8892"
KEY_SECRET = "planted-artifact-key-field-4252"
VALUE_SECRET = "sk-planted-artifact-value-3829"
ERROR_SECRET = "planted-exception-text-2729"
ENV_SECRET = "sk-planted-env-langsmith-2525"
CUSTOM_SECRET = "planted-custom-env-secret-3636"
GROQ_SECRET = "gsk_planted0groq0key0000000002"
ALWAYS_HIDDEN = (KEY_SECRET, VALUE_SECRET, ENV_SECRET, CUSTOM_SECRET, GROQ_SECRET)
OFFLINE = {"model": "offline"}
IN_FLIGHT = 16

EXTRA_GRAPHS = f'''
"""Graphs with extra tools, served only by tests/integration_tests/test_tracing_server.py."""

from typing import Any

from langchain_core.tools import tool

from agent.graphs.legacy import build_legacy
from agent.graphs.middleware import build_middleware
from agent.tools import TOOLS


def artifact_tool(name: str, artifact: Any) -> Any:
    @tool(name, response_format="content_and_artifact")
    def _tool(query: str) -> tuple[str, Any]:
        """Return a fixed artifact."""
        return f"fixed result for {{query}}", artifact

    return _tool


@tool
def plain(query: str) -> str:
    """A tool without an artifact."""
    return f"plain result for {{query}}"


@tool(response_format="content_and_artifact")
def raiser(query: str) -> tuple[str, dict[str, Any]]:
    """A tool that raises."""
    raise RuntimeError(f"backend exploded on {{query}}")


@tool(response_format="content_and_artifact")
def leaky(query: str) -> tuple[str, dict[str, Any]]:
    """Answer with a secret in the content and in the artifact."""
    artifact = {{
        "stop": True,
        "reason": "completed",
        "api_key": "{KEY_SECRET}",
        "note": "{VALUE_SECRET}",
        "topic": "vault",
    }}
    return f"{TOOL_SECRET}: {{query}}", artifact


@tool(response_format="content_and_artifact")
def exploding(query: str) -> tuple[str, dict[str, Any]]:
    """Raise with a secret in the exception text."""
    raise ConnectionError(f"upstream said {ERROR_SECRET} for {{query}}")


EXTRA = [
    artifact_tool("weird", {{"stop": "false", "reason": "completed"}}),
    artifact_tool("odd", "stop"),
    plain,
    raiser,
    leaky,
    exploding,
]
legacy = build_legacy([*TOOLS, *EXTRA])
middleware = build_middleware([*TOOLS, *EXTRA])
'''

SECRET_CASES: dict[str, tuple[str, dict[str, Any], str]] = {
    # name: (user text, context, final rule)
    "leaky": (f"leaky: {USER_SECRET}", OFFLINE, "completed"),
    # polish: the model quotes the tool's content in its answer (and streams it)
    "leaky-polish": (f"leaky: {USER_SECRET}", {**OFFLINE, "stop_mode": "polish"}, "completed"),
    "exploding": (f"exploding: {USER_SECRET}", OFFLINE, "tool_error"),
}


@dataclass(frozen=True)
class Case:
    """One run to make on both graphs."""

    name: str
    query: str
    context: dict[str, Any]
    rule: str
    extra: bool = False
    """Served by the graphs with the extra tools."""

    def graph_id(self, graph: str) -> str:
        return f"{graph}_extra" if self.extra else graph


@dataclass
class Traced:
    run_id: str
    values: dict[str, Any]
    events: list[dict[str, Any]]


CASES = [Case(s.name, s.query, {**OFFLINE, **s.context}, s.rule) for s in SCENARIOS]
CASES += [Case(n, q, OFFLINE, rule, extra=True) for n, (q, rule) in EXTRA_CASES.items()]
CASES += [Case(n, q, c, rule, extra=True) for n, (q, c, rule) in SECRET_CASES.items()]
GROQ_CASE = Case(
    "groq-default-model", "How does a checkpointer work?", {"force_outcome": "success"}, "completed"
)
"""No ``model`` in the context: with ``GROQ_API_KEY`` set, the default is Groq (FakeGroq)."""


def write_config(folder: Path) -> Path:
    """The project's langgraph.json plus the two extra graphs, in a folder of its own.

    Everything else is the project's own (its ``env`` file aside: the test sets the env).
    """
    project = json.loads(CONFIG.read_text("utf-8"))
    (folder / "tracing_graphs.py").write_text(EXTRA_GRAPHS, "utf-8")
    config = {key: value for key, value in project.items() if key != "env"}
    config["dependencies"] = [str(ROOT)]
    config["graphs"] = {
        **project["graphs"],
        **{f"{g}_extra": f"{folder / 'tracing_graphs.py'}:{g}" for g in GRAPHS},
    }
    path = folder / "langgraph.json"
    path.write_text(json.dumps(config), "utf-8")
    return path


Loopback = tuple[LangSmithCollector, FakeGroq, Path]


@pytest.fixture(scope="module")
def loopback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loopback]:
    config = write_config(tmp_path_factory.mktemp("tracing-config"))
    with LangSmithCollector() as collector, FakeGroq() as groq:
        yield collector, groq, config


def server_env(collector: LangSmithCollector, groq: FakeGroq, redact: bool | str) -> dict[str, str]:
    mode = redact if isinstance(redact, str) else "true" if redact else "false"
    return collector.env() | {
        "AGENT_REDACT_TRACES": mode,
        "GROQ_API_KEY": GROQ_SECRET,
        "GROQ_API_BASE": groq.url,
        "LANGSMITH_PLANTED_NOTE": ENV_SECRET,
        "AGENT_PLANTED_SECRET": CUSTOM_SECRET,
        "LANGSMITH_REVISION_ID": "tracing-server-test",
    }


async def run_all(url: str, cases: list[Case]) -> dict[tuple[str, str], Traced]:
    """Run every case on both graphs, IN_FLIGHT at a time; stream the custom events."""
    client = get_client(url=url)
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def one(case: Case, graph: str) -> tuple[tuple[str, str], Traced]:
        async with gate:
            thread_id = (await client.threads.create())["thread_id"]
            run_id, events = "", []
            async for part in client.runs.stream(
                thread_id,
                case.graph_id(graph),
                input=user_input(case.query),
                context=case.context,
                stream_mode=["custom"],
            ):
                assert part.event != "error", part.data
                if part.event == "metadata":
                    run_id = part.data["run_id"]
                elif part.event == "custom":
                    events.append(part.data["stop_decision"])
            state = await client.threads.get_state(thread_id)
            return (case.name, graph), Traced(run_id, dict(values_of(state["values"])), events)

    try:
        done = await asyncio.gather(*(one(c, g) for c in cases for g in GRAPHS))
    finally:
        await client.aclose()
    return dict(done)


def wait_for_roots(
    collector: LangSmithCollector, traced: dict[tuple[str, str], Traced]
) -> dict[str, Any]:
    """Wait until every trace has ended and holds a deciding run per streamed decision.

    A trace's runs reach the collector in several batches: the root's end can arrive
    before its children's first post, so an ended root alone does not mean a whole trace
    (a deciding run per streamed decision and a tool run per call that ran must be there).
    """

    def arrived(runs: dict[str, Any], graph: str, t: Traced) -> bool:
        if not trace_ended(runs, t.run_id):
            return False
        trace = observed_trace(runs, t.run_id, graph)
        ran = [m for m in t.values["messages"] if m["type"] == "tool" and not refused(m)]
        return len(trace["deciding"]) >= len(t.events) and len(trace["tools"]) >= len(ran)

    def whole(runs: dict[str, Any]) -> bool:
        return all(arrived(runs, graph, t) for (_, graph), t in traced.items())

    return collector.wait_for(whole, timeout=60)


def refused(message: dict[str, Any]) -> bool:
    """Whether a tool message is the spend-cap policy's refusal (its call never ran)."""
    artifact = message.get("artifact")
    return isinstance(artifact, dict) and artifact.get("reason") == "policy_block"


def check(case: Case, graph: str, traced: Traced, runs: dict[str, Any]) -> dict[str, Any]:
    trace = observed_trace(runs, traced.run_id, graph)
    assert matches_events(trace, traced.events), (case.name, graph)
    if case.name in EXPECTED_TRACES:
        assert as_json(same_across_graphs(trace)) == EXPECTED_TRACES[case.name], case.name
    # A refused call never ran, so it has no tool run; the other calls did.
    ran = [
        m["tool_call_id"]
        for m in traced.values["messages"]
        if m["type"] == "tool" and not refused(m)
    ]
    assert sorted(ran) == [tool_call_id for tool_call_id, _ in trace["tools"]], case.name
    assert trace["root"]["stop_rule"] == case.rule, (case.name, graph)
    assert trace["tags"][-1] == [f"stop:{case.rule}"]
    stop_keys_nowhere_else(runs, traced.run_id, graph)
    return trace


@pytest.fixture(scope="module")
def redacting(
    loopback: Loopback,
) -> Iterator[tuple[dict[tuple[str, str], Traced], dict[str, Any], bytes]]:
    collector, groq, config = loopback
    with dev_server(
        env=server_env(collector, groq, redact=True),
        args=["--n-jobs-per-worker", str(IN_FLIGHT)],
        config=config,
    ) as server:
        traced = asyncio.run(run_all(server.url, [*CASES, GROQ_CASE]))
        runs = wait_for_roots(collector, traced)
    yield traced, runs, b"".join(collector.run_traffic)
    collector.clear()


def test_every_rule_through_the_server_has_the_same_metadata_on_both_graphs(
    redacting: tuple[dict[tuple[str, str], Traced], dict[str, Any], bytes],
) -> None:
    traced, runs, _ = redacting
    for case in CASES:
        seen = {graph: check(case, graph, traced[case.name, graph], runs) for graph in GRAPHS}
        assert same_across_graphs(seen["legacy"]) == same_across_graphs(seen["middleware"])
        # The root run of the trace is the API's run.
        for graph in GRAPHS:
            root = runs[traced[case.name, graph].run_id]
            assert not root.get("parent_run_id")
            assert metadata(root)["run_id"] == root["id"]


def test_every_root_run_says_what_its_stop_saved_in_metadata_and_feedback(
    redacting: tuple[dict[tuple[str, str], Traced], dict[str, Any], bytes],
    loopback: Loopback,
) -> None:
    traced, runs, _ = redacting
    collector = loopback[0]
    hard = {
        t.run_id: t.values["stop_decision"]["saved"]
        for t in traced.values()
        if (t.values.get("stop_decision") or {}).get("saved")
    }
    assert hard, "some runs stopped hard"

    def arrived(_: Any) -> bool:
        sent = {str(f.get("run_id")) for f in collector.feedback}
        return all(run_id in sent for run_id in hard)

    collector.wait_for(arrived, timeout=60)
    for (name, graph), one in traced.items():
        root = metadata(runs[one.run_id])
        saved = hard.get(one.run_id)
        price = PRICES.get(root["model_name"] or "")
        calls, read, written = (
            (saved["model_calls"], saved["input_tokens"], saved["output_tokens"])
            if saved
            else (0, 0, 0)
        )
        assert {k: root[k] for k in SAVED_KEYS} == {
            "stop_saved_model_calls": calls,
            "stop_saved_input_tokens": read,
            "stop_saved_output_tokens": written,
            "stop_saved_usd": usd(read, written, price) if price else None,
            "stop_saved_subagent_model_calls": 0,  # no subagents in the demo's graphs
        }, (name, graph)
        feedback = {
            f["key"]: f["score"] for f in collector.feedback if str(f.get("run_id")) == one.run_id
        }
        if saved is None:
            assert feedback == {}, (name, graph)
            continue
        assert feedback[FEEDBACK_KEYS["stop_saved_model_calls"]] == calls, (name, graph)
        # A stop that leaves a part to retry also saves the retry round.
        assert calls in (1, 2), (name, graph)
        assert feedback[FEEDBACK_KEYS["stop_saved_input_tokens"]] == read
        assert ("stop_saved_micro_usd" in feedback) == (price is not None), (name, graph)
    groq = metadata(runs[traced[GROQ_CASE.name, "legacy"].run_id])
    assert groq["model_name"] == "llama-3.3-70b-versatile" and groq["stop_saved_usd"] > 0


def test_planted_secrets_never_reach_the_collector_with_redaction_on(
    redacting: tuple[dict[tuple[str, str], Traced], dict[str, Any], bytes],
    loopback: Loopback,
) -> None:
    traced, runs, sent = redacting
    for secret in (USER_SECRET, TOOL_SECRET, ERROR_SECRET, *ALWAYS_HIDDEN):
        assert secret.encode() not in sent, secret
    assert b"[redacted]" in sent
    # The planted values were really there: the Groq key was used, the content was made.
    groq = loopback[1]
    assert f"Bearer {GROQ_SECRET}" in groq.auth_headers
    leaky = traced["leaky", "legacy"].values["messages"]
    assert any(TOOL_SECRET in str(m.get("content")) for m in leaky)
    for graph in GRAPHS:
        root = metadata(runs[traced[GROQ_CASE.name, graph].run_id])
        served = traced[GROQ_CASE.name, graph].values["messages"][1]["response_metadata"]
        assert root["model_name"] == served["model_name"] != "offline"
        check(GROQ_CASE, graph, traced[GROQ_CASE.name, graph], runs)


def test_redaction_off_sends_content_but_no_keys_and_the_same_metadata(
    redacting: tuple[dict[tuple[str, str], Traced], dict[str, Any], bytes],
    loopback: Loopback,
) -> None:
    traced_on, runs_on, _ = redacting
    collector, groq, config = loopback
    cases = [
        c for c in CASES if c.name in (*SECRET_CASES, "success-hard", "retry_then_success-polish")
    ]
    with dev_server(env=server_env(collector, groq, redact=False), config=config) as server:
        traced_off = asyncio.run(run_all(server.url, cases))
        runs_off = wait_for_roots(collector, traced_off)
    sent = b"".join(collector.run_traffic)
    for secret in (USER_SECRET, TOOL_SECRET, ERROR_SECRET):
        assert secret.encode() in sent, secret
    for secret in ALWAYS_HIDDEN:
        assert secret.encode() not in sent, secret
    for case in cases:
        for graph in GRAPHS:
            on = observed_trace(runs_on, traced_on[case.name, graph].run_id, graph)
            off = check(case, graph, traced_off[case.name, graph], runs_off)
            assert off == on, (case.name, graph)
            root_on = metadata(runs_on[traced_on[case.name, graph].run_id])
            root_off = metadata(runs_off[traced_off[case.name, graph].run_id])
            keys = (*STOP_KEYS, *TOTAL_KEYS, *SAVED_KEYS)
            assert {k: root_off[k] for k in keys} == {k: root_on[k] for k in keys}


def test_secrets_mode_sends_content_with_every_pasted_secret_masked(
    redacting: tuple[dict[tuple[str, str], Traced], dict[str, Any], bytes],
    loopback: Loopback,
) -> None:
    traced_on, runs_on, _ = redacting
    collector, groq, config = loopback
    pasted = " ".join(p for p, _ in PASTED_SECRETS.values())
    cases = [
        dataclasses.replace(c, query=f"{c.query} {pasted}")
        for c in CASES
        if c.name in (*SECRET_CASES, "success-hard")
    ]
    with dev_server(env=server_env(collector, groq, redact="secrets"), config=config) as server:
        traced = asyncio.run(run_all(server.url, cases))
        runs = wait_for_roots(collector, traced)
    sent = b"".join(collector.run_traffic)
    collector.clear()
    for kept in (USER_SECRET, TOOL_SECRET, ERROR_SECRET):
        assert kept.encode() in sent, kept
    for kind, (_, secret) in PASTED_SECRETS.items():
        assert secret.encode() not in sent, kind
    for secret in ALWAYS_HIDDEN:
        assert secret.encode() not in sent, secret
    for case in cases:
        for graph in GRAPHS:
            assert traced[case.name, graph].values["stop_decision"]["rule"] == case.rule
            masked = check(case, graph, traced[case.name, graph], runs)
            on = observed_trace(runs_on, traced_on[case.name, graph].run_id, graph)
            # The same stop metadata; token counts differ (the pasted text is longer).
            assert {k: v for k, v in masked.items() if k != "root"} == {
                k: v for k, v in on.items() if k != "root"
            }, (case.name, graph)
            stop = {k: masked["root"][k] for k in STOP_KEYS}
            assert stop == {k: on["root"][k] for k in STOP_KEYS}, (case.name, graph)
