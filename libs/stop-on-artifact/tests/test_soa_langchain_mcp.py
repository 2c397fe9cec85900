"""MCP tools from a real FastMCP 4 server, loaded through langchain's own client, ``langchain.mcp``.

The twin of ``test_soa_mcp.py`` (langchain-mcp-adapters on mcp 1.x) for the other client:
langchain 1.5's ``MCPAdapter`` on fastmcp 4 and mcp 2.x. The two cannot share an environment
(the adapters cap ``mcp<2``), so this file runs in the ``lib-langchain-mcp`` compat
environment (``python -m tests.compat.run --only lib-langchain-mcp``, part of ``make test``)
and skips elsewhere; there, the runner sets ``COMPAT_REQUIRED=fastmcp`` and a missing fastmcp
fails instead of skipping.

The server (``soa_fastmcp_server.py``) runs over stdio (one process for the module, kept alive
by fastmcp's transport between sessions) and over streamable HTTP on loopback; both are
stopped here, by their own process. A tool whose structured content is the contract needs no
wrapper; one that knows nothing of it is adopted: success stops, an error result is fatal
without the server's text, a timeout (mcp 2.x's ``MCPError`` -32001) is retried.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import BaseTool
from soa_graphs import ask, assert_answer_is_settled_content, tool_messages
from stop_on_artifact import adopt
from stop_on_artifact._turn import message_text
from stop_on_artifact.testing import assert_model_calls, assert_stopped

if "fastmcp" in os.environ.get("COMPAT_REQUIRED", "").split(","):
    import fastmcp  # noqa: F401  # the compat environment: missing is a failure
else:
    pytest.importorskip(
        "fastmcp",
        reason="langchain.mcp needs langchain[mcp] (fastmcp 4, mcp 2.x), which cannot share an "
        "environment with langchain-mcp-adapters: it runs in the lib-langchain-mcp compat env",
    )

from fastmcp import Client  # noqa: E402
from fastmcp.client.transports import StdioTransport  # noqa: E402
from langchain_core._api import LangChainBetaWarning  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", LangChainBetaWarning)  # the namespace is in beta
    from langchain.mcp import MCPAdapter  # noqa: E402

SERVER = Path(__file__).with_name("soa_fastmcp_server.py")
TIMEOUT = 60.0
"""The clients' request timeout (seconds): a call on a busy machine never reaches it."""
SHORT_TIMEOUT = 2.0
"""The timeout test's: shorter than the server's slow call (6 s)."""
FATAL_ADOPTED = "This request could not be completed, and trying again will not help."
KINDS = ("middleware", "router")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def stop(process: subprocess.Popen[bytes]) -> None:
    # uvicorn's graceful shutdown waits for open streams; a test's server may not wait.
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)


@pytest.fixture(scope="module", autouse=True)
def http_server() -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """Started first, so it starts while the first tests start the stdio server."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        yield process, port
    finally:
        stop(process)


@pytest.fixture(scope="module")
def http_url(http_server: tuple[subprocess.Popen[bytes], int]) -> str:
    process, port = http_server
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return f"http://127.0.0.1:{port}/mcp"
        except OSError:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the MCP server did not start"
            time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(") ", 1)[1].startswith("Z"))


@pytest.fixture(scope="module")
async def stdio_transport(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Any]:
    """One stdio server for the module: fastmcp keeps its process between sessions."""
    log = tmp_path_factory.mktemp("fastmcp") / "server.log"
    # Any: fastmcp's close() is untyped
    transport: Any = StdioTransport(sys.executable, [str(SERVER), "stdio"], log_file=log)
    yield transport
    await transport.close()
    pids = [int(pid) for pid in re.findall(r"^pid (\d+)$", log.read_text(), flags=re.M)]
    assert len(pids) == 1, "one stdio server for the module"
    deadline = time.monotonic() + 10
    while alive(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(pids[0]):
        os.kill(pids[0], 9)
        pytest.fail("closing the stdio transport left its server running")


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest) -> Any:
    if request.param == "stdio":
        return request.getfixturevalue("stdio_transport")
    return request.getfixturevalue("http_url")


@asynccontextmanager
async def mcp_tools(target: Any, timeout: float = TIMEOUT) -> AsyncIterator[dict[str, BaseTool]]:
    """The server's tools by name, adapted by langchain.mcp, in one held session."""
    async with MCPAdapter(Client(target, timeout=timeout)) as adapter:
        yield {tool.name: tool for tool in await adapter.list_tools()}


# --- a server that speaks the contract: no wrapper ---------------------------------------


async def test_the_tools_are_langchain_mcp_tools(target: Any) -> None:
    async with mcp_tools(target) as tools:
        assert {name: tool.response_format for name, tool in tools.items()} == {
            "lookup": "content_and_artifact",
            "search": "content_and_artifact",
        }
        run = getattr(tools["lookup"], "coroutine", None)
        assert getattr(run, "__module__", "") == "langchain.mcp.tools"  # what adopt() reads


@pytest.mark.parametrize("kind", KINDS)
async def test_structured_content_is_the_artifact_and_a_stop_answers_verbatim(
    target: Any, kind: str
) -> None:
    async with mcp_tools(target) as tools:
        result = await ask(kind, tools["lookup"], "checkpointer")
    assert tool_messages(result)[-1].artifact == {
        "structured_content": {"stop": True, "reason": "completed"}
    }
    assert_stopped(result, "completed")
    assert_answer_is_settled_content(result)
    assert_model_calls(result, 1)
    assert message_text(result["messages"][-1]) == "# checkpointer\n\nThe page about checkpointer."


@pytest.mark.parametrize("kind", KINDS)
async def test_a_transient_structured_result_goes_back_to_the_model(
    target: Any, kind: str, request: pytest.FixtureRequest
) -> None:
    question = f"flaky {request.node.name}"
    async with mcp_tools(target) as tools:
        result = await ask(kind, tools["lookup"], question)
    assert [m.artifact["structured_content"]["reason"] for m in tool_messages(result)] == [
        "transient",
        "completed",
    ]
    assert_stopped(result, "completed")
    assert_model_calls(result, 2)
    assert message_text(result["messages"][-1]) == f"# {question}\n\nThe page about {question}."


@pytest.mark.parametrize("kind", KINDS)
async def test_a_fatal_structured_result_stops_with_the_servers_text(
    target: Any, kind: str
) -> None:
    async with mcp_tools(target) as tools:
        result = await ask(kind, tools["lookup"], "missing page")
    assert_stopped(result, "fatal")
    assert_answer_is_settled_content(result)
    assert_model_calls(result, 1)
    assert "Nothing matches missing page" in message_text(result["messages"][-1])


# --- a server that knows nothing of the contract: adopted ---------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_an_adopted_tool_stops_on_success(target: Any, kind: str) -> None:
    async with mcp_tools(target) as tools:
        result = await ask(kind, adopt(tools["search"]), "interrupts")
    assert tool_messages(result)[-1].artifact == {"stop": True, "reason": "completed"}
    assert_stopped(result, "completed")
    assert_answer_is_settled_content(result)
    assert_model_calls(result, 1)
    assert message_text(result["messages"][-1]) == "# interrupts\n\nThe page about interrupts."


@pytest.mark.parametrize("kind", KINDS)
async def test_an_adopted_error_result_is_fatal_without_the_servers_text(
    target: Any, kind: str
) -> None:
    async with mcp_tools(target) as tools:
        unadopted = await tools["search"].ainvoke(
            {"name": "search", "args": {"query": "missing"}, "id": "c1", "type": "tool_call"}
        )
        result = await ask(kind, adopt(tools["search"]), "missing page")
    # langchain.mcp's own handling: the server's text to the model, status "error", no artifact
    assert unadopted.status == "error" and unadopted.artifact is None
    assert "no page for missing" in message_text(unadopted)
    decision = assert_stopped(result, "fatal")
    assert tool_messages(result)[-1].artifact["error"] == "MCPErrorResult"
    assert message_text(result["messages"][-1]) == FATAL_ADOPTED
    assert "no page for" not in str(result["messages"]) and decision["reason"] == "fatal"


@pytest.mark.parametrize("kind", KINDS)
async def test_an_adopted_timeout_is_transient_and_retried(http_url: str, kind: str) -> None:
    """Over HTTP: a stdio client's timeout also bounds the server's start (several seconds)."""
    question = f"slow {kind}"
    async with mcp_tools(http_url, timeout=SHORT_TIMEOUT) as tools:
        result = await ask(kind, adopt(tools["search"]), question)
    artifacts = [m.artifact for m in tool_messages(result)]
    assert [(a["reason"], a.get("error")) for a in artifacts] == [
        ("transient", "TimeoutError"),
        ("completed", None),
    ]
    assert_stopped(result, "completed")
    assert_model_calls(result, 2)
    assert message_text(result["messages"][-1]) == f"# {question}\n\nThe page about {question}."


async def test_an_unadopted_timeout_is_mcp_2s_request_timeout(http_url: str) -> None:
    """What adopt() maps: mcp 2.x raises ``MCPError`` with REQUEST_TIMEOUT, not 408."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import REQUEST_TIMEOUT

    async with mcp_tools(http_url, timeout=SHORT_TIMEOUT) as tools:
        with pytest.raises(MCPError) as raised:
            await tools["search"].ainvoke({"query": "slow unadopted"})
    assert raised.value.error.code == REQUEST_TIMEOUT == -32001
