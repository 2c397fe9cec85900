"""Owner-scoped access (`agent/auth.py`), through a real `langgraph dev` and the SDK.

A dev server started with ``AGENT_API_KEYS`` set: no key and a wrong key are refused;
two identities each see their own threads, runs, assistants, crons and store items and
get 404 on the other's; an identity with a '.' (which the store refuses in a namespace
label) uses the store like a plain one, apart from every other. The session server (no
keys) is open and says so once in its log; neither server warns of a dispatch path without
an auth handler. A malformed ``AGENT_API_KEYS`` stops the server with an error naming the
entry and never the key.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agent.auth import (
    API_KEYS_ENV,
    OPEN_SERVER_WARNING,
    OWNER,
    ApiKeysError,
    identity_for,
    namespace_label,
    parse_api_keys,
)
from client.scenarios import GRAPHS
from tests.support.api import metadata_of, values_of
from tests.support.dev_server import DevServer, DevServerError, dev_server
from tests.support.ownership import USER, foreign_attempts, status_of, statuses

ALICE_KEY = "alice-7c1f0e5b9a2d"
ALICE_SECOND_KEY = "alice:second:3b8e"  # a key may hold ':'; the identity follows the last
BOB_KEY = "bob-d94a61f2c0e8"
KEYS = f"{ALICE_KEY}:alice, {BOB_KEY}:bob ,{ALICE_SECOND_KEY}:alice"
CAROL = "carol.d@example.com"  # a '.' the store refuses in a namespace label
CAROL_KEY = "carol-5e0b7a91d3c4"
CAROL_LOOKALIKE = "carol_d@example.com"
LOOKALIKE_KEY = "lookalike-2f6c8d0e"
SERVER_KEYS = f"{KEYS},{CAROL_KEY}:{CAROL},{LOOKALIKE_KEY}:{CAROL_LOOKALIKE}"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


# ---------------------------------------------------------------------------------------
# Parsing AGENT_API_KEYS (no server).


def test_parse_api_keys_reads_pairs_and_maps_several_keys_to_one_identity() -> None:
    assert parse_api_keys(KEYS) == {ALICE_KEY: "alice", BOB_KEY: "bob", ALICE_SECOND_KEY: "alice"}
    assert parse_api_keys("") == {}
    assert parse_api_keys("   ") == {}


@pytest.mark.parametrize(
    ("raw", "secret", "expected"),
    [
        ("k1:alice,SECRET-NO-COLON", "SECRET-NO-COLON", r"entry 2 of 2 has no ':'"),
        ("k1:alice,,k2:bob", None, r"entry 2 of 3 is empty"),
        ("SECRET-KEY-1:", "SECRET-KEY-1", r"entry 1 of 1 has an invalid identity"),
        ("SECRET-KEY-2:bad identity", "SECRET-KEY-2", r"entry 1 of 1 has an invalid identity"),
        (":carol", None, r"entry 1 of 1 \(identity 'carol'\) has an empty key"),
        ("SECRET KEY:carol", "SECRET KEY", r"entry 1 of 1 \(identity 'carol'\) has whitespace"),
        ("SECRET-3:a,SECRET-3:b", "SECRET-3", r"entry 2 of 2 \(identity 'b'\) repeats the key"),
    ],
)
def test_malformed_api_keys_name_the_entry_never_the_key(
    raw: str, secret: str | None, expected: str
) -> None:
    with pytest.raises(ApiKeysError, match=expected) as caught:
        parse_api_keys(raw)
    assert API_KEYS_ENV in str(caught.value)
    if secret is not None:
        assert secret not in str(caught.value)


def test_identity_for_matches_whole_keys_only() -> None:
    keys = parse_api_keys(KEYS)
    assert identity_for(ALICE_KEY, keys) == "alice"
    assert identity_for(ALICE_SECOND_KEY, keys) == "alice"
    assert identity_for(BOB_KEY, keys) == "bob"
    for wrong in ("", ALICE_KEY[:-1], ALICE_KEY + "x", ALICE_KEY.upper(), f" {BOB_KEY}"):
        assert identity_for(wrong, keys) is None


@pytest.mark.parametrize(
    "identity", ["alice", "carol.d@example.com", "a.b.c", "x@y.z", "carol_d@example.com"]
)
def test_namespace_labels_are_valid_and_plain_identities_stay_as_they_are(identity: str) -> None:
    label = namespace_label(identity)
    assert label and "." not in label
    assert parse_api_keys(f"k:{identity}") == {"k": identity}
    if "." not in identity:
        assert label == identity


def test_namespace_labels_never_collide() -> None:
    identities = ["a.b", "a_b", "a-b", "ab", "a.b.", "a..b", "a.2Eb", "a2Eb", "a@b", "A.b"]
    labels = [namespace_label(f"x{identity}") for identity in identities]
    assert len(set(labels)) == len(labels)


# ---------------------------------------------------------------------------------------
# Servers.


def test_a_malformed_value_stops_the_server_without_echoing_the_key() -> None:
    secret = "SECRET-KEY-WITHOUT-IDENTITY-5f2a"
    with pytest.raises(DevServerError) as caught:
        with dev_server(env={API_KEYS_ENV: f"{ALICE_KEY}:alice,{secret}"}):
            pass
    log = str(caught.value)
    assert "ApiKeysError" in log
    assert f"{API_KEYS_ENV} entry 2 of 2 has no ':'" in log
    assert secret not in log
    assert ALICE_KEY not in log


def test_without_keys_the_server_is_open_and_says_so_once(server: DevServer) -> None:
    log = ANSI.sub("", server.log())
    assert log.count(OPEN_SERVER_WARNING) == 1
    line = next(line for line in log.splitlines() if OPEN_SERVER_WARNING in line)
    assert "warning" in line.lower()


@pytest.fixture(scope="module")
def keyed_server() -> Iterator[DevServer]:
    with dev_server(env={API_KEYS_ENV: SERVER_KEYS}) as running:
        yield running


@pytest.fixture(scope="module")
async def clients(keyed_server: DevServer) -> AsyncIterator[dict[str, LangGraphClient]]:
    made = {
        "alice": get_client(url=keyed_server.url, api_key=ALICE_KEY),
        "alice2": get_client(url=keyed_server.url, api_key=ALICE_SECOND_KEY),
        "bob": get_client(url=keyed_server.url, api_key=BOB_KEY),
        "carol": get_client(url=keyed_server.url, api_key=CAROL_KEY),
        "lookalike": get_client(url=keyed_server.url, api_key=LOOKALIKE_KEY),
        "nobody": get_client(url=keyed_server.url, api_key=None),
        "wrong": get_client(url=keyed_server.url, api_key="not-a-configured-key"),
    }
    yield made
    for client in made.values():
        await client.aclose()


def test_with_keys_the_server_does_not_say_it_is_open(keyed_server: DevServer) -> None:
    assert OPEN_SERVER_WARNING not in ANSI.sub("", keyed_server.log())


STARTUP_LINES = (
    "Using custom authentication",
    "Loaded custom auth middleware",
    "Loaded custom app from agent.http:app",
    "Application started up in",
)
"""Lines langgraph-api logs at every start, once the auth module is loaded."""
UNHANDLED_PATHS_WARNING = "has no handler registered"
"""From langgraph-api's warning about dispatch paths without an auth handler."""


@pytest.mark.parametrize("running", ["server", "keyed_server"], ids=["open", "keys"])
def test_the_server_finds_a_handler_for_every_dispatch_path(
    running: str, request: pytest.FixtureRequest
) -> None:
    log = ANSI.sub("", request.getfixturevalue(running).log())
    for line in STARTUP_LINES:
        assert line in log, f"the server did not log {line!r} at start"
    warned = [line for line in log.splitlines() if UNHANDLED_PATHS_WARNING in line]
    assert not warned, "\n".join(warned)


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/threads/search", {}),
        ("POST", "/assistants/search", {}),
        ("POST", "/threads", {}),
        ("POST", "/runs/wait", {"assistant_id": "legacy", "input": USER}),
        ("POST", "/store/items/search", {"namespace_prefix": []}),
        ("GET", f"/assistants/{GRAPHS[0]}", None),
    ],
)
@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="no-key"),
        pytest.param({"x-api-key": "not-a-configured-key"}, id="wrong-key"),
        pytest.param({"x-api-key": ""}, id="empty-key"),
        pytest.param({"x-api-key": ALICE_KEY.upper()}, id="key-in-other-case"),
        pytest.param({"authorization": f"Bearer {ALICE_KEY}"}, id="key-as-bearer"),
        # langgraph dev lets Studio in without a key unless disable_studio_auth is set.
        pytest.param({"x-auth-scheme": "langsmith"}, id="studio-scheme"),
    ],
)
async def test_requests_without_a_valid_key_are_refused(
    keyed_server: DevServer,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    headers: dict[str, str],
) -> None:
    async with httpx.AsyncClient(base_url=keyed_server.url) as http:
        response = await http.request(method, path, json=body, headers=headers)
    assert response.status_code == 401
    detail = response.json()["detail"]
    assert detail in ("missing x-api-key header", "invalid x-api-key")
    assert ALICE_KEY not in response.text
    assert ALICE_KEY.upper() not in response.text


async def test_the_sdk_without_a_valid_key_is_refused(clients: dict[str, LangGraphClient]) -> None:
    for name in ("nobody", "wrong"):
        with pytest.raises(httpx.HTTPStatusError) as caught:
            await clients[name].threads.search()
        assert status_of(caught.value) == 401


@pytest.fixture(scope="module")
async def alices(clients: dict[str, LangGraphClient]) -> dict[str, Any]:
    """What alice owns: a thread with a finished run, an assistant, a cron, a store item."""
    alice = clients["alice"]
    # She tries to hand the thread to bob through metadata: the server records her.
    thread = await alice.threads.create(metadata={OWNER: "bob", "topic": "checkpointers"})
    output = await alice.runs.wait(
        thread["thread_id"], GRAPHS[0], input=USER, context={"force_outcome": "success"}
    )
    runs = await alice.runs.list(thread["thread_id"])
    assistant = await alice.assistants.create(GRAPHS[1], name="alice's middleware")
    cron = await alice.crons.create(GRAPHS[0], schedule="0 0 1 1 *", input=USER)
    await alice.store.put_item(["notes"], "favourite", {"topic": "checkpointer"})
    return {
        "thread": thread,
        "output": output,
        "run": runs[0],
        "assistant": assistant,
        "cron": cron,
    }


async def test_resources_record_their_owner(alices: dict[str, Any]) -> None:
    assert alices["thread"]["metadata"][OWNER] == "alice"
    assert alices["thread"]["metadata"]["topic"] == "checkpointers"
    assert alices["run"]["metadata"][OWNER] == "alice"
    assert alices["assistant"]["metadata"][OWNER] == "alice"
    assert alices["cron"]["metadata"][OWNER] == "alice"
    assert alices["output"]["stop_decision"]["rule"] == "completed"


async def test_the_owner_sees_her_own_resources_with_any_of_her_keys(
    clients: dict[str, LangGraphClient], alices: dict[str, Any]
) -> None:
    thread_id = alices["thread"]["thread_id"]
    for name in ("alice", "alice2"):
        client = clients[name]
        assert thread_id in {t["thread_id"] for t in await client.threads.search()}
        assert (await client.threads.get(thread_id))["thread_id"] == thread_id
        state = await client.threads.get_state(thread_id)
        assert values_of(state["values"])["stop_decision"]["rule"] == "completed"
        run = await client.runs.get(thread_id, alices["run"]["run_id"])
        assert run["status"] == "success"
        assistant_id = alices["assistant"]["assistant_id"]
        assert assistant_id in {a["assistant_id"] for a in await client.assistants.search()}
        assert (await client.assistants.get(assistant_id))["name"] == "alice's middleware"
        assert alices["cron"]["cron_id"] in {c["cron_id"] for c in await client.crons.search()}
        item = await client.store.get_item(["notes"], "favourite")
        assert item is not None and item["value"] == {"topic": "checkpointer"}


async def test_another_identity_gets_404_on_them(
    clients: dict[str, LangGraphClient], alices: dict[str, Any]
) -> None:
    bob = clients["bob"]
    thread_id = alices["thread"]["thread_id"]
    assistant_id = alices["assistant"]["assistant_id"]
    attempts = foreign_attempts(bob, alices)
    attempts["runs.list"] = lambda: bob.runs.list(thread_id)
    assert await statuses(attempts) == dict.fromkeys(attempts, 404)

    # Nothing of hers shows in his searches, even when he filters on her name.
    assert thread_id not in {t["thread_id"] for t in await bob.threads.search()}
    assert await bob.threads.search(metadata={OWNER: "alice"}) == []
    assert assistant_id not in {a["assistant_id"] for a in await bob.assistants.search()}
    assert await bob.crons.search() == []
    assert await bob.store.search_items(["notes"]) == {"items": []}

    # And she still has all of it: his attempts changed nothing.
    alice = clients["alice"]
    assert metadata_of(await alice.threads.get(thread_id)).get("x") is None
    assert metadata_of(await alice.assistants.get(assistant_id)).get("x") is None


async def test_each_identity_sees_its_own_in_search(
    clients: dict[str, LangGraphClient], alices: dict[str, Any]
) -> None:
    bob = clients["bob"]
    # He cannot give his thread to her through metadata either.
    his = await bob.threads.create(metadata={OWNER: "alice"})
    assert metadata_of(his)[OWNER] == "bob"
    await bob.runs.wait(his["thread_id"], GRAPHS[1], input=USER, context={"force_outcome": "fatal"})

    bob_threads = {t["thread_id"] for t in await bob.threads.search()}
    alice_threads = {t["thread_id"] for t in await clients["alice"].threads.search()}
    assert bob_threads == {his["thread_id"]}
    assert his["thread_id"] not in alice_threads
    assert alices["thread"]["thread_id"] in alice_threads
    for thread in await bob.threads.search():
        assert metadata_of(thread)[OWNER] == "bob"
    for thread in await clients["alice"].threads.search():
        assert metadata_of(thread)[OWNER] == "alice"


@pytest.mark.parametrize("name", ["bob", "carol"])
async def test_plain_and_dotted_identities_use_the_store(
    clients: dict[str, LangGraphClient], name: str
) -> None:
    owner = clients[name]
    namespace = ["drafts", name]
    await owner.store.put_item(namespace, "draft", {"by": name})
    item = await owner.store.get_item(namespace, "draft")
    assert item is not None and item["value"] == {"by": name}
    found = await owner.store.search_items(["drafts"])
    assert [i["value"] for i in found["items"]] == [{"by": name}]
    # Namespaces come back under the owner's label. (The in-memory store also lists a
    # namespace someone only read from, hence "in", not "==".)
    listed = (await owner.store.list_namespaces(prefix=["drafts"]))["namespaces"]
    label = namespace_label(CAROL if name == "carol" else name)
    assert [label, *namespace] in listed
    assert {ns[0] for ns in listed} == {label}
    # Nobody else reads it: not the other identity, not one that differs only by '.'/'_'.
    for other in ("alice", "lookalike", "bob" if name == "carol" else "carol"):
        assert await clients[other].store.get_item(namespace, "draft") is None
        assert await clients[other].store.search_items(["drafts"]) == {"items": []}
    await owner.store.delete_item(namespace, "draft")
    assert await owner.store.get_item(namespace, "draft") is None


async def test_the_graphs_own_assistants_are_shared_and_cannot_be_spoofed(
    clients: dict[str, LangGraphClient],
) -> None:
    bob = clients["bob"]
    system = {
        a["graph_id"]: a["assistant_id"]
        for a in await bob.assistants.search()
        if OWNER not in metadata_of(a)
    }
    assert set(system) == set(GRAPHS)
    # He runs a graph by its id, without a thread: allowed, and nothing is left for her.
    output = await bob.runs.wait(None, GRAPHS[1], input=USER, context={"force_outcome": "success"})
    assert values_of(output)["stop_decision"]["rule"] == "completed"
    # Marking his own assistant as the server's would share it with everyone: refused.
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await bob.assistants.create(GRAPHS[0], metadata={"created_by": "system"})
    assert status_of(caught.value) == 403
    # He cannot change or delete the shared ones either.
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await bob.assistants.update(system[GRAPHS[0]], metadata={"x": 1})
    assert status_of(caught.value) == 404
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await bob.assistants.delete(system[GRAPHS[0]])
    assert status_of(caught.value) == 404
    assert metadata_of(await bob.assistants.get(system[GRAPHS[0]])).get("x") is None
