"""``make kb-mcp`` then ``AGENT_KB_MCP_URL=... make dev``: both graphs search over MCP."""

from __future__ import annotations

from typing import Any

from langgraph_sdk import get_client

from agent.tools.kb_mcp import URL_VARIABLE
from client.cli import user_input
from tests.support.dev_server import MAKE_DEV, dev_server
from tests.support.kb_mcp import kb_mcp_server


async def test_the_served_graphs_retry_and_stop_on_the_mcp_servers_artifact() -> None:
    question = user_input("How does a checkpointer work?")
    forced: dict[str, Any] = {"force_outcome": ["transient", "success"]}
    states = {}
    with kb_mcp_server() as kb, dev_server(env={URL_VARIABLE: kb.url}, launcher=MAKE_DEV) as dev:
        sdk = get_client(url=dev.url, api_key=None)
        for graph in ("legacy", "middleware"):
            thread = await sdk.threads.create()
            states[graph] = await sdk.runs.wait(
                thread["thread_id"],
                graph,
                input=question,
                context=forced,
            )
        await sdk.aclose()
    for state in states.values():
        assert isinstance(state, dict)
        decision = state["stop_decision"]
        assert (decision["action"], decision["rule"]) == ("stop", "completed")
        searched = [m for m in state["messages"] if m["type"] == "tool"]
        assert [m["artifact"]["structured_content"]["reason"] for m in searched] == [
            "transient",
            "completed",
        ]
        assert state["messages"][-1]["content"].startswith("# Checkpointers")
