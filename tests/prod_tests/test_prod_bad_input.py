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

import httpx
from langgraph_sdk.client import LangGraphClient

from agent.client.scenarios import GRAPHS
from tests.prod_tests.conftest import ALICE_KEY
from tests.support.api import user_input, values_of
from tests.support.bad_input import BAD_RUNS, SECRET, problems, send_every_case
from tests.support.prod_server import ProdServer


async def test_every_bad_run_request_is_a_422_naming_the_field_and_queues_nothing(
    stack: ProdServer, alice: LangGraphClient
) -> None:
    thread_id = (await alice.threads.create())["thread_id"]
    headers = {"x-api-key": ALICE_KEY}
    async with httpx.AsyncClient(base_url=stack.url, headers=headers) as http:
        answers = await send_every_case(http, GRAPHS[1], thread_id)
    assert len(answers) == len(BAD_RUNS) * 6
    assert problems(answers) == []
    assert await alice.runs.list(thread_id) == []
    lines = [line for line in stack.log().splitlines() if SECRET in line]
    assert not lines, "a refused value reached the server log:\n" + "\n".join(lines[:5])
    # A good run on the same thread still runs.
    output = await alice.runs.wait(
        thread_id, GRAPHS[1], input=user_input("checkpointer"), context={"force_outcome": "success"}
    )
    assert values_of(output)["stop_decision"]["rule"] == "completed"
