"""How a tool call's outcome is chosen: forced by the context, or drawn with a seeded RNG."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from langchain_core.messages import AIMessage, BaseMessage
from stop_on_artifact import current_attempt
from stop_on_artifact.messages import turn_start

from agent.context import Context, ForcedOutcome

DEFAULT_WEIGHTS: Mapping[ForcedOutcome, float] = {
    "success": 0.6,
    "transient": 0.25,
    "fatal": 0.15,
}
"""The outcome mix when nothing is forced."""


def outcome_position(messages: Sequence[BaseMessage], tool_call_id: str, attempt: int = 0) -> int:
    """Return the position whose forced (or drawn) outcome a call's attempt gets.

    The first attempt gets the call's own position among this turn's calls. An in-place
    retry (``retry_in_place``, attempt 1, 2, ...) gets the position the model's retry would
    have had: after every call issued so far this turn, so ``["transient", "fatal",
    "success"]`` reads the same for a two-part question whichever way its first part is
    retried.

    Args:
        messages: The thread's messages (up to the call's step, or the whole thread).
        tool_call_id: The call's id.
        attempt: Its in-place attempt (:func:`stop_on_artifact.current_attempt`).

    Returns:
        The 0-based position.
    """
    turn = messages[turn_start(messages) :]
    if attempt == 0:  # the call's own position among this turn's calls (their count if unknown)
        ids = [c["id"] for m in turn if isinstance(m, AIMessage) for c in m.tool_calls]
        return ids.index(tool_call_id) if tool_call_id in ids else len(ids)
    issued = 0
    for message in turn:
        calls = [c["id"] for c in message.tool_calls] if isinstance(message, AIMessage) else []
        issued += len(calls)
        if tool_call_id in calls:
            break
    return issued + attempt - 1


def draw_outcome(
    context: Context,
    messages: Sequence[BaseMessage],
    tool_call_id: str,
    key: str,
    weights: Mapping[ForcedOutcome, float] = DEFAULT_WEIGHTS,
) -> tuple[ForcedOutcome, int]:
    """Pick this call's outcome.

    The call's position among this turn's tool calls (in the order the model issued them;
    see :func:`outcome_position` for an in-place retry) indexes ``context.force_outcome``;
    with nothing forced, an RNG seeded by the context's seed, the position and ``key``
    draws from ``weights``, so a rerun draws the same.

    Args:
        context: The run's context.
        messages: The thread's messages the tool was called with (``InjectedState``).
        tool_call_id: The call's id (``InjectedToolCallId``).
        key: Call-specific text mixed into the seed (for example the query).
        weights: Outcome weights for the draw.

    Returns:
        The outcome and the call's 0-based position this turn.
    """
    index = outcome_position(messages, tool_call_id, current_attempt())
    forced = context.outcome_for(index)
    if forced is not None:
        return forced, index
    rng = random.Random(f"{context.seed}:{index}:{key}")
    outcomes = list(weights)
    return rng.choices(outcomes, weights=[weights[o] for o in outcomes])[0], index
