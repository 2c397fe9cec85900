"""Per-call tool stopping, decided from the tool's `content_and_artifact` artifact.

This `__all__` is the public API, with `stop_on_artifact.messages` and `stop_on_artifact.testing`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from stop_on_artifact._adopt import MARK_ARGUMENT, MCPErrorResult, adopt
from stop_on_artifact._approval import ApprovalUsedError, resume_problem
from stop_on_artifact._artifact import (
    InvalidArtifactError,
    completed,
    fatal,
    parse_artifact,
    policy_block,
    transient,
)
from stop_on_artifact._decision import StopDecision, decide, final_text
from stop_on_artifact._gate import PolicyGate
from stop_on_artifact._idempotency import InjectedIdempotencyKey, idempotency_key
from stop_on_artifact._mark import mark_tool
from stop_on_artifact._policies import Block, tool_policy
from stop_on_artifact._record import StopState
from stop_on_artifact._retry import current_attempt
from stop_on_artifact._router import StopRouter
from stop_on_artifact._settings import StopSettings

if TYPE_CHECKING:
    from stop_on_artifact._middleware import StopOnArtifactMiddleware
    from stop_on_artifact._policy_middleware import PolicyMiddleware

__version__ = "0.6.0"

__all__ = [
    "MARK_ARGUMENT", "ApprovalUsedError", "Block", "InvalidArtifactError", "InjectedIdempotencyKey",
    "MCPErrorResult", "PolicyGate", "PolicyMiddleware", "StopDecision", "StopOnArtifactMiddleware",
    "StopRouter", "StopSettings", "StopState", "adopt", "completed", "current_attempt", "decide",
    "fatal", "final_text", "idempotency_key", "mark_tool", "parse_artifact", "policy_block",
    "resume_problem", "tool_policy", "transient",
]  # fmt: skip


if not TYPE_CHECKING:  # a module __getattr__ would make a type checker accept any name

    def __getattr__(name: str) -> Any:
        """Import the middleware on first use: it needs the `[langchain]` extra."""
        if name in ("StopOnArtifactMiddleware", "PolicyMiddleware"):
            module = "_policy_middleware" if name == "PolicyMiddleware" else "_middleware"
            return getattr(import_module(f"stop_on_artifact.{module}"), name)
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
