"""Bad input over the API: a clear error naming the problem, and the server keeps serving.

A run whose ``input``, ``context`` or ``stream_mode`` is wrong, or whose ``metadata`` or
``config`` is not an object, is a 422 before it is queued, naming the field and never the
value, in the body and in the server log (``tests/prod_tests/test_prod_bad_input.py`` holds
the production server to the same cases). Input the graph reads (messages) fails the run.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pydantic
import pytest
from langgraph_sdk.client import LangGraphClient

from agent.context import Context
from client.scenarios import GRAPHS, by_name
from tests.support.api import assert_answer, current_turn, run_request, tool_steps, user_input
from tests.support.bad_input import assert_every_bad_run_refused
from tests.support.dev_server import DevServer

BAD_CONTEXT: dict[str, Any] = {
    "model": "gpt4",  # not "offline" and not provider:model
    "stop_mode": "bogus",
    "force_outcome": "maybe",
    "seed": "abc",
    "parallel_policy": "random",
    "max_retries": -1,
    "spend_cap": "lots",
    "max_model_calls": 0,
    "on_policy_block": "maybe",
    "retry_in_place": "yes",  # strict: a bool, not a string
    "initial_delay": 60,  # at most 5 s
    "backoff_factor": 0.5,  # at least 1
    "max_delay": 9,  # at most 5 s
}


async def assert_still_serving(client: LangGraphClient) -> None:
    scenario = by_name("success-hard")

    async def one(graph: str) -> None:
        output = await client.runs.wait(
            None, graph, input=user_input(scenario.query), context=scenario.context
        )
        assert isinstance(output, dict), output
        assert output["stop_decision"]["rule"] == scenario.rule
        assert_answer(scenario, current_turn(output["messages"]))

    await asyncio.gather(*(one(graph) for graph in GRAPHS))


def test_every_context_field_has_a_bad_value_the_model_rejects() -> None:
    assert set(BAD_CONTEXT) == set(Context.model_fields)
    for name, value in BAD_CONTEXT.items():
        with pytest.raises(pydantic.ValidationError) as excinfo:
            Context.model_validate({name: value})
        assert {error["loc"][0] for error in excinfo.value.errors()} == {name}


async def first_event(events: AsyncIterator[Any]) -> Any:
    async for event in events:
        return event
    return None


async def test_invalid_context_is_refused_at_the_door_naming_the_field(
    client: LangGraphClient,
) -> None:
    # agent/auth.py's create_run handler refuses it before the run is stored: runs.wait,
    # runs.stream and runs.create raise the 422, and the thread keeps no run.
    async def one(graph: str, name: str, value: Any) -> None:
        request = run_request("checkpointer", {name: value})
        thread_id = (await client.threads.create())["thread_id"]
        calls: dict[str, Callable[[], Awaitable[Any]]] = {
            "wait": lambda: client.runs.wait(None, graph, **request),
            "create": lambda: client.runs.create(thread_id, graph, **request),
            "stream": lambda: first_event(client.runs.stream(thread_id, graph, **request)),
        }
        for how, call in calls.items():
            with pytest.raises(httpx.HTTPStatusError) as excinfo:
                await call()
            response = excinfo.value.response
            assert response.status_code == 422, (graph, name, how, response.text)
            assert f"context.{name}" in response.json()["detail"], (how, response.text)
            if isinstance(value, str):  # named, never quoted: a value may be a pasted secret
                assert value not in response.text, (how, response.text)
        assert await client.runs.list(thread_id) == []

    await asyncio.gather(
        *(one(graph, name, value) for graph in GRAPHS for name, value in BAD_CONTEXT.items())
    )
    await assert_still_serving(client)


async def test_every_bad_run_request_is_a_422_naming_the_field_and_queues_nothing(
    server: DevServer, client: LangGraphClient
) -> None:
    await assert_every_bad_run_refused(server.url, {}, client, GRAPHS[0], server.log)
    await assert_still_serving(client)


async def test_unknown_context_keys_are_dropped_by_the_server(client: LangGraphClient) -> None:
    # In-process, Context forbids unknown keys. Over the API, langgraph-api filters the run
    # context down to the schema's properties before the graph sees it (it logs this at
    # debug level only), so a misspelt key runs with the default instead of failing.
    with pytest.raises(pydantic.ValidationError):
        Context.model_validate({"stop_mod": "never"})
    scenario = by_name("fatal-hard")  # stop_mode "never" would have continued instead

    async def one(graph: str) -> None:
        output = await client.runs.wait(
            None,
            graph,
            input=user_input(scenario.query),
            context={**scenario.context, "stop_mod": "never"},
        )
        assert isinstance(output, dict)
        assert output["stop_decision"]["rule"] == scenario.rule == "fatal"

    await asyncio.gather(*(one(graph) for graph in GRAPHS))


ILL_TYPED: dict[str, tuple[Any, str, str]] = {
    # name: (input, error type, text the message must contain)
    "no_input": (None, "EmptyInputError", "no input"),
    # A message the reducer cannot read fails naming 'messages', never quoting the input.
    "messages_not_a_list": ({"messages": 42}, "ValueError", "'messages' holds a message"),
    "unknown_role": (
        {"messages": [{"role": "alien", "content": "x"}]},
        "ValueError",
        "needs a 'role'",
    ),
    "message_without_role": ({"messages": [{"content": "x"}]}, "ValueError", "needs a 'role'"),
    "message_not_a_message": ({"messages": {"role": "user"}}, "ValueError", "'content'"),
}


async def test_ill_typed_messages_fail_the_run_clearly(client: LangGraphClient) -> None:
    async def one(graph: str, name: str) -> None:
        payload, error_type, needle = ILL_TYPED[name]
        output = await client.runs.wait(None, graph, input=payload, raise_error=False)
        assert isinstance(output, dict) and "__error__" in output, (graph, name, output)
        assert output["__error__"]["error"] == error_type, (graph, name, output)
        assert needle in output["__error__"]["message"], (graph, name, output)

    await asyncio.gather(*(one(graph, name) for graph in GRAPHS for name in ILL_TYPED))
    await assert_still_serving(client)


async def test_missing_messages_fail_the_run_naming_messages(client: LangGraphClient) -> None:
    async def one(graph: str, payload: dict[str, Any]) -> None:
        output = await client.runs.wait(None, graph, input=payload, raise_error=False)
        assert isinstance(output, dict) and "__error__" in output, (graph, payload, output)
        assert "messages" in output["__error__"]["message"], (graph, payload, output)

    payloads: list[dict[str, Any]] = [{}, {"messages": []}, {"msgs": "checkpointer"}]
    await asyncio.gather(*(one(graph, payload) for graph in GRAPHS for payload in payloads))


async def test_a_string_is_coerced_into_a_user_message(client: LangGraphClient) -> None:
    # add_messages turns a bare string into a HumanMessage: served, not refused.
    async def one(graph: str) -> None:
        output = await client.runs.wait(None, graph, input={"messages": "checkpointer"})
        assert isinstance(output, dict)
        assert output["messages"][0]["type"] == "human"
        assert output["messages"][0]["content"] == "checkpointer"
        assert output["stop_decision"]["tool"] == "search"

    await asyncio.gather(*(one(graph) for graph in GRAPHS))


async def test_unknown_graph_or_assistant_is_refused(client: LangGraphClient) -> None:
    with pytest.raises(httpx.HTTPStatusError) as excinfo:
        await client.runs.wait(None, "no-such-graph", input=user_input("checkpointer"))
    assert excinfo.value.response.status_code == 422
    detail = excinfo.value.response.json()["detail"]
    assert "'no-such-graph'" in detail
    assert all(graph in detail for graph in GRAPHS)  # it lists what exists

    missing = str(uuid.uuid4())
    with pytest.raises(httpx.HTTPStatusError) as excinfo:
        await client.runs.wait(None, missing, input=user_input("checkpointer"))
    assert excinfo.value.response.status_code == 404
    assert "not found" in excinfo.value.response.json()["detail"]

    thread_id = (await client.threads.create())["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as excinfo:
        async for _ in client.runs.stream(thread_id, "no-such-graph", input=user_input("x")):
            pass
    assert excinfo.value.response.status_code == 422
    await assert_still_serving(client)


async def test_a_one_megabyte_message_is_served(client: LangGraphClient) -> None:
    scenario = by_name("success-hard")
    big = scenario.query + " " + "x" * 1_000_000

    async def one(graph: str) -> None:
        thread_id = (await client.threads.create())["thread_id"]
        output = await client.runs.wait(
            thread_id, graph, input=user_input(big), context=scenario.context
        )
        assert isinstance(output, dict), output
        assert output["stop_decision"]["rule"] == scenario.rule
        turn = current_turn(output["messages"])
        assert_answer(scenario, turn)
        assert tool_steps(turn)[0][0]["artifact"]["reason"] == "completed"
        state = await client.threads.get_state(thread_id)
        assert state["values"]["messages"][0]["content"] == big  # type: ignore[call-overload]

    await asyncio.gather(*(one(graph) for graph in GRAPHS))
    await assert_still_serving(client)
