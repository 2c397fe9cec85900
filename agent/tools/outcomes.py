"""How a tool call's outcome is chosen: forced by the context, or drawn with a seeded RNG."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from langchain_core.messages import BaseMessage
from stop_on_artifact.in_place import current_attempt
from stop_on_artifact.messages import invocation_index

from agent.context import Context, ForcedOutcome

DEFAULT_WEIGHTS: Mapping[ForcedOutcome, float] = {
    "success": 0.6,
    "transient": 0.25,
    "fatal": 0.15,
}
"""The outcome mix when nothing is forced."""


def draw_outcome(
    context: Context,
    messages: Sequence[BaseMessage],
    tool_call_id: str,
    key: str,
    weights: Mapping[ForcedOutcome, float] = DEFAULT_WEIGHTS,
) -> tuple[ForcedOutcome, int]:
    """Pick this call's outcome.

    The call's position among this turn's tool calls (in the order the model issued them),
    plus its in-place attempt (``retry_in_place``: a retry of the same call reads the next
    position), indexes ``context.force_outcome``; with nothing forced, an RNG seeded by the
    context's seed, the position and ``key`` draws from ``weights``, so a rerun draws the
    same.

    Args:
        context: The run's context.
        messages: The thread's messages the tool was called with (``InjectedState``).
        tool_call_id: The call's id (``InjectedToolCallId``).
        key: Call-specific text mixed into the seed (for example the query).
        weights: Outcome weights for the draw.

    Returns:
        The outcome and the call's 0-based position this turn.
    """
    # An in-place retry of the call (retry_in_place) reads the next position's outcome.
    index = invocation_index(messages, tool_call_id) + current_attempt()
    forced = context.outcome_for(index)
    if forced is not None:
        return forced, index
    rng = random.Random(f"{context.seed}:{index}:{key}")
    outcomes = list(weights)
    return rng.choices(outcomes, weights=[weights[o] for o in outcomes])[0], index
