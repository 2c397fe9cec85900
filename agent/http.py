"""The project's HTTP layer: close the dev server's own routes, keep caller values out of errors.

Both ``langgraph.json`` and ``aegra.json`` name :data:`app` (``"http": {"app":
"agent.http:app"}``); each server runs its middleware, :class:`DevRouteGuard`, around every
request, and inside it :class:`agent.resume_door.ResumeDoor` (one answer per pause). The
guard does three things.

**The dev server's own routes.** ``langgraph dev`` (the in-memory runtime) serves ``GET
/internal/debug/thread/{id}`` (any thread, every message, whoever owns it), ``POST
/internal/truncate`` (wipes every owner's data) and the ``/deploy`` routes Studio's deploy
button uses, outside the server's auth: custom auth never sees them, and the server answers
them with ``access-control-allow-origin: *``. Studio calls ``/deploy`` only; ``/internal``
is the runtime's test hook. On these routes the guard:

- with ``AGENT_API_KEYS`` set, needs a valid ``x-api-key`` header first, with the same 401
  and ``detail`` as every other route, whatever the request's ``Origin``; then closes
  ``/internal/*`` for every key (404: it cannot tell owners apart), and refuses a foreign
  page on ``/deploy`` (403). A CORS preflight (``OPTIONS``) on ``/deploy`` carries no key, so
  it is checked for its origin only.
- without keys, refuses a browser request from a foreign web page (403): an ``Origin`` other
  than LangGraph Studio's (:data:`STUDIO_ORIGINS`) or a loopback address, or no ``Origin``
  but ``Sec-Fetch-Site`` saying another site sent it.

**Framework validation errors.** The servers' own request validation quotes what the caller
sent: langgraph-api's JSON-schema errors (``"<value> is not of type 'object'"``, 422) go to
the client and, through the access log's ``error_detail``, to the server log; Aegra's
pydantic errors (422) carry each bad value under ``input``. The guard rewrites every such
422 on its way out (:func:`rewrite_validation_error`): the body names the field and the
expected form, never the value, and on ``langgraph dev`` the access log's ``error_detail``
gets the same text before the log line is written. (What the project itself refuses, a bad
run ``context`` or ``input``, is refused by :mod:`agent.auth` before a run is queued.)

**Keys in query strings.** An ``x-api-key`` sent as a query parameter (never read as a key:
auth reads the header) has its value replaced by ``[redacted]`` before the server's access
log, which records query strings, sees it.

A refusal is logged with its method, path and reason, never the key.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import re
from typing import Any, cast
from urllib.parse import unquote_plus

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent.asgi import Rewrite, RewrittenResponse
from agent.auth import API_KEY_HEADER, API_KEYS_ENV, identity_for, parse_api_keys
from agent.frameworks.langgraph_api import replace_log_detail
from agent.frameworks.langgraph_runtime_inmem import in_memory_runtime, quick_scheduler
from agent.resume_door import ResumeDoor

logger = logging.getLogger(__name__)

GUARDED_PREFIXES = ("/internal", "/deploy")
"""Path prefixes of the dev server's routes that bypass custom auth."""

CLOSED_WITH_KEYS = "/internal"
"""The prefix closed for every key when ``AGENT_API_KEYS`` is set."""

STUDIO_ORIGINS = frozenset(
    {
        "https://smith.langchain.com",
        "https://eu.smith.langchain.com",
        "https://dev.smith.langchain.com",
        "https://staging.smith.langchain.com",
    }
)
"""Where LangGraph Studio runs (the origins the dev server itself allows for ``/deploy``)."""

_LOOPBACK_ORIGIN = re.compile(r"^https?://(?:localhost|127\.0\.0\.1|\[::1\])(?::\d{1,5})?$")
_CROSS_SITE = frozenset({"cross-site", "same-site"})


REDACTED_QUERY_VALUE = b"[redacted]"
"""What replaces the value of an ``x-api-key`` query parameter."""

EXPECTED_FORMS = {
    "input": "an object (the graph's state, for example {'messages': [...]}) or null",
    "command": "an object or null",
    "context": "an object of the graph's context fields",
    "config": "an object",
    "metadata": "an object",
    "stream_mode": (
        "one of 'values', 'updates', 'messages', 'messages-tuple', 'custom', 'debug', "
        "'events', 'tasks', 'checkpoints', 'tools', 'lifecycle', or a list of them"
    ),
    "checkpoint": "an object",
    "interrupt_before": "'*' or a list of node names",
    "interrupt_after": "'*' or a list of node names",
}
"""The expected form of the request fields the servers' own validation refuses most often."""

_JSONSCHEMA_SPLIT = "\n\nFailed validating "
"""Where langgraph-api's JSON-schema message leaves the quoted value for the schema's words."""
_SCHEMA_PROPERTY = re.compile(r'\["properties"\]\["([A-Za-z_][A-Za-z0-9_-]{0,63})"\]')
_SCHEMA_KEYWORD = re.compile(r'^"([A-Za-z]{1,32})"')
_JSON_TYPES = re.compile(r'^"[a-z]{1,16}"(?:, "[a-z]{1,16}")*$')
_LOC_PART = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


def redact_query(query: bytes) -> bytes:
    """Return a query string with the value of every ``x-api-key`` parameter redacted.

    Names are compared after percent-decoding, case-insensitively; every other parameter
    is kept byte for byte. Linear in the query's length.

    Args:
        query: The raw query string (``scope["query_string"]``).

    Returns:
        The same bytes when nothing matched, else the redacted query.
    """
    if API_KEY_HEADER.encode() not in query.lower() and b"%" not in query:
        return query
    parts = query.split(b"&")
    for index, part in enumerate(parts):
        name = part.split(b"=", 1)[0]
        if unquote_plus(name.decode("latin-1")).strip().lower() == API_KEY_HEADER:
            parts[index] = name + b"=" + REDACTED_QUERY_VALUE
    return b"&".join(parts)


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def is_guarded(path: str) -> bool:
    """Return True for ``/internal``, ``/deploy`` and every path below them."""
    return any(_under(path, prefix) for prefix in GUARDED_PREFIXES)


def allowed_origin(origin: str) -> bool:
    """Return True for LangGraph Studio's origins and loopback ones (any port).

    Args:
        origin: An ``Origin`` header value.

    Returns:
        Whether a page there may call the guarded routes.
    """
    return origin in STUDIO_ORIGINS or _LOOPBACK_ORIGIN.match(origin) is not None


def _foreign_page(headers: Headers) -> bool:
    origin = headers.get("origin")
    if origin is not None:
        return not allowed_origin(origin)
    return headers.get("sec-fetch-site", "").lower() in _CROSS_SITE


def refusal(
    headers: Headers, method: str, keys: dict[str, str], path: str = "/deploy"
) -> tuple[int, str] | None:
    """Return the status and detail a guarded request is refused with, or None.

    Args:
        headers: The request's headers.
        method: The HTTP method.
        keys: The configured key -> identity map; empty on an open server.
        path: The request's path (one :func:`is_guarded` accepts).

    Returns:
        With keys: ``(401, ...)`` for a missing or unknown key (a ``/deploy`` preflight
        excepted), then ``(404, "not found")`` for every ``/internal`` path and ``(403,
        ...)`` for a foreign page. Without keys: ``(403, ...)`` for a foreign page. None
        lets the request through.
    """
    if not keys:
        return (403, "origin not allowed") if _foreign_page(headers) else None
    if method != "OPTIONS" or _under(path, CLOSED_WITH_KEYS):
        presented = headers.get(API_KEY_HEADER)
        if not presented:
            return 401, f"missing {API_KEY_HEADER} header"
        if identity_for(presented, keys) is None:
            return 401, f"invalid {API_KEY_HEADER}"
    if _under(path, CLOSED_WITH_KEYS):
        return 404, "not found"
    return (403, "origin not allowed") if _foreign_page(headers) else None


def _jsonschema_detail(detail: str) -> str | None:
    """Rewrite one langgraph-api JSON-schema message; None when it is not one."""
    quoted, sep, schema = detail.partition(_JSONSCHEMA_SPLIT)
    if not sep:
        return None
    # Everything before the split quotes the caller's value; only the schema path after it
    # (the server's own words) is read, and from the quoted part only the type list that
    # jsonschema appends to it.
    head = schema.split("\n", 1)[0]
    fields = _SCHEMA_PROPERTY.findall(head)
    field = ".".join(fields) if fields else "the request body"
    expected = EXPECTED_FORMS.get(field)
    if expected is None:
        keyword = _SCHEMA_KEYWORD.match(head)
        types = quoted.rpartition(" is not of type ")[2]
        if keyword and keyword[1] == "type" and _JSON_TYPES.match(types):
            expected = f"of type {types}"
        else:
            expected = "the form the API schema gives"
    return f"{field}: expected {expected}"


def _loc(loc: object) -> list[Any]:
    """Keep ``body`` and the request field; deeper names are keys the caller chose."""
    parts = loc if isinstance(loc, list) else []
    return [
        p if isinstance(p, int) or (depth < 2 and _LOC_PART.match(str(p))) else "..."
        for depth, p in enumerate(parts)
    ]


def rewrite_validation_error(body: bytes) -> tuple[bytes, str] | None:
    """Rewrite a server's 422 validation body so it names fields and never quotes values.

    Handles langgraph-api's ``{"detail": "<JSON-schema message>"}`` and FastAPI/pydantic's
    ``{"detail": [{"type", "loc", "msg", "input", "ctx"}, ...]}`` (Aegra). Linear in the
    body's length.

    Args:
        body: The response body as the server wrote it.

    Returns:
        The new body and a one-line summary for the log, or None when the body is neither
        shape (the project's own 422s already name the field without a value).
    """
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    detail = parsed.get("detail")
    if isinstance(detail, str):
        rewritten = _jsonschema_detail(detail)
        if rewritten is None:
            return None
        return json.dumps({"detail": rewritten}).encode(), rewritten
    if isinstance(detail, list) and all(isinstance(item, dict) for item in detail):
        items: list[dict[str, Any]] = []
        for item in detail:
            loc = _loc(item.get("loc"))
            field = ".".join(str(p) for p in loc if p != "body") or "the request body"
            expected = EXPECTED_FORMS.get(field)
            msg = str(item.get("msg", "invalid value"))
            if expected is not None:
                msg = f"{msg}: expected {expected}"
            items.append({"type": str(item.get("type", "")), "loc": loc, "msg": msg})
        summary = "; ".join(f"{'.'.join(map(str, i['loc']))}: {i['msg']}" for i in items)
        return json.dumps({"detail": items}).encode(), summary
    return None


class DevRouteGuard:
    """ASGI middleware: guard :data:`GUARDED_PREFIXES`, rewrite framework 422s, redact keys."""

    def __init__(self, app: ASGIApp, keys: dict[str, str]) -> None:
        """Wrap ``app``.

        Args:
            app: The server's application.
            keys: The configured key -> identity map; empty on an open server.
        """
        self.app = app
        self.keys = dict(keys)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a guarded request that fails :func:`refusal`; serve the rest."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        query = scope.get("query_string", b"")
        redacted = redact_query(query)
        if redacted is not query:
            scope = {**scope, "query_string": redacted}
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if is_guarded(scope["path"]):
            refused = refusal(Headers(scope=scope), scope["method"], self.keys, scope["path"])
            if refused is not None:
                status, detail = refused
                logger.warning("refused %s %s: %s", scope["method"], scope["path"], detail)
                await JSONResponse({"detail": detail}, status_code=status)(scope, receive, send)
                return
        await self.app(scope, receive, RewrittenResponse(send, (422,), _validation_rewrite(scope)))


def _validation_rewrite(scope: Scope) -> Rewrite:
    """Rewrite a 422's body to name fields, never values; the access log's detail too."""

    def rewrite(start: Message, body: bytes) -> tuple[Message, bytes]:
        rewritten = rewrite_validation_error(body)
        if rewritten is None:
            return start, body
        body, summary = rewritten
        # langgraph-api's access log writes what its handler put in the scope: the quoted value.
        replace_log_detail(scope, summary)
        return start, body

    return rewrite


def _app_class() -> type[Starlette]:
    """FastAPI when installed (Aegra loads only FastAPI apps), else Starlette (langgraph dev)."""
    try:
        module = importlib.import_module("fastapi")
    except ImportError:
        return Starlette
    return cast("type[Starlette]", module.FastAPI)


def build_app(keys: dict[str, str]) -> Starlette:
    """Build the app both configs' ``http.app`` name: no routes, two middleware.

    Args:
        keys: The configured key -> identity map; empty on an open server.

    Returns:
        An app (FastAPI where it is installed, as on the production server; Starlette
        otherwise) whose only jobs are :class:`DevRouteGuard` and, inside it,
        :class:`agent.resume_door.ResumeDoor` (one answer per pause).
    """
    return _app_class()(middleware=[Middleware(DevRouteGuard, keys=keys), Middleware(ResumeDoor)])


if in_memory_runtime():  # langgraph dev: a queued run starts within 20 ms, not up to 0.5 s
    quick_scheduler()

app = build_app(parse_api_keys(os.environ.get(API_KEYS_ENV, "")))
"""What ``langgraph.json``'s and ``aegra.json``'s ``http.app`` point at."""
