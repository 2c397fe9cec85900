"""Graph state both graphs keep: the messages, plus the latest stop decision."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, NotRequired

from langchain.agents import AgentState
from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
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


class InputState(TypedDict):
    """What a client sends: ``{"messages": [...]}``."""

    messages: Annotated[list[AnyMessage], add_messages]
    """The conversation; a new user message starts a new turn."""


class State(InputState):
    """The ``legacy`` graph's state."""

    stop_decision: NotRequired[StopDecision | None]
    """Decision of the latest tool step this turn; None when no tool ran. Checkpointed."""


class StopState(AgentState[Any]):
    """State the stop middleware adds to ``create_agent``'s state."""

    stop_decision: NotRequired[StopDecision | None]
    """Decision of the latest tool step this turn; None when no tool ran. Checkpointed."""
