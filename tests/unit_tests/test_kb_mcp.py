"""The knowledge base over MCP: the graphs decide and answer as with the in-process tool."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_mcp_adapters.sessions import StdioConnection, create_session

from agent.tools import checkout, search, tools
from agent.tools.kb_mcp import URL_VARIABLE, KnowledgeBaseMCPError, mcp_search
from agent.tools.search import search_result
from client.devserver import ROOT, free_port
from client.scenarios import APPROVAL_SCENARIOS, SCENARIOS, Scenario
from tests.support.graph_runs import Observed, build, run
from tests.support.kb_mcp import KnowledgeBaseServer, kb_mcp_server


@pytest.fixture(scope="module")
def kb_server() -> Iterator[KnowledgeBaseServer]:
    with kb_mcp_server() as server:
        yield server


@pytest.fixture(scope="module")
def mcp_tool(kb_server: KnowledgeBaseServer) -> BaseTool:
    return mcp_search(kb_server.url)


def test_the_launcher_says_where_it_serves_and_how_to_use_it(
    kb_server: KnowledgeBaseServer,
) -> None:
    assert kb_server.url.startswith("http://127.0.0.1:") and kb_server.url.endswith("/mcp")
    assert kb_server.lines[1] == f"use it: {URL_VARIABLE}={kb_server.url} make dev"


def test_the_model_reads_the_same_tool_either_way(mcp_tool: BaseTool) -> None:
    assert convert_to_openai_tool(mcp_tool) == convert_to_openai_tool(search)


def test_the_variable_picks_the_mcp_tool(
    kb_server: KnowledgeBaseServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(URL_VARIABLE, kb_server.url)
    served, buy = tools()
    assert buy is checkout and served is not search and served.name == "search"
    assert served.response_format == "content_and_artifact"
    monkeypatch.delenv(URL_VARIABLE)
    assert tools() == [search, checkout]


def test_a_server_that_does_not_answer_is_one_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(KnowledgeBaseMCPError) as raised:
        mcp_search(url)
    message = str(raised.value)
    assert message.startswith(f"{URL_VARIABLE}: no MCP server answered at {url} (")
    assert message.endswith("start one with make kb-mcp") and "\n" not in message


@pytest.mark.parametrize("scenario", SCENARIOS + APPROVAL_SCENARIOS, ids=lambda s: s.name)
async def test_each_scenario_decides_and_answers_alike(
    graph_name: str, scenario: Scenario, mcp_tool: BaseTool
) -> None:
    here = await run(build(graph_name), scenario.query, scenario.context, resume=scenario.resume)
    served = await run(
        build(graph_name, [mcp_tool, checkout]),
        scenario.query,
        scenario.context,
        resume=scenario.resume,
    )

    assert served.path == here.path
    assert served.agreed == here.agreed
    assert served.answer.content == here.answer.content

    def searches(observed: Observed) -> list[ToolMessage]:
        return [m for m in observed.messages if isinstance(m, ToolMessage) and m.name == "search"]

    assert len(searches(served)) == len(searches(here))
    assert all(set(m.artifact) == {"structured_content"} for m in searches(served))  # via MCP


async def test_the_stdio_command_in_the_docs_serves_the_same_search() -> None:
    # docs/api.md: `.venv/bin/python -m agent.tools.kb_server`, from the clone's root.
    connection: StdioConnection = {
        "transport": "stdio",
        "command": str(ROOT / ".venv" / "bin" / "python"),
        "args": ["-m", "agent.tools.kb_server"],
        "cwd": str(ROOT),
    }
    async with create_session(connection) as session:
        await session.initialize()
        result = await session.call_tool("search", {"query": "checkpointer"})
    content, artifact = search_result("checkpointer", "success", 0)
    assert result.structuredContent == artifact
    assert [block.text for block in result.content if block.type == "text"] == [content]
