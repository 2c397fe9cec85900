"""A purchase is charged once, however often LangGraph runs its step.

LangGraph runs a task at least once: a step that fails (a worker killed mid-step) runs again
from its last checkpoint, and a fork runs it again. Both graphs keep a finished call's result
(each call is a task of its own), and ``checkout`` sends one idempotency key per call to the
payment stand-in, which answers a repeat (a call killed after it charged, a fork) with the
first result. (Two processes racing one key: tests/unit_tests/test_payments.py.)
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.memory import InMemorySaver
from stop_on_artifact import idempotency_key

from agent.graphs.legacy import CALL_TASK, build_legacy
from agent.graphs.middleware import build_middleware
from agent.tools import TOOLS
from agent.tools.checkout import KEY_REUSED_MESSAGE
from agent.tools.payments import charge, ledger
from client.scenarios import CALL_TASK as SCENARIO_CALL_TASK
from tests.support.extra_tools import checkout_around

TWO = "buy a desk lamp for 40 and a mouse for 20"
SUCCESS = {"force_outcome": "success"}
NAMESPACE = {"legacy": f"tools:1|{CALL_TASK}:2", "middleware": "tools:1"}
"""Where each graph's checkout runs (task ids aside): the key holds the names."""


class WorkerKilled(BaseException):
    """A crash no tool error handler catches, as a killed worker stops a step."""


class WatchedSaver(InMemorySaver):
    """An in-memory checkpointer that says when a purchase's result has been saved."""

    def __init__(self, item: str) -> None:
        super().__init__()
        self.item = item
        self.saved = threading.Event()

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        super().put_writes(config, writes, task_id, task_path)
        values = [v for _, value in writes for v in (value if isinstance(value, list) else [value])]
        if any(isinstance(v, ToolMessage) and self.item in str(v.content) for v in values):
            self.saved.set()


def crashing_checkout(
    ran: Counter[str], *, before: str = "", after: str = "", wait: threading.Event | None = None
) -> BaseTool:
    """The real ``checkout``, counting each run of its body per item. The first call of
    ``before`` stops the step before it charges (once ``wait`` is set, if given), the first of
    ``after`` once it has charged."""
    crashes = {"before": before, "after": after}

    def ahead(item: str, amount: float) -> None:
        ran[item] += 1
        if crashes["before"] == item:
            crashes["before"] = ""
            if wait is not None:
                wait.wait(timeout=30)  # the other call has finished and its result is saved
            raise WorkerKilled

    def charged(item: str) -> None:
        if crashes["after"] == item:
            crashes["after"] = ""
            raise WorkerKilled  # charged, and killed before the result was saved

    return checkout_around(ahead, charged)


def build(graph_name: str, tools: list[BaseTool] = TOOLS, saver: Any = None) -> Any:
    builder = build_legacy if graph_name == "legacy" else build_middleware
    return builder(tools, checkpointer=saver or InMemorySaver())


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def receipts(state: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage) and m.name == "checkout"]


def key_of(graph_name: str, thread: str, call_id: str) -> str:
    where = {"configurable": {"thread_id": thread, "checkpoint_ns": NAMESPACE[graph_name]}}
    return idempotency_key(call_id, where)  # type: ignore[arg-type]


def test_the_scenarios_name_the_legacy_graphs_task() -> None:
    assert SCENARIO_CALL_TASK == CALL_TASK


@pytest.mark.parametrize("in_place", [False, True], ids=["model_retries", "retry_in_place"])
async def test_a_step_run_again_does_not_run_a_finished_call_again(
    graph_name: str, in_place: bool
) -> None:
    ran: Counter[str] = Counter()
    saver = WatchedSaver("a desk lamp")
    tools = [crashing_checkout(ran, before="a mouse", wait=saver.saved)]
    graph = build(graph_name, tools, saver)
    context = {**SUCCESS, "retry_in_place": in_place}
    with pytest.raises(WorkerKilled):
        await graph.ainvoke(user(TWO), config("A"), context=context)
    assert saver.saved.is_set() and ran == {"a desk lamp": 1, "a mouse": 1}
    state = await graph.ainvoke(None, config("A"), context=context)  # from the checkpoint
    assert ran == {"a desk lamp": 1, "a mouse": 2}  # the lamp's call is not run again
    [issued] = [m for m in state["messages"] if isinstance(m, AIMessage) and m.tool_calls]
    paid = receipts(state)
    assert [m.tool_call_id for m in paid] == [c["id"] for c in issued.tool_calls]
    assert [m.artifact["reason"] for m in paid] == ["completed", "completed"]
    assert [(r.item, r.requests) for r in ledger()] == [("a desk lamp", 1), ("a mouse", 1)]


async def test_a_call_killed_after_it_charged_is_answered_by_its_key(graph_name: str) -> None:
    ran: Counter[str] = Counter()
    graph = build(graph_name, [crashing_checkout(ran, after="a desk lamp")])
    with pytest.raises(WorkerKilled):
        await graph.ainvoke(user("buy a desk lamp for 40"), config("A"), context=SUCCESS)
    state = await graph.ainvoke(None, config("A"), context=SUCCESS)
    assert ran == {"a desk lamp": 2}  # its result was never saved: the call ran again
    [paid] = receipts(state)
    assert paid.artifact["reason"] == "completed" and paid.artifact["replayed"] is True
    assert "Thank you for your order" in paid.text
    assert [(r.item, r.requests) for r in ledger()] == [("a desk lamp", 2)]  # charged once


async def test_checkout_keys_its_charge_by_thread_namespace_and_call(graph_name: str) -> None:
    state = await build(graph_name).ainvoke(
        user("buy a desk lamp for 40"), config("A"), context=SUCCESS
    )
    [paid] = receipts(state)
    [row] = ledger()
    assert row.key == key_of(graph_name, "A", paid.tool_call_id)
    assert (row.item, row.amount, row.status, row.requests) == ("a desk lamp", 40.0, "completed", 1)
    assert row.order_id == paid.artifact["order_id"] and "replayed" not in paid.artifact


async def test_a_fork_of_the_step_gets_the_first_receipt_back(graph_name: str) -> None:
    graph = build(graph_name)
    first = receipts(
        await graph.ainvoke(user("buy a desk lamp for 40"), config("A"), context=SUCCESS)
    )
    history = [s async for s in graph.aget_state_history(config("A"))]
    before_tools = next(s for s in history if s.next == ("tools",))
    again = receipts(await graph.ainvoke(None, before_tools.config, context=SUCCESS))
    assert again[-1].content == first[0].content  # the same receipt, word for word
    assert again[-1].artifact == {**first[0].artifact, "replayed": True}
    assert [(r.item, r.requests) for r in ledger()] == [("a desk lamp", 2)]  # charged once


async def test_another_thread_is_another_purchase(graph_name: str) -> None:
    graph = build(graph_name)
    for thread in ("A", "B"):
        await graph.ainvoke(user("buy a desk lamp for 40"), config(thread), context=SUCCESS)
    assert [row.requests for row in ledger()] == [1, 1]


async def test_runs_without_a_thread_never_share_a_charge(graph_name: str) -> None:
    # No checkpointer, no thread: the offline model's call ids repeat (call_1_0) run after run.
    builder = build_legacy if graph_name == "legacy" else build_middleware
    graph = builder(TOOLS)
    for text in ("buy a desk lamp for 40", "buy a mouse for 20", "buy a desk lamp for 40"):
        state = await graph.ainvoke(user(text), context=SUCCESS)
        assert receipts(state)[0].artifact["reason"] == "completed"
    assert [(r.item, r.requests) for r in ledger()] == [
        ("a desk lamp", 1),
        ("a mouse", 1),
        ("a desk lamp", 1),
    ]


async def test_a_key_reused_for_another_purchase_is_refused_not_a_wrong_receipt(
    graph_name: str,
) -> None:
    # The key this thread's first call will send already paid for another amount.
    charge(
        key_of(graph_name, "A", "call_1_0"),
        "a desk lamp",
        41.0,
        outcome="completed",
        order_id="ORD-1",
    )
    state = await build(graph_name).ainvoke(
        user("buy a desk lamp for 40"), config("A"), context=SUCCESS
    )
    [refused] = receipts(state)
    assert refused.tool_call_id == "call_1_0"
    assert refused.artifact["reason"] == "fatal"
    assert refused.artifact["cause"] == "idempotency_key_reused"
    assert KEY_REUSED_MESSAGE in refused.text and "Thank you" not in refused.text
    assert state["messages"][-1].content == refused.content  # the hard stop's answer
    assert [(r.amount, r.requests) for r in ledger()] == [(41.0, 1)]  # nothing new charged
