"""Owner-scoped access for the deployment: API keys in, one identity per key.

``langgraph.json`` names :data:`auth` (``"auth": {"path": "agent.auth:auth"}``). The
server loads this module once at start.

- ``AGENT_API_KEYS`` set (``key:identity`` pairs, comma-separated): every request needs a
  valid ``x-api-key`` header (401 otherwise). Threads, runs, assistants, crons and store
  items belong to the identity that created them; another identity gets 404 on them and
  does not see them in searches. The graphs' own assistants (``created_by: system``) stay
  readable and runnable by every identity. Store namespaces start with the owner's
  :func:`namespace_label`.
- ``AGENT_API_KEYS`` unset or empty: the server is open (local development), and says so
  once, with a warning, when it starts.

Either way every ``(resource, action)`` path the server dispatches has its own handler
(:data:`OWNER_SCOPED`, :data:`OPEN`), so ``langgraph dev`` warns of no unhandled path.

With or without keys, a run (or a cron) is checked before it is stored
(:func:`run_request_problems`): an ``input`` that is not an object, a ``context`` that is
not an object or holds a value :class:`agent.context.Context` refuses (``stop_mode``,
``force_outcome``, ``max_retries``, ...), or an unknown ``stream_mode`` is a 422 whose
detail names each field and the expected form, never the value. ``langgraph dev`` and Aegra
both call the ``threads.create_run`` and ``crons.create`` handlers before they store
anything, so the refusal is the same on both and no run exists.

Keys never appear in errors or logs: a malformed entry is named by its position.
"""

from __future__ import annotations

import hmac
import logging
import os
import re
from collections.abc import Mapping
from typing import Any, Protocol

import pydantic
from langgraph_sdk import Auth
from stop_on_artifact import resume_problem

from agent.context import Context
from agent.turn import record_problem

logger = logging.getLogger(__name__)

API_KEYS_ENV = "AGENT_API_KEYS"
"""Environment variable holding ``key:identity`` pairs, comma-separated."""

API_KEY_HEADER = "x-api-key"
"""The request header that carries the key."""

OWNER = "owner"
"""Metadata key that records the identity owning a thread, run, assistant or cron."""

OPEN_IDENTITY = "anonymous"
"""The identity every request gets when no keys are configured."""

OPEN_SERVER_WARNING = (
    f"{API_KEYS_ENV} is not set: this server is open. Every request is accepted without "
    f"a key and every thread, run and assistant is visible to every caller. Set "
    f"{API_KEYS_ENV}='key:identity,...' before exposing it beyond this machine."
)
"""Logged once, at start, when the server runs without keys."""

_IDENTITY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$")
_SYSTEM_ASSISTANTS = {"created_by": "system"}
"""Metadata the server puts on the assistant it creates for each graph."""


STREAM_MODES = frozenset(
    {
        "values",
        "updates",
        "messages",
        "messages-tuple",
        "custom",
        "debug",
        "events",
        "tasks",
        "checkpoints",
        "tools",
        "lifecycle",
    }
)
"""The ``stream_mode`` values a run may ask for: langgraph-api 0.16's ``StreamMode``."""

BAD_RUN_STATUS = 422
"""The status of a run request :func:`run_request_problems` refuses."""


class ApiKeysError(ValueError):
    """``AGENT_API_KEYS`` is malformed. The message names the entry, never the key."""


def parse_api_keys(raw: str) -> dict[str, str]:
    """Parse ``AGENT_API_KEYS`` into a key -> identity map.

    The format is ``key:identity`` pairs separated by commas, for example
    ``"k3y-one:alice,k3y-two:bob"``. Spaces around entries are ignored. A key may contain
    ``:`` (the identity is what follows the last one); an identity is 1 to 128 characters
    from ``A-Z a-z 0-9 _ . @ -``. Several keys may map to the same identity.

    Args:
        raw: The variable's value. Empty or blank means no keys (an open server).

    Returns:
        The map, empty when ``raw`` is blank.

    Raises:
        ApiKeysError: If an entry is empty, has no ``:``, has an empty key, a key with
            whitespace, a bad identity, or repeats a key. The message gives the entry's
            1-based position (and the identity when it is readable), never the key.
    """
    keys: dict[str, str] = {}
    if not raw.strip():
        return keys
    entries = raw.split(",")
    for position, entry in enumerate(entries, start=1):
        where = f"{API_KEYS_ENV} entry {position} of {len(entries)}"
        entry = entry.strip()
        if not entry:
            msg = f"{where} is empty; expected 'key:identity' pairs separated by commas"
            raise ApiKeysError(msg)
        key, sep, identity = entry.rpartition(":")
        if not sep:
            msg = f"{where} has no ':'; expected 'key:identity'"
            raise ApiKeysError(msg)
        if not _IDENTITY.match(identity):
            msg = (
                f"{where} has an invalid identity: expected 1 to 128 characters from "
                f"A-Z a-z 0-9 _ . @ -, starting with a letter or digit"
            )
            raise ApiKeysError(msg)
        if not key:
            msg = f"{where} (identity {identity!r}) has an empty key"
            raise ApiKeysError(msg)
        if any(ch.isspace() for ch in key):
            msg = f"{where} (identity {identity!r}) has whitespace inside its key"
            raise ApiKeysError(msg)
        if key in keys:
            msg = f"{where} (identity {identity!r}) repeats the key of an earlier entry"
            raise ApiKeysError(msg)
        keys[key] = identity
    return keys


def identity_for(presented: str, keys: Mapping[str, str]) -> str | None:
    """Return the identity a presented key belongs to, or None.

    Compares against every configured key in constant time per key, so the time taken
    does not reveal how much of a key matched.

    Args:
        presented: The ``x-api-key`` header value.
        keys: The configured key -> identity map.

    Returns:
        The identity, or None for an unknown key.
    """
    found: str | None = None
    candidate = presented.encode("utf-8")
    for key, identity in keys.items():
        if hmac.compare_digest(candidate, key.encode("utf-8")):
            found = identity
    return found


def header_value(headers: Mapping[bytes, bytes] | Mapping[str, str], name: str) -> str | None:
    """Return a request header's value, whichever types the server passes.

    ``langgraph dev`` (langgraph-api) hands the auth handler ``bytes`` keys and values;
    Aegra hands it ``str`` ones. Both give header names in lower case.

    Args:
        headers: The request headers as the server passed them.
        name: The header's lower-case name.

    Returns:
        The value as text (undecodable bytes replaced), or None when the header is absent.
    """
    raw: Mapping[Any, Any] = headers
    value = raw.get(name, raw.get(name.encode()))
    if value is None:
        return None
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


def namespace_label(identity: str) -> str:
    """Return the store namespace label that holds an identity's items.

    LangGraph refuses namespace labels containing ``.``, which identities may hold
    (``carol.d@example.com``). Each ``.`` becomes ``%2E``; ``%`` is not a character an
    identity may hold, so two identities never share a label, and an identity without a
    ``.`` is its own label.

    Args:
        identity: An identity from ``AGENT_API_KEYS``.

    Returns:
        A non-empty label without ``.``.
    """
    return identity.replace(".", "%2E")


def _context_problems(context: Mapping[str, Any]) -> list[str]:
    # Only the schema's fields: both servers drop the keys it does not know.
    known = {key: value for key, value in context.items() if key in Context.model_fields}
    try:
        Context.model_validate(known)
    except pydantic.ValidationError as error:
        messages: dict[str, list[str]] = {}
        for item in error.errors(include_url=False, include_input=False, include_context=False):
            field = str(item["loc"][0]) if item["loc"] else "context"
            messages.setdefault(field, []).append(item["msg"])
        return [f"context.{field}: {' or '.join(found)}" for field, found in messages.items()]
    return []


def _update_of(fields: Mapping[str, Any]) -> object:
    command = fields.get("command")
    return command.get("update") if isinstance(command, Mapping) else None


def run_request_problems(request: Mapping[str, Any]) -> list[str]:
    """Check what a run request asks for, as the ``threads.create_run`` handler receives it.

    ``langgraph dev`` passes the run's ``input``, ``context`` and ``stream_mode`` inside
    ``kwargs`` (a cron's inside ``payload``); Aegra passes them at the top level. All are
    read, a ``command``'s ``resume`` that is an object must have the shape of an approval
    response (:func:`stop_on_artifact.resume_problem`), and neither ``input`` nor
    ``command.update`` may set a record only the graph writes (:data:`agent.turn.RECORDS`).

    Args:
        request: The ``threads.create_run`` or ``crons.create`` handler's ``value``.

    Returns:
        One message per bad field, each naming the field and the expected form and never
        quoting the value; empty when the run may be queued.
    """
    nested = request.get("kwargs", request.get("payload"))
    fields: Mapping[str, Any] = nested if isinstance(nested, Mapping) else request
    problems: list[str] = []
    run_input = fields.get("input")
    if run_input is not None and not isinstance(run_input, Mapping):
        problems.append("input: expected an object (for example {'messages': [...]}) or null")
    context = fields.get("context")
    if context is not None:
        if isinstance(context, Mapping):
            problems += _context_problems(context)
        else:
            problems.append("context: expected an object of the graph's context fields")
    for where, update in (("input", run_input), ("command.update", _update_of(fields))):
        record = record_problem(update, where)
        if record is not None:
            problems.append(record)
    command = fields.get("command")
    if isinstance(command, Mapping) and isinstance(command.get("resume"), Mapping):
        # An object answers an approval request: check its shape here (the count of
        # decisions is checked against the pending request in the graph), so a bad one
        # is never queued and the thread stays paused. Any other value may resume a
        # breakpoint (interrupt_before) and goes through.
        problem = resume_problem(command["resume"])
        if problem is not None:
            problems.append(f"command.{problem}")
    modes = fields.get("stream_mode")
    if modes is not None:
        listed = modes if isinstance(modes, list) else [modes]
        if not all(isinstance(mode, str) and mode in STREAM_MODES for mode in listed):
            expected = ", ".join(repr(mode) for mode in sorted(STREAM_MODES))
            problems.append(f"stream_mode: expected one of {expected}, or a list of them")
    return problems


def refuse_bad_run(request: Mapping[str, Any]) -> None:
    """Raise a 422 naming every bad field of a run request (see :func:`run_request_problems`).

    Args:
        request: The ``threads.create_run`` or ``crons.create`` handler's ``value``.

    Raises:
        Auth.exceptions.HTTPException: 422, when any field is bad.
    """
    problems = run_request_problems(request)
    if problems:
        raise Auth.exceptions.HTTPException(status_code=BAD_RUN_STATUS, detail="; ".join(problems))


def _stamp_owner(value: dict[str, Any], identity: str) -> None:
    """Record ``identity`` as the owner in the metadata the server is about to write."""
    metadata = value.get("metadata")
    if metadata is None:
        metadata = value["metadata"] = {}
    metadata[OWNER] = identity


def _owned(ctx: Auth.types.AuthContext) -> dict[str, Any]:
    return {OWNER: ctx.user.identity}


# Each handler below is registered for the dispatch paths named in the tables that
# follow; one body per rule, shared by every path the rule applies to.


async def _allow(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Let the request through unfiltered (an open server)."""


async def _check_run(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Refuse a run (or a cron's runs) with a bad input, context or stream_mode."""
    refuse_bad_run(value)


async def _owner_only(ctx: Auth.types.AuthContext, value: Any) -> dict[str, Any]:
    """Reach only what the caller owns."""
    return _owned(ctx)


async def _stamp_and_own(ctx: Auth.types.AuthContext, value: Any) -> dict[str, Any]:
    """Write the caller as the owner; reach only what the caller owns."""
    _stamp_owner(value, ctx.user.identity)
    return _owned(ctx)


async def _check_stamp_and_own(ctx: Auth.types.AuthContext, value: Any) -> dict[str, Any]:
    """Refuse a bad run first, then write the caller as the owner of what it creates."""
    await _check_run(ctx, value)
    return await _stamp_and_own(ctx, value)


async def _own_assistant(ctx: Auth.types.AuthContext, value: Any) -> dict[str, Any]:
    """Write the caller as the owner of an assistant; ``created_by: system`` is reserved."""
    metadata = value.get("metadata") or {}
    if metadata.get("created_by") == _SYSTEM_ASSISTANTS["created_by"]:
        raise Auth.exceptions.HTTPException(
            status_code=403, detail="metadata created_by='system' is reserved"
        )
    return await _stamp_and_own(ctx, value)


async def _owned_or_system(ctx: Auth.types.AuthContext, value: Any) -> dict[str, Any]:
    """Reach the caller's assistants and the graphs' own (``created_by: system``) ones."""
    return {"$or": [_owned(ctx), dict(_SYSTEM_ASSISTANTS)]}


async def _scope_namespace(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Put the store namespace under the caller's :func:`namespace_label`."""
    label = namespace_label(ctx.user.identity)
    namespace = tuple(value.get("namespace") or ())
    if not namespace or namespace[0] != label:
        namespace = (label, *namespace)
    value["namespace"] = namespace


class _PathHandler(Protocol):
    async def __call__(
        self, *, ctx: Auth.types.AuthContext, value: dict[str, Any]
    ) -> Auth.types.HandlerResult: ...


OWNER_SCOPED: Mapping[tuple[str, str], _PathHandler] = {
    ("threads", "create"): _stamp_and_own,
    ("threads", "read"): _owner_only,
    ("threads", "update"): _stamp_and_own,
    ("threads", "delete"): _owner_only,
    ("threads", "search"): _owner_only,
    ("threads", "create_run"): _check_stamp_and_own,
    ("assistants", "create"): _own_assistant,
    ("assistants", "read"): _owned_or_system,
    ("assistants", "update"): _own_assistant,
    ("assistants", "delete"): _owner_only,
    ("assistants", "search"): _owned_or_system,
    ("crons", "create"): _check_stamp_and_own,
    ("crons", "read"): _owner_only,
    ("crons", "update"): _stamp_and_own,
    ("crons", "delete"): _owner_only,
    ("crons", "search"): _owner_only,
    ("store", "put"): _scope_namespace,
    ("store", "get"): _scope_namespace,
    ("store", "search"): _scope_namespace,
    ("store", "list_namespaces"): _scope_namespace,
    ("store", "delete"): _scope_namespace,
}
"""The handler for each ``(resource, action)`` dispatch path when keys are configured.

Every path the SDK's ``Auth.on`` offers has one, so ``langgraph dev`` finds no path
without a handler. A ``threads.create_run`` or ``crons.create`` request is checked by
:func:`refuse_bad_run` before anything is stamped.
"""

OPEN: Mapping[tuple[str, str], _PathHandler] = {
    path: _check_run if path in (("threads", "create_run"), ("crons", "create")) else _allow
    for path in OWNER_SCOPED
}
"""The handler for each dispatch path on an open server: a bad run is refused, the rest
passes unfiltered."""


def build_auth(keys: Mapping[str, str]) -> Auth:
    """Build the server's ``Auth`` object for a key map.

    Each dispatch path gets its own handler (:data:`OWNER_SCOPED` with keys,
    :data:`OPEN` without). With keys, a resource or action missing from the table (one a
    later SDK adds) is refused.

    Args:
        keys: key -> identity. Empty builds an open ``Auth``: every request is accepted as
            :data:`OPEN_IDENTITY` and nothing is filtered.

    Returns:
        The ``Auth`` instance the server loads.
    """
    auth = Auth()
    frozen = dict(keys)

    @auth.authenticate
    async def authenticate(
        headers: Mapping[bytes, bytes] | Mapping[str, str],
    ) -> Auth.types.MinimalUserDict:
        """Map the ``x-api-key`` header to its identity; 401 without a valid key."""
        if not frozen:
            return {"identity": OPEN_IDENTITY}
        presented = header_value(headers, API_KEY_HEADER)
        if not presented:
            raise Auth.exceptions.HTTPException(
                status_code=401, detail=f"missing {API_KEY_HEADER} header"
            )
        identity = identity_for(presented, frozen)
        if identity is None:
            raise Auth.exceptions.HTTPException(status_code=401, detail=f"invalid {API_KEY_HEADER}")
        return {"identity": identity}

    for (resource, action), handler in (OWNER_SCOPED if frozen else OPEN).items():
        auth.on(resources=resource, actions=action)(handler)
    if frozen:

        @auth.on
        async def deny_unlisted(ctx: Auth.types.AuthContext, value: Any) -> bool:
            """Refuse any resource or action this module does not scope explicitly."""
            return False

    return auth


def load_api_keys(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Read and parse ``AGENT_API_KEYS``; warn once when it is unset.

    Args:
        environ: Where to read it from.

    Returns:
        key -> identity; empty for an open server.

    Raises:
        ApiKeysError: If the value is malformed (the server then refuses to start).
    """
    keys = parse_api_keys(environ.get(API_KEYS_ENV, ""))
    if not keys:
        logger.warning(OPEN_SERVER_WARNING)
    return keys


auth = build_auth(load_api_keys())
"""What ``langgraph.json``'s ``auth.path`` points at."""
