"""The artifact contract: the reason vocabulary, one builder per reason, strict parsing.

Only orchestration reads a tool's artifact (over MCP, its structured content, one level down).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Collection, Mapping
from typing import Any, Literal, NoReturn, get_args

from langchain_core.messages import ToolMessage
from langgraph.types import Command

Reason = Literal["completed", "transient", "fatal", "policy_block"]
"""The whole reason vocabulary. Map any domain failure onto one of these."""

REASONS: tuple[str, ...] = get_args(Reason)
STOPPING_REASONS: frozenset[str] = frozenset({"completed", "fatal", "policy_block"})

MAX_EXTRA_FIELD_CHARS = 200  # the longest string an optional field may hold (not_done aside)
NOT_DONE_FIELD = "not_done"
"""The field of a tool's user-safe "not done" line (see [transient][stop_on_artifact.transient])."""
MAX_NOT_DONE_CHARS = 500  # the longest not_done line
IN_PLACE_FIELD = "in_place_retries"  # the extra attempts of the call run in place
STRUCTURED_FIELD = "structured_response"  # the one dict field: the run's structured answer
MCP_FIELD = "structured_content"  # the one key of langchain-mcp-adapters' MCPToolArtifact
LIBRARY_FIELDS = frozenset({"approval", IN_PLACE_FIELD})  # the library's only: refused from a tool
MARK = "stop_on_artifact"  # the response_metadata key naming the library fields it added

_SCALAR = (str, int, float, bool, type(None))
_TOLD: set[str] = set()  # artifact types already named in a warning


class InvalidArtifactError(ValueError):
    """An artifact that does not follow the contract; the message names fields, never values.

    Example:
        The message names the missing field:

            >>> from stop_on_artifact import InvalidArtifactError, parse_artifact
            >>> try:
            ...     parse_artifact({"stop": True})
            ... except InvalidArtifactError as error:
            ...     print(error)
            artifact lacks key(s) ['reason']
    """


def _fail(message: str) -> NoReturn:
    raise InvalidArtifactError(message)


def _field_problem(key: object, value: object, library: Collection[str] = ()) -> str | None:
    """Name what is wrong with one optional field (a long or odd key by its length only)."""
    if not isinstance(key, str):
        return f"artifact keys must be strings, got {type(key).__name__}"
    name = repr(key) if key.isidentifier() and len(key) <= 40 else f"of {len(key)} chars"
    limit = MAX_NOT_DONE_CHARS if key == NOT_DONE_FIELD else MAX_EXTRA_FIELD_CHARS
    if key in LIBRARY_FIELDS and key not in library:
        return f"artifact field {name} is written by the library, never by a tool"
    if key == STRUCTURED_FIELD:
        return None if isinstance(value, dict) else f"artifact field {name} must be a dict"
    if key == NOT_DONE_FIELD and not isinstance(value, str):
        return f"artifact field {name} must be a string"
    if not isinstance(value, _SCALAR) or (isinstance(value, str) and len(value) > limit):
        return f"artifact field {name} must be a scalar (a string of at most {limit} chars)"
    return None


def build(
    reason: Reason, fields: Mapping[str, Any], library: Collection[str] = ()
) -> dict[str, Any]:
    """Build an artifact: every field `parse_artifact` accepts, but `stop`/`reason`."""
    for key, value in fields.items():
        if key in ("stop", "reason"):
            _fail(f"artifact field {key!r} is set by the builder")
        if (problem := _field_problem(key, value, library)) is not None:
            _fail(problem)
    return {"stop": reason in STOPPING_REASONS, "reason": reason, **fields}


def completed(**fields: Any) -> dict[str, Any]:
    """Build the artifact of a call whose content already answers (stop), with small scalars.

    Args:
        **fields: Small scalar fields; `structured_response={...}` (a dict) is the run's
            structured answer when the agent declares a `response_format`: validated
            against it, it ends the run with no model call.

    Example:
        A tool returns `"Refunds within 30 days.", completed(source="kb")`:

            >>> from stop_on_artifact import completed
            >>> completed(source="kb")
            {'stop': True, 'reason': 'completed', 'source': 'kb'}
    """
    return build("completed", fields)


def transient(
    *, not_done: str | None = None, **fields: str | int | float | bool | None
) -> dict[str, Any]:
    """Build the artifact of a retryable failure (timeout, 503): go back to the model.

    Args:
        not_done: The user-safe Markdown line (at most `MAX_NOT_DONE_CHARS` characters, in
            the voice of the other parts) a hard stop's answer gives if this call is left
            unsettled; without it, a generic line naming the tool.
        **fields: Optional small scalar fields.

    Example:
        A tool returns `"Timed out.", transient(error="TimeoutError")`:

            >>> from stop_on_artifact import transient
            >>> transient(error="TimeoutError")
            {'stop': False, 'reason': 'transient', 'error': 'TimeoutError'}
    """
    if not_done is not None:
        fields = {**fields, NOT_DONE_FIELD: not_done}
    return build("transient", fields)


def fatal(**fields: str | int | float | bool | None) -> dict[str, Any]:
    """Build the artifact of a failure that retrying cannot fix (stop), with small scalars.

    Args:
        **fields: Optional small scalar fields.

    Example:
        A tool returns `"No such order.", fatal(error="NotFound")`:

            >>> from stop_on_artifact import fatal
            >>> fatal(error="NotFound")
            {'stop': True, 'reason': 'fatal', 'error': 'NotFound'}
    """
    return build("fatal", fields)


def policy_block(**fields: str | int | float | bool | None) -> dict[str, Any]:
    """Build the artifact of a call a policy refused: stop in every `stop_mode`.

    Args:
        **fields: Optional small scalar fields.

    Example:
        A tool returns `"Refunds need a manager.", policy_block(policy="refunds")`:

            >>> from stop_on_artifact import policy_block
            >>> policy_block(policy="refunds")
            {'stop': True, 'reason': 'policy_block', 'policy': 'refunds'}
    """
    return build("policy_block", fields)


def library_fields(message: ToolMessage) -> list[str]:
    """Return the `LIBRARY_FIELDS` the library added to `message`'s artifact."""
    named = (message.response_metadata or {}).get(MARK)
    return [f for f in named if f in LIBRARY_FIELDS] if isinstance(named, list) else []


def with_library_fields(message: ToolMessage, **fields: Any) -> ToolMessage:
    """Return `message` with `fields` where its artifact's contract is, the library's named."""
    named = sorted({*library_fields(message), *(k for k in fields if k in LIBRARY_FIELDS)})
    metadata = {**(message.response_metadata or {}), MARK: named}
    artifact = message.artifact or {}
    if (inner := contract(artifact)) is not artifact and isinstance(inner, dict):
        artifact = {MCP_FIELD: {**inner, **fields}}
    else:
        artifact = {**artifact, **fields}
    return message.model_copy(update={"artifact": artifact, "response_metadata": metadata})


def carried(result: object) -> ToolMessage | None:
    """Return the ToolMessage a tool's result answers with: itself, or the one its Command holds."""
    if isinstance(result, ToolMessage):
        return result
    update = result.update if isinstance(result, Command) else None
    found = [m for m in (update or {}).get("messages") or [] if isinstance(m, ToolMessage)]
    return found[0] if isinstance(update, dict) and len(found) == 1 else None


def with_carried(result: Any, message: ToolMessage) -> Any:
    """Return `result` answering with `message` in place of its carried ToolMessage."""
    if not isinstance(result, Command) or not isinstance(result.update, dict):
        return message
    kept = [message if isinstance(m, ToolMessage) else m for m in result.update["messages"]]
    return dataclasses.replace(result, update={**result.update, "messages": kept})


def speaks(artifact: object) -> bool:
    """Return whether an artifact names `stop` or `reason` (else its result is a plain input)."""
    inner = contract(artifact)
    return isinstance(inner, dict) and ("stop" in inner or "reason" in inner)


def contract(artifact: object) -> object:
    """Return what holds the contract: MCP structured content, a model's fields, or `artifact`."""
    if isinstance(artifact, dict) and len(artifact) == 1 and MCP_FIELD in artifact:
        return artifact[MCP_FIELD]
    if isinstance(artifact, dict | str | bytes | list | tuple) or artifact is None:
        return artifact
    if isinstance(artifact, Mapping):
        return dict(artifact)
    if not (hasattr(artifact, "stop") or hasattr(artifact, "reason")):
        return artifact
    if dataclasses.is_dataclass(artifact) and not isinstance(artifact, type):
        return {f.name: getattr(artifact, f.name) for f in dataclasses.fields(artifact)}
    dump = getattr(artifact, "model_dump", None)
    if callable(dump) and isinstance(fields := dump(), dict):
        return fields
    if (kind := type(artifact).__name__) not in _TOLD:  # once per type: a turn reads it often
        _TOLD.add(kind)
        logging.getLogger("stop_on_artifact").warning(
            "an artifact of type %s names stop or reason but is neither a dict, a pydantic "
            "model nor a dataclass: read as no artifact",
            kind,
        )
    return None


def parse_artifact(artifact: object) -> dict[str, Any]:
    """Check what a ToolMessage carried strictly and return it.

    An MCP tool's artifact (`{"structured_content": {...}}`, langchain-mcp-adapters') is read
    one level down and the server's dict returned; a pydantic model or dataclass as its fields.

    Args:
        artifact: A `ToolMessage.artifact`, or the `ToolMessage`: then the fields only the
            library writes (`approval`, `in_place_retries`) are read where the library
            wrote them; from a tool (any bare artifact) they are refused.

    Raises:
        InvalidArtifactError: Unless it is a dict with a real bool `stop` (not `"false"`), a
            `reason` of the vocabulary agreeing with it, small scalar fields, a string
            `not_done` and a dict `structured_response`. It names fields, never values.

    Example:
        A valid artifact comes back as it was:

            >>> from stop_on_artifact import parse_artifact
            >>> parse_artifact({"stop": False, "reason": "transient"})
            {'stop': False, 'reason': 'transient'}
    """
    library = library_fields(artifact) if isinstance(artifact, ToolMessage) else []
    artifact = contract(artifact.artifact if isinstance(artifact, ToolMessage) else artifact)
    if not isinstance(artifact, dict):
        _fail(f"artifact must be a dict, got {type(artifact).__name__}")
    if missing := [key for key in ("stop", "reason") if key not in artifact]:
        _fail(f"artifact lacks key(s) {missing}")
    stop, reason = artifact["stop"], artifact["reason"]
    if type(stop) is not bool:
        _fail(f"artifact 'stop' must be a bool, got {type(stop).__name__}")
    if not isinstance(reason, str) or reason not in REASONS:
        _fail(f"artifact 'reason' must be one of {list(REASONS)}")
    if stop != (reason in STOPPING_REASONS):
        _fail(f"artifact 'stop'={stop} contradicts reason {reason!r}")
    for key, value in artifact.items():
        if key not in ("stop", "reason") and (problem := _field_problem(key, value, library)):
            _fail(problem)
    return artifact
