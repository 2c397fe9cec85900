"""No route of the production server lets one identity read another's data.

The same walk as ``tests/integration_tests/test_route_walk.py``, on the session stack: the
routes come from Aegra's running app (the stack serves :mod:`tests.support.routes_app`);
bob calls every one with alice's ids in the path, the query and the body; no 2xx answer
holds her marker or her ids, and she still has everything afterwards.
"""

from __future__ import annotations

from tests.prod_tests.conftest import ALICE_KEY, BOB_KEY
from tests.support.prod_server import ProdServer
from tests.support.route_walk import assert_no_route_leaks, assert_routes_listed


def test_the_walk_reads_every_route_from_the_running_app(stack: ProdServer) -> None:
    expected = [
        ("GET", "/threads/{thread_id}/state"),
        ("POST", "/runs/wait"),
        ("POST", "/store/items/search"),
        ("GET", "/health"),
    ]
    assert_routes_listed(stack.url, expected, at_least=40)


async def test_no_route_gives_bob_anything_of_alices(stack: ProdServer) -> None:
    await assert_no_route_leaks(stack.url, ALICE_KEY, BOB_KEY)
