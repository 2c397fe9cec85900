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
"""Longest string an optional artifact field may hold."""


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


def transient(**fields: str | int | float | bool | None) -> dict[str, Any]:
    """Build the artifact of a retryable failure (timeout, 503): go back to the model.

    Args:
        **fields: Optional small scalar fields.

    Returns:
        ``{"stop": False, "reason": "transient", **fields}``.
    """
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
            outside the vocabulary, a ``stop`` that contradicts the reason, or a field
            that is not a small scalar. The message names types, never values.
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
        if not isinstance(value, _SCALAR) or (
            isinstance(value, str) and len(value) > MAX_EXTRA_FIELD_CHARS
        ):
            msg = f"artifact field {key!r} must be a small scalar"
            raise InvalidArtifactError(msg)
    return artifact
