"""Read a thread's messages as the stop decision does; `__all__` is stable in a major version.

A *turn* is every message after the last user message; a *tool step*, every ToolMessage after
the turn's last AIMessage with tool calls; a *part*, one thing the question asked for (a call
whose result carries an artifact or is an error, or the latest retry of it).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, ToolMessage

from stop_on_artifact import _turn
from stop_on_artifact._artifact import NOT_DONE_FIELD
from stop_on_artifact._turn import in_place_retries, tool_calls, turn_start

__all__ = [
    "NOT_DONE_FIELD", "in_place_retries", "invocation_index", "latest_tool_step", "message_text",
    "require_messages", "tool_calls", "turn_results", "turn_start",
]  # fmt: skip

NO_MESSAGES = (
    "input needs at least one message under 'messages', for example "
    "{'messages': [{'role': 'user', 'content': '...'}]}"
)


def require_messages(messages: Sequence[BaseMessage]) -> None:
    """Fail a run that has no messages with a `ValueError` naming `messages`."""
    if not messages:
        raise ValueError(NO_MESSAGES)


def message_text(message: BaseMessage) -> str:
    """Return a message's text: its string content, or its text blocks joined."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        block if isinstance(block, str) else str(block.get("text", ""))
        for block in content
        if isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")
    )


def latest_tool_step(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    """Return the latest tool step's ToolMessages in call order (unknown ids last, once each)."""
    for index in range(len(messages) - 1, -1, -1):
        calls = tool_calls(messages[index])
        if calls:
            return _turn._in_call_order(calls, messages[index + 1 :])
    return []


def invocation_index(messages: Sequence[BaseMessage], tool_call_id: str) -> int:
    """Return a call's 0-based position among this turn's calls (their count if unknown)."""
    ids = [c["id"] for m in messages[turn_start(messages) :] for c in tool_calls(m)]
    return ids.index(tool_call_id) if tool_call_id in ids else len(ids)


def turn_results(messages: Sequence[BaseMessage]) -> list[ToolMessage | None]:
    """Return each part's latest result in the question's order (None: no result yet)."""
    return [part.message for part in _turn.scan_turn(messages).parts]
