"""The tools both graphs bind. Each returns ``(content, artifact)``.

``search`` is the in-process tool, or the same tool loaded from the knowledge base's MCP
server when ``AGENT_KB_MCP_URL`` names one (:mod:`agent.tools.kb_mcp`).
"""

from __future__ import annotations

import os

from langchain_core.tools import BaseTool

from agent.tools.checkout import checkout
from agent.tools.search import search


def tools() -> list[BaseTool]:
    """Return the tools to bind: ``search`` (in-process or over MCP) and ``checkout``."""
    url = os.environ.get("AGENT_KB_MCP_URL", "").strip()
    if not url:
        return [search, checkout]
    from agent.tools.kb_mcp import mcp_search  # the MCP packages load only when asked for

    return [mcp_search(url), checkout]


TOOLS: list[BaseTool] = tools()

__all__ = ["TOOLS", "checkout", "search", "tools"]
