"""Bad run requests on the production server: the same 422s as on ``langgraph dev``.

Every case of :data:`tests.support.bad_input.BAD_RUNS` on every run route, threadless and on
alice's own thread: a 422 that names the field and never quotes the value, no run queued,
and the planted value nowhere in the server log. Aegra's own request validation (pydantic)
refuses ``input``, ``context``, ``metadata`` and ``config`` of the wrong type, and
``agent/http.py`` takes the value out of its body; ``agent/auth.py``'s ``create_run``
handler refuses the rest (a bad context field, an unknown ``stream_mode``), which Aegra
alone would queue and fail as ``ValidationError: execution failed``.
"""

from __future__ import annotations

from langgraph_sdk.client import LangGraphClient

from client.scenarios import GRAPHS
from tests.prod_tests.conftest import ALICE_KEY
from tests.support.api import user_input, values_of
from tests.support.bad_input import assert_every_bad_run_refused
from tests.support.prod_server import ProdServer


async def test_every_bad_run_request_is_a_422_naming_the_field_and_queues_nothing(
    stack: ProdServer, alice: LangGraphClient
) -> None:
    headers = {"x-api-key": ALICE_KEY}
    await assert_every_bad_run_refused(stack.url, headers, alice, GRAPHS[1], stack.log)
    # A good run still runs.
    output = await alice.runs.wait(
        None, GRAPHS[1], input=user_input("checkpointer"), context={"force_outcome": "success"}
    )
    assert values_of(output)["stop_decision"]["rule"] == "completed"
