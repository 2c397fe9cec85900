"""The artifact contract: the reason vocabulary, one builder per reason, strict parsing.

A tool built with ``response_format="content_and_artifact"`` returns ``(content, artifact)``.
``content`` is what the model (and, on a hard stop, a person) reads; the artifact is a small
dict that only orchestration reads::

    {"stop": True, "reason": "completed", "attempt": 1}

Tools never hand-write that dict: they call :func:`completed`, :func:`transient`,
:func:`fatal` or :func:`policy_block`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

Reason = Literal["completed", "transient", "fatal", "policy_block"]
"""The whole reason vocabulary. Map any domain failure onto one of these."""

REASONS: tuple[str, ...] = get_args(Reason)

STOPPING_REASONS: frozenset[str] = frozenset({"completed", "fatal", "policy_block"})

_SCALAR = (str, int, float, bool, type(None))
MAX_EXTRA_FIELD_CHARS = 200
"""Longest string an optional artifact field may hold (but :data:`NOT_DONE_FIELD`)."""

NOT_DONE_FIELD = "not_done"
"""The optional field a tool writes its user-safe "not done" line in (see :func:`transient`)."""

MAX_NOT_DONE_CHARS = 500
"""Longest ``not_done`` line."""


class InvalidArtifactError(ValueError):
    """An artifact that does not follow the contract."""


# ---------------------------------------------------------------------------------------
# Builders: tools call one of these and never hand-write the dict.


def _artifact(stop: bool, reason: Reason, fields: Mapping[str, Any]) -> dict[str, Any]:
    artifact: dict[str, Any] = {"stop": stop, "reason": reason}
    for key, value in fields.items():
        if key in artifact:
            msg = f"artifact field {key!r} is reserved"
            raise InvalidArtifactError(msg)
        if not isinstance(value, _SCALAR):
            msg = f"artifact field {key!r} must be a scalar, got {type(value).__name__}"
            raise InvalidArtifactError(msg)
        if key == NOT_DONE_FIELD and (
            not isinstance(value, str) or len(value) > MAX_NOT_DONE_CHARS
        ):
            msg = f"artifact field {key!r} must be a string of at most {MAX_NOT_DONE_CHARS} chars"
            raise InvalidArtifactError(msg)
        artifact[key] = value
    return artifact


def completed(**fields: str | int | float | bool | None) -> dict[str, Any]:
    """Build the artifact of a call whose content already answers: stop.

    Args:
        **fields: Optional small scalar fields (for example ``topic="store"``).

    Returns:
        ``{"stop": True, "reason": "completed", **fields}``.
    """
    return _artifact(True, "completed", fields)


def transient(
    *, not_done: str | None = None, **fields: str | int | float | bool | None
) -> dict[str, Any]:
    """Build the artifact of a retryable failure (timeout, 503): go back to the model.

    The content is written for the model ("timed out, can be retried"). If the turn
    ends with this call still unsettled (another part stopped it under ``any`` or
    ``priority``, or a bound was reached), a hard stop's answer names the part as not
    done with ``not_done``: a short user-safe Markdown line in the voice of the other
    parts, for example ``"**Not purchased: a mouse ($20.00)**: the payment service
    timed out; nothing was charged. Ask again to retry."``. Without it, the answer
    uses a generic line naming the tool (see :func:`stop_on_artifact._decision.not_done_text`).

    Args:
        not_done: The line a person reads if this call is left undone (at most
            :data:`MAX_NOT_DONE_CHARS` characters).
        **fields: Optional small scalar fields.

    Returns:
        ``{"stop": False, "reason": "transient", **fields}``, plus ``not_done`` if given.

    Raises:
        InvalidArtifactError: If ``not_done`` is not a string of at most
            :data:`MAX_NOT_DONE_CHARS` characters.
    """
    if not_done is not None:
        fields = {**fields, NOT_DONE_FIELD: not_done}
    return _artifact(False, "transient", fields)


def fatal(**fields: str | int | float | bool | None) -> dict[str, Any]:
    """Build the artifact of a failure that retrying cannot fix: stop.

    Args:
        **fields: Optional small scalar fields.

    Returns:
        ``{"stop": True, "reason": "fatal", **fields}``.
    """
    return _artifact(True, "fatal", fields)


def policy_block(**fields: str | int | float | bool | None) -> dict[str, Any]:
    """Build the artifact of a call a policy refused: stop in every ``stop_mode``.

    Args:
        **fields: Optional small scalar fields (for example ``policy="spend_cap"``).

    Returns:
        ``{"stop": True, "reason": "policy_block", **fields}``.
    """
    return _artifact(True, "policy_block", fields)


# ---------------------------------------------------------------------------------------
# Parsing.


def parse_artifact(artifact: object) -> dict[str, Any]:
    """Check an artifact strictly and return it.

    Args:
        artifact: Whatever a ToolMessage carried.

    Returns:
        The artifact, unchanged.

    Raises:
        InvalidArtifactError: If it is not a dict, lacks ``stop`` or ``reason``, has a
            ``stop`` that is not a real bool (the string ``"false"`` is truthy), a reason
            outside the vocabulary, a ``stop`` that contradicts the reason, a field
            that is not a small scalar, or a ``not_done`` that is not a string. The
            message names types, never values.
    """
    if not isinstance(artifact, dict):
        msg = f"artifact must be a dict, got {type(artifact).__name__}"
        raise InvalidArtifactError(msg)
    missing = [key for key in ("stop", "reason") if key not in artifact]
    if missing:
        msg = f"artifact lacks key(s) {missing}"
        raise InvalidArtifactError(msg)
    stop, reason = artifact["stop"], artifact["reason"]
    if type(stop) is not bool:
        msg = f"artifact 'stop' must be a bool, got {type(stop).__name__}"
        raise InvalidArtifactError(msg)
    if not isinstance(reason, str) or reason not in REASONS:
        msg = f"artifact 'reason' must be one of {list(REASONS)}"
        raise InvalidArtifactError(msg)
    if stop != (reason in STOPPING_REASONS):
        msg = f"artifact 'stop'={stop} contradicts reason {reason!r}"
        raise InvalidArtifactError(msg)
    for key, value in artifact.items():
        if not isinstance(key, str):
            msg = f"artifact keys must be strings, got {type(key).__name__}"
            raise InvalidArtifactError(msg)
        limit = MAX_NOT_DONE_CHARS if key == NOT_DONE_FIELD else MAX_EXTRA_FIELD_CHARS
        if not isinstance(value, _SCALAR) or (isinstance(value, str) and len(value) > limit):
            msg = f"artifact field {key!r} must be a small scalar"
            raise InvalidArtifactError(msg)
        if key == NOT_DONE_FIELD and not isinstance(value, str):
            msg = f"artifact field {key!r} must be a string"
            raise InvalidArtifactError(msg)
    return artifact
