"""The settings the stop decision reads, defined once: `StopSettings`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import is_dataclass
from string import Formatter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

StopMode = Literal["hard", "polish", "never"]
"""`hard`: the settled tools' content answers; `polish`: one more model call, no tools,
phrases it; `never`: completed and fatal go back to the model (blocks and bounds stop)."""

ParallelPolicy = Literal["all", "priority", "any"]
"""Several calls in a step: `all` stops when all settled, `priority`/`any` on any stop."""

MAX_LIMIT = 50  # the largest max_retries / max_model_calls accepted
MAX_DELAY = 5.0  # the longest wait between two in-place attempts: a worker never stalls
SettingsFromContext = Callable[[Any], "StopSettings | None"]  # None keeps the constructor's


class StopSettings(BaseModel):
    """Validated stop settings: `StopSettings(stop_mode="polish", max_retries=1)`.

    Frozen and strict (`max_retries="2"` and unknown fields are refused); a
    `pydantic.ValidationError` names the setting and never quotes the value. A run
    context may subclass it, so Studio shows these descriptions and bounds.

    Attributes:
        stop_mode: What a stop does: `hard` (default), `polish` or `never`.
        parallel_policy: Several calls in a step: `all` (default), `priority`, `any`.
        max_retries: Transient outcomes allowed per user message, 0 to 50; default 2.
        max_model_calls: Model calls allowed per user message, 1 to 50; default 6.
        retry_in_place: Retry a transient call in place before the model hears of it.
        initial_delay: Seconds before the first in-place retry, 0 to 5; default 0.
        backoff_factor: Multiplier of that delay per retry, 1 to 10; default 2.
        max_delay: Longest in-place wait, at most 5 s.

    Example:
        Unset fields keep their defaults:

            >>> from stop_on_artifact import StopSettings
            >>> StopSettings(stop_mode="polish", max_retries=1).max_model_calls
            6
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
            "Several tool calls in one model turn. 'all': stop only when every call of the "
            "step stops, so a transient part is retried first. 'priority': any stop ends the "
            "step (policy_block > fatal > completed). 'any': the first stop in call order. A "
            "hard stop answers every part, a part left undone named as not done."
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
            "Model calls allowed per user message; a tool step that would send the run back "
            "to the model past it stops with rule 'model_call_limit'; the run's "
            "recursion_limit is a budget too (rule 'step_limit')."
        ),
    )
    retry_in_place: bool = Field(
        default=False,
        strict=True,
        description=(
            "Retry a transient call in place first: the same call runs again after "
            "initial_delay (times backoff_factor per retry, at most max_delay), while "
            "max_retries allows; only a result still transient goes back to the model. The "
            "decision records in_place_retries."
        ),
    )
    initial_delay: float = Field(
        default=0.0, ge=0, le=MAX_DELAY, description="Seconds before the first in-place retry."
    )
    backoff_factor: float = Field(
        default=2.0, ge=1, le=10, description="Multiplier of the delay per in-place retry."
    )
    max_delay: float = Field(
        default=MAX_DELAY, ge=0, le=MAX_DELAY, description="Longest in-place wait, at most 5 s."
    )

    def for_run(self, context: object) -> StopSettings:
        """Return these settings with what the run's context set (never a field's default).

        A pydantic model's `model_fields_set` or a mapping's keys count; None keeps a setting.

        Raises:
            pydantic.ValidationError: If a value is outside its allowed values (named).
            TypeError: If the context is another object (a dataclass, say) with an attribute
                named like a setting: its defaults cannot be told from a choice.
        """
        if not isinstance(context, BaseModel | Mapping) and (names := named_settings(context)):
            kind = "a dataclass field" if is_dataclass(context) else "an attribute"
            msg = (
                f"context field {names[0]} is {kind}: the library cannot tell its default "
                "from a choice; pass settings_from_context= to StopRouter or "
                "StopOnArtifactMiddleware, or use a pydantic model or TypedDict context"
            )
            raise TypeError(msg)
        overrides = {k: v for k, v in given_settings(context).items() if v is not None}
        own = {name: getattr(self, name) for name in StopSettings.model_fields}
        return StopSettings.model_validate({**own, **overrides}) if overrides else self


def given_settings(context: object) -> dict[str, Any]:
    """Return the settings a run's context set: a model's fields set, a mapping's keys."""
    if isinstance(context, BaseModel):
        context = {name: getattr(context, name) for name in context.model_fields_set}
    fields = StopSettings.model_fields
    return {k: v for k, v in context.items() if k in fields} if isinstance(context, Mapping) else {}


def named_settings(context: object) -> list[str]:
    """Return the setting names a context carries: set fields, keys, or any attribute."""
    if context is None or isinstance(context, BaseModel | Mapping):
        return sorted(given_settings(context))
    return [name for name in StopSettings.model_fields if hasattr(context, name)]


def settings_from_arguments(
    owner: str, settings: StopSettings | None, flat: Mapping[str, object]
) -> StopSettings:
    """Return a constructor's settings: `settings`, or the flat arguments validated."""
    given = {name: value for name, value in flat.items() if value is not None}
    if settings is not None:
        if given:
            names = ", ".join(sorted(given))
            msg = f"{owner} takes either settings= or the flat arguments ({names}), not both"
            raise TypeError(msg)
        if not isinstance(settings, StopSettings):
            raise TypeError("settings must be a StopSettings")
        return settings
    try:
        return StopSettings.model_validate(given)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, problem['loc']))}: {problem['msg']}"
            for problem in error.errors(include_input=False, include_url=False)
        )
        raise ValueError(f"{owner} argument {problems}") from None


def check_texts(**texts: str) -> None:
    """Check a constructor's texts: non-empty strings, each template's own placeholders.

    `not_done_message` may use `{where}`, `{tool}`, `{why}`; `retry_budget_message`
    `{where}`, `{tool}`, `{tries}`; a literal brace is written doubled.

    Raises:
        ValueError: Naming the argument, never quoting it.
    """
    for name, value in texts.items():
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} must be a non-empty string")
    for name, allowed in PLACEHOLDERS.items():
        try:
            fields = list(Formatter().parse(texts.get(name, "")))
        except ValueError:
            fields = [("", "?", "", None)]  # unbalanced braces
        if any(f is not None and (f not in allowed or s or c) for _, f, s, c in fields):
            names = ", ".join(f"{{{field}}}" for field in allowed)
            raise ValueError(f"{name} may use only the placeholders {names}")


PLACEHOLDERS = {
    "not_done_message": ("where", "tool", "why"),
    "retry_budget_message": ("where", "tool", "tries"),
}
"""The placeholders each template text may use, as `str.format` fields with no spec."""
