"""Policies that run BEFORE a stop is interpreted, so a denial is never read as success.

Both graphs use the same functions: ``legacy`` passes them to its ``ToolNode`` as
``wrap_tool_call`` / ``awrap_tool_call``; ``middleware`` wraps them in
:class:`agent.graphs.middleware.SpendCapMiddleware`, placed before the stop middleware. A call
that is let through runs with :func:`agent.tracing.metadata.with_artifact_metadata`, so a traced
tool run records its sanitized artifact.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from agent import stopping
from agent.context import resolve
from agent.tools.checkout import purchase
from agent.tools.markdown import label
from agent.tracing.metadata import with_artifact_metadata

SPEND_CAP_MESSAGE = (
    "This purchase is above the spending limit set for this assistant, so it was not "
    "attempted. No payment was made. Please contact support to raise the limit."
)
"""The user-safe answer when the spend cap refuses a checkout."""

TOOL_ERROR_TEMPLATE = "The tool failed with {error}. It did not complete."
"""What the model reads when a tool raised. Names the exception type, never its text."""

ToolResult = ToolMessage | Command[Any]


def over_spend_cap(request: ToolCallRequest) -> ToolMessage | None:
    """Return a policy-block ToolMessage if this call is a checkout above the cap.

    Args:
        request: The tool call about to run.

    Returns:
        The refusal, or None to let the call run.
    """
    call = request.tool_call
    if call["name"] != "checkout":
        return None
    context = resolve(request.runtime.context if request.runtime else None)
    amount = call["args"].get("amount")
    if not isinstance(amount, int | float) or isinstance(amount, bool):
        return None  # the tool's own argument validation reports it
    if math.isfinite(amount) and amount <= context.spend_cap:
        return None
    item = str(call["args"].get("item", ""))
    return ToolMessage(
        content=f"{label('Not purchased: ' + purchase(item, amount))}\n\n{SPEND_CAP_MESSAGE}",
        name=call["name"],
        tool_call_id=call["id"] or "",
        artifact=stopping.policy_block(policy="spend_cap", cap=context.spend_cap),
    )


def enforce_spend_cap(
    request: ToolCallRequest, execute: Callable[[ToolCallRequest], ToolResult]
) -> ToolResult:
    """Refuse a checkout above ``spend_cap`` before it runs; otherwise run the call."""
    return over_spend_cap(request) or execute(with_artifact_metadata(request))


async def aenforce_spend_cap(
    request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[ToolResult]]
) -> ToolResult:
    """Async twin of :func:`enforce_spend_cap`."""
    return over_spend_cap(request) or await execute(with_artifact_metadata(request))


def tool_error_content(error: Exception, *_: object) -> str:
    """Describe a tool's exception for the model without echoing its message."""
    return TOOL_ERROR_TEMPLATE.format(error=type(error).__name__)
