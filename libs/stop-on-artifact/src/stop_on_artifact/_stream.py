"""The custom stream event a client reads after each tool step."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from langchain_core.messages import BaseMessage
from langgraph.config import get_stream_writer

from stop_on_artifact._decision import StopDecision

logger = logging.getLogger(__name__)

EVENT_KEY = "stop_decision"
"""``stream_mode="custom"`` yields ``{"stop_decision": {...}}`` once per tool step."""

DecisionHook = Callable[[StopDecision, Sequence[BaseMessage]], None]
"""Called with each decision and the messages it was made from (tracing, metrics)."""

ModelCallHook = Callable[[Sequence[BaseMessage], "StopDecision | None"], None]
"""Called after each model call with the messages so far and the turn's latest decision."""


def emit(
    decision: StopDecision,
    messages: Sequence[BaseMessage] = (),
    on_decision: DecisionHook | None = None,
) -> None:
    """Stream ``{"stop_decision": decision}``, log it without content, call the hook.

    Args:
        decision: The decision of one tool step.
        messages: The messages it was decided from, ending with the tool step.
        on_decision: An extra hook, for example one that writes trace metadata.
    """
    get_stream_writer()({EVENT_KEY: dict(decision)})
    logger.info(
        "stop decision: action=%s rule=%s tool=%s",
        decision["action"],
        decision["rule"],
        decision["tool"],
    )
    if on_decision is not None:
        on_decision(decision, messages)
