"""Per-call tool stopping, decided from the tool's ``content_and_artifact`` artifact.

A tool returns ``(content, artifact)``; the artifact comes from one builder
(:func:`completed`, :func:`transient`, :func:`fatal`, :func:`policy_block`) and says whether
this call's result ends the run. :func:`decide` reads a tool step's artifacts and returns a
:class:`StopDecision`; :class:`StopRouter` places it in a hand-built ``StateGraph`` and
:class:`StopOnArtifactMiddleware` in ``create_agent`` (the ``[langchain]`` extra). On a hard
stop the answer is the settled tools' content verbatim (:func:`final_text`), with no
further model call. A turn runs under the settings it started with: they are recorded once,
at its first model call, under ``stop_turn`` (:class:`StopState` declares it for a
hand-built graph; the middleware declares its own), and every later step reads the record.

The public API is this package's ``__all__`` (import those names from here) and the
``__all__`` of its public modules: :mod:`stop_on_artifact.messages` (read a turn the way the
decision does, with a stability promise), :mod:`stop_on_artifact.testing` (a scripted chat
model, forced outcomes and assertions for your pytest), :mod:`stop_on_artifact._artifact`,
:mod:`stop_on_artifact._decision`, :mod:`stop_on_artifact._middleware`,
:mod:`stop_on_artifact._router`, :mod:`stop_on_artifact._settings`,
:mod:`stop_on_artifact._texts`, :mod:`stop_on_artifact._retry` (retry a transient call in
place), :mod:`stop_on_artifact._stream` (the custom stream event),
:mod:`stop_on_artifact._policies` (refuse a tool call, or ask a person, before any stop is
read; ``PolicyGate`` for a hand-built graph), :mod:`stop_on_artifact._policy_middleware`
(``PolicyMiddleware`` for ``create_agent``) and :mod:`stop_on_artifact._approval` (the
human-in-the-loop request and its checks).
Any other name is internal, and so is a module whose docstring starts with "Internal:"
(:mod:`~stop_on_artifact._parts`, :mod:`~stop_on_artifact._rules`,
:mod:`~stop_on_artifact._answer`, :mod:`~stop_on_artifact._markdown`): it may change in any
release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stop_on_artifact._adopt import adopt
from stop_on_artifact._artifact import (
    REASONS,
    InvalidArtifactError,
    Reason,
    completed,
    fatal,
    parse_artifact,
    policy_block,
    transient,
)
from stop_on_artifact._decision import (
    ANSWER_SEPARATOR,
    MODEL_CALL_LIMIT_MESSAGE,
    RETRY_BUDGET_MESSAGE,
    RULES,
    Rule,
    StopDecision,
    decide,
    final_text,
    is_hard_stop,
    not_done_text,
)
from stop_on_artifact._router import StopRouter
from stop_on_artifact._settings import ParallelPolicy, SettingsFromContext, StopMode, StopSettings
from stop_on_artifact._record import StateSchemaError, StopState, TurnRecord
from stop_on_artifact._texts import StopTexts

if TYPE_CHECKING:
    from stop_on_artifact._middleware import StopOnArtifactMiddleware, StopOnArtifactState
    from stop_on_artifact._policy_middleware import PolicyMiddleware

__version__ = "0.2.0"

__all__ = [
    "ANSWER_SEPARATOR",
    "MODEL_CALL_LIMIT_MESSAGE",
    "REASONS",
    "RETRY_BUDGET_MESSAGE",
    "RULES",
    "InvalidArtifactError",
    "ParallelPolicy",
    "PolicyMiddleware",
    "Reason",
    "Rule",
    "SettingsFromContext",
    "StateSchemaError",
    "StopDecision",
    "StopMode",
    "StopOnArtifactMiddleware",
    "StopOnArtifactState",
    "StopRouter",
    "StopSettings",
    "StopState",
    "StopTexts",
    "TurnRecord",
    "adopt",
    "completed",
    "decide",
    "fatal",
    "final_text",
    "is_hard_stop",
    "not_done_text",
    "parse_artifact",
    "policy_block",
    "transient",
]


if not TYPE_CHECKING:  # a module __getattr__ would make a type checker accept any name

    def __getattr__(name: str) -> Any:
        """Import the middleware classes on first use: they need the ``[langchain]`` extra."""
        if name in {"StopOnArtifactMiddleware", "StopOnArtifactState"}:
            from stop_on_artifact import _middleware as middleware

            return getattr(middleware, name)
        if name == "PolicyMiddleware":
            from stop_on_artifact._policy_middleware import PolicyMiddleware

            return PolicyMiddleware
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
