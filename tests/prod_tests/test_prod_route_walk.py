"""No route of the production server lets one identity read another's data.

The same walk as ``tests/integration_tests/test_route_walk.py``, on the session stack: the
routes come from Aegra's running app (the stack serves :mod:`tests.support.routes_app`);
bob calls every one with alice's ids in the path, the query and the body; no 2xx answer
holds her marker or her ids, and she still has everything afterwards.
"""

from __future__ import annotations

from langgraph_sdk import get_client

from tests.prod_tests.conftest import ALICE_KEY, BOB_KEY
from tests.support.prod_server import ProdServer
from tests.support.route_walk import leaks, mounted_routes, plant, still_owned, walk

READS = frozenset({"GET"})


def test_the_walk_reads_every_route_from_the_running_app(stack: ProdServer) -> None:
    routes = set(mounted_routes(stack.url))
    for route in [
        ("GET", "/threads/{thread_id}/state"),
        ("POST", "/runs/wait"),
        ("POST", "/store/items/search"),
        ("GET", "/health"),
    ]:
        assert route in routes
    assert len(routes) > 40


async def test_no_route_gives_bob_anything_of_alices(stack: ProdServer) -> None:
    alice = get_client(url=stack.url, api_key=ALICE_KEY)
    owned = await plant(alice)
    answers = walk(stack.url, {"x-api-key": BOB_KEY}, owned)
    assert {(a.method, a.path) for a in answers} == set(mounted_routes(stack.url))
    assert leaks(answers, owned) == []
    assert leaks(walk(stack.url, {"x-api-key": ALICE_KEY}, owned, READS), owned)
    await still_owned(alice, owned)
    await alice.aclose()
