"""Tools the shipped ones never are: malformed artifacts, no artifact, a raising tool.

The offline model calls any of them with ``<tool>: <text>``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.tools import BaseTool, tool

SECRET = "tool-content-secret-9d1c"
"""Planted in every content and exception text here: it must never reach a log."""


def artifact_tool(name: str, artifact: Any) -> BaseTool:
    """Return a tool called ``name`` that always answers with ``artifact``."""

    @tool(name, response_format="content_and_artifact")
    def _tool(query: str) -> tuple[str, Any]:
        """Return a fixed artifact."""
        return f"{SECRET} for {query}", artifact

    return _tool


@tool
def plain(query: str) -> str:
    """A tool without an artifact."""
    return f"plain result for {query}"


@tool(response_format="content_and_artifact")
def raiser(query: str) -> tuple[str, dict[str, Any]]:
    """A tool that raises."""
    raise RuntimeError(f"backend exploded with {SECRET} on {query}")
