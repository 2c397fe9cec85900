"""The four settings the stop decision reads, their defaults, and per-run overrides.

:func:`stop_on_artifact.decision.decide` reads any object with these four attributes
(:class:`SettingsLike`): a :class:`StopSettings`, or an app's own run context (this project's
pydantic ``Context`` has all four). :meth:`StopSettings.for_run` lets a run's context
override each setting through a field of the same name, so one agent built with fixed
settings can still be driven per run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Literal, Protocol, get_args

StopMode = Literal["hard", "polish", "never"]
"""``hard``: a stop ends the run with the settled tools' content, no further model call.
``polish``: one more model call, with no tools bound, phrases the answer. ``never``:
completed and fatal go back to the model (policy blocks and the bounds still stop)."""

ParallelPolicy = Literal["all", "priority", "any"]
"""Several tool calls in one model turn: ``all`` stops only when every call settled;
``priority`` and ``any`` stop on any stop (see :func:`stop_on_artifact.decision.decide`)."""

STOP_MODES: tuple[str, ...] = get_args(StopMode)
PARALLEL_POLICIES: tuple[str, ...] = get_args(ParallelPolicy)
MAX_LIMIT = 50
"""Largest ``max_retries`` / ``max_model_calls`` accepted."""


class SettingsLike(Protocol):
    """What the decision reads: any object with these four attributes."""

    @property
    def stop_mode(self) -> str:
        """One of :data:`STOP_MODES`."""
        ...

    @property
    def parallel_policy(self) -> str:
        """One of :data:`PARALLEL_POLICIES`."""
        ...

    @property
    def max_retries(self) -> int:
        """Transient outcomes allowed per user message."""
        ...

    @property
    def max_model_calls(self) -> int:
        """Model calls allowed per user message."""
        ...


@dataclass(frozen=True, kw_only=True)
class StopSettings:
    """Validated stop settings.

    Raises:
        ValueError: On construction, if a setting is outside its allowed values; the
            message names the setting and the expected form, never the value.
    """

    stop_mode: StopMode = "hard"
    """See :data:`StopMode`."""
    parallel_policy: ParallelPolicy = "all"
    """See :data:`ParallelPolicy`."""
    max_retries: int = 2
    """Transient outcomes allowed since the last user message; one more stops the run
    with rule ``retry_budget``."""
    max_model_calls: int = 6
    """Model calls allowed since the last user message; a tool step past the cap stops
    the run with rule ``model_call_limit``."""

    def __post_init__(self) -> None:
        """Check every setting."""
        if self.stop_mode not in STOP_MODES:
            msg = f"stop_mode must be one of {list(STOP_MODES)}"
            raise ValueError(msg)
        if self.parallel_policy not in PARALLEL_POLICIES:
            msg = f"parallel_policy must be one of {list(PARALLEL_POLICIES)}"
            raise ValueError(msg)
        for name, low in (("max_retries", 0), ("max_model_calls", 1)):
            value = getattr(self, name)
            if type(value) is not int or not low <= value <= MAX_LIMIT:
                msg = f"{name} must be an int from {low} to {MAX_LIMIT}"
                raise ValueError(msg)

    def for_run(self, context: object) -> StopSettings:
        """Return these settings with the run context's same-named fields in their place.

        Args:
            context: The run's context: None, a mapping, or an object with attributes.
                A field that is absent, or None, keeps this object's setting.

        Returns:
            The settings for this run, validated.

        Raises:
            ValueError: If an override is outside its allowed values (named, not quoted).
        """
        if context is None:
            return self
        overrides: dict[str, Any] = {}
        for field in fields(self):
            if isinstance(context, Mapping):
                value = context.get(field.name)
            else:
                value = getattr(context, field.name, None)
            if value is not None:
                overrides[field.name] = value
        return replace(self, **overrides) if overrides else self
