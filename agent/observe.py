"""Publishing a stop decision: the custom stream event clients read."""

from __future__ import annotations

import logging

from langgraph.config import get_stream_writer

from agent.contract import StopDecision

logger = logging.getLogger(__name__)


def publish(decision: StopDecision) -> None:
    """Emit ``{"stop_decision": decision}`` on ``stream_mode="custom"``.

    Args:
        decision: The decision of one tool step.
    """
    get_stream_writer()({"stop_decision": dict(decision)})
    logger.info(
        "stop decision: action=%s rule=%s tool=%s",
        decision["action"],
        decision["rule"],
        decision["tool"],
    )
