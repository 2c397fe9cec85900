"""Redacting trace payloads: structure stays; text goes, or only its secrets do.

The langsmith client hands each run's inputs and outputs to ``hide_inputs`` /
``hide_outputs`` callables before it serializes them, as raw objects (message objects,
dataclasses such as ``ToolCallRequest``, already-serialized ``lc`` dicts). Both callables
here first turn the payload into JSON with pydantic's serializer (:func:`to_json`, which
builds new containers and never changes what it receives), then make one walk over that
JSON (:class:`_Walker`):

- :func:`redact` (``AGENT_REDACT_TRACES=true``, the default) keeps keys, booleans, message
  types, tool names, ``tool_call`` ids, token counts and sanitized artifacts, and replaces
  every other string or number with :data:`REDACTED`: message text, tool-call arguments,
  tool inputs, anything unknown.
- :func:`mask_payload_secrets` (``AGENT_REDACT_TRACES=secrets``, for support) keeps content
  and numbers, passes every string and key through
  :func:`agent.tracing.masking.mask_secrets` (keys, tokens, card numbers, passwords in URLs
  become :data:`REDACTED`) and every artifact through the allowlist.
- :func:`sanitize_artifacts` (``AGENT_REDACT_TRACES=false``) keeps content for local
  debugging and only passes artifacts through :func:`agent.tracing.allowlist.sanitize_artifact`.

langsmith's own ``anonymizer=`` hook also receives serialized JSON, but it replaces these
callables and ``hide_metadata`` as well (it would rewrite the stop metadata), so it is not
used: see :mod:`agent.tracing.client`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic_core import to_jsonable_python

from agent.tracing.allowlist import looks_secret, sanitize_artifact
from agent.tracing.masking import mask_secrets

REDACTED = "[redacted]"
"""What replaces message text, tool-call arguments and any other string in a redacted trace."""

ENV_VAR = "AGENT_REDACT_TRACES"
"""``true`` (default) redacts trace content; ``secrets`` keeps it with secrets masked;
``false`` keeps it for local debugging."""

RedactionMode = Literal["full", "secrets", "off"]
"""What a trace keeps of inputs and outputs: structure only, content without secrets, all."""

SECRETS_VALUE = "secrets"
"""The ``AGENT_REDACT_TRACES`` value of the ``secrets`` mode."""

MAX_DEPTH = 16
"""Nesting depth the walker follows; anything deeper becomes :data:`REDACTED`."""

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


def redaction_mode(environ: Mapping[str, str] | None = None) -> RedactionMode:
    """Read ``AGENT_REDACT_TRACES``: ``full`` unless it says ``secrets`` or ``false``.

    Args:
        environ: Where to read it; ``os.environ`` by default.

    Returns:
        ``"full"`` (true, 1, yes, on, or unset), ``"secrets"``, or ``"off"`` (false, 0, no,
        off).

    Raises:
        ValueError: If the variable holds anything else; the message names the variable and
            the values it takes, never the value.
    """
    raw = (os.environ if environ is None else environ).get(ENV_VAR, "")
    value = raw.strip().lower()
    if value in _TRUE or value == "":
        return "full"
    if value == SECRETS_VALUE:
        return "secrets"
    if value in _FALSE:
        return "off"
    msg = f"{ENV_VAR}: expected true, secrets or false"
    raise ValueError(msg)


def redaction_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Return True when ``AGENT_REDACT_TRACES`` asks for full redaction (the default).

    Args:
        environ: Where to read it; ``os.environ`` by default.

    Returns:
        Whether trace content is replaced whole (``secrets`` and ``false`` keep it).

    Raises:
        ValueError: If the variable holds an unknown value (see :func:`redaction_mode`).
    """
    return redaction_mode(environ) == "full"


def _opaque(value: object) -> str:
    """Stand in for what has no JSON form (functions, clients): its type name, never its repr."""
    return f"<{type(value).__name__}>"


def to_json(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Serialize a run's inputs or outputs to JSON values, as langsmith would send them.

    Messages, pydantic models and dataclasses become dicts of their fields; anything with
    no JSON form becomes its type name in angle brackets. A value that cannot be
    serialized whole (a cycle, or nesting deeper than pydantic follows) becomes
    :data:`REDACTED`, one top-level key at a time.

    Args:
        payload: The run's inputs or outputs, as the langsmith client hands them over.

    Returns:
        New containers holding only dicts, lists, strings, numbers, booleans and None.
        The payload is never changed.
    """
    try:
        return {str(key): _jsonable(value) for key, value in payload.items()}
    except ValueError:
        pass
    out: dict[str, Any] = {}
    for key, value in payload.items():
        try:
            out[str(key)] = _jsonable(value)
        except ValueError:
            out[str(key)] = REDACTED
    return out


def _jsonable(value: object) -> Any:
    return to_jsonable_python(value, fallback=_opaque)


def _identifier(value: object) -> bool:
    """Return True for None or a short, non-secret string (or a list of them)."""
    if value is None:
        return True
    if isinstance(value, str):
        return len(value) <= _MAX_IDENTIFIER_CHARS and not looks_secret(value)
    if isinstance(value, list):
        return all(isinstance(v, str) and _identifier(v) for v in value)
    return False


def _is_message(value: Mapping[str, Any]) -> bool:
    return "content" in value and ("type" in value or "role" in value)


def _is_tool_call(value: Mapping[str, Any]) -> bool:
    return "name" in value and "args" in value


class _Walker:
    """One walk over one serialized payload.

    With ``redacting`` it keeps structure and identifiers and replaces text; without, it
    keeps everything but passes every ``artifact`` through the allowlist, and with
    ``masking`` every string and key through :func:`~agent.tracing.masking.mask_secrets`.
    """

    def __init__(self, *, redacting: bool, masking: bool = False) -> None:
        self.redacting = redacting
        self.masking = masking and not redacting

    def value(self, value: Any, depth: int, counts: bool = False) -> Any:
        """Walk one JSON value; ``counts`` keeps numbers (inside token-usage dicts)."""
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int | float):
            return value if counts or not self.redacting else REDACTED  # an amount, too
        if isinstance(value, str):
            if self.masking:
                return mask_secrets(value)
            return REDACTED if value and self.redacting else value
        if depth >= MAX_DEPTH:
            return REDACTED
        if isinstance(value, list):
            return [self.value(item, depth + 1, counts) for item in value]
        if isinstance(value, dict):
            return self.mapping(value, depth + 1, counts)
        return REDACTED  # not JSON: never expected after to_json

    def mapping(self, value: dict[str, Any], depth: int, counts: bool = False) -> Any:
        if not self.redacting:
            name = mask_secrets if self.masking else str
            return {
                name(key): sanitize_artifact(item) if key == "artifact" else self.value(item, depth)
                for key, item in value.items()
            }
        if _is_message(value):
            return self.message(value, depth)
        if _is_tool_call(value):
            return self.call(value)
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in _USAGE_KEYS or key in _COUNT_KEYS:
                out[key] = self.value(item, depth, counts=True)
            elif key == "artifact":
                out[key] = sanitize_artifact(item)
            elif key == "stop_decision" and isinstance(item, dict):
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

    def message(self, value: dict[str, Any], depth: int) -> dict[str, Any]:
        kind = value.get("type") or value.get("role")
        kind = kind if isinstance(kind, str) else None  # a dict that only looks like one
        out: dict[str, Any] = {}
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
            elif key == "response_metadata" and isinstance(item, dict):
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
        if not isinstance(value, list):
            return self.value(value, depth)
        return [
            self.call(call) if isinstance(call, dict) else self.value(call, depth) for call in value
        ]

    def call(self, value: dict[str, Any]) -> dict[str, Any]:
        """A tool call keeps its name, id, type and index; arguments and errors go."""
        return {
            key: item
            if key in _CALL_KEYS and (isinstance(item, int) or _identifier(item))
            else REDACTED
            for key, item in value.items()
        }


def redact(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Redact one run's inputs or outputs (the trace client's ``hide_inputs``/``hide_outputs``).

    Args:
        payload: The run's inputs or outputs, as the langsmith client hands them over.

    Returns:
        A new JSON dict of the same shape: keys, booleans, message types and roles,
        message and tool-call ids, tool names, token counts, ``stop_decision`` fields and
        sanitized artifacts are kept; every other string or number, and every tool call's
        ``args``, is :data:`REDACTED`. The payload is never changed.
    """
    redacted = _Walker(redacting=True).mapping(to_json(payload), 0)
    return redacted if isinstance(redacted, dict) else {"payload": REDACTED}


def sanitize_artifacts(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Keep a payload's content but sanitize every artifact in it (redaction off).

    Args:
        payload: The run's inputs or outputs, as the langsmith client hands them over.

    Returns:
        A new JSON dict with the payload's content, where every ``artifact`` holds only
        what :func:`~agent.tracing.allowlist.sanitize_artifact` keeps. The payload is
        never changed.
    """
    kept: dict[str, Any] = _Walker(redacting=False).mapping(to_json(payload), 0)
    return kept


def mask_payload_secrets(payload: Mapping[str, Any]) -> dict[str, Any]:
    """Keep a payload's content with its secrets masked (``AGENT_REDACT_TRACES=secrets``).

    Args:
        payload: The run's inputs or outputs, as the langsmith client hands them over.

    Returns:
        A new JSON dict with the payload's content, numbers and structure, where every
        string and key has passed :func:`~agent.tracing.masking.mask_secrets` and every
        ``artifact`` holds only what :func:`~agent.tracing.allowlist.sanitize_artifact`
        keeps. The payload is never changed.
    """
    kept: dict[str, Any] = _Walker(redacting=False, masking=True).mapping(to_json(payload), 0)
    return kept


def mask_error(error: object) -> object:
    """Keep a run's error text with its secrets masked (``AGENT_REDACT_TRACES=secrets``).

    Args:
        error: The error the tracer recorded.

    Returns:
        The text through :func:`~agent.tracing.masking.mask_secrets`; None stays None.
    """
    return None if error is None else mask_secrets(str(error))


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
