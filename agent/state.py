"""Graph state both graphs keep: the messages, plus the latest stop decision."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, NotRequired, Required

from langchain.agents import AgentState
from langchain_core.messages import AnyMessage
from langgraph.graph.message import Messages, add_messages
from typing_extensions import TypedDict

from agent.contract import StopDecision

NO_MESSAGES = (
    "input needs at least one message under 'messages', for example "
    "{'messages': [{'role': 'user', 'content': '...'}]}"
)
"""The error a run without messages fails with (a ValueError: the API passes its text on)."""


def require_messages(messages: Sequence[AnyMessage]) -> None:
    """Fail a run that has no messages, with an error naming ``messages``.

    Raises:
        ValueError: If ``messages`` is empty.
    """
    if not messages:
        raise ValueError(NO_MESSAGES)


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


class State(InputState):
    """The ``legacy`` graph's state."""

    stop_decision: NotRequired[StopDecision | None]
    """Decision of the latest tool step this turn; None when no tool ran. Checkpointed."""


class StopState(AgentState[Any]):
    """``create_agent``'s state with the stop decision, and messages read quietly."""

    messages: Required[Annotated[list[AnyMessage], add_messages_quietly]]
    """The conversation, as in ``AgentState``, through :func:`add_messages_quietly`."""

    stop_decision: NotRequired[StopDecision | None]
    """Decision of the latest tool step this turn; None when no tool ran. Checkpointed."""
