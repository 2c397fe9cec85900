"""Bounded loops through the real `langgraph dev`, at the server's default recursion limit.

Runaway models, served the way a deployment serves them:

- the offline model retrying a tool that is transient forever;
- the real ``langchain-groq`` client against a loopback Groq (``FakeGroq``) whose model
  issues a NEW tool call, with a query it never used, on every turn.

No run sets ``recursion_limit``: the server's default applies. Every run must finish with
status ``success``, a checkpointed ``stop_decision`` and its custom event, the rule's
user-safe answer, and no ``GraphRecursionError`` anywhere in the server log.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from stop_on_artifact.testing import (
    ANSWER_SEPARATOR,
    MODEL_CALL_LIMIT_MESSAGE,
)

from agent.context import GROQ_DEFAULT_MODEL, Context
from client.scenarios import GRAPHS, model_calls
from tests.support import fake_groq
from tests.support.api import user_input, values_of
from tests.support.closing import retry_closing
from tests.support.dev_server import DevServer, dev_server
from tests.support.fake_groq import FakeGroq, PlannedReply

DEFAULTS = Context(model="offline")
CEILING = int(
    next(m.le for m in Context.model_fields["max_model_calls"].metadata if hasattr(m, "le"))
)
"""The largest ``max_model_calls`` a context accepts."""


def fresh_calls(body: dict[str, Any]) -> PlannedReply:
    """A runaway model: call the first offered tool with a query never used before."""
    asked = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
    tools = body.get("tools") or []
    if not tools:
        return PlannedReply(content=f"Polished after {asked} calls.")
    function = tools[0]["function"]
    argument = next(iter(function["parameters"]["properties"]))
    question = f"a question never asked before, number {asked}"
    return PlannedReply(tool_calls=[(function["name"], {argument: question})])


@pytest.fixture(scope="module")
def groq() -> Iterator[FakeGroq]:
    with pytest.MonkeyPatch.context() as patch, FakeGroq() as server:
        patch.setattr(fake_groq, "plan_reply", fresh_calls)
        yield server


@pytest.fixture(scope="module")
def loop_server(groq: FakeGroq) -> Iterator[DevServer]:
    env = {"GROQ_API_KEY": "dummy-groq-key", "GROQ_API_BASE": groq.url}
    with dev_server(env=env, args=["--n-jobs-per-worker", "8"]) as running:
        yield running


@pytest.fixture(scope="module")
async def loop_client(loop_server: DevServer) -> AsyncIterator[LangGraphClient]:
    sdk = get_client(url=loop_server.url, api_key=None, timeout=(5, 120, 120, None))
    yield sdk
    await sdk.aclose()


@dataclass
class Case:
    name: str
    context: dict[str, Any]
    rule: str
    model_calls: int
    answer: str
    fresh: bool = field(default=False)
    """True when every tool call must carry a query never used before."""


CASES = [
    Case(
        "offline-transient-forever",
        {"model": "offline", "force_outcome": "retryable"},
        "retry_budget",
        DEFAULTS.max_retries + 1,
        retry_closing("search", DEFAULTS.max_retries + 1),
    ),
    Case(
        "offline-transient-forever-huge-budget",
        {"model": "offline", "force_outcome": "retryable", "max_retries": 50},
        "model_call_limit",
        DEFAULTS.max_model_calls,
        MODEL_CALL_LIMIT_MESSAGE,
    ),
    Case(
        "groq-new-call-every-turn",
        {"model": GROQ_DEFAULT_MODEL, "stop_mode": "never", "force_outcome": "success"},
        "model_call_limit",
        DEFAULTS.max_model_calls,
        MODEL_CALL_LIMIT_MESSAGE,
        fresh=True,
    ),
    Case(
        "groq-new-call-every-turn-polish",
        {
            "model": GROQ_DEFAULT_MODEL,
            "stop_mode": "polish",
            "force_outcome": "retryable",
            "max_retries": 50,
        },
        "model_call_limit",
        DEFAULTS.max_model_calls,
        MODEL_CALL_LIMIT_MESSAGE,
        fresh=True,
    ),
    Case(
        "groq-new-call-every-turn-at-the-ceiling",
        {
            "model": GROQ_DEFAULT_MODEL,
            "force_outcome": "retryable",
            "max_retries": 50,
            "max_model_calls": CEILING,
        },
        "model_call_limit",
        CEILING,
        MODEL_CALL_LIMIT_MESSAGE,
        fresh=True,
    ),
]


@dataclass
class Served:
    path: list[str]
    events: list[dict[str, Any]]
    values: dict[str, Any]
    status: str


async def drive(client: LangGraphClient, graph: str, case: Case) -> Served:
    thread_id = (await client.threads.create())["thread_id"]
    path: list[str] = []
    events: list[dict[str, Any]] = []
    async for part in client.runs.stream(
        thread_id,
        graph,
        input=user_input("Tell me everything."),
        context=case.context,
        stream_mode=["updates", "custom"],
    ):
        assert part.event != "error", (case.name, graph, part.data)
        if part.event == "updates":
            path.extend(part.data)
        elif part.event == "custom":
            events.append(part.data["stop_decision"])
    state = await client.threads.get_state(thread_id)
    runs = await client.runs.list(thread_id)
    assert len(runs) == 1
    return Served(path, events, dict(values_of(state["values"])), runs[0]["status"])


@pytest.fixture(scope="module")
async def served(loop_client: LangGraphClient) -> dict[tuple[str, str], Served]:
    pairs = [(case, graph) for case in CASES for graph in GRAPHS]
    results = await asyncio.gather(*(drive(loop_client, g, c) for c, g in pairs))
    return {(c.name, g): r for (c, g), r in zip(pairs, results, strict=True)}


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_runaway_model_ends_cleanly_on_the_server(
    case: Case, graph: str, served: dict[tuple[str, str], Served]
) -> None:
    run = served[(case.name, graph)]
    assert run.status == "success"

    decision = run.values["stop_decision"]
    assert (decision["action"], decision["rule"]) == ("stop", case.rule)
    assert run.events[-1] == decision
    assert [e["action"] for e in run.events] == ["continue"] * (len(run.events) - 1) + ["stop"]
    assert len(run.events) == case.model_calls

    assert model_calls(run.path, decision) == case.model_calls
    messages = run.values["messages"]
    answer = messages[-1]
    assert answer["type"] == "ai" and not answer.get("tool_calls")
    # Every part of the turn, settled or named as not done, then the user-safe message.
    tools = {m["tool_call_id"]: m for m in messages if m["type"] == "tool"}
    issued = [c["id"] for m in messages if m["type"] == "ai" for c in m.get("tool_calls") or []]
    listed = sorted([*decision["answer_from"], *decision["unsettled"]], key=issued.index)
    sections = answer["content"].split(ANSWER_SEPARATOR)
    assert sections[-1] == case.answer
    assert len(sections) == len(listed) + 1
    for call_id, section in zip(listed, sections, strict=False):
        if call_id in decision["answer_from"]:
            assert section == tools[call_id]["content"]
        else:  # the tool's own not-done line, or the generic one naming the part
            written = (tools[call_id].get("artifact") or {}).get("not_done")
            assert section == written if written else section.startswith("**Not done: ")
    calls = [c["args"] for m in messages if m["type"] == "ai" for c in m.get("tool_calls") or []]
    assert len(calls) == case.model_calls
    if case.fresh:
        assert len({str(c) for c in calls}) == len(calls), "every call was a new one"


def test_the_loopback_model_served_every_fresh_call(
    groq: FakeGroq, served: dict[tuple[str, str], Served]
) -> None:
    expected = sum(c.model_calls for c in CASES if c.context["model"].startswith("groq:")) * len(
        GRAPHS
    )
    assert groq.served == expected
    assert set(groq.auth_headers) == {"Bearer dummy-groq-key"}


def test_no_recursion_error_in_the_server_log(
    loop_server: DevServer, served: dict[tuple[str, str], Served]
) -> None:
    log = loop_server.log()
    assert "GraphRecursionError" not in log
    assert "Recursion limit" not in log
