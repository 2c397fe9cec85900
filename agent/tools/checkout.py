"""The ``checkout`` tool: charge a card and return a customer-ready receipt."""

from __future__ import annotations

import hashlib
import html
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.tools import tool

from agent import contract
from agent.context import Context, resolve
from agent.tools.outcomes import draw_outcome

TIMEOUT_MESSAGE = (
    "Payment processor timed out before confirming the charge (HTTP 504). No money moved; "
    "the charge can be retried."
)
DECLINED_MESSAGE = (
    "Your card was declined by the issuing bank and cannot be charged for this order. "
    "Please use another payment method."
)


def receipt(item: str, amount: float, order_id: str) -> str:
    """Render the HTML receipt a customer sees."""
    name = html.escape(item)
    return (
        '<div class="receipt">\n'
        "  <h2>Thank you for your order</h2>\n"
        f"  <p>Order <strong>{order_id}</strong></p>\n"
        "  <table>\n"
        f"    <tr><td>{name}</td><td>${amount:,.2f}</td></tr>\n"
        f"    <tr><th>Total charged</th><th>${amount:,.2f}</th></tr>\n"
        "  </table>\n"
        "  <p>A copy of this receipt was sent to the email on file.</p>\n"
        "</div>"
    )


@tool(response_format="content_and_artifact")
def checkout(item: str, amount: float, runtime: ToolRuntime[Context]) -> tuple[str, dict[str, Any]]:
    """Buy an item: charge the customer's card and return the receipt.

    Args:
        item: What to buy.
        amount: The price to charge, in dollars.
        runtime: Injected by the tool node; the model never sees it.
    """
    context = resolve(runtime.context)
    outcome, attempt = draw_outcome(
        context, runtime.state, runtime.tool_call_id, f"{item}:{amount}"
    )
    if outcome == "retryable":
        return TIMEOUT_MESSAGE, contract.transient(attempt=attempt, status=504)
    if outcome == "fatal":
        return DECLINED_MESSAGE, contract.fatal(attempt=attempt, cause="card_declined")
    digest = hashlib.sha256(f"{context.seed}:{item}:{amount}".encode()).hexdigest()[:8]
    order_id = f"ORD-{digest.upper()}"
    return receipt(item, amount, order_id), contract.completed(
        attempt=attempt, order_id=order_id, amount=amount
    )
