"""MCP tools from a real MCP server, loaded through langchain-mcp-adapters, decided per call.

The server (``soa_mcp_server.py``) runs over stdio and over streamable HTTP on loopback; each
test loads its tools in one session and runs them in ``create_agent`` (the stop middleware)
and a hand-built graph (the router). A tool whose structured content is the contract needs no
wrapper; one that knows nothing of it is adopted: success stops, a timeout is retried, an
error result is fatal unless listed as transient. Malformed structured content continues to
the model with one warning. Runs where the adapters are installed (dev dependencies).
"""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from soa_graphs import (
    ANSWERED,
    ask,
    assert_answer_is_settled_content,
    has_middleware,
    stop_decision,
    tool_messages,
)
from stop_on_artifact import MCPErrorResult, adopt
from stop_on_artifact._turn import message_text
from stop_on_artifact.testing import assert_model_calls, assert_stopped

pytest.importorskip(
    "langchain_mcp_adapters",
    reason="langchain-mcp-adapters (the [mcp] extra, mcp 1.x; a dev dependency) is not installed",
)
from langchain_mcp_adapters.client import MultiServerMCPClient  # noqa: E402
from langchain_mcp_adapters.tools import load_mcp_tools  # noqa: E402

SERVER = Path(__file__).with_name("soa_mcp_server.py")
CLIENT_TIMEOUT = timedelta(seconds=2)
"""The HTTP client's read timeout: shorter than the server's slow call (6 s)."""
START_TIMEOUT = timedelta(seconds=60)
"""The stdio client's: a server's start included."""
FATAL_ADOPTED = "This request could not be completed, and trying again will not help."


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                assert time.monotonic() < deadline, "the MCP server did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        # uvicorn's graceful shutdown waits for open streams; a test's server may not wait.
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


@pytest.fixture(params=["stdio", "http"])
def connection(request: pytest.FixtureRequest) -> dict[str, Any]:
    # The timeout covers the session's start too: a stdio server's start on a busy machine
    # takes seconds, so only the HTTP server (started and waited for once) gets the short one.
    timeout = START_TIMEOUT if request.param == "stdio" else CLIENT_TIMEOUT
    session = {"read_timeout_seconds": timeout}
    if request.param == "stdio":
        command = {"command": sys.executable, "args": [str(SERVER), "stdio"]}
        return {"transport": "stdio", **command, "session_kwargs": session}
    url = request.getfixturevalue("http_url")
    return {"transport": "streamable_http", "url": url, "session_kwargs": session}


@asynccontextmanager
async def mcp_tools(connection: dict[str, Any]) -> AsyncIterator[dict[str, BaseTool]]:
    """The server's tools by name, in one session (a stdio server keeps its state)."""
    client = MultiServerMCPClient({"soa": connection})  # type: ignore[dict-item]
    ran = False
    try:
        async with client.session("soa") as session:
            tools = {tool.name: tool for tool in await load_mcp_tools(session)}
            ran = True
            yield tools
    except* anyio.BrokenResourceError:
        # mcp 1.x's stdio client can fail on exit while the server still writes
        # (modelcontextprotocol/python-sdk#1960): the run had ended; its result is checked
        if not ran:
            raise


@pytest.fixture(params=["router", "middleware"])
def agent_kind(request: pytest.FixtureRequest) -> str:
    if request.param == "middleware" and not has_middleware():
        pytest.skip("create_agent needs langchain 1.x")
    name: str = request.param
    return name


# --- a server that speaks the contract: no wrapper ---------------------------------------


async def test_structured_content_is_the_artifact_and_a_stop_answers_verbatim(
    connection: dict[str, Any], agent_kind: str
) -> None:
    async with mcp_tools(connection) as tools:
        result = await ask(agent_kind, tools["lookup"], "checkpointer")
    assert_stopped(result, "completed")
    assert_answer_is_settled_content(result)
    assert_model_calls(result, 1)
    assert message_text(result["messages"][-1]) == "# checkpointer\n\nThe page about checkpointer."


async def test_a_transient_structured_result_goes_back_to_the_model(
    connection: dict[str, Any], agent_kind: str
) -> None:
    question = f"flaky {agent_kind} {connection['transport']}"
    async with mcp_tools(connection) as tools:
        result = await ask(agent_kind, tools["lookup"], question)
    assert [m.artifact["structured_content"]["reason"] for m in tool_messages(result)] == [
        "transient",
        "completed",
    ]
    assert_stopped(result, "completed")
    assert_model_calls(result, 2)
    assert message_text(result["messages"][-1]) == f"# {question}\n\nThe page about {question}."


async def test_a_fatal_structured_result_stops_with_the_servers_text(
    connection: dict[str, Any], agent_kind: str
) -> None:
    async with mcp_tools(connection) as tools:
        result = await ask(agent_kind, tools["lookup"], "missing page")
    assert_stopped(result, "fatal")
    assert_answer_is_settled_content(result)
    assert "Nothing matches missing page" in message_text(result["messages"][-1])


async def test_malformed_structured_content_continues_with_one_warning(
    connection: dict[str, Any], agent_kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="stop_on_artifact")
    async with mcp_tools(connection) as tools:
        result = await ask(agent_kind, tools["lookup"], "malformed secret-value")
    decision = stop_decision(result)
    assert (decision["action"], decision["rule"]) == ("continue", "invalid_artifact")
    assert message_text(result["messages"][-1]) == ANSWERED
    warnings = [r for r in caplog.records if r.name == "stop_on_artifact"]
    assert len(warnings) == 1 and "'stop' must be a bool" in warnings[0].getMessage()
    assert "secret-value" not in warnings[0].getMessage()


# --- a server that knows nothing of the contract: adopted ---------------------------------


async def test_an_adopted_mcp_tool_stops_on_success(
    connection: dict[str, Any], agent_kind: str
) -> None:
    async with mcp_tools(connection) as tools:
        result = await ask(agent_kind, adopt(tools["search"]), "interrupts")
    assert_stopped(result, "completed")
    assert_answer_is_settled_content(result)
    assert_model_calls(result, 1)
    assert message_text(result["messages"][-1]) == "# interrupts\n\nThe page about interrupts."


async def test_an_adopted_mcp_timeout_is_transient_and_retried(
    http_url: str, agent_kind: str
) -> None:
    """Over HTTP: the stdio session's timeout is long (see ``connection``)."""
    session = {"read_timeout_seconds": CLIENT_TIMEOUT}
    connection = {"transport": "streamable_http", "url": http_url, "session_kwargs": session}
    question = f"slow {agent_kind}"
    async with mcp_tools(connection) as tools:
        result = await ask(agent_kind, adopt(tools["search"]), question)
    artifacts = [m.artifact for m in tool_messages(result)]
    assert [(a["reason"], a.get("error")) for a in artifacts] == [
        ("transient", "TimeoutError"),
        ("completed", None),
    ]
    assert_stopped(result, "completed")
    assert_model_calls(result, 2)


async def test_an_adopted_mcp_error_result_is_fatal_without_the_servers_text(
    connection: dict[str, Any], agent_kind: str
) -> None:
    async with mcp_tools(connection) as tools:
        result = await ask(agent_kind, adopt(tools["search"]), "missing page")
    decision = assert_stopped(result, "fatal")
    assert tool_messages(result)[-1].artifact["error"] == "MCPErrorResult"
    assert message_text(result["messages"][-1]) == FATAL_ADOPTED
    assert "no page for" not in str(result["messages"]) and decision["reason"] == "fatal"


async def test_error_results_listed_as_transient_are_retried(
    connection: dict[str, Any], agent_kind: str
) -> None:
    question = f"busy {agent_kind} {connection['transport']}"
    async with mcp_tools(connection) as tools:
        result = await ask(agent_kind, adopt(tools["search"], transient=MCPErrorResult), question)
    assert [m.artifact["reason"] for m in tool_messages(result)] == ["transient", "completed"]
    assert_stopped(result, "completed")


async def test_the_mcp_defaults_can_be_turned_off(connection: dict[str, Any]) -> None:
    async with mcp_tools(connection) as tools:
        adopted = adopt(tools["search"], mcp_defaults=False)
        call = {"name": "search", "args": {"query": "missing"}, "id": "c1", "type": "tool_call"}
        message = await adopted.ainvoke(call)
    # no mapping: the error result goes through the adapter's own handling, no artifact
    assert isinstance(message, ToolMessage) and message.status == "error"
    assert message.artifact is None
