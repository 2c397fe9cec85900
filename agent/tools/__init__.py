"""The tools both graphs bind. Each returns ``(content, artifact)``."""

from __future__ import annotations

from langchain_core.tools import BaseTool

from agent.tools.checkout import checkout
from agent.tools.search import search

TOOLS: list[BaseTool] = [search, checkout]

__all__ = ["TOOLS", "checkout", "search"]
