"""The project's own ``agent.http:app``, plus one route that lists every route the server mounts.

Only the route-walk tests serve it (``http.app`` of a test config names this file): both
servers mount their routes into the custom app they load, so after start-up this app's
routes are exactly what the server serves. ``GET /__routes__`` answers them as
``[[method, path], ...]``, with the prefixes of ``Mount`` and of FastAPI's included routers
applied.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from agent.http import app

ROUTES_PATH = "/__routes__"


def flatten(routes: list[Any], prefix: str = "") -> list[tuple[str, str]]:
    """Every (method, path) under ``routes``; a route without methods counts as ``*``."""
    found: list[tuple[str, str]] = []
    for route in routes:
        if isinstance(route, Mount):
            found += flatten(list(route.routes), prefix + route.path)
            continue
        included = getattr(route, "original_router", None)  # FastAPI's include_router (Aegra)
        if included is not None:
            context = getattr(route, "include_context", None)
            found += flatten(list(included.routes), prefix + getattr(context, "prefix", ""))
            continue
        path = getattr(route, "path", None)
        if not isinstance(path, str):
            continue
        methods = getattr(route, "methods", None) or {"*"}
        found += [(method, prefix + path) for method in sorted(methods) if method != "HEAD"]
    return found


async def list_routes(request: Request) -> JSONResponse:
    """Answer every route of the running app (the servers mount theirs into this object)."""
    return JSONResponse(sorted(set(flatten(list(app.routes)))))


app.router.routes.append(Route(ROUTES_PATH, list_routes, methods=["GET"]))
