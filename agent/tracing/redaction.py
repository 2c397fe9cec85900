"""Redacting trace payloads: structure stays, text goes.

The langsmith client hands each run's inputs and outputs to ``hide_inputs`` /
``hide_outputs`` callables before it serializes them. They receive the raw objects
(message objects, dataclasses such as ``ToolCallRequest``, already-serialized ``lc``
dicts), so both walkers here handle objects as well as dicts, and neither ever changes
what it receives: they build new containers.

- :func:`redact` (``AGENT_REDACT_TRACES=true``, the default) keeps keys, booleans, message
  types, tool names, ``tool_call`` ids, token counts and sanitized artifacts, and replaces
  every other string or number with :data:`REDACTED`: message text, tool-call arguments,
  tool inputs, anything unknown.
- :func:`sanitize_artifacts` (``AGENT_REDACT_TRACES=false``) keeps content for local
  debugging and only passes artifacts through :func:`agent.tracing.allowlist.sanitize_artifact`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from agent.tracing.allowlist import looks_secret, sanitize_artifact

REDACTED = "[redacted]"
"""What replaces message text, tool-call arguments and any other string in a redacted trace."""

ENV_VAR = "AGENT_REDACT_TRACES"
"""``true`` (default) redacts trace content; ``false`` keeps it for local debugging."""

MAX_DEPTH = 16
"""Nesting depth the walkers follow; anything deeper becomes :data:`REDACTED`."""

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_CALL_LISTS = frozenset({"tool_calls", "invalid_tool_calls", "tool_call_chunks"})
_CALL_KEYS = frozenset({"name", "id", "type", "index"})
_IDENTIFIER_KEYS = frozenset({"type", "id", "lc", "tool_call_id", "jump_to"})
_MESSAGE_KEYS = _IDENTIFIER_KEYS | {"role", "status"}
_NAMED_MESSAGES = frozenset({"ai", "tool", "assistant", "AIMessageChunk", "ToolMessageChunk"})
_MODEL_KEYS = frozenset({"model_name", "model", "model_provider", "finish_reason"})
_DECISION_KEYS = ("action", "rule", "reason", "tool", "tool_call_id")
_COUNT_KEYS = frozenset({"lc", "index"})
_USAGE_KEYS = frozenset({"usage_metadata", "token_usage", "usage"})
"""Dicts whose numbers are token counts, kept."""
_ERROR_TYPE = re.compile(r"^[A-Za-z_][\w.]*")
_MAX_IDENTIFIER_CHARS = 128


def redaction_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Read ``AGENT_REDACT_TRACES``: on unless it says ``false``.

    Args:
        environ: Where to read it; ``os.environ`` by default.

    Returns:
        Whether trace content is redacted.

    Raises:
        ValueError: If the variable holds anything but true/false, 1/0, yes/no or on/off.
    """
    raw = (os.environ if environ is None else environ).get(ENV_VAR, "")
    value = raw.strip().lower()
    if value in _TRUE or value == "":
        return True
    if value in _FALSE:
        return False
    msg = f"{ENV_VAR}={raw!r}: expected true or false"
    raise ValueError(msg)


def _identifier(value: object) -> bool:
    """Return True for None or a short, non-secret string (or a list of them)."""
    if value is None:
        return True
    if isinstance(value, str):
        return len(value) <= _MAX_IDENTIFIER_CHARS and not looks_secret(value)
    if isinstance(value, list | tuple):
        return all(isinstance(v, str) and _identifier(v) for v in value)
    return False


def _fields(value: object) -> dict[str, Any] | None:
    """Return an object's fields as a new dict, if it is a dataclass or a pydantic model."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
    if isinstance(value, BaseModel):
        return {name: getattr(value, name, None) for name in type(value).model_fields}
    return None


def _is_message(value: Mapping[Any, Any]) -> bool:
    return "content" in value and ("type" in value or "role" in value)


def _is_tool_call(value: Mapping[Any, Any]) -> bool:
    return "name" in value and "args" in value


class _Redactor:
    """One walk over one payload; ``active`` holds the ids on the current path (cycles)."""

    def __init__(self) -> None:
        self.active: set[int] = set()

    def value(self, value: Any, depth: int, counts: bool = False) -> Any:
        """Redact one value; ``counts`` keeps numbers (inside token-usage dicts)."""
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int | float):
            return value if counts else REDACTED  # an amount is an argument too
        if isinstance(value, str):
            return REDACTED if value else ""
        if depth >= MAX_DEPTH or id(value) in self.active:
            return REDACTED
        self.active.add(id(value))
        try:
            return self._container(value, depth + 1, counts)
        finally:
            self.active.discard(id(value))

    def _container(self, value: Any, depth: int, counts: bool) -> Any:
        if isinstance(value, BaseMessage):
            return self.message(_fields(value) or {}, depth)
        if isinstance(value, Mapping):
            return self.mapping(value, depth, counts)
        if isinstance(value, list | tuple | set | frozenset):
            return [self.value(item, depth, counts) for item in value]
        fields = _fields(value)
        if fields is not None:
            return self.mapping(fields, depth)
        return REDACTED  # functions, clients, bytes, anything unknown

    def mapping(self, value: Mapping[Any, Any], depth: int, counts: bool = False) -> Any:
        if _is_message(value):
            return self.message(value, depth)
        if _is_tool_call(value):
            return self.call(value, depth)
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if key in _USAGE_KEYS or key in _COUNT_KEYS:
                out[key] = self.value(item, depth, counts=True)
            elif key == "artifact":
                out[key] = sanitize_artifact(item)
            elif key == "stop_decision" and isinstance(item, Mapping):
                out[key] = {
                    k: item[k] if _identifier(item[k]) else REDACTED
                    for k in _DECISION_KEYS
                    if k in item
                }
            elif key in _IDENTIFIER_KEYS and _identifier(item):
                out[key] = item
            elif key in _CALL_LISTS:
                out[key] = self.calls(item, depth)
            else:
                out[key] = self.value(item, depth, counts)
        return out

    def message(self, value: Mapping[Any, Any], depth: int) -> dict[Any, Any]:
        kind = value.get("type") or value.get("role")
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if key == "content":
                out[key] = item if item in ("", None, []) else REDACTED
            elif key == "name" and kind in _NAMED_MESSAGES and _identifier(item):
                out[key] = item  # a tool's or an agent's name, never a person's
            elif key in _MESSAGE_KEYS and _identifier(item):
                out[key] = item
            elif key == "artifact":
                out[key] = sanitize_artifact(item)
            elif key in _CALL_LISTS:
                out[key] = self.calls(item, depth)
            elif key in _USAGE_KEYS:
                out[key] = self.value(item, depth, counts=True)
            elif key == "response_metadata" and isinstance(item, Mapping):
                out[key] = {
                    k: v
                    if k in _MODEL_KEYS and _identifier(v)
                    else self.value(v, depth, counts=k in _USAGE_KEYS)
                    for k, v in item.items()
                }
            else:
                out[key] = self.value(item, depth)
        return out

    def calls(self, value: Any, depth: int) -> Any:
        if not isinstance(value, list | tuple):
            return self.value(value, depth)
        return [
            self.call(call, depth) if isinstance(call, Mapping) else self.value(call, depth)
            for call in value
        ]

    def call(self, value: Mapping[Any, Any], depth: int) -> dict[Any, Any]:
        """A tool call keeps its name, id, type and index; arguments and errors go."""
        return {
            key: item
            if key in _CALL_KEYS and (isinstance(item, int) or _identifier(item))
            else REDACTED
            for key, item in value.items()
        }


class _ArtifactSanitizer:
    """Keep content, sanitize artifacts; ``active`` guards against cycles."""

    def __init__(self) -> None:
        self.active: set[int] = set()

    def value(self, value: Any, depth: int) -> Any:
        if value is None or isinstance(value, str | bool | int | float):
            return value
        if depth >= MAX_DEPTH or id(value) in self.active:
            return REDACTED
        self.active.add(id(value))
        try:
            return self._container(value, depth + 1)
        finally:
            self.active.discard(id(value))

    def _container(self, value: Any, depth: int) -> Any:
        if isinstance(value, BaseMessage):
            artifact = getattr(value, "artifact", None)
            if artifact is None:
                return value
            return value.model_copy(update={"artifact": sanitize_artifact(artifact)})
        if isinstance(value, Mapping):
            return {
                key: sanitize_artifact(item) if key == "artifact" else self.value(item, depth)
                for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.value(item, depth) for item in value]
        fields = _fields(value)
        if fields is not None:
            return self.value(fields, depth)
        return value


def redact(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Redact one run's inputs or outputs (the trace client's ``hide_inputs``/``hide_outputs``).

    Args:
        payload: The run's inputs or outputs, as the langsmith client hands them over.

    Returns:
        A new dict of the same shape: keys, numbers, booleans, message types and roles,
        message and tool-call ids, tool names, ``stop_decision`` fields and sanitized
        artifacts are kept; every other string, and every tool call's ``args``, is
        :data:`REDACTED`. The payload is never changed.
    """
    redacted = _Redactor().value(dict(payload), 0)
    return redacted if isinstance(redacted, dict) else {"payload": REDACTED}


def sanitize_artifacts(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Keep a payload's content but sanitize every artifact in it (redaction off).

    Args:
        payload: The run's inputs or outputs, as the langsmith client hands them over.

    Returns:
        A new dict; messages that carry an artifact are copied with the sanitized
        artifact, everything else is passed through. The payload is never changed.
    """
    kept = _ArtifactSanitizer().value(dict(payload), 0)
    return kept if isinstance(kept, dict) else dict(payload)


def redact_error(error: object) -> object:
    """Keep only the exception type of a run's error text (its message can quote content).

    Args:
        error: The error the tracer recorded: ``repr(exception)`` and a traceback.

    Returns:
        ``"<ExceptionType>: [redacted]"``, or :data:`REDACTED` when no type can be read;
        None stays None.
    """
    if error is None:
        return None
    match = _ERROR_TYPE.match(str(error))
    return f"{match.group(0)}: {REDACTED}" if match else REDACTED
