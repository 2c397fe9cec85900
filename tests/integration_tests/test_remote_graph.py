"""A deployed graph composed into a local one with ``RemoteGraph`` (docs/api.md).

The parent runs in-process; its node calls the session dev server. What the remote run sees
is read from its final ``stop_decision``: ``stop_mode="never"`` with a forced success ends on
``stop_mode_never`` after two model calls, while the server's defaults (``hard``) stop after
one.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_config
from langgraph.graph import START, StateGraph
from langgraph.pregel.remote import RemoteGraph
from langgraph.runtime import Runtime
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import BadRequestError
from typing_extensions import TypedDict

from agent.context import Context
from client.scenarios import GRAPHS
from tests.support.api import model_messages, user_input
from tests.support.dev_server import DevServer

SETTINGS: dict[str, Any] = {"stop_mode": "never", "force_outcome": "success"}
QUESTION = "How does a checkpointer work?"


class Parent(TypedDict, total=False):
    messages: list[Any]
    stop_decision: dict[str, Any] | None


def direct(remote: RemoteGraph, **compile_args: Any) -> Any:
    """The remote graph added as a node as it is."""
    builder = StateGraph(Parent, context_schema=Context)
    builder.add_node("remote", remote)
    builder.add_edge(START, "remote")
    return builder.compile(**compile_args)


def through_function(remote: RemoteGraph, *, pass_config: bool = False) -> Any:
    """A function node that hands the parent's context to the remote graph."""

    async def call_remote(state: Parent, runtime: Runtime[Context]) -> dict[str, Any]:
        if pass_config:
            result = await remote.ainvoke(state, get_config(), context=runtime.context)
        else:
            result = await remote.ainvoke(state, context=runtime.context)
        assert isinstance(result, dict)
        return result

    builder = StateGraph(Parent, context_schema=Context)
    builder.add_node("remote", call_remote)
    builder.add_edge(START, "remote")
    return builder.compile()


def assert_ran_with_settings(result: dict[str, Any]) -> None:
    assert result["stop_decision"]["rule"] == "stop_mode_never"
    assert len(model_messages(result["messages"])) == 2


@pytest.mark.parametrize("graph", GRAPHS)
async def test_a_remote_graph_node_drops_the_parents_context(server: DevServer, graph: str) -> None:
    parent = direct(RemoteGraph(graph, url=server.url))
    result = await parent.ainvoke(user_input(QUESTION), context=Context(**SETTINGS))
    # The remote run used the server's defaults: stop_mode=hard stops after one model call.
    assert result["stop_decision"]["action"] == "stop"
    assert result["stop_decision"]["rule"] != "stop_mode_never"
    assert len(model_messages(result["messages"])) == 1


@pytest.mark.parametrize("graph", GRAPHS)
async def test_a_remote_graph_node_forwards_configurable_into_the_remote_context(
    server: DevServer, graph: str
) -> None:
    parent = direct(RemoteGraph(graph, url=server.url))
    config: RunnableConfig = {"configurable": dict(SETTINGS)}
    assert_ran_with_settings(await parent.ainvoke(user_input(QUESTION), config))
    # The forwarded values are validated as the remote Context, like any run's context.
    with pytest.raises(Exception, match="stop_mode"):
        await parent.ainvoke(user_input(QUESTION), {"configurable": {"stop_mode": "bogus"}})


@pytest.mark.parametrize("graph", GRAPHS)
async def test_a_function_node_passes_runtime_context(server: DevServer, graph: str) -> None:
    parent = through_function(RemoteGraph(graph, url=server.url))
    result = await parent.ainvoke(user_input(QUESTION), context=Context(**SETTINGS))
    assert_ran_with_settings(result)
    # A list of outcomes travels too: the first call fails, the retry succeeds.
    retried = await parent.ainvoke(
        user_input(QUESTION), context=Context(force_outcome=["transient", "success"])
    )
    assert retried["stop_decision"]["rule"] == "completed"
    assert len(model_messages(retried["messages"])) == 2


async def test_context_and_a_parent_configurable_together_are_refused(server: DevServer) -> None:
    # Passing the node's config as well sends its configurable beside the context, and the
    # server accepts one or the other: pass the context alone.
    parent = through_function(RemoteGraph("legacy", url=server.url), pass_config=True)
    with pytest.raises(BadRequestError, match="Cannot specify both configurable and context"):
        await parent.ainvoke(
            user_input(QUESTION),
            {"configurable": {"user_id": "u1"}},
            context=Context(**SETTINGS),
        )


async def test_a_remote_graph_node_runs_on_the_parents_thread_id(
    server: DevServer, client: LangGraphClient
) -> None:
    parent = direct(RemoteGraph("legacy", url=server.url), checkpointer=InMemorySaver())
    thread_id = str(uuid.uuid4())
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    await parent.ainvoke(user_input(QUESTION), config)
    remote_thread = await client.threads.get(thread_id)  # created on the server, same id
    values = remote_thread["values"]
    assert isinstance(values, dict)
    assert values["stop_decision"]["action"] == "stop"
    # A thread id the server cannot read as a UUID fails the parent's run.
    with pytest.raises(BadRequestError, match="UUID"):
        await parent.ainvoke(user_input(QUESTION), {"configurable": {"thread_id": "chat-1"}})
