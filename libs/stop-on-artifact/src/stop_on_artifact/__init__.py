"""Per-call tool stopping, decided from the tool's ``content_and_artifact`` artifact.

A tool returns ``(content, artifact)``, the artifact built by :func:`completed`,
:func:`transient`, :func:`fatal` or :func:`policy_block`. :func:`decide` reads a tool step
and returns a :class:`StopDecision`; :class:`StopOnArtifactMiddleware` places it in
``create_agent`` (the ``[langchain]`` extra) and :class:`StopRouter` in a hand-built
``StateGraph``. On a hard stop the answer is the settled tools' content, no model call.
:class:`PolicyMiddleware` and :class:`PolicyGate` refuse a call, or ask a person, first.

This ``__all__`` is the public API, with :mod:`stop_on_artifact.messages` (read a turn as
the decision does) and :mod:`stop_on_artifact.testing` (a harness for your tests);
``_``-prefixed modules are internal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stop_on_artifact._adopt import adopt
from stop_on_artifact._approval import ApprovalUsedError, resume_problem
from stop_on_artifact._artifact import (
    InvalidArtifactError,
    Reason,
    completed,
    fatal,
    parse_artifact,
    policy_block,
    transient,
)
from stop_on_artifact._decision import StopDecision, decide, final_text, is_hard_stop
from stop_on_artifact._policies import Block, PolicyGate, ToolPolicy, tool_policy
from stop_on_artifact._record import StateSchemaError, StopState
from stop_on_artifact._retry import current_attempt
from stop_on_artifact._router import StopRouter
from stop_on_artifact._settings import ParallelPolicy, StopMode, StopSettings

if TYPE_CHECKING:
    from stop_on_artifact._middleware import StopOnArtifactMiddleware
    from stop_on_artifact._policy_middleware import PolicyMiddleware

__version__ = "0.3.0"

__all__ = [
    "ApprovalUsedError",
    "Block",
    "InvalidArtifactError",
    "ParallelPolicy",
    "PolicyGate",
    "PolicyMiddleware",
    "Reason",
    "StateSchemaError",
    "StopDecision",
    "StopMode",
    "StopOnArtifactMiddleware",
    "StopRouter",
    "StopSettings",
    "StopState",
    "ToolPolicy",
    "adopt",
    "completed",
    "current_attempt",
    "decide",
    "fatal",
    "final_text",
    "is_hard_stop",
    "parse_artifact",
    "policy_block",
    "resume_problem",
    "tool_policy",
    "transient",
]


if not TYPE_CHECKING:  # a module __getattr__ would make a type checker accept any name

    def __getattr__(name: str) -> Any:
        """Import the middleware on first use: it needs the ``[langchain]`` extra."""
        if name == "StopOnArtifactMiddleware":
            from stop_on_artifact._middleware import StopOnArtifactMiddleware

            return StopOnArtifactMiddleware
        if name == "PolicyMiddleware":
            from stop_on_artifact._policy_middleware import PolicyMiddleware

            return PolicyMiddleware
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
