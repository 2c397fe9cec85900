"""Policies that run BEFORE a stop is interpreted, so a denial is never read as success.

Both graphs refuse with the same function, :func:`spend_cap_refusal`. ``legacy`` calls it in
its tools node for each call of the turn and runs its ``ToolNode`` on the calls it lets
through (``ToolNode`` has no ``wrap_tool_call`` on langgraph 0.6); ``middleware`` wraps tool
calls with :func:`enforce_spend_cap` in :class:`agent.graphs.middleware.SpendCapMiddleware`,
placed before the stop middleware. There a call that is let through runs with
:func:`agent.tracing.metadata.with_artifact_metadata`, so a traced tool run records its
sanitized artifact (``legacy`` binds :func:`agent.tracing.metadata.traced_tool` copies).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import stop_on_artifact as stopping
from langchain_core.messages import ToolCall, ToolMessage
from langgraph.types import Command

from agent.context import Context, resolve
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

if TYPE_CHECKING:  # langgraph 1.x only; only the middleware graph wraps tool calls
    from langgraph.prebuilt.tool_node import ToolCallRequest

ToolResult = ToolMessage | Command[Any]


def spend_cap_refusal(call: ToolCall, context: Context) -> ToolMessage | None:
    """Return a policy-block ToolMessage if this call is a checkout above the cap.

    Args:
        call: The tool call about to run, as the model issued it.
        context: The run's context, holding ``spend_cap``.

    Returns:
        The refusal, or None to let the call run.
    """
    if call["name"] != "checkout":
        return None
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


def over_spend_cap(request: ToolCallRequest) -> ToolMessage | None:
    """Return :func:`spend_cap_refusal` for a wrapped tool call (``wrap_tool_call``).

    Args:
        request: The tool call about to run.

    Returns:
        The refusal, or None to let the call run.
    """
    context = resolve(request.runtime.context if request.runtime else None)
    return spend_cap_refusal(request.tool_call, context)


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
