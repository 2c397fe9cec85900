"""Publishing a stop decision: the custom stream event clients read, and trace metadata."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from langchain_core.messages import BaseMessage
from langgraph.config import get_stream_writer

from agent import tracing
from agent.contract import StopDecision

logger = logging.getLogger(__name__)


def publish(decision: StopDecision, messages: Sequence[BaseMessage] = ()) -> None:
    """Emit ``{"stop_decision": decision}`` on ``stream_mode="custom"`` and trace it.

    When the run is traced, the current run (the one that decided) gets the ``stop_*``
    metadata and the tag ``stop:<rule>``, and the root run gets the decision and the
    run's totals so far (see :mod:`agent.tracing`).

    Args:
        decision: The decision of one tool step.
        messages: The messages it was decided from, ending with the tool step.
    """
    get_stream_writer()({"stop_decision": dict(decision)})
    logger.info(
        "stop decision: action=%s rule=%s tool=%s",
        decision["action"],
        decision["rule"],
        decision["tool"],
    )
    tracing.annotate_decision(decision, messages)
    tracing.record_run(messages, decision)


def record_model_call(messages: Sequence[BaseMessage], decision: StopDecision | None) -> None:
    """After a model call, put the run's totals so far on the root run, if traced.

    Args:
        messages: The messages including the model's reply.
        decision: The latest tool step's decision this turn, or None if no tool ran.
    """
    tracing.record_run(messages, decision)
