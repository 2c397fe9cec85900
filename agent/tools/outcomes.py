"""How a tool call's outcome is chosen: forced by the context, or drawn with a seeded RNG."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from agent.context import Context, Outcome
from agent.stopping import invocation_index

DEFAULT_WEIGHTS: Mapping[Outcome, float] = {"success": 0.6, "transient": 0.25, "fatal": 0.15}
"""The outcome mix when nothing is forced."""


def draw_outcome(
    context: Context,
    state: Mapping[str, Any],
    tool_call_id: str | None,
    key: str,
    weights: Mapping[Outcome, float] = DEFAULT_WEIGHTS,
) -> tuple[Outcome, int]:
    """Pick this call's outcome.

    The call's position among this turn's tool calls (in the order the model issued them)
    indexes ``context.force_outcome``; with nothing forced, an RNG seeded by the context's
    seed, the position and ``key`` draws from ``weights``, so a rerun draws the same.

    Args:
        context: The run's context.
        state: The graph state the tool was called in (needs ``messages``).
        tool_call_id: The call's id.
        key: Call-specific text mixed into the seed (for example the query).
        weights: Outcome weights for the draw.

    Returns:
        The outcome and the call's 0-based position this turn.
    """
    messages: Sequence[BaseMessage] = state.get("messages", [])
    index = invocation_index(messages, tool_call_id or "")
    forced = context.outcome_for(index)
    if forced is not None:
        return forced, index
    rng = random.Random(f"{context.seed}:{index}:{key}")
    outcomes = list(weights)
    return rng.choices(outcomes, weights=[weights[o] for o in outcomes])[0], index
