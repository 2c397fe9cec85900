"""Runs started from a ``command`` over the API: a wrong one fails naming ``command``.

``update`` on a thread with nothing pending (a new thread, or one whose run ended) and
``goto`` to a node the graph lacks fail the run with a ``CommandError`` that says what is
wrong; ``resume`` on such a thread is refused before a run exists (409, naming the thread:
:mod:`agent.resume_door`); a ``resume`` on a thread that is interrupted still continues it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from agent.runs import answered
from client.scenarios import GRAPHS
from tests.support.api import user_input

SUCCESS = {"force_outcome": "success"}


async def failure(client: LangGraphClient, thread_id: str, graph: str, **kwargs: Any) -> str:
    output = await client.runs.wait(thread_id, graph, raise_error=False, **kwargs)
    assert isinstance(output, dict) and "__error__" in output, output
    error = output["__error__"]
    assert error["error"] == "CommandError", error
    return str(error["message"])


async def finished_thread(client: LangGraphClient, graph: str) -> str:
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(thread_id, graph, input=user_input("checkpointer"), context=SUCCESS)
    return str(thread_id)


async def resume_or_update_on_threads_that_are_not_interrupted(
    client: LangGraphClient, graph: str, command: dict[str, Any]
) -> None:
    new = (await client.threads.create())["thread_id"]
    done = await finished_thread(client, graph)
    before = await client.threads.get_state(done)
    if "resume" in command:
        for thread_id in (new, done):
            with pytest.raises(httpx.HTTPStatusError) as caught:
                await client.runs.wait(thread_id, graph, command={"resume": command["resume"]})
            assert caught.value.response.status_code == 409
            assert caught.value.response.json() == {"detail": answered(thread_id)}
            assert (await client.threads.get(thread_id))["status"] == "idle"
    else:
        messages = await asyncio.gather(
            failure(client, new, graph, command=command),
            failure(client, done, graph, command=command),
        )
        for message in messages:
            assert "command.resume and command.update" in message
            assert "not interrupted" in message
    after = await client.threads.get_state(done)
    assert after["values"] == before["values"]  # nothing ran


async def goto_to_an_unknown_node(client: LangGraphClient, graph: str) -> None:
    done = await finished_thread(client, graph)
    message = await failure(client, done, graph, command={"goto": "secret-NODE-41c7"})
    assert message.startswith("command.goto names a node this graph does not have")
    assert "tools" in message  # it lists the nodes that exist
    assert "secret-NODE-41c7" not in message  # never what the caller sent
    send = {"goto": [{"node": "no_such_node", "input": {}}]}
    assert "command.goto" in await failure(client, done, graph, command=send)


async def resume_of_an_interrupted_thread(client: LangGraphClient, graph: str) -> None:
    thread_id = (await client.threads.create())["thread_id"]
    await client.runs.wait(
        thread_id,
        graph,
        input=user_input("checkpointer"),
        context=SUCCESS,
        interrupt_before=["tools"],
    )
    assert (await client.threads.get(thread_id))["status"] == "interrupted"
    output = await client.runs.wait(thread_id, graph, command={"resume": "go"}, context=SUCCESS)
    assert isinstance(output, dict) and "__error__" not in output, output
    assert output["stop_decision"]["rule"] == "completed"


async def test_commands_fail_naming_command_unless_the_graph_can_run_them(
    client: LangGraphClient,
) -> None:
    # All at once: each case waits on the server's queue, not on the others.
    commands: list[dict[str, Any]] = [{"resume": "yes"}, {"update": {"messages": []}}]
    await asyncio.gather(
        *(
            resume_or_update_on_threads_that_are_not_interrupted(client, graph, command)
            for graph in GRAPHS
            for command in commands
        ),
        *(goto_to_an_unknown_node(client, graph) for graph in GRAPHS),
        *(resume_of_an_interrupted_thread(client, graph) for graph in GRAPHS),
    )
