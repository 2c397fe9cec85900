"""The settings the stop decision reads, defined once, and how a run overrides them.

:class:`StopSettings` is the one settings type: frozen, validated on construction, with
each setting's default, bounds and description written here only. The router and the
middleware take one; an app's run context may subclass it to add its own fields (this
project's ``Context`` does), so Studio shows the same descriptions and bounds.

A run overrides a constructor setting only with a value that run actually set
(:meth:`StopSettings.for_run`), or through a function of your own
(:data:`SettingsFromContext`); a context field's default never replaces it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import is_dataclass
from typing import Any, Literal, Protocol, get_args

from pydantic import BaseModel, ConfigDict, Field

from stop_on_artifact._retry import MAX_DELAY
from stop_on_artifact._texts import StopTexts

StopMode = Literal["hard", "polish", "never"]
"""``hard``: a stop ends the run with the settled tools' content, no further model call.
``polish``: one more model call, with no tools bound, phrases the answer. ``never``:
completed and fatal go back to the model (policy blocks and the bounds still stop)."""

ParallelPolicy = Literal["all", "priority", "any"]
"""Several tool calls in one model turn: ``all`` stops only when every call settled;
``priority`` and ``any`` stop on any stop (see :func:`stop_on_artifact.decide`)."""

STOP_MODES: tuple[str, ...] = get_args(StopMode)
PARALLEL_POLICIES: tuple[str, ...] = get_args(ParallelPolicy)
MAX_LIMIT = 50
"""Largest ``max_retries`` / ``max_model_calls`` accepted."""


class SettingsLike(Protocol):
    """What the decision reads: any object with these four attributes."""

    @property
    def stop_mode(self) -> StopMode:
        """One of :data:`STOP_MODES`."""
        ...

    @property
    def parallel_policy(self) -> ParallelPolicy:
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


class StopSettings(BaseModel):
    """Validated stop settings: ``StopSettings(stop_mode="polish", max_retries=1)``.

    Frozen and strict: ``max_retries=True`` or ``"2"`` is refused, as is an unknown
    field. A :class:`pydantic.ValidationError` (a ``ValueError``) names the setting and
    the expected form and never quotes the value.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    stop_mode: StopMode = Field(
        default="hard",
        description=(
            "What a stop artifact does. 'hard': end with the tool's content verbatim, no "
            "further model call. 'polish': one more model call, with no tools, to phrase the "
            "answer. 'never': ignore completed/fatal stops (the stock loop). Policy blocks "
            "and the retry budget stop in every mode."
        ),
    )
    parallel_policy: ParallelPolicy = Field(
        default="all",
        description=(
            "Several tool calls in one model turn. 'all' (default): stop only when every "
            "call of the step has a stopping reason, so a part that failed transiently is "
            "retried first. 'priority': any stop ends the step, policy_block > fatal > "
            "completed naming the rule. 'any': the first stop in call order. A policy block "
            "stops at once under 'priority' and 'any'; under 'all' it waits for a sibling "
            "that can still be retried. A hard stop answers every part of the turn, a part "
            "left undone named as not done."
        ),
    )
    max_retries: int = Field(
        default=2,
        ge=0,
        le=MAX_LIMIT,
        strict=True,
        description=(
            "Transient outcomes allowed since the last user message; one more stops the run "
            "with rule 'retry_budget' and a user-safe message."
        ),
    )
    max_model_calls: int = Field(
        default=6,
        ge=1,
        le=MAX_LIMIT,
        strict=True,
        description=(
            "Model calls allowed per user message. A tool step that would send the run back "
            "to the model past this cap stops it with rule 'model_call_limit' and a "
            "user-safe message. A run capped at k model calls needs a recursion_limit of at "
            "least 2k+2 steps in a hand-built graph (agent, tools) and 3k+2 in create_agent "
            "with the middleware (LangGraph 1.x defaults are far above that)."
        ),
    )
    retry_in_place: bool = Field(
        default=False,
        strict=True,
        description=(
            "Retry a transient call in place first: the same call runs again at once, after "
            "retry_delay (times retry_backoff per retry, at most 5 s), while retries remain "
            "under max_retries, and only a result still transient goes back to the model. "
            "A transient-then-success question then costs one model call. The decision "
            "records in_place_retries."
        ),
    )
    retry_delay: float = Field(
        default=0.0,
        ge=0,
        le=MAX_DELAY,
        description="Seconds before the first in-place retry (retry_in_place); at most 5.",
    )
    retry_backoff: float = Field(
        default=2.0,
        ge=1,
        le=10,
        description="Multiplier of the delay per in-place retry (retry_in_place), 1 to 10.",
    )
    texts: StopTexts = Field(
        default_factory=StopTexts,
        description=(
            "The texts a person reads when a hard stop ends the run: the retry-budget and "
            "model-call-limit closing lines and the generic 'not done' line. English by "
            "default; set your own for another language."
        ),
    )

    def for_run(self, context: object) -> StopSettings:
        """Return these settings with what the run's context set in their place.

        Only a value the run actually set replaces a setting, never a field's default:

        - a pydantic model (this class, a subclass, any ``BaseModel``): the settings named in
          its ``model_fields_set``, that is the fields given when it was built or validated
          (over the API, the keys the client sent);
        - a mapping (a ``TypedDict`` context, a plain dict): the keys it holds;
        - None, or an object with no attribute named like a setting: nothing;
        - a dataclass, or any other object, with an attribute named like a setting: refused
          with a :class:`TypeError`. Such an object keeps no record of which fields were
          given, so its defaults cannot be told from a choice: pass
          ``settings_from_context`` to the router or middleware, or use a pydantic model or
          a ``TypedDict`` context.

        A value of None keeps the setting too.

        Args:
            context: The run's context (``runtime.context``).

        Returns:
            The settings for this run, validated (``self`` when nothing is replaced).

        Raises:
            pydantic.ValidationError: If a replacing value is outside its allowed values
                (named, not quoted).
            TypeError: If the context is neither a pydantic model nor a mapping and has an
                attribute named like a setting (the field is named, its value never).
        """
        given = _given(context)
        if not given and context is not None and not isinstance(context, BaseModel | Mapping):
            _refuse_unrecorded(context)
        overrides = {
            name: value
            for name, value in given.items()
            if name in StopSettings.model_fields and value is not None
        }
        if not overrides:
            return self
        return StopSettings.model_validate({**self._own(), **overrides})

    def _own(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in StopSettings.model_fields}


def _refuse_unrecorded(context: object) -> None:
    """Refuse a context that names a setting but keeps no record of what was set."""
    for name in StopSettings.model_fields:
        if hasattr(context, name):
            kind = "a dataclass field" if is_dataclass(context) else "an attribute"
            msg = (
                f"context field {name} is {kind}: the library cannot tell its default from a "
                "choice; pass settings_from_context= to StopRouter or "
                "StopOnArtifactMiddleware, or use a pydantic model or TypedDict context"
            )
            raise TypeError(msg)


SettingsFromContext = Callable[[Any], "StopSettings | None"]
"""Your own rule: ``(runtime.context) -> StopSettings``, or None to keep the constructor's.

Given to :class:`~stop_on_artifact.StopRouter` or the middleware, it replaces
:meth:`StopSettings.for_run` entirely::

    def settings_from_context(context: MyContext | None) -> StopSettings | None:
        return StopSettings(stop_mode=context.mode) if context and context.mode else None
"""


def resolve_settings(
    settings: StopSettings,
    context: object,
    settings_from_context: SettingsFromContext | None = None,
    from_context: bool = False,
) -> StopSettings:
    """Return the settings a run starting a turn with ``context`` records.

    Args:
        settings: The constructor's settings.
        context: The run's context.
        settings_from_context: The user's function, if any: it decides.
        from_context: Else, whether the fields the run set replace the constructor's
            (:meth:`StopSettings.for_run`).

    Returns:
        The run's settings; the constructor's when neither is given.

    Raises:
        TypeError: If ``settings_from_context`` returns something other than a
            :class:`StopSettings` or None.
    """
    if settings_from_context is None:
        return settings.for_run(context) if from_context else settings
    chosen = settings_from_context(context)
    if chosen is None:
        return settings
    if not isinstance(chosen, StopSettings):
        msg = f"settings_from_context must return StopSettings or None, not {type(chosen).__name__}"
        raise TypeError(msg)
    return chosen


def _given(context: object) -> dict[str, Any]:
    """Return what a run's context set: a model's fields set, a mapping's keys."""
    if isinstance(context, BaseModel):
        return {name: getattr(context, name) for name in context.model_fields_set}
    if isinstance(context, Mapping):
        return dict(context)
    return {}


def names_a_setting(context: object) -> list[str]:
    """Return the settings a run's context sets (a mapping's keys, a model's fields set)."""
    return sorted(set(map(str, _given(context))) & set(StopSettings.model_fields))
