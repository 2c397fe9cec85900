"""Read a thread's messages as the stop decision does; `__all__` is stable in a major version.

A *turn* is every message after the last user message; a *part*, one thing the question asked
for (a call whose result carries an artifact or is an error, or the latest retry of it).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, ToolMessage

from stop_on_artifact import _turn

# Internal, not in `__all__`: the core and the middleware import them from here.
from stop_on_artifact._turn import message_text as message_text
from stop_on_artifact._turn import require_messages as require_messages
from stop_on_artifact._turn import turn_start

__all__ = ["turn_results", "turn_start"]


def turn_results(messages: Sequence[BaseMessage]) -> list[ToolMessage | None]:
    """Return each part's latest result in the question's order (None: no result yet)."""
    return [part.message for part in _turn.scan_turn(messages).parts]
