"""idempotency_key() and adopt()'s InjectedIdempotencyKey: one key per tool call, however it runs.

An adopted tool that declares the argument receives the same key when its call is retried in
place, resumed after an interrupt, or run again in a fork of the thread; another thread or
another call gets another key, and the model never sees the argument.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt
from soa_graphs import build, invoke, modes, needs_langchain, retrying_graph, user
from stop_on_artifact import InjectedIdempotencyKey, StopRouter, adopt, idempotency_key
from stop_on_artifact.testing import ScriptedChatModel, assert_stopped, call_then_answer, tool_call

kinds = pytest.mark.parametrize(
    "kind", ["router", pytest.param("middleware", marks=needs_langchain)]
)


class Unavailable(Exception):
    pass


def paying(keys: list[str], fail_first: int = 0, ask: bool = False) -> BaseTool:
    """An adopted `pay` tool that records the key of every attempt it runs."""

    def pay(query: str, key: Annotated[str, InjectedIdempotencyKey]) -> str:
        """Pay for an order."""
        keys.append(key)
        if len(keys) <= fail_first:
            raise Unavailable("the provider did not answer")
        if ask:
            interrupt({"question": f"pay for {query}?"})
        return f"paid for {query}"

    return adopt(pay, transient=Unavailable)


def config(thread: str, namespace: str = "") -> RunnableConfig:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": namespace}}


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def test_one_thread_namespace_and_call_give_one_key() -> None:
    key = idempotency_key("c1", config("t1", "tools:1a2b"))
    assert key == idempotency_key("c1", config("t1", "tools:9f8e"))  # another task of the step
    assert len(key) == 64 and "t1" not in key and "c1" not in key
    others = [
        idempotency_key("c2", config("t1", "tools:1a2b")),
        idempotency_key("c1", config("t2", "tools:1a2b")),
        idempotency_key("c1", config("t1", "tools:1a2b|tools:3c4d")),  # a subagent's call
        idempotency_key("c1", config("t1", "model:1a2b")),
    ]
    assert len({key, *others}) == 5


def test_outside_a_run_the_call_id_alone_names_the_key() -> None:
    assert idempotency_key("c1") == idempotency_key("c1", {}) == idempotency_key("c1", config(""))
    assert idempotency_key("c1") != idempotency_key("c2")


def test_without_a_thread_the_key_is_the_runs_own() -> None:
    # No checkpointer, no step run again: the task ids (new in every run) stay in the key.
    assert idempotency_key("c1", config("", "tools:1a2b")) != idempotency_key(
        "c1", config("", "tools:9f8e")
    )


def test_the_model_never_sees_the_key_and_the_tool_receives_it() -> None:
    keys: list[str] = []
    pay = paying(keys)
    schema = pay.tool_call_schema.model_json_schema()  # type: ignore[union-attr]
    assert list(schema["properties"]) == ["query"]
    result = pay.invoke(tool_call("pay", {"query": "A-1"}, "c1"))
    assert isinstance(result, ToolMessage) and result.content == "paid for A-1"
    assert result.artifact == {"stop": True, "reason": "completed"}
    assert keys == [idempotency_key("c1")]


async def test_an_async_call_and_an_instance_marker_receive_the_key_too() -> None:
    keys: list[str] = []

    @tool
    async def pay(query: str, key: Annotated[str, InjectedIdempotencyKey()]) -> str:
        """Pay for an order."""
        keys.append(key)
        return "paid"

    adopted = adopt(pay, stops="when_marked")
    schema = adopted.tool_call_schema.model_json_schema()  # type: ignore[union-attr]
    assert sorted(schema["properties"]) == ["final", "query"]
    await adopted.ainvoke(tool_call("pay", {"query": "A-1", "final": True}, "c1"))
    assert keys == [idempotency_key("c1")]


def test_a_key_needs_a_tool_call_to_come_from() -> None:
    with pytest.raises(ValueError, match="ToolCall"):
        paying([]).invoke({"query": "A-1"})


def test_a_tool_without_the_argument_is_adopted_as_before() -> None:
    def lookup(query: str) -> str:
        """Look an order up."""
        return query

    assert adopt(lookup).invoke(tool_call("lookup", {"query": "7"}, "c1")).content == "7"


@modes
@pytest.mark.parametrize("name", ["t1", None])
async def test_an_in_place_retry_sends_the_key_of_its_first_attempt(
    mode: str, name: str | None
) -> None:
    keys: list[str] = []
    pay = paying(keys, fail_first=1)
    model = ScriptedChatModel(script=call_then_answer("pay"))
    agent = retrying_graph(model, [pay], StopRouter(retry_in_place=True))
    assert_stopped(
        await invoke(agent, user("A-1"), mode, thread(name) if name else None), "completed"
    )
    assert len(keys) == 2 and keys[0] == keys[1]


@modes
async def test_another_run_without_a_thread_sends_another_key(mode: str) -> None:
    keys: list[str] = []
    model = ScriptedChatModel(script=call_then_answer("pay"))
    agent = retrying_graph(model, [paying(keys)], StopRouter())
    for _ in range(2):  # the same call id, call_1_0, in two runs that share nothing
        assert_stopped(await invoke(agent, user("A-1"), mode), "completed")
    assert len(keys) == 2 and keys[0] != keys[1]


@kinds
@modes
async def test_a_resume_and_a_fork_send_the_same_key_another_thread_another(
    kind: str, mode: str
) -> None:
    keys: list[str] = []
    agent = build(
        kind,
        ScriptedChatModel(script=call_then_answer("pay")),
        [paying(keys, ask=True)],
        checkpointer=InMemorySaver(),
    )
    first = thread("t1")
    await invoke(agent, user("A-1"), mode, first)  # pauses inside the tool
    assert_stopped(await invoke(agent, Command(resume="yes"), mode, first), "completed")
    assert len(keys) == 2 and keys[0] == keys[1]
    before_tools = next(s for s in agent.get_state_history(first) if s.next == ("tools",))
    await invoke(agent, None, mode, before_tools.config)  # a fork: the step runs again
    assert keys[2] == keys[0]
    await invoke(agent, user("A-1"), mode, thread("t2"))
    assert keys[3] != keys[0]
