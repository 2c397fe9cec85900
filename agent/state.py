"""Graph state: the messages, read quietly, the latest stop decision and the turn's records.

``legacy`` uses :class:`State`; ``middleware`` extends the core's ``create_agent`` state the
same way (:class:`agent.graphs.middleware.StopState`).
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.graph.message import Messages, add_messages
from stop_on_artifact import StopDecision
from typing_extensions import TypedDict


def add_messages_quietly(left: Messages, right: Messages) -> Messages:
    """``add_messages``, but a message it cannot read fails without quoting the input.

    langchain-core's coercion error quotes the whole message dict, and the server logs a
    failed run's error text: a malformed user message would put its content in the log.

    Raises:
        ValueError: If a message cannot be read; the text names ``messages``, not content.
    """
    try:
        return add_messages(left, right)
    except (ValueError, TypeError, NotImplementedError) as exc:
        msg = (
            f"'messages' holds a message that could not be read ({type(exc).__name__}): "
            "each needs a 'role' (or 'type') and a 'content'"
        )
        raise ValueError(msg) from None


class InputState(TypedDict):
    """What a client sends: ``{"messages": [...]}``."""

    messages: Annotated[list[AnyMessage], add_messages_quietly]
    """The conversation; a new user message starts a new turn."""


class OutputState(InputState):
    """What a run returns: the messages and the latest stop decision.

    The turn's records (its context, the policy's verdict) stay in the thread's state.
    """

    stop_decision: NotRequired[StopDecision | None]
    """Decision of the latest tool step this turn; None when no tool ran."""


class State(InputState):
    """The ``legacy`` graph's state."""

    stop_decision: NotRequired[StopDecision | None]
    """Decision of the latest tool step this turn; None when no tool ran. Checkpointed."""
    turn_context: NotRequired[dict[str, Any] | None]
    """The context this turn started with; a resume runs under it (:mod:`agent.turn`)."""
    stop_turn: NotRequired[dict[str, Any] | None]
    """The library's record of the stop settings this turn runs under."""
    spend_cap_verdict: NotRequired[dict[str, Any] | None]
    """The spend-cap verdict on the latest model turn's calls (the library's
    verdict, ``agent.policy.gate.verdict_key``),
    recorded before any of them runs; the tools step applies it."""
