"""Internal: the empty-input check the middleware runs (may change in any release)."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage

NO_MESSAGES = (
    "input needs at least one message under 'messages', for example "
    "{'messages': [{'role': 'user', 'content': '...'}]}"
)
"""The error a run without messages fails with (a ValueError: the API passes its text on)."""


def require_messages(messages: Sequence[BaseMessage]) -> None:
    """Fail a run that has no messages, with an error naming ``messages``.

    Raises:
        ValueError: If ``messages`` is empty.
    """
    if not messages:
        raise ValueError(NO_MESSAGES)
