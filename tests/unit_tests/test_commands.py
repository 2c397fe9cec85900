"""A run's ``command`` is checked before the first step, in-process as over the API."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, Send

from agent.graphs.commands import CommandCheckedGraph, CommandError
from agent.graphs.legacy import build_legacy
from agent.graphs.middleware import build_middleware

USER = {"messages": [{"role": "user", "content": "checkpointer"}]}
SUCCESS = {"force_outcome": "success"}


def graph_for(name: str) -> CommandCheckedGraph:
    builder = build_legacy if name == "legacy" else build_middleware
    graph = builder(checkpointer=InMemorySaver())
    assert isinstance(graph, CommandCheckedGraph)
    assert isinstance(graph.copy(), CommandCheckedGraph)  # the server's copies keep it
    return graph


def config(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


@pytest.mark.parametrize("command", [Command(resume="yes"), Command(update={"messages": []})])
async def test_resume_or_update_needs_an_interrupted_thread(
    graph_name: str, command: Command[Any]
) -> None:
    graph = graph_for(graph_name)
    with pytest.raises(
        CommandError, match=r"^command\.resume and command\.update .*not interrupted"
    ):
        await graph.ainvoke(command, config("new"))
    await graph.ainvoke(USER, config("done"), context=SUCCESS)
    with pytest.raises(CommandError, match="not interrupted"):
        await graph.ainvoke(command, config("done"))
    with pytest.raises(CommandError, match="not interrupted"):
        graph.invoke(command, config("done"))  # the sync path checks too


@pytest.mark.parametrize(
    "goto", ["nowhere", ["tools", "nowhere"], Send("nowhere", {}), [Send("nowhere", {})]]
)
async def test_goto_must_name_a_node(graph_name: str, goto: Any) -> None:
    graph = graph_for(graph_name)
    with pytest.raises(CommandError, match=r"^command\.goto names a node") as caught:
        await graph.ainvoke(Command(goto=goto), config("t"))
    assert "nowhere" not in str(caught.value)
    assert "tools" in str(caught.value)


async def test_a_valid_command_still_runs(graph_name: str) -> None:
    graph = graph_for(graph_name)
    await graph.ainvoke(USER, config("t"), context=SUCCESS, interrupt_before=["tools"])
    assert graph.get_state(config("t")).next == ("tools",)
    result = await graph.ainvoke(Command(resume="go"), config("t"), context=SUCCESS)
    assert result["stop_decision"]["rule"] == "completed"
