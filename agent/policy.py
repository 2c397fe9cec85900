"""The demo's spend cap: a checkout above the context's ``spend_cap`` is refused or asked about.

A :class:`~stop_on_artifact.ToolPolicy` written against the library's public API
(:mod:`stop_on_artifact`); the library refuses, asks, records and resumes. What
is the checkout's own stays here: the texts a person reads (:data:`SPEND_CAP_MESSAGE`,
:data:`REJECTED_MESSAGE`, the "**Not purchased: ...**" label, every ``$`` escaped by
:func:`~agent.tools.markdown.escape_math`), the cap from the run's ``Context`` and
``on_block`` from its ``on_policy_block``.

``legacy`` runs the policy through :data:`gate` (a :class:`~stop_on_artifact.PolicyGate`:
``record`` in its ``agent`` node, ``arun`` in its ``tools`` node); ``middleware`` through
:func:`spend_cap_middleware` (a :class:`~stop_on_artifact.PolicyMiddleware`
named ``spend_cap``, so its node is ``spend_cap.after_model``). Both record the verdict
under :data:`VERDICT_KEY` with the model's reply, pause with
:func:`~agent.tracing.metadata.trace_approval_asked` marking the trace, and never screen
again on a resume (which runs under the turn's own settings, see :mod:`agent.graphs.commands`).
"""

from __future__ import annotations

import math
from typing import Any

from langchain_core.messages import ToolCall
from stop_on_artifact import Block, PolicyGate, tool_policy

from agent.context import Context, resolve
from agent.tools.checkout import charges_dollars, purchase
from agent.tools.markdown import escape_math, excerpt, label
from agent.tracing.metadata import trace_approval_asked

SPEND_CAP_MESSAGE = (
    "This purchase is above the spending limit set for this assistant, so it was not "
    "attempted. No payment was made. Please contact support to raise the limit."
)
"""The user-safe answer when the spend cap refuses a checkout."""

REJECTED_MESSAGE = (
    "This purchase is above the spending limit set for this assistant, and the person "
    "asked to approve it declined, so it was not attempted. No payment was made."
)
"""The user-safe answer when an approver rejects an over-cap checkout."""

POLICY = "spend_cap"
"""The policy's name, on its artifacts and in the stop record."""

VERDICT_KEY = f"{POLICY}_verdict"
"""State key of the latest model turn's verdict (the library's ``PolicyVerdict``)."""

APPROVED_KEY = f"{POLICY}_approved"
"""``middleware`` state key: the ``tool_call_id``s approved this step."""

TOOL_ERROR_TEMPLATE = "The tool failed with {error}. It did not complete."
"""What the model reads when a tool raised. Names the exception type, never its text."""


def _purchase(call: ToolCall) -> tuple[str, float] | None:
    """Return ``(item, amount)`` of a checkout of a number of dollars, else None.

    A price in another currency is the checkout's to refuse, naming that currency: the cap
    is in dollars.
    """
    amount = call["args"].get("amount")
    if not isinstance(amount, int | float) or isinstance(amount, bool):
        return None  # the tool's own argument validation reports it
    if not charges_dollars(call["args"].get("currency", "USD")):
        return None
    return str(call["args"].get("item", "")), float(amount)


def _on_block(context: Any) -> Any:
    return resolve(context).on_policy_block


@tool_policy(POLICY, tools={"checkout"}, on_block=_on_block)
def spend_cap(call: ToolCall, context: Context | dict[str, Any] | None) -> Block | None:
    """Block a checkout above ``context.spend_cap`` (a non-finite amount too).

    Args:
        call: The checkout call, as the model issued it.
        context: The run's context, holding ``spend_cap``.

    Returns:
        None within the cap; else the refusal, the text after a reject and what an
        approver reads, each ``$`` escaped.
    """
    bought = _purchase(call)
    cap = resolve(context).spend_cap
    if bought is None or (math.isfinite(bought[1]) and bought[1] <= cap):
        return None
    item, amount = bought
    heading = label("Not purchased: " + purchase(item, amount))
    return Block(
        refusal=escape_math(f"{heading}\n\n{SPEND_CAP_MESSAGE}"),
        rejected=escape_math(f"{heading}\n\n{REJECTED_MESSAGE}"),
        description=escape_math(
            f"Approve this purchase above the spending limit? **{excerpt(item)}** for "
            f"${amount:,.2f}; the limit is ${cap:,.2f}. Nothing has been charged: "
            "approve to charge it, or reject (optionally with a reason) to refuse it."
        ),
        fields={"cap": cap},
    )


gate = PolicyGate(policies=[spend_cap], name=POLICY, on_ask=trace_approval_asked)
"""The spend cap in the hand-built graph's nodes."""


def tool_error_content(error: Exception, *_: object) -> str:
    """Describe a tool's exception for the model without echoing its message."""
    return TOOL_ERROR_TEMPLATE.format(error=type(error).__name__)
