"""Tools the shipped ones never are: malformed artifacts, no artifact, a raising tool.

The offline model calls any of them with ``<tool>: <text>``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, tool
from langgraph.prebuilt import InjectedState

from agent.tools.checkout import checkout

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


def checkout_around(
    before: Callable[[str, float], None], after: Callable[[str], None] | None = None
) -> BaseTool:
    """The real ``checkout``, with ``before(item, amount)`` ahead of its body and ``after(item)``
    once it has charged (either may raise to stop the step there)."""

    @tool("checkout", response_format="content_and_artifact", parse_docstring=True)
    def spy(
        item: str,
        amount: float,
        messages: Annotated[list[AnyMessage], InjectedState("messages")],
        tool_call_id: Annotated[str, InjectedToolCallId],
    ) -> tuple[str, dict[str, Any]]:
        """Buy an item.

        Args:
            item: What to buy.
            amount: The price to charge, in dollars.
            messages: Injected by the tool node.
            tool_call_id: Injected by the tool node.
        """
        before(item, amount)
        assert isinstance(checkout, StructuredTool) and checkout.func is not None
        content, artifact = checkout.func(item, amount, messages, tool_call_id)
        if after is not None:
            after(item)
        return str(content), dict(artifact)

    return spy
