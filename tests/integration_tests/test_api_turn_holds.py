"""A decision holds where it was made, through the real `langgraph dev`.

A run asks under its own cap; another client, with no context of its own, answers later:
a reject is never charged and records ``approval=rejected``, an approve is charged once
and records ``approved``, on both graphs. The production server runs the same check, and
again across a full restart (tests/prod_tests/test_prod_approval.py).
"""

from __future__ import annotations

import asyncio

from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from client.scenarios import GRAPHS
from tests.support.approval import (
    answer_with_no_context,
    pause_under_a_per_run_cap,
    refuse_a_rewritten_verdict,
)
from tests.support.dev_server import DevServer


async def test_a_later_answer_with_no_context_applies_to_what_was_asked(
    client: LangGraphClient, server: DevServer
) -> None:
    held = await asyncio.gather(
        *(pause_under_a_per_run_cap(client, g, k) for g in GRAPHS for k in ("reject", "approve"))
    )
    later = get_client(url=server.url, api_key=None)  # another client, knowing only the ids
    try:
        await asyncio.gather(*(answer_with_no_context(later, h) for h in held))
    finally:
        await later.aclose()


async def test_no_request_may_rewrite_what_a_person_was_asked(client: LangGraphClient) -> None:
    for graph in GRAPHS:
        await refuse_a_rewritten_verdict(client, graph)
