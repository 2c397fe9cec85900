"""The runtime context both graphs share (``context_schema``).

A pydantic model, not a plain dataclass: the server validates it, so a run started with
``stop_mode="bogus"`` fails with an error that names the field instead of running. It
extends the library's :class:`~stop_on_artifact.StopSettings`, so the four stop settings,
their defaults, bounds and descriptions are written once, there; the graphs' router and
middleware read a run's settings from the fields that run set.
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal

from langgraph.runtime import get_runtime
from pydantic import Field, field_validator
from stop_on_artifact import StopSettings

ForcedOutcome = Literal["success", "transient", "retryable", "fatal"]
"""A tool outcome a run may force; ``transient`` and ``retryable`` mean the same thing.

The app's one name for it: the tools, the CLI and the tests import it from here. (The
library's harness, :mod:`stop_on_artifact.testing`, forces outcomes of its own test tool.)
"""

OnPolicyBlock = Literal["refuse", "ask"]
"""What a call the spend-cap policy would refuse does: refused at once, or asked about."""

OFFLINE_MODEL = "offline"
GROQ_DEFAULT_MODEL = "groq:llama-3.3-70b-versatile"
_PROVIDER_MODEL = re.compile(r"^[a-z][a-z0-9_-]*:\S+$")


def default_model() -> str:
    """Return ``offline``, or the Groq default when ``GROQ_API_KEY`` is set."""
    return GROQ_DEFAULT_MODEL if os.environ.get("GROQ_API_KEY") else OFFLINE_MODEL


class Context(StopSettings):
    """Per-run settings. Every field shows in Studio with its description.

    ``stop_mode``, ``parallel_policy``, ``max_retries`` and ``max_model_calls`` come from
    :class:`~stop_on_artifact.StopSettings`, and so does the config: frozen, unknown fields
    refused, and errors that name the field and the expected form, never the value (a value
    can be a secret pasted in the wrong field, and errors reach the client and the log).
    """

    model: str = Field(
        default_factory=default_model,
        description=(
            "Chat model: 'offline' (deterministic, no network) or a 'provider:model' string "
            "for init_chat_model, e.g. 'groq:llama-3.3-70b-versatile'. Default: 'offline', "
            "or the Groq default when GROQ_API_KEY is set."
        ),
    )
    force_outcome: ForcedOutcome | list[ForcedOutcome] | None = Field(
        default=None,
        description=(
            "Force tool outcomes: None (drawn from weights with a seeded RNG), one of "
            "'success' | 'transient' | 'fatal' for every call ('retryable' is the same as "
            "'transient'), or a list applied to this turn's tool calls in the order the "
            "model issued them, the last element repeating (['transient', 'success']: the "
            "first call fails, the retry succeeds)."
        ),
    )
    seed: int = Field(default=0, description="Seed for the outcome RNG when force_outcome is None.")
    spend_cap: float = Field(
        default=500.0,
        ge=0,
        description=(
            "Largest checkout amount allowed. A larger amount is refused by the spend-cap "
            "policy before the tool runs, and the run stops with rule 'policy_block'."
        ),
    )
    on_policy_block: OnPolicyBlock = Field(
        default="refuse",
        description=(
            "What a checkout above spend_cap does. 'refuse' (default): it is refused before "
            "the tool runs and the run stops with rule 'policy_block'. 'ask': nothing is "
            "charged and the run pauses before any tool of that step runs, with one "
            "approval request (one action per blocked call; Agent Chat UI and Studio show "
            "approve / reject). Resume with {'decisions': [{'type': 'approve'}]} to run "
            "the call, or [{'type': 'reject', 'message': '...'}] to keep the refusal."
        ),
    )

    @field_validator("model")
    @classmethod
    def _check_model(cls, value: str) -> str:
        if value != OFFLINE_MODEL and not _PROVIDER_MODEL.match(value):
            msg = (
                f"model must be 'offline' or a 'provider:model' string such as "
                f"{GROQ_DEFAULT_MODEL!r}"
            )
            raise ValueError(msg)
        return value

    @field_validator("force_outcome")
    @classmethod
    def _check_force_outcome(cls, value: Any) -> Any:
        if isinstance(value, list) and not value:
            msg = "force_outcome list must not be empty"
            raise ValueError(msg)
        return value

    def outcome_for(self, index: int) -> ForcedOutcome | None:
        """Return the forced outcome of the ``index``-th tool call this turn, if any.

        Args:
            index: 0-based position among this turn's tool calls.

        Returns:
            The forced outcome, ``retryable`` read as ``transient``; the last list element
            repeats. None when not forced.
        """
        forced = self.force_outcome
        if forced is None:
            return None
        outcome = forced if isinstance(forced, str) else forced[min(index, len(forced) - 1)]
        return "transient" if outcome == "retryable" else outcome


def resolve(context: Context | dict[str, Any] | None) -> Context:
    """Return a validated Context from what the runtime holds.

    The runtime holds None when a caller passed no context at all.

    Args:
        context: The runtime's context.

    Returns:
        A validated Context.

    Raises:
        pydantic.ValidationError: If a field has a bad value; the error names it.
    """
    if context is None:
        return Context()
    if isinstance(context, Context):
        return context
    return Context.model_validate(context)


def run_context() -> Context:
    """Return the current run's validated Context, from inside a node or a tool.

    Reads ``langgraph.runtime.get_runtime()``, which langgraph 0.6 and 1.x both provide, so
    a tool needs no ``ToolRuntime`` (langchain 1.x only) to see the run's settings.

    Returns:
        The run's Context; the defaults when the run was started without one.

    Raises:
        RuntimeError: If called outside a graph run.
        pydantic.ValidationError: If a field has a bad value; the error names it.
    """
    return resolve(get_runtime(Context).context)
