"""A real MCP server for the library's MCP tests: ``python soa_mcp_server.py stdio|http PORT``.

Two tools, each answering by what the query names (every query is a fresh key, so tests that
share one server do not share state):

- ``lookup`` knows the contract: its structured content is the artifact (``completed``; the
  first call of a ``flaky`` query ``transient``; ``missing`` ``fatal``; ``malformed`` a
  ``stop`` that is no bool).
- ``search`` knows nothing of it: text on success; the first call of a ``slow`` query
  outlasts the client's timeout; ``missing`` and the first call of ``busy`` are error
  results (``isError``).
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter

from mcp.server.fastmcp import FastMCP
from mcp.types import CallToolResult, ContentBlock, TextContent
from stop_on_artifact import completed, fatal, transient

SLOW_SECONDS = 6.0
"""How long the first ``slow`` call takes: longer than the tests' client timeout."""

server = FastMCP("soa-test", host="127.0.0.1", log_level="WARNING")
calls: Counter[str] = Counter()


def page(query: str) -> str:
    return f"# {query}\n\nThe page about {query}."


def result(text: str, structured: dict[str, object]) -> CallToolResult:
    content: list[ContentBlock] = [TextContent(type="text", text=text)]
    return CallToolResult(content=content, structuredContent=structured)


@server.tool()
def lookup(query: str) -> CallToolResult:
    """Look a topic up in the index; the result says whether it settles the question."""
    calls[f"lookup:{query}"] += 1
    if "missing" in query:
        return result(f"Nothing matches {query}, and trying again will not help.", fatal())
    if "flaky" in query and calls[f"lookup:{query}"] == 1:
        return result("The index timed out. Trying again may work.", transient())
    if "malformed" in query:
        return result(page(query), {"stop": "yes", "reason": "completed"})
    return result(page(query), completed())


@server.tool(structured_output=False)
async def search(query: str) -> str:
    """Search the index for a topic."""
    calls[f"search:{query}"] += 1
    first = calls[f"search:{query}"] == 1
    if "slow" in query and first:
        await asyncio.sleep(SLOW_SECONDS)
    if "missing" in query:
        raise ValueError(f"no page for {query}")
    if "busy" in query and first:
        raise RuntimeError("the index is busy")
    return page(query)


if __name__ == "__main__":
    transport = sys.argv[1]
    if transport == "http":
        server.settings.port = int(sys.argv[2])
        server.run("streamable-http")
    else:
        server.run("stdio")
