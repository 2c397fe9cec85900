"""Per-call tool stopping, decided from the tool's ``content_and_artifact`` artifact.

The reusable core, with no knowledge of this project's tools, models or tracing:

- :mod:`stop_on_artifact.artifact`: the reason vocabulary, one builder per reason, parsing;
- :mod:`stop_on_artifact.decision`: :func:`decide`, the parallel policies and the answer;
- :mod:`stop_on_artifact.settings`: the four settings and their per-run overrides;
- :mod:`stop_on_artifact.router`: :class:`StopRouter` for a hand-built ``StateGraph``;
- :mod:`stop_on_artifact.middleware`: ``StopOnArtifactMiddleware`` for ``create_agent``
  (import it from there: it needs ``langchain`` 1.x, the rest runs on langgraph 0.6 too).
"""

from stop_on_artifact.artifact import (
    MAX_EXTRA_FIELD_CHARS,
    REASONS,
    STOPPING_REASONS,
    InvalidArtifactError,
    Reason,
    completed,
    fatal,
    parse_artifact,
    policy_block,
    transient,
)
from stop_on_artifact.decision import (
    ANSWER_SEPARATOR,
    MODEL_CALL_LIMIT_MESSAGE,
    RETRY_BUDGET_MESSAGE,
    RULES,
    Rule,
    StopDecision,
    decide,
    final_text,
    invocation_index,
    is_hard_stop,
    latest_tool_step,
    message_text,
    model_call_count,
    settled_calls,
    transient_count,
    turn_start,
)
from stop_on_artifact.router import StopRouter
from stop_on_artifact.settings import ParallelPolicy, StopMode, StopSettings

__all__ = [
    "ANSWER_SEPARATOR",
    "MAX_EXTRA_FIELD_CHARS",
    "MODEL_CALL_LIMIT_MESSAGE",
    "REASONS",
    "RETRY_BUDGET_MESSAGE",
    "RULES",
    "STOPPING_REASONS",
    "InvalidArtifactError",
    "ParallelPolicy",
    "Reason",
    "Rule",
    "StopDecision",
    "StopMode",
    "StopRouter",
    "StopSettings",
    "completed",
    "decide",
    "fatal",
    "final_text",
    "invocation_index",
    "is_hard_stop",
    "latest_tool_step",
    "message_text",
    "model_call_count",
    "parse_artifact",
    "policy_block",
    "settled_calls",
    "transient",
    "transient_count",
    "turn_start",
]
