"""Read a thread's message list the way the stop decision reads it.

Public, with a stability promise: these names keep their signatures and meaning within a
major version, so an agent that builds its own prompts or its own fake model can read a
turn as :func:`stop_on_artifact.decide` does. Each works on langchain-core 0.3 and 1.x.

A *turn* is every message after the last user message; a *tool step* is every
ToolMessage after the turn's last AIMessage that has tool calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

__all__ = [
    "NO_MESSAGES",
    "invocation_index",
    "latest_tool_step",
    "message_text",
    "model_call_count",
    "require_messages",
    "tool_calls",
    "transient_count",
    "turn_results",
    "turn_start",
]


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


def message_text(message: BaseMessage) -> str:
    """Return a message's text: its string content, or its text blocks joined.

    ``BaseMessage.text`` is a method in langchain-core 0.3 and a property in 1.x; this
    reads the content itself, the same on both.

    Args:
        message: Any message.

    Returns:
        The text, possibly empty.
    """
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def tool_calls(message: BaseMessage) -> list[dict[str, Any]]:
    """Return an AIMessage's tool calls as plain dicts; no calls for any other message.

    Args:
        message: Any message.

    Returns:
        The calls, in the order the model issued them.
    """
    if isinstance(message, AIMessage):
        return [dict(call) for call in message.tool_calls]
    return []


def turn_start(messages: Sequence[BaseMessage]) -> int:
    """Return the index just after the last user message (0 when there is none).

    Args:
        messages: The thread's messages.

    Returns:
        Where the turn starts: ``messages[turn_start(messages):]`` is the turn.
    """
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return index + 1
    return 0


def latest_tool_step(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    """Return the ToolMessages of the latest tool step, in the order the model issued them.

    The step is every ToolMessage after the last AIMessage that has tool calls. Messages
    are ordered by their position in that AIMessage's ``tool_calls`` (not by when they
    finished); a repeated ``tool_call_id`` counts once; messages for unknown ids go last.

    Args:
        messages: The thread's messages.

    Returns:
        The step's ToolMessages, possibly empty.
    """
    for index in range(len(messages) - 1, -1, -1):
        calls = tool_calls(messages[index])
        if calls:
            order = {call["id"]: position for position, call in enumerate(calls)}
            seen: set[str] = set()
            step: list[ToolMessage] = []
            for message in messages[index + 1 :]:
                if isinstance(message, ToolMessage) and message.tool_call_id not in seen:
                    seen.add(message.tool_call_id)
                    step.append(message)
            return sorted(step, key=lambda m: order.get(m.tool_call_id, len(order)))
    return []


def invocation_index(messages: Sequence[BaseMessage], tool_call_id: str) -> int:
    """Return the 0-based position of a tool call among this turn's tool calls.

    Calls are counted since the last user message, in the order the model issued them,
    whatever order they finish in: a fake tool scripted per call reads its script by it.

    Args:
        messages: The thread's messages, including the AIMessage that issued the call.
        tool_call_id: The call to locate.

    Returns:
        The call's index, or the number of calls this turn if the id is unknown.
    """
    ids = [
        call["id"] for message in messages[turn_start(messages) :] for call in tool_calls(message)
    ]
    return ids.index(tool_call_id) if tool_call_id in ids else len(ids)


def model_call_count(messages: Sequence[BaseMessage]) -> int:
    """Count model calls (AIMessages) since the last user message.

    Args:
        messages: The thread's messages.

    Returns:
        The count.
    """
    return sum(isinstance(m, AIMessage) for m in messages[turn_start(messages) :])


def transient_count(messages: Sequence[BaseMessage]) -> int:
    """Count valid ``transient`` outcomes since the last user message.

    A repeated ``tool_call_id`` counts once, its first copy deciding, as in
    :func:`latest_tool_step`. This is the count the retry budget is checked against.

    Args:
        messages: The thread's messages.

    Returns:
        The count.
    """
    from stop_on_artifact._parts import scan_turn  # parts reads messages with this module

    return scan_turn(messages).transients


def turn_results(messages: Sequence[BaseMessage]) -> list[ToolMessage | None]:
    """Return the latest result of each part of this turn, in the question's order.

    Parts are the turn's tool calls in the order the model first asked for them, a retry
    taking the place of the call it retries (see :func:`stop_on_artifact.decide`); a part
    whose call has no result yet is None. A model that writes the answer itself can read
    the turn the way a hard stop answers it.

    Args:
        messages: The thread's messages.

    Returns:
        One entry per part, possibly empty.
    """
    from stop_on_artifact._parts import scan_turn  # parts reads messages with this module

    return [part.message for part in scan_turn(messages).parts]
