"""Owner-scoped access (`agent/auth.py`) on the production server, with two identities.

The same promises as ``tests/integration_tests/test_auth.py`` on ``langgraph dev``: no key
or a wrong key is refused with 401; each identity sees only its own threads, runs,
assistants, crons and store items and gets 404 on the other's; the graphs' own assistants
are shared and cannot be spoofed. Where Aegra answers differently and the project's
handlers cannot change it, :data:`DIFFERENCES_FROM_DEV` says how, and the test holds
Aegra to its own answer (docs/deployment.md lists them).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from agent.auth import OWNER
from client.scenarios import GRAPHS
from tests.prod_tests.conftest import ALICE_KEY, BOB_KEY
from tests.support.api import metadata_of, values_of
from tests.support.ownership import USER, foreign_attempts, status_of, statuses
from tests.support.prod_server import ProdServer

DIFFERENCES_FROM_DEV = {
    "error body": "401/404 bodies are {'error', 'message', 'details'}, not {'detail'}",
    "runs.list": "on another identity's thread answers 200 [] instead of 404",
    "run metadata": "runs have no metadata, so no owner stamp (Aegra scopes runs by user_id)",
    "crons.create": "answers the cron's first run, not the cron; cron metadata has no owner",
    "store namespace": "items come back under ['users', <identity>, ...], not [<identity>, ...]",
}
"""How Aegra 0.11 answers where ``langgraph dev`` answers otherwise."""


@pytest.fixture(scope="module")
async def clients(stack: ProdServer) -> AsyncIterator[dict[str, LangGraphClient]]:
    made = {
        "alice": get_client(url=stack.url, api_key=ALICE_KEY),
        "bob": get_client(url=stack.url, api_key=BOB_KEY),
    }
    yield made
    for client in made.values():
        await client.aclose()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/threads/search", {}),
        ("POST", "/assistants/search", {}),
        ("POST", "/threads", {}),
        ("POST", "/runs/wait", {"assistant_id": GRAPHS[0], "input": USER}),
        ("POST", "/store/items/search", {"namespace_prefix": []}),
    ],
)
@pytest.mark.parametrize(
    ("headers", "message"),
    [
        pytest.param({}, "missing x-api-key header", id="no-key"),
        pytest.param({"x-api-key": "not-a-configured-key"}, "invalid x-api-key", id="wrong-key"),
        pytest.param({"x-api-key": ""}, "missing x-api-key header", id="empty-key"),
        pytest.param({"x-api-key": ALICE_KEY.upper()}, "invalid x-api-key", id="other-case"),
        pytest.param(
            {"authorization": f"Bearer {ALICE_KEY}"}, "missing x-api-key header", id="bearer"
        ),
        pytest.param({"x-auth-scheme": "langsmith"}, "missing x-api-key header", id="studio"),
    ],
)
async def test_requests_without_a_valid_key_are_refused(
    stack: ProdServer,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    headers: dict[str, str],
    message: str,
) -> None:
    async with httpx.AsyncClient(base_url=stack.url) as http:
        response = await http.request(method, path, json=body, headers=headers)
    assert response.status_code == 401
    assert response.json()["message"] == message
    assert ALICE_KEY not in response.text
    assert ALICE_KEY.upper() not in response.text


@pytest.fixture(scope="module")
async def alices(clients: dict[str, LangGraphClient]) -> dict[str, Any]:
    """What alice owns: a thread with a finished run, an assistant, a cron, a store item."""
    alice = clients["alice"]
    # She tries to hand the thread to bob through metadata: the server records her.
    thread = await alice.threads.create(metadata={OWNER: "bob", "topic": "checkpointers"})
    await alice.runs.wait(
        thread["thread_id"], GRAPHS[0], input=USER, context={"force_outcome": "success"}
    )
    [run] = await alice.runs.list(thread["thread_id"])
    assistant = await alice.assistants.create(GRAPHS[1], name="alice's middleware")
    await alice.crons.create(GRAPHS[0], schedule="0 0 1 1 *", input=USER)
    [cron] = await alice.crons.search()
    await alice.store.put_item(["notes"], "favourite", {"topic": "checkpointer"})
    return {"thread": thread, "run": run, "assistant": assistant, "cron": cron}


async def test_the_owner_has_her_resources_and_they_record_her(
    clients: dict[str, LangGraphClient], alices: dict[str, Any]
) -> None:
    alice = clients["alice"]
    thread_id = alices["thread"]["thread_id"]
    assert alices["thread"]["metadata"][OWNER] == "alice"
    assert alices["thread"]["metadata"]["topic"] == "checkpointers"
    assert alices["assistant"]["metadata"][OWNER] == "alice"
    assert thread_id in {t["thread_id"] for t in await alice.threads.search()}
    state = await alice.threads.get_state(thread_id)
    assert values_of(state["values"])["stop_decision"]["rule"] == "completed"
    run = await alice.runs.get(thread_id, alices["run"]["run_id"])
    assert run["status"] == "success"
    assistant_id = alices["assistant"]["assistant_id"]
    assert (await alice.assistants.get(assistant_id))["name"] == "alice's middleware"
    item = await alice.store.get_item(["notes"], "favourite")
    assert item is not None and item["value"] == {"topic": "checkpointer"}
    assert item["namespace"] == ["users", "alice", "notes"]  # DIFFERENCES_FROM_DEV


async def test_another_identity_gets_404_on_them(
    clients: dict[str, LangGraphClient], alices: dict[str, Any]
) -> None:
    bob = clients["bob"]
    thread_id = alices["thread"]["thread_id"]
    assistant_id = alices["assistant"]["assistant_id"]
    attempts = foreign_attempts(bob, alices)
    attempts["store.get_item"] = lambda: bob.store.get_item(["notes"], "favourite")
    assert await statuses(attempts) == dict.fromkeys(attempts, 404)
    assert await bob.runs.list(thread_id) == []  # DIFFERENCES_FROM_DEV: 404 on langgraph dev

    # Nothing of hers shows in his searches, even when he filters on her name.
    assert thread_id not in {t["thread_id"] for t in await bob.threads.search()}
    assert await bob.threads.search(metadata={OWNER: "alice"}) == []
    assert assistant_id not in {a["assistant_id"] for a in await bob.assistants.search()}
    assert await bob.crons.search() == []
    assert (await bob.store.search_items(["notes"]))["items"] == []

    # And she still has all of it: his attempts changed nothing.
    alice = clients["alice"]
    assert metadata_of(await alice.threads.get(thread_id)).get("x") is None
    assert metadata_of(await alice.assistants.get(assistant_id)).get("x") is None
    assert alices["cron"]["cron_id"] in {c["cron_id"] for c in await alice.crons.search()}


async def test_the_graphs_own_assistants_are_shared_and_cannot_be_spoofed(
    clients: dict[str, LangGraphClient],
) -> None:
    bob = clients["bob"]
    system = {
        a["graph_id"]: a["assistant_id"]
        for a in await bob.assistants.search()
        if OWNER not in metadata_of(a)
    }
    assert set(system) == {*GRAPHS, "slow"}  # the session stack serves the test graph too
    output = await bob.runs.wait(None, GRAPHS[1], input=USER, context={"force_outcome": "success"})
    assert values_of(output)["stop_decision"]["rule"] == "completed"
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await bob.assistants.create(GRAPHS[0], metadata={"created_by": "system"})
    assert status_of(caught.value) == 403
    for change in (
        lambda: bob.assistants.update(system[GRAPHS[0]], metadata={"x": 1}),
        lambda: bob.assistants.delete(system[GRAPHS[0]]),
    ):
        with pytest.raises(httpx.HTTPStatusError) as caught:
            await change()
        assert status_of(caught.value) == 404
    assert metadata_of(await bob.assistants.get(system[GRAPHS[0]])).get("x") is None
