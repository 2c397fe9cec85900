"""The ``checkout`` tool: charge a card and return a customer-ready receipt.

The charge goes through :mod:`agent.tools.payments` with an idempotency key per tool call,
:func:`stop_on_artifact.idempotency_key` of the call's id: the run's thread, the checkpoint
namespace (task ids left out) and the call id. A call run again (retried in place, resumed,
its step re-run after a crashed worker, or a fork of the thread) sends the same key and gets
the first settled result back instead of a second charge; the artifact then says
``replayed=True``. A run without a thread (in process, no checkpointer) cannot run a step
again; its keys are its own, so another such run reusing a call id charges afresh.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any

import stop_on_artifact as stopping
from langchain_core.messages import AnyMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.prebuilt import InjectedState

from agent.context import ForcedOutcome, run_context
from agent.tools.markdown import escape_math, label, plain
from agent.tools.outcomes import draw_outcome
from agent.tools.payments import IdempotencyKeyReusedError, Outcome, charge
from agent.vocabulary import CURRENCY_NAMES

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
KEY_REUSED_MESSAGE = (
    "The payment service refused this request: its payment key already paid for a different "
    "purchase. Nothing was charged."
)
"""What a person reads when a call's key comes back with another item or amount."""
CURRENCY_MESSAGE = (
    "This shop charges in US dollars only, and this price is in {currency}: nothing was "
    "charged, and it was not charged as dollars either. Ask again with the price in dollars."
)
"""What a person reads of a purchase priced in another currency; ``{currency}`` names it."""
DOLLARS = frozenset({"", "usd", "us$", "$", "dollar", "dollars", "us dollars"})
"""How a call may name the one currency the shop charges in (any case)."""


_BANK: dict[ForcedOutcome, Outcome] = {
    "success": "completed",
    "transient": "timed_out",
    "retryable": "timed_out",
    "fatal": "declined",
}
"""What the stand-in provider does with a fresh request, for each drawn outcome."""


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


def charges_dollars(currency: object) -> bool:
    """Whether a call's ``currency`` is the shop's, US dollars (``USD``, the default)."""
    return isinstance(currency, str) and currency.strip().lower() in DOLLARS


def currency_name(currency: str) -> str:
    """Name a currency for a person, unescaped: ``euros`` for ``EUR``, else as given."""
    given = " ".join(currency.split())
    return CURRENCY_NAMES.get(given.upper()) or given[:24] or "another currency"


def price_text(amount: float, currency: str = "USD") -> str:
    """Name a price for a person, unescaped: ``$45.00``, ``45.00 euros``, ``45.00 SEK``."""
    if charges_dollars(currency):
        return f"${amount:,.2f}"
    return f"{amount:,.2f} {currency_name(currency)}"


def purchase(item: str, amount: float, currency: str = "USD") -> str:
    """Name a purchase for a person: ``<item> ($<amount>)``, unescaped (for :func:`label`)."""
    return f"{item} ({price_text(amount, currency)})"


@tool(response_format="content_and_artifact", parse_docstring=True)
def checkout(
    item: str,
    amount: float,
    messages: Annotated[list[AnyMessage], InjectedState("messages")],
    tool_call_id: Annotated[str, InjectedToolCallId],
    currency: str = "USD",
) -> tuple[str, dict[str, Any]]:
    """Buy an item: charge the customer's card and return the receipt.

    Args:
        item: What to buy.
        amount: The price as the customer gave it, never converted.
        messages: The thread's messages, injected by the tool node; the model never sees it.
        tool_call_id: This call's id, injected by the tool node.
        currency: The price's currency as an ISO 4217 code (EUR for euros, GBP for pounds);
            the shop charges only USD and refuses any other.
    """
    if not charges_dollars(currency):  # named, never charged as dollars
        heading = label("Not purchased: " + purchase(item, amount, str(currency)))
        named = CURRENCY_MESSAGE.format(currency=plain(currency_name(str(currency))))
        text = escape_math(f"{heading}\n\n{named}")
        return text, stopping.fatal(cause="currency", currency=str(currency)[:24])
    context = run_context()
    outcome, attempt = draw_outcome(context, messages, tool_call_id, f"{item}:{amount}")
    not_purchased = label("Not purchased: " + purchase(item, amount))
    digest = hashlib.sha256(f"{context.seed}:{item}:{amount}".encode()).hexdigest()[:8]
    try:
        paid = charge(
            stopping.idempotency_key(tool_call_id),
            item,
            amount,
            outcome=_BANK[outcome],
            order_id=f"ORD-{digest.upper()}",
        )
    except IdempotencyKeyReusedError:
        text = escape_math(f"{not_purchased}\n\n{KEY_REUSED_MESSAGE}")
        return text, stopping.fatal(attempt=attempt, cause="idempotency_key_reused")
    replay = {"replayed": True} if paid.replayed else {}
    if paid.outcome == "timed_out":
        not_done = escape_math(f"{not_purchased}: {NOT_DONE_MESSAGE}")
        return TIMEOUT_MESSAGE, stopping.transient(not_done=not_done, attempt=attempt, status=504)
    if paid.outcome == "declined":
        text = escape_math(f"{not_purchased}\n\n{DECLINED_MESSAGE}")
        return text, stopping.fatal(attempt=attempt, cause="card_declined", **replay)
    return receipt(item, amount, paid.order_id), stopping.completed(
        attempt=attempt, order_id=paid.order_id, amount=amount, **replay
    )
