"""The knowledge base's ``search`` served as an MCP server, its artifact in the structured result.

Any MCP client can call it: its ``search`` tool answers with the same Markdown page as the
in-process tool (:data:`agent.tools.search.search`) as text content, and with the artifact
contract (``{"stop": ..., "reason": ...}``) as the result's ``structuredContent``, so a
graph whose tools come from ``langchain-mcp-adapters`` decides on it with no wrapper. Both
graphs use it in place of the in-process tool when ``AGENT_KB_MCP_URL`` names it
(:mod:`agent.tools.kb_mcp`).

Besides ``query``, the tool takes the demo's two simulation knobs, ``outcome`` (``success``
by default: a real lookup; ``transient`` or ``fatal`` answer as a failing backend would)
and ``attempt`` (the call's position this turn, recorded in the artifact). The graphs set
both from the run's ``force_outcome`` and seed, as the in-process tool does, and never show
them to the model.

Run it with ``make kb-mcp`` (streamable HTTP on loopback, :mod:`client.mcpserver`) or over
stdio for a desktop MCP client: ``.venv/bin/python -m agent.tools.kb_server``.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.fastmcp import FastMCP
from mcp.types import CallToolResult, ContentBlock, TextContent
from pydantic import Field

from agent.context import ForcedOutcome
from agent.tools.search import search as in_process_search
from agent.tools.search import search_result

NAME = "knowledge-base"
"""The server's name, as MCP clients list it."""

QUERY_DESCRIPTION = in_process_search.args["query"]["description"]
"""What the model reads of ``query``: the in-process tool's own words."""


def build_server(host: str = "127.0.0.1", port: int = 8000) -> FastMCP:
    """Return the MCP server, its ``search`` tool registered.

    Args:
        host: Where streamable HTTP binds (loopback unless said otherwise).
        port: Its port.

    Returns:
        The server; ``run("stdio")`` or ``run("streamable-http")`` serves it.
    """
    server = FastMCP(
        NAME, host=host, port=port, log_level="WARNING", stateless_http=True, json_response=True
    )

    @server.tool(name="search", description=in_process_search.description)
    def search(
        query: Annotated[str, Field(description=QUERY_DESCRIPTION)],
        outcome: ForcedOutcome = "success",
        attempt: Annotated[int, Field(ge=0)] = 0,
    ) -> CallToolResult:
        content, artifact = search_result(query, outcome, attempt)
        text: list[ContentBlock] = [TextContent(type="text", text=content)]
        return CallToolResult(content=text, structuredContent=artifact)

    return server


if __name__ == "__main__":
    build_server().run("stdio")
