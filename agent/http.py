"""Close the dev server's debug and deploy routes: ``/internal/*`` and ``/deploy``.

``langgraph dev`` (the in-memory runtime) serves ``GET /internal/debug/thread/{id}`` (any
thread, every message), ``POST /internal/truncate`` (wipes every owner's data) and the
``/deploy`` routes Studio's deploy button uses, outside the server's auth: custom auth
never sees them, and the server answers them with ``access-control-allow-origin: *``.

``langgraph.json`` names :data:`app` (``"http": {"app": "agent.http:app"}``); the server
runs its middleware, :class:`DevRouteGuard`, before anything else on every request. On
the guarded routes it:

- refuses a browser request from a foreign web page (403): an ``Origin`` other than
  LangGraph Studio's (:data:`STUDIO_ORIGINS`) or a loopback address, or no ``Origin`` but
  ``Sec-Fetch-Site`` saying another site sent it. This holds with and without keys.
- with ``AGENT_API_KEYS`` set, needs a valid ``x-api-key`` header, with the same 401 and
  ``detail`` as every other route. A CORS preflight (``OPTIONS``) carries no key, so it
  is checked for its origin only.

Every other route passes through, with one change on every route: an ``x-api-key`` sent
as a query parameter (never read as a key: auth reads the header) has its value replaced
by ``[redacted]`` before the server's access log, which records query strings, sees it.
A refusal is logged with its method, path and reason, never the key.
"""

from __future__ import annotations

import logging
import os
import re
from urllib.parse import unquote_plus

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from agent.auth import API_KEY_HEADER, API_KEYS_ENV, identity_for, parse_api_keys

logger = logging.getLogger(__name__)

GUARDED_PREFIXES = ("/internal", "/deploy")
"""Path prefixes of the dev server's routes that bypass custom auth."""

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


def is_guarded(path: str) -> bool:
    """Return True for ``/internal``, ``/deploy`` and every path below them."""
    return any(path == prefix or path.startswith(prefix + "/") for prefix in GUARDED_PREFIXES)


def allowed_origin(origin: str) -> bool:
    """Return True for LangGraph Studio's origins and loopback ones (any port).

    Args:
        origin: An ``Origin`` header value.

    Returns:
        Whether a page there may call the guarded routes.
    """
    return origin in STUDIO_ORIGINS or _LOOPBACK_ORIGIN.match(origin) is not None


def refusal(headers: Headers, method: str, keys: dict[str, str]) -> tuple[int, str] | None:
    """Return the status and detail a guarded request is refused with, or None.

    Args:
        headers: The request's headers.
        method: The HTTP method.
        keys: The configured key -> identity map; empty on an open server.

    Returns:
        ``(403, ...)`` for a foreign origin, ``(401, ...)`` for a missing or unknown key
        when keys are configured, None to let the request through.
    """
    origin = headers.get("origin")
    if origin is not None:
        if not allowed_origin(origin):
            return 403, "origin not allowed"
    elif headers.get("sec-fetch-site", "").lower() in _CROSS_SITE:
        return 403, "origin not allowed"
    if not keys or method == "OPTIONS":
        return None
    presented = headers.get(API_KEY_HEADER)
    if not presented:
        return 401, f"missing {API_KEY_HEADER} header"
    if identity_for(presented, keys) is None:
        return 401, f"invalid {API_KEY_HEADER}"
    return None


class DevRouteGuard:
    """ASGI middleware: guard :data:`GUARDED_PREFIXES`; redact a query-string key anywhere."""

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
        if scope["type"] in ("http", "websocket"):
            query = scope.get("query_string", b"")
            redacted = redact_query(query)
            if redacted is not query:
                scope = {**scope, "query_string": redacted}
        if scope["type"] == "http" and is_guarded(scope["path"]):
            refused = refusal(Headers(scope=scope), scope["method"], self.keys)
            if refused is not None:
                status, detail = refused
                logger.warning("refused %s %s: %s", scope["method"], scope["path"], detail)
                await JSONResponse({"detail": detail}, status_code=status)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def build_app(keys: dict[str, str]) -> Starlette:
    """Build the app ``langgraph.json``'s ``http.app`` names: no routes, one middleware.

    Args:
        keys: The configured key -> identity map; empty on an open server.

    Returns:
        A Starlette app whose only job is :class:`DevRouteGuard`.
    """
    return Starlette(middleware=[Middleware(DevRouteGuard, keys=keys)])


app = build_app(parse_api_keys(os.environ.get(API_KEYS_ENV, "")))
"""What ``langgraph.json``'s ``http.app`` points at."""
