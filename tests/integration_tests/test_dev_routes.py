"""The dev server's ``/internal/*`` and ``/deploy`` routes, closed by ``agent/http.py``.

``langgraph dev`` serves them outside custom auth. With ``AGENT_API_KEYS`` set, each needs
a valid key first (the same 401 as every other route, whatever the ``Origin``), and
``/internal/*`` stays closed for every key (404: the routes cannot tell owners apart, and
Studio does not call them). With or without keys, a browser page from an origin other than
Studio's or loopback is refused on ``/deploy`` (403). Studio's own requests, from its
origin with a key, still pass, and every other route is untouched.

No request here starts a deploy: the one ``POST /deploy`` that passes the guard carries
a loopback origin the guard allows (``[::1]``) and the dev server's own check refuses.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agent.auth import API_KEYS_ENV
from agent.http import STUDIO_ORIGINS, allowed_origin, is_guarded, redact_query
from tests.support.dev_server import DevServer, dev_server

KEY = "routes-key-4b1e9c07"
STUDIO = "https://smith.langchain.com"
FOREIGN = "https://attacker.example"
SERVER_ONLY_REFUSES = "http://[::1]:3000"  # allowed here, refused by the server's own check

ROUTES = [
    ("GET", "/internal/debug/thread/{thread_id}"),
    ("POST", "/internal/truncate"),
    ("GET", "/deploy"),
    ("POST", "/deploy"),
    ("GET", "/deploy/some-operation/stream"),
]
ROUTE_IDS = [f"{method} {path.split('{')[0]}" for method, path in ROUTES]


def test_what_is_guarded_and_which_origins_pass() -> None:
    for path in ("/internal", "/internal/truncate", "/internal/debug/thread/x", "/deploy"):
        assert is_guarded(path)
    assert is_guarded("/deploy/op/stream")
    for path in ("/ok", "/threads", "/internals", "/deployments", "/info", "/docs", "/"):
        assert not is_guarded(path)
    for origin in (*STUDIO_ORIGINS, "http://localhost:3000", "http://127.0.0.1", "http://[::1]"):
        assert allowed_origin(origin)
    for origin in (
        FOREIGN,
        "null",
        "http://localhost.attacker.example",
        "https://smith.langchain.com.x",
    ):
        assert not allowed_origin(origin)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (b"", b""),
        (b"limit=1", b"limit=1"),
        (b"key=store-item&namespace=a.b", b"key=store-item&namespace=a.b"),
        (b"x-api-key=" + KEY.encode(), b"x-api-key=[redacted]"),
        (b"limit=1&X-API-KEY=" + KEY.encode() + b"&b=2", b"limit=1&X-API-KEY=[redacted]&b=2"),
        (b"x%2Dapi%2Dkey=" + KEY.encode(), b"x%2Dapi%2Dkey=[redacted]"),
        (b"x-api-keys=1&%zz", b"x-api-keys=1&%zz"),
    ],
)
def test_a_key_in_the_query_string_is_redacted(query: bytes, expected: bytes) -> None:
    assert redact_query(query) == expected


@pytest.fixture(scope="module")
def keyed() -> Iterator[DevServer]:
    with dev_server(env={API_KEYS_ENV: f"{KEY}:dana"}) as running:
        yield running


@pytest.fixture(scope="module")
def thread_id(keyed: DevServer) -> str:
    response = httpx.post(f"{keyed.url}/threads", json={}, headers={"x-api-key": KEY})
    response.raise_for_status()
    return str(response.json()["thread_id"])


def call(
    server: DevServer, method: str, path: str, thread_id: str, headers: dict[str, str]
) -> httpx.Response:
    body: Any = {} if method == "POST" else None
    url = server.url + path.format(thread_id=thread_id)
    return httpx.request(method, url, json=body, headers=headers, timeout=10)


def is_guard_refusal(response: httpx.Response, status: int, detail: str) -> bool:
    return response.status_code == status and response.json() == {"detail": detail}


MISSING = (401, "missing x-api-key header")
INVALID = (401, "invalid x-api-key")
FOREIGN_PAGE = (403, "origin not allowed")
CLOSED = (404, "not found")
REFUSED = {
    # case: (headers, answer on /internal/*, answer on /deploy*)
    "no-key": ({}, MISSING, MISSING),
    "wrong-key": ({"x-api-key": "wrong"}, INVALID, INVALID),
    "key-in-other-case": ({"x-api-key": KEY.upper()}, INVALID, INVALID),
    "key-as-bearer": ({"authorization": f"Bearer {KEY}"}, MISSING, MISSING),
    "foreign-origin-no-key": ({"origin": FOREIGN}, MISSING, MISSING),
    "studio-origin-no-key": ({"origin": STUDIO}, MISSING, MISSING),
    "valid-key": ({"x-api-key": KEY}, CLOSED, None),
    "studio-with-key": ({"x-api-key": KEY, "origin": STUDIO}, CLOSED, None),
    "foreign-origin": ({"x-api-key": KEY, "origin": FOREIGN}, CLOSED, FOREIGN_PAGE),
    "cross-site-no-origin": (
        {"x-api-key": KEY, "sec-fetch-site": "cross-site"},
        CLOSED,
        FOREIGN_PAGE,
    ),
}


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=ROUTE_IDS)
@pytest.mark.parametrize("case", REFUSED)
def test_with_keys_a_request_without_a_valid_key_or_from_a_foreign_page_is_refused(
    keyed: DevServer,
    thread_id: str,
    method: str,
    path: str,
    case: str,
) -> None:
    headers, internal, deploy = REFUSED[case]
    expected = internal if path.startswith("/internal") else deploy
    if expected is None:
        return  # a /deploy request Studio may send: test_with_keys_studio_still_deploys
    status, detail = expected
    response = call(keyed, method, path, thread_id, headers)
    assert is_guard_refusal(response, status, detail), (response.status_code, response.text)
    # The same refusal as every other route gives (one of them, for comparison).
    if status == 401:
        other = httpx.post(f"{keyed.url}/threads/search", json={}, headers=headers)
        assert (other.status_code, other.json()) == (response.status_code, response.json())


def test_a_cors_preflight_on_deploy_is_checked_for_its_origin_only(keyed: DevServer) -> None:
    preflight = {
        "access-control-request-method": "POST",
        "access-control-request-headers": "x-api-key",
    }
    studio = httpx.options(f"{keyed.url}/deploy", headers={**preflight, "origin": STUDIO})
    assert studio.status_code == 200  # Studio's browser may go on and send its key
    foreign = httpx.options(f"{keyed.url}/deploy", headers={**preflight, "origin": FOREIGN})
    assert is_guard_refusal(foreign, 403, "origin not allowed")
    assert "access-control-allow-origin" not in foreign.headers
    # /internal is closed with keys: a preflight there needs a key like any request.
    internal = httpx.options(
        f"{keyed.url}/internal/truncate", headers={**preflight, "origin": STUDIO}
    )
    assert is_guard_refusal(internal, *MISSING)


def test_with_keys_studio_still_deploys_and_the_internal_routes_stay_closed(
    keyed: DevServer, thread_id: str
) -> None:
    key = {"x-api-key": KEY}
    studio = {**key, "origin": STUDIO}
    assert call(keyed, "GET", "/deploy", thread_id, studio).json()["protocol_version"] >= 1
    stream = call(keyed, "GET", ROUTES[4][1], thread_id, studio)
    assert (stream.status_code, stream.json()) == (404, {"error": "not found"})
    # Past the guard, the dev server's own origin check answers (and no deploy starts).
    deploy = call(keyed, "POST", "/deploy", thread_id, {**key, "origin": SERVER_ONLY_REFUSES})
    assert (deploy.status_code, deploy.json()) == (403, {"error": "origin not allowed"})
    # Studio's ordinary API calls are untouched, CORS headers included.
    search = httpx.post(f"{keyed.url}/threads/search", json={}, headers=studio)
    assert search.status_code == 200
    assert search.headers["access-control-allow-origin"] in ("*", STUDIO)
    assert httpx.get(f"{keyed.url}/ok").status_code == 200
    # The owner's own key does not open /internal either: her thread is still there.
    for method, path in ROUTES[:2]:
        closed = call(keyed, method, path, thread_id, key)
        assert is_guard_refusal(closed, *CLOSED), (closed.status_code, closed.text)
    own = httpx.get(f"{keyed.url}/threads/{thread_id}", headers=key)
    assert own.status_code == 200 and own.json()["thread_id"] == thread_id


@pytest.mark.parametrize(("method", "path"), ROUTES, ids=ROUTE_IDS)
@pytest.mark.parametrize("origin", [FOREIGN, "null", "http://localhost.attacker.example"])
def test_without_keys_a_foreign_page_is_refused(
    server: DevServer, method: str, path: str, origin: str
) -> None:
    response = call(
        server, method, path, "00000000-0000-0000-0000-000000000000", {"origin": origin}
    )
    assert is_guard_refusal(response, 403, "origin not allowed"), (
        response.status_code,
        response.text,
    )
    assert "access-control-allow-origin" not in response.headers


@pytest.mark.parametrize("origin", [None, STUDIO, "http://localhost:5173", "http://127.0.0.1:2024"])
def test_without_keys_studio_loopback_and_local_tools_pass(
    server: DevServer, origin: str | None
) -> None:
    # Only routes that change nothing: the session server's data is shared.
    headers = {"origin": origin} if origin else {}
    thread = httpx.post(f"{server.url}/threads", json={}).json()["thread_id"]
    debug = call(server, "GET", ROUTES[0][1], thread, headers)
    assert debug.status_code == 200 and debug.json()["thread_id"] == thread
    assert call(server, "GET", "/deploy", thread, headers).status_code == 200
