"""Every dispatch path langgraph-api checks has its own handler in ``agent.auth``.

langgraph-api 0.16 warns at start about each ``(resource, action)`` with no handler
(``langgraph_api.auth.custom._missing_handler_paths``) and derives the paths from the SDK's
``Auth.on`` (``_derive_known_resource_actions``). Both are private: the test calls them in a
subprocess configured the way ``langgraph dev`` configures itself, so the day langgraph-api
renames them, or the SDK adds a path the tables do not name, this test fails.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from typing import Any

import pytest
from langgraph_sdk import Auth

from agent.auth import BAD_RUN_STATUS, OPEN, OPEN_IDENTITY, OWNER, OWNER_SCOPED, build_auth
from tests.support.probe import run_probe

KEYS = {"k-alice": "alice", "k-carol": "carol.d@example.com"}

PROBE = """
import json
from langgraph_sdk import Auth
from langgraph_api.auth.custom import _derive_known_resource_actions, _missing_handler_paths
from agent.auth import build_auth

keyed = build_auth({"k-alice": "alice"})
keyed._global_handlers.clear()  # coverage without the default-deny fallback
print(json.dumps({
    "paths": sorted([r, a] for r, acts in _derive_known_resource_actions(Auth()).items()
                    for a in acts),
    "missing_open": sorted(map(list, _missing_handler_paths(build_auth({})))),
    "missing_keyed": sorted(map(list, _missing_handler_paths(keyed))),
}))
"""


@pytest.fixture(scope="module")
def server_view() -> dict[str, Any]:
    """What langgraph-api itself computes, in a process set up as ``langgraph dev`` sets it."""
    env = {**os.environ, "REDIS_URI": "fake", "DATABASE_URI": ":memory:"}
    env |= {"LANGGRAPH_RUNTIME_EDITION": "inmem", "AGENT_API_KEYS": "k-probe:probe"}
    done = run_probe(sys.executable, PROBE, env=env)
    assert done.returncode == 0, done.stderr
    view: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return view


def test_the_tables_name_every_path_langgraph_api_checks(server_view: dict[str, Any]) -> None:
    paths = {tuple(path) for path in server_view["paths"]}
    assert len(paths) >= 21, "langgraph-api derived the paths"
    assert set(OWNER_SCOPED) == paths
    assert set(OPEN) == paths


def test_langgraph_api_finds_no_path_without_a_handler(server_view: dict[str, Any]) -> None:
    assert server_view["missing_open"] == []
    assert server_view["missing_keyed"] == []


@pytest.mark.parametrize(
    ("keys", "table"), [({}, OPEN), (KEYS, OWNER_SCOPED)], ids=["open", "keys"]
)
def test_each_path_is_registered_on_its_own(keys: dict[str, str], table: Any) -> None:
    auth = build_auth(keys)
    assert auth._handlers == {path: [handler] for path, handler in table.items()}
    # With keys, anything the tables do not name is refused; an open server has no fallback.
    assert len(auth._global_handlers) == (1 if keys else 0)


@dataclass
class User:
    identity: str
    permissions: tuple[str, ...] = ()
    display_name: str = ""
    is_authenticated: bool = True


async def call(keys: dict[str, str], path: tuple[str, str], value: dict[str, Any]) -> Any:
    """Run the handler the server would pick for ``path``, as ``alice`` (or the open identity)."""
    auth = build_auth(keys)
    identity = "alice" if keys else OPEN_IDENTITY
    resource, action = path
    ctx = Auth.types.AuthContext(
        user=User(identity),  # type: ignore[arg-type]
        resource=resource,  # type: ignore[arg-type]
        action=action,  # type: ignore[arg-type]
        permissions=[],
    )
    return await auth._handlers[path][-1](ctx=ctx, value=value)


OWNED = {OWNER: "alice"}
OWNED_OR_SYSTEM = {"$or": [OWNED, {"created_by": "system"}]}
STAMPED = {
    ("threads", "create"),
    ("threads", "update"),
    ("threads", "create_run"),
    ("assistants", "create"),
    ("assistants", "update"),
    ("crons", "create"),
    ("crons", "update"),
}
"""The paths that write ``metadata.owner`` (what the old resource handlers stamped)."""
RUN_CHECKED = {("threads", "create_run"), ("crons", "create")}


@pytest.mark.parametrize("path", sorted(OWNER_SCOPED), ids="{0[0]}.{0[1]}".format)
async def test_with_keys_each_path_keeps_its_rule(path: tuple[str, str]) -> None:
    value: dict[str, Any] = {"metadata": {OWNER: "mallory", "note": "kept"}}
    result = await call(KEYS, path, value)
    resource, action = path
    if resource == "store":
        assert result is None
        assert value["namespace"] == ("alice",)
        return
    shared = path in {("assistants", "read"), ("assistants", "search")}
    assert result == (OWNED_OR_SYSTEM if shared else OWNED)
    owner = "alice" if path in STAMPED else "mallory"
    assert value["metadata"] == {OWNER: owner, "note": "kept"}


@pytest.mark.parametrize("path", sorted(STAMPED), ids="{0[0]}.{0[1]}".format)
async def test_with_keys_a_create_without_metadata_gets_the_owner(path: tuple[str, str]) -> None:
    value: dict[str, Any] = {"metadata": None}
    await call(KEYS, path, value)
    assert value["metadata"] == {OWNER: "alice"}


@pytest.mark.parametrize("action", ["create", "update"])
async def test_with_keys_no_assistant_may_claim_to_be_the_system(action: str) -> None:
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        await call(KEYS, ("assistants", action), {"metadata": {"created_by": "system"}})
    assert refused.value.status_code == 403


@pytest.mark.parametrize("keys", [{}, KEYS], ids=["open", "keys"])
@pytest.mark.parametrize("path", sorted(RUN_CHECKED), ids="{0[0]}.{0[1]}".format)
async def test_a_bad_run_is_refused_before_anything_is_stamped(
    path: tuple[str, str], keys: dict[str, str]
) -> None:
    value: dict[str, Any] = {"metadata": {}, "input": "not an object"}
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        await call(keys, path, value)
    assert refused.value.status_code == BAD_RUN_STATUS
    assert value["metadata"] == {}


@pytest.mark.parametrize(
    ("namespace", "scoped"),
    [
        ((), ("alice",)),
        (("notes",), ("alice", "notes")),
        (("alice", "notes"), ("alice", "notes")),
        (["bob", "notes"], ("alice", "bob", "notes")),
    ],
)
@pytest.mark.parametrize("action", ["put", "get", "search", "list_namespaces", "delete"])
async def test_with_keys_every_store_action_scopes_the_namespace(
    action: str, namespace: Any, scoped: tuple[str, ...]
) -> None:
    value: dict[str, Any] = {"namespace": namespace}
    assert await call(KEYS, ("store", action), value) is None
    assert value["namespace"] == scoped


@pytest.mark.parametrize("path", sorted(OPEN), ids="{0[0]}.{0[1]}".format)
async def test_an_open_server_lets_every_path_through_untouched(path: tuple[str, str]) -> None:
    value: dict[str, Any] = {"metadata": {"note": "kept"}, "namespace": ("notes",)}
    assert await call({}, path, value) is None
    assert value == {"metadata": {"note": "kept"}, "namespace": ("notes",)}
