"""Nothing secret in the server log: a full integration run, then the log is read.

One dev server at the default log level, with planted keys (``AGENT_API_KEYS`` for the
API, a Groq key for the model provider). Every scenario on both graphs, plus runs that
carry planted secrets where a log line is most likely to pick them up: in the user
message, in tool arguments (``search: <text>``), in tool content (a receipt that echoes
the item), in a streamed answer, in a request the server rejects, in a query string
(``?x-api-key=``), in every context field (each refused), in a model string that fails to
load, and through the real Groq client against a loopback Groq. The log must hold no key,
no planted secret and no line of any message's content, and a refusal names the field
without quoting the value to the client.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Awaitable, Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from agent.context import GROQ_DEFAULT_MODEL
from client.scenarios import GRAPHS, SCENARIOS
from tests.support.dev_server import DevServer, dev_server
from tests.support.fake_groq import FakeGroq

API_KEY = "planted-api-key-0c5e1f9a"
OTHER_API_KEY = "planted-api-key-77d1b3e4"
GROQ_KEY = "gsk_planted_groq_key_91ab2c"
SECRET_IN_USER_MESSAGE = "secret-USER-9d1c"
SECRET_IN_TOOL_ARGS = "secret-XYZ"
SECRET_IN_TOOL_CONTENT = "secret-TOOL-4e7b"
SECRET_IN_BAD_INPUT = "secret-BADINPUT-2a6f"
SECRET_IN_STREAM = "secret-STREAM-5b0d"
SECRET_IN_GROQ_RUN = "secret-GROQ-3c9e"
SECRET_IN_CONTEXT = "secret-CONTEXT-8f2a"
SECRET_IN_MODEL = "secret-MODEL-6d4c"
CONTEXT_FIELDS = (
    "model",
    "stop_mode",
    "force_outcome",
    "seed",
    "parallel_policy",
    "max_retries",
    "spend_cap",
    "max_model_calls",
)
"""Every field of ``agent.context.Context``, each given a secret it rejects."""
PLANTED = (
    API_KEY,
    OTHER_API_KEY,
    GROQ_KEY,
    SECRET_IN_USER_MESSAGE,
    SECRET_IN_TOOL_ARGS,
    SECRET_IN_TOOL_CONTENT,
    SECRET_IN_STREAM,
    SECRET_IN_GROQ_RUN,
    SECRET_IN_CONTEXT,
    SECRET_IN_MODEL,
)
MIN_LINE = 24
"""Content lines at least this long must not appear in the log (shorter ones are words)."""
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


ECHOES: list[str] = []
"""Every refusal's full text, as the client received it."""


async def refusal(request: Awaitable[Any]) -> str:
    """How the server refused a request: an HTTP status, or the failed run's error type."""
    try:
        await request
    except httpx.HTTPStatusError as error:
        ECHOES.append(error.response.text)
        return str(error.response.status_code)
    except Exception as error:  # runs.wait raises a plain Exception for a failed run
        ECHOES.append(str(error))
        return str(error).split(":", 1)[0]
    return "accepted"


@pytest.fixture(scope="module")
def groq() -> Iterator[FakeGroq]:
    with FakeGroq() as server:
        yield server


@pytest.fixture(scope="module")
def logged_server(groq: FakeGroq) -> Iterator[DevServer]:
    env = {
        "AGENT_API_KEYS": f"{API_KEY}:alice,{OTHER_API_KEY}:bob",
        "GROQ_API_KEY": GROQ_KEY,
        "GROQ_API_BASE": groq.url,
    }
    with dev_server(env=env, args=["--n-jobs-per-worker", "8"]) as running:
        yield running


@pytest.fixture(scope="module")
async def traffic(logged_server: DevServer) -> dict[str, Any]:
    """Drive the server; return every message content the threads ended with."""
    client = get_client(url=logged_server.url, api_key=API_KEY, timeout=(5, 120, 120, None))
    contents: list[str] = []
    statuses: list[str] = []

    async def converse(graph: str, text: str, context: dict[str, Any]) -> None:
        thread_id = (await client.threads.create())["thread_id"]
        await client.runs.wait(thread_id, graph, input=user(text), context=context)
        state = await client.threads.get_state(thread_id)
        for message in state["values"]["messages"]:  # type: ignore[call-overload]
            contents.append(str(message["content"]))
            for call in message.get("tool_calls") or []:
                contents.extend(str(value) for value in call["args"].values())
        statuses.extend(r["status"] for r in await client.runs.list(thread_id))

    offline = {"model": "offline"}  # GROQ_API_KEY is set: the default would be Groq
    jobs = [
        converse(graph, f"{s.query} {SECRET_IN_USER_MESSAGE}", {**offline, **s.context})
        for s in SCENARIOS
        for graph in GRAPHS
    ]
    for graph in GRAPHS:
        jobs += [
            converse(graph, f"search: {SECRET_IN_TOOL_ARGS} checkpointer", offline),
            converse(
                graph,
                f"buy {SECRET_IN_TOOL_CONTENT} desk lamp for 40",
                {**offline, "force_outcome": "success"},
            ),
            converse(
                graph,
                f"How does streaming work? {SECRET_IN_GROQ_RUN}",
                {"model": GROQ_DEFAULT_MODEL, "force_outcome": ["retryable", "success"]},
            ),
            converse(graph, f"checkout: {SECRET_IN_TOOL_ARGS} without an amount", offline),
        ]
    await asyncio.gather(*jobs)

    # Token streaming, as a chat UI would use it.
    for graph in GRAPHS:
        async for part in client.runs.stream(
            None,
            graph,
            input=user(f"What is the store? {SECRET_IN_STREAM}"),
            context={**offline, "stop_mode": "polish", "force_outcome": "success"},
            stream_mode=["messages-tuple", "updates", "custom"],
        ):
            assert part.event != "error", part.data

    # Requests the server refuses: the rejection must not echo the input into the log.
    rejected = []
    bad_inputs: list[dict[str, Any]] = [
        {"messages": [{"role": "nonsense", "content": SECRET_IN_BAD_INPUT}]},
        {"messages": [{"content": SECRET_IN_BAD_INPUT}]},
    ]
    for graph in GRAPHS:
        for bad in bad_inputs:
            request = client.runs.wait(None, graph, input=bad, context=offline)
            rejected.append(await refusal(request))
        request = client.runs.wait(None, graph, input=user("hello"), context={"stop_mode": "bogus"})
        rejected.append(await refusal(request))
        # A secret pasted into each context field, and a model string that fails to load.
        for field in CONTEXT_FIELDS:
            context = {**offline, field: SECRET_IN_CONTEXT}
            request = client.runs.wait(None, graph, input=user("hello"), context=context)
            rejected.append(await refusal(request))
        unloadable = {"model": f"nosuchprovider:{SECRET_IN_MODEL}"}
        request = client.runs.wait(None, graph, input=user("hello"), context=unloadable)
        rejected.append(await refusal(request))
    # The other identity sees none of it; a wrong key is refused.
    bob = get_client(url=logged_server.url, api_key=OTHER_API_KEY)
    assert await bob.threads.search() == []
    await bob.aclose()
    async with httpx.AsyncClient(base_url=logged_server.url) as http:
        refused = await http.post("/threads/search", json={}, headers={"x-api-key": "wrong"})
        rejected.append(str(refused.status_code))
        # A key in the query string is not read (401), and the access log, which records
        # query strings, gets it redacted by agent/http.py.
        for path in ("/threads/search", "/internal/truncate"):
            refused = await http.post(f"{path}?limit=1&x-api-key={API_KEY}", json={})
            rejected.append(str(refused.status_code))
    await client.aclose()
    return {"contents": contents, "statuses": statuses, "rejected": rejected}


@pytest.fixture(scope="module")
def log(logged_server: DevServer, traffic: dict[str, Any]) -> str:
    """The whole log, read once a last request's line shows the server has written it all."""
    sentinel = f"/threads/{uuid.uuid4()}"
    response = httpx.get(logged_server.url + sentinel, headers={"x-api-key": API_KEY})
    assert response.status_code == 404
    deadline = time.monotonic() + 15
    while sentinel not in logged_server.log():
        assert time.monotonic() < deadline, "the server never logged the last request"
        time.sleep(0.1)
    return ANSI.sub("", logged_server.log())


def test_the_traffic_ran(traffic: dict[str, Any], groq: FakeGroq, log: str) -> None:
    # Every conversation ended; the Groq runs went through the loopback Groq with its key.
    assert traffic["statuses"] and set(traffic["statuses"]) == {"success"}
    assert groq.served >= 2 * len(GRAPHS)
    assert set(groq.auth_headers) == {f"Bearer {GROQ_KEY}"}
    # A bad context is refused before the run is queued (agent/auth.py): a 422.
    per_graph = ["ValueError", "ValueError", "422"]
    per_graph += ["422"] * len(CONTEXT_FIELDS) + ["ModelLoadError"]
    assert traffic["rejected"] == per_graph * len(GRAPHS) + ["401"] * 3
    assert "query_string='limit=1&x-api-key=[redacted]'" in log
    # The log is the server's own, at its default level: info and error lines are in it.
    assert "Created run" in log
    assert "Background run failed" in log


@pytest.mark.parametrize("planted", PLANTED)
def test_no_planted_secret_or_key_in_the_log(planted: str, log: str) -> None:
    lines = [line for line in log.splitlines() if planted in line]
    assert not lines, f"{planted!r} leaked into the server log:\n" + "\n".join(lines[:5])


def test_refusals_name_the_field_never_the_value(traffic: dict[str, Any]) -> None:
    assert ECHOES
    for planted in (SECRET_IN_BAD_INPUT, SECRET_IN_CONTEXT, SECRET_IN_MODEL):
        echoed = [text for text in ECHOES if planted in text]
        assert not echoed, f"{planted!r} came back to the client:\n" + "\n".join(echoed[:3])
    for field in CONTEXT_FIELDS:
        assert any(f"context.{field}" in text for text in ECHOES), f"no refusal names {field!r}"
    assert any("model could not be loaded" in text for text in ECHOES)


def test_rejected_input_is_not_echoed_into_the_log(log: str) -> None:
    lines = [line for line in log.splitlines() if SECRET_IN_BAD_INPUT in line]
    assert not lines, "rejected input leaked into the server log:\n" + "\n".join(lines[:5])


def test_no_message_content_in_the_log(traffic: dict[str, Any], log: str) -> None:
    pieces = {
        line.strip()
        for content in traffic["contents"]
        for line in content.splitlines()
        if len(line.strip()) >= MIN_LINE
    }
    assert len(pieces) > 20, "the traffic produced content to look for"
    leaked = sorted(piece for piece in pieces if piece in log)
    assert not leaked, "message content leaked into the server log:\n" + "\n".join(leaked[:5])
