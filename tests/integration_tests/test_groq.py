"""langchain-groq's real client, inside the dev server, against a loopback Groq.

The server gets `GROQ_API_KEY=dummy` and `GROQ_API_BASE=<FakeGroq>`: the supported
base-URL setting of langchain-groq. Nothing here reaches a real Groq endpoint: every
chat completion the graphs make is answered, and recorded, by `FakeGroq`.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agent.context import GROQ_DEFAULT_MODEL
from agent.tools import TOOLS
from client.e2e import settled_by_artifact
from client.scenarios import GRAPHS, SCENARIOS, Scenario, by_name
from tests.support.api import (
    current_turn,
    model_messages,
    run_request,
    tool_steps,
    user_input,
    values_of,
)
from tests.support.dev_server import DevServer, dev_server
from tests.support.fake_groq import FakeGroq

ROOT = Path(__file__).resolve().parents[2]
PROVIDER_MODEL = GROQ_DEFAULT_MODEL.split(":", 1)[1]
SCENARIO_NAMES = ("success-hard", "retry_then_success-hard", "fatal-hard", "success-polish")


@dataclass
class Served:
    """One chat completion as it went over the wire."""

    request: dict[str, Any]
    authorization: str | None
    streamed: bool
    tool_call_ids: tuple[str, ...]
    usage: dict[str, Any]

    @property
    def answered_calls(self) -> tuple[str, ...]:
        """Tool call ids of the last assistant turn in the request (what it answers)."""
        for message in reversed(self.request["messages"]):
            if message.get("role") == "assistant" and message.get("tool_calls"):
                return tuple(call["id"] for call in message["tool_calls"])
        return ()


class RecordingGroq(FakeGroq):
    """FakeGroq that also keeps what each response carried (ids, usage), as sent."""

    def __init__(self) -> None:
        super().__init__()
        self.wire: list[Served] = []

    def _dispatch(
        self, method: str, path: str, authorization: str | None, body: bytes
    ) -> tuple[int, str, bytes]:
        status, content_type, data = super()._dispatch(method, path, authorization, body)
        if status == 200:
            self.wire.append(_parse(json.loads(body), authorization, content_type, data))
        return status, content_type, data


def _parse(request: dict[str, Any], authorization: str | None, kind: str, data: bytes) -> Served:
    if kind.startswith("text/event-stream"):
        chunks = [
            json.loads(line[len("data: ") :])
            for line in data.decode().splitlines()
            if line.startswith("data: ") and line != "data: [DONE]"
        ]
        ids = tuple(
            call["id"]
            for chunk in chunks
            for choice in chunk["choices"]
            for call in choice["delta"].get("tool_calls", [])
            if call.get("id")
        )
        usage = next(c["x_groq"]["usage"] for c in chunks if "usage" in c.get("x_groq", {}))
        return Served(request, authorization, True, ids, usage)
    payload = json.loads(data)
    calls = payload["choices"][0]["message"].get("tool_calls") or []
    return Served(request, authorization, False, tuple(c["id"] for c in calls), payload["usage"])


def groq_env() -> dict[str, str]:
    """This process's environment without provider, tracing or auth settings."""
    prefixes = ("GROQ_", "LANGSMITH_", "LANGCHAIN_", "AGENT_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env.update({"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    return env


@pytest.fixture(scope="module")
def groq() -> Iterator[RecordingGroq]:
    fake = RecordingGroq()
    with fake:  # FakeGroq.__enter__ is typed to return a FakeGroq, not the subclass
        yield fake


@pytest.fixture(scope="module")
def groq_server(groq: RecordingGroq) -> Iterator[DevServer]:
    env = {"GROQ_API_KEY": "dummy", "GROQ_API_BASE": groq.url}
    with dev_server(env=env, args=["--n-jobs-per-worker", "8"]) as running:
        yield running


@pytest.fixture(scope="module")
async def groq_client(groq_server: DevServer) -> AsyncIterator[LangGraphClient]:
    sdk = get_client(url=groq_server.url, api_key=None)
    yield sdk
    await sdk.aclose()


async def _run(
    client: LangGraphClient, graph: str, scenario: Scenario, streamed: bool
) -> tuple[list[str] | None, dict[str, Any]]:
    thread_id = (await client.threads.create())["thread_id"]
    request = run_request(scenario.query, {**scenario.context, "model": GROQ_DEFAULT_MODEL})
    path: list[str] | None = None
    if streamed:
        # "messages-tuple" makes the server stream tokens, so ChatGroq streams too.
        path = []
        async for part in client.runs.stream(
            thread_id, graph, stream_mode=["updates", "messages-tuple"], **request
        ):
            assert part.event != "error", part.data
            if part.event == "updates":
                path.extend(part.data)
    else:
        output = await client.runs.wait(thread_id, graph, **request)
        assert isinstance(output, dict) and "__error__" not in output, output
    state = await client.threads.get_state(thread_id)
    return path, dict(values_of(state["values"]))


async def test_both_graphs_run_on_the_groq_client(
    groq: RecordingGroq, groq_client: LangGraphClient
) -> None:
    cases = [(g, by_name(n), s) for g in GRAPHS for n in SCENARIO_NAMES for s in (False, True)]
    results = await asyncio.gather(*(_run(groq_client, g, sc, s) for g, sc, s in cases))

    by_ids = {served.tool_call_ids: served for served in groq.wire if served.tool_call_ids}
    answers = {served.answered_calls: served for served in groq.wire if not served.tool_call_ids}
    schemas = [convert_to_openai_tool(tool) for tool in TOOLS]
    assert {s["function"]["name"] for s in schemas} == {"search", "checkout"}

    for (graph, scenario, streamed), (path, values) in zip(cases, results, strict=True):
        where = (graph, scenario.name, "stream" if streamed else "wait")
        decision = values["stop_decision"]
        assert (decision["action"], decision["rule"]) == (scenario.action, scenario.rule), where
        turn = current_turn(values["messages"])
        assert len(tool_steps(turn)) == scenario.tool_steps, where
        if path is not None:
            assert path == scenario.path(graph), where
        generated = model_messages(turn)
        assert len(generated) == scenario.model_calls, where

        previous: tuple[str, ...] = ()
        for message in generated:
            assert message["response_metadata"]["model_name"] == PROVIDER_MODEL, where
            assert message["response_metadata"]["model_provider"] == "groq", where
            ids = tuple(call["id"] for call in message["tool_calls"])
            served = by_ids[ids] if ids else answers[previous]
            assert all(i.startswith("call_groq_") for i in ids), where
            # Groq's own usage numbers, as FakeGroq sent them, are on the run's messages.
            assert message["usage_metadata"] == {
                "input_tokens": served.usage["prompt_tokens"],
                "output_tokens": served.usage["completion_tokens"],
                "total_tokens": served.usage["total_tokens"],
            }, where
            assert served.streamed is streamed, where
            assert served.authorization == "Bearer dummy"
            assert served.request["model"] == PROVIDER_MODEL
            polishing = scenario.ending == "model" and message is generated[-1]
            if polishing:
                assert not served.request.get("tools"), where  # polish binds no tools
            else:
                assert served.request["tools"] == schemas, where
            previous = ids or previous
    assert groq.unknown_requests == []


async def test_the_default_model_is_groq_when_the_key_is_set(
    groq: RecordingGroq, groq_client: LangGraphClient
) -> None:
    before = len(groq.wire)
    scenario = by_name("success-hard")
    for graph in GRAPHS:
        output = await groq_client.runs.wait(
            None, graph, input=user_input(scenario.query), context=scenario.context
        )
        assert isinstance(output, dict)
        [generated] = model_messages(current_turn(output["messages"]))
        assert generated["response_metadata"]["model_name"] == PROVIDER_MODEL
    assert len(groq.wire) == before + 2


def test_make_e2e_runs_the_check_on_groq(groq: RecordingGroq) -> None:
    # The real command, with its own dev server, pointed at the loopback Groq.
    env = {**groq_env(), "GROQ_API_KEY": "dummy", "GROQ_API_BASE": groq.url}
    before = len(groq.wire)
    done = subprocess.run(
        [sys.executable, "-m", "client.e2e", "--concurrency", "8"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    selected = [s for s in SCENARIOS if settled_by_artifact(s)]
    assert {s.rule for s in selected} == {"completed", "fatal", "policy_block"}
    rows = len(selected) * len(GRAPHS)
    assert f"{rows}/{rows} rows match" in done.stdout
    assert "compared: decision action/rule only" in done.stdout
    assert f"via {groq.url}" in done.stdout
    for scenario in selected:
        assert done.stdout.count(f"  {scenario.name} ") == len(GRAPHS)
    assert len(groq.wire) > before
    assert {s.authorization for s in groq.wire[before:]} == {"Bearer dummy"}


def test_make_e2e_without_a_key_does_nothing_and_says_why() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "client.e2e"],
        cwd=ROOT,
        env=groq_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "did nothing" in done.stdout
    assert "GROQ_API_KEY is not set" in done.stdout
