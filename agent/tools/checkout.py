"""The ``checkout`` tool: charge a card and return a customer-ready receipt."""

from __future__ import annotations

import hashlib
from typing import Annotated, Any

import stop_on_artifact as stopping
from langchain_core.messages import AnyMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.prebuilt import InjectedState

from agent.context import run_context
from agent.tools.markdown import escape_math, label, plain
from agent.tools.outcomes import draw_outcome

TIMEOUT_MESSAGE = (
    "Payment processor timed out before confirming the charge (HTTP 504). No money moved; "
    "the charge can be retried."
)
NOT_DONE_MESSAGE = "the payment service timed out; nothing was charged. Ask again to retry."
"""What a person reads of a purchase whose timeout was not retried before the turn ended."""
DECLINED_MESSAGE = (
    "Your card was declined by the issuing bank and cannot be charged for this order. "
    "Please use another payment method."
)


def receipt(item: str, amount: float, order_id: str) -> str:
    """Render the receipt a customer reads, as Markdown (chat UIs do not render HTML)."""
    name = plain(item)
    return escape_math(
        "# Thank you for your order\n"
        "\n"
        f"Order **{order_id}**\n"
        "\n"
        "| Item | Amount |\n"
        "| :--- | ---: |\n"
        f"| {name} | ${amount:,.2f} |\n"
        f"| **Total charged** | **${amount:,.2f}** |\n"
        "\n"
        "A copy of this receipt was sent to the email on file."
    )


def purchase(item: str, amount: float) -> str:
    """Name a purchase for a person: ``<item> ($<amount>)``, unescaped (for :func:`label`)."""
    return f"{item} (${amount:,.2f})"


@tool(response_format="content_and_artifact", parse_docstring=True)
def checkout(
    item: str,
    amount: float,
    messages: Annotated[list[AnyMessage], InjectedState("messages")],
    tool_call_id: Annotated[str, InjectedToolCallId],
) -> tuple[str, dict[str, Any]]:
    """Buy an item: charge the customer's card and return the receipt.

    Args:
        item: What to buy.
        amount: The price to charge, in dollars.
        messages: The thread's messages, injected by the tool node; the model never sees it.
        tool_call_id: This call's id, injected by the tool node.
    """
    context = run_context()
    outcome, attempt = draw_outcome(context, messages, tool_call_id, f"{item}:{amount}")
    if outcome == "transient":
        not_done = escape_math(
            f"{label('Not purchased: ' + purchase(item, amount))}: {NOT_DONE_MESSAGE}"
        )
        return TIMEOUT_MESSAGE, stopping.transient(not_done=not_done, attempt=attempt, status=504)
    if outcome == "fatal":
        text = escape_math(
            f"{label('Not purchased: ' + purchase(item, amount))}\n\n{DECLINED_MESSAGE}"
        )
        return text, stopping.fatal(attempt=attempt, cause="card_declined")
    digest = hashlib.sha256(f"{context.seed}:{item}:{amount}".encode()).hexdigest()[:8]
    order_id = f"ORD-{digest.upper()}"
    return receipt(item, amount, order_id), stopping.completed(
        attempt=attempt, order_id=order_id, amount=amount
    )
