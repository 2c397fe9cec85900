"""A FastMCP 4 server for the langchain.mcp tests: ``python soa_fastmcp_server.py stdio|http PORT``.

The twin of ``soa_mcp_server.py`` (the mcp 1.x server of the langchain-mcp-adapters tests),
written for FastMCP 4 on mcp 2.x. Two tools, each answering by what the query names (every
query is a fresh key, so tests that share one server do not share state):

- ``lookup`` knows the contract: its structured content is the artifact (``completed``; the
  first call of a ``flaky`` query ``transient``; ``missing`` ``fatal``).
- ``search`` knows nothing of it: text on success; the first call of a ``slow`` query
  outlasts the client's timeout; ``missing`` is an error result (``isError``).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import Counter

from fastmcp import FastMCP
from fastmcp.tools.base import ToolResult
from mcp.types import TextContent
from stop_on_artifact import completed, fatal, transient

SLOW_SECONDS = 6.0
"""How long the first ``slow`` call takes: longer than the tests' client timeout."""

server = FastMCP("soa-test-fastmcp")
calls: Counter[str] = Counter()


def page(query: str) -> str:
    return f"# {query}\n\nThe page about {query}."


def result(text: str, structured: dict[str, object]) -> ToolResult:
    return ToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


@server.tool
def lookup(query: str) -> ToolResult:
    """Look a topic up in the index; the result says whether it settles the question."""
    calls[f"lookup:{query}"] += 1
    if "missing" in query:
        return result(f"Nothing matches {query}, and trying again will not help.", fatal())
    if "flaky" in query and calls[f"lookup:{query}"] == 1:
        return result("The index timed out. Trying again may work.", transient())
    return result(page(query), completed())


@server.tool(output_schema=None)
async def search(query: str) -> str:
    """Search the index for a topic."""
    calls[f"search:{query}"] += 1
    if "slow" in query and calls[f"search:{query}"] == 1:
        await asyncio.sleep(SLOW_SECONDS)
    if "missing" in query:
        raise ValueError(f"no page for {query}")
    return page(query)


if __name__ == "__main__":
    if sys.argv[1] == "http":
        server.run("http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False)
    else:
        print(f"pid {os.getpid()}", file=sys.stderr, flush=True)  # the test checks it stops
        server.run("stdio", show_banner=False)
