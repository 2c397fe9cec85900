"""Exactly once through the real `langgraph dev`: one answer per pause, one run per thread.

Two clients answer one approval at the same moment (approve+approve, approve+reject; 10
rounds each per graph, the rounds themselves concurrent): exactly one answer runs, the other
is refused before a run exists (409, naming the thread), the purchase is executed at most once
(counted over the thread's whole history, every branch included) and the thread ends
``idle``, never ``busy`` or ``error``. An answer sent after the pause was answered is refused
the same way. Two runs queued on one thread (``enqueue``, and no strategy at all) both run,
one after the other: no turn is lost. ``reject`` refuses a run while another is in flight;
``interrupt`` and ``rollback`` replace it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.schema import Command as ApiCommand

from agent.runs import BUSY, answered
from client.scenarios import APPROVE, GRAPHS, REJECT, by_name
from tests.support.api import run_request, user_input, values_of
from tests.support.approval import Approval, pause, receipts
from tests.support.dev_server import CONFIG, ROOT, dev_server

ROUNDS = 10
PAIRS = {"approve+approve": (APPROVE, APPROVE), "approve+reject": (APPROVE, REJECT)}
SLOW_GRAPHS = {"slow-legacy": "build_legacy", "slow-middleware": "build_middleware"}
SLOW_FILE = """
import asyncio

from langchain_core.tools import tool

from agent.graphs.legacy import build_legacy
from agent.graphs.middleware import build_middleware
from agent.tools import TOOLS


@tool
async def slow(query: str) -> str:
    \"\"\"Take a few seconds, then answer.\"\"\"
    await asyncio.sleep(3)
    return f"slow result for {query}"


legacy = build_legacy([*TOOLS, slow])
middleware = build_middleware([*TOOLS, slow])
"""
"""Both graphs with one more tool that keeps a run in flight for 3 s."""


async def _resume(client: LangGraphClient, approval: Approval, decision: dict[str, Any]) -> Any:
    command: ApiCommand = {"resume": {"decisions": [decision]}}
    try:
        return await client.runs.wait(approval.thread_id, approval.graph, command=command)
    except httpx.HTTPStatusError as refused:
        return refused


async def executions(client: LangGraphClient, thread_id: str) -> set[str]:
    """Every checkout ToolMessage id that any checkpoint of the thread ever held."""
    found: set[str] = set()
    for checkpoint in await client.threads.get_history(thread_id, limit=1000):
        for message in values_of(checkpoint["values"]).get("messages", []):
            if message["type"] == "tool" and message.get("name") == "checkout":
                if (message.get("artifact") or {}).get("reason") == "completed":
                    found.add(str(message.get("tool_call_id")))
    return found


async def one_round(client: LangGraphClient, graph: str, pair: str) -> None:
    approval = await pause(client, graph, by_name("approval-approve"))
    first, second = PAIRS[pair]
    results = await asyncio.gather(
        _resume(client, approval, first), _resume(client, approval, second)
    )
    refused = [r for r in results if isinstance(r, httpx.HTTPStatusError)]
    assert len(refused) == 1, (graph, pair, results)
    [refusal] = refused
    assert refusal.response.status_code == 409
    assert refusal.response.json() == {"detail": answered(approval.thread_id)}
    [won] = [i for i, r in enumerate(results) if not isinstance(r, httpx.HTTPStatusError)]
    thread = await client.threads.get(approval.thread_id)
    assert thread["status"] == "idle", (graph, pair, thread["status"])
    values = values_of((await client.threads.get_state(approval.thread_id))["values"])
    charged = len(receipts(values))
    assert charged == (1 if (first, second)[won] == APPROVE else 0), (graph, pair, won)
    assert len(await executions(client, approval.thread_id)) == charged  # no other branch paid
    runs = await client.runs.list(approval.thread_id, limit=100)
    assert len(runs) == 2  # the run that paused and the one answer that ran
    # Later, a third answer: refused at the door too, nothing runs.
    late = await _resume(client, approval, APPROVE)
    assert isinstance(late, httpx.HTTPStatusError) and late.response.status_code == 409
    assert (await client.threads.get(approval.thread_id))["status"] == "idle"
    assert len(await executions(client, approval.thread_id)) == charged


@pytest.mark.parametrize("pair", sorted(PAIRS))
@pytest.mark.parametrize("graph", GRAPHS)
async def test_two_answers_to_one_pause_run_once(
    client: LangGraphClient, graph: str, pair: str
) -> None:
    await asyncio.gather(*(one_round(client, graph, pair) for _ in range(ROUNDS)))


async def test_an_answer_to_a_thread_that_never_paused_is_refused(
    client: LangGraphClient,
) -> None:
    thread_id = str((await client.threads.create())["thread_id"])
    for graph in GRAPHS:
        with pytest.raises(httpx.HTTPStatusError) as caught:
            await client.runs.wait(thread_id, graph, command={"resume": {"decisions": []}})
        assert caught.value.response.status_code == 409
        assert caught.value.response.json() == {"detail": answered(thread_id)}
    assert (await client.threads.get(thread_id))["status"] == "idle"


async def _two_turns(client: LangGraphClient, graph: str, strategy: str | None) -> None:
    thread_id = str((await client.threads.create())["thread_id"])
    kwargs: dict[str, Any] = {} if strategy is None else {"multitask_strategy": strategy}
    questions = ["what is the refund policy", "buy a mouse for 20"]
    created = [
        await client.runs.create(
            thread_id, graph, **run_request(q, {"force_outcome": "success"}), **kwargs
        )
        for q in questions
    ]
    for run in created:
        await client.runs.join(thread_id, run["run_id"])
    values = values_of((await client.threads.get_state(thread_id))["values"])
    humans = [m["content"] for m in values["messages"] if m["type"] == "human"]
    assert humans == questions, (graph, strategy, humans)
    assert values["messages"][-1]["type"] == "ai"
    assert len(receipts(values)) == 1
    assert (await client.threads.get(thread_id))["status"] == "idle"


@pytest.mark.parametrize("strategy", ["enqueue", None])
async def test_two_queued_runs_on_one_thread_lose_no_turn(
    client: LangGraphClient, strategy: str | None
) -> None:
    await asyncio.gather(
        *(_two_turns(client, graph, strategy) for graph in GRAPHS for _ in range(5))
    )


@pytest.fixture(scope="module")
async def slow(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LangGraphClient]:
    """A dev server that also serves :data:`SLOW_GRAPHS`."""
    folder = Path(tmp_path_factory.mktemp("slow-graphs"))
    (folder / "slow_graphs.py").write_text(SLOW_FILE, "utf-8")
    config = json.loads(CONFIG.read_text("utf-8"))
    config.pop("env", None)
    config["dependencies"] = [str(ROOT), str(ROOT / "libs" / "stop-on-artifact")]
    for graph, variable in SLOW_GRAPHS.items():
        config["graphs"][graph] = f"{folder / 'slow_graphs.py'}:{variable.removeprefix('build_')}"
    path = folder / "langgraph.json"
    path.write_text(json.dumps(config), "utf-8")
    with dev_server(config=path, args=["--n-jobs-per-worker", "4"]) as server:
        sdk = get_client(url=server.url, api_key=None)
        yield sdk
        await sdk.aclose()


async def _in_flight(client: LangGraphClient, graph: str) -> tuple[str, dict[str, Any]]:
    """A thread whose run is inside the slow tool (3 s)."""
    thread_id = str((await client.threads.create())["thread_id"])
    run = await client.runs.create(thread_id, graph, input=user_input("slow: nap"))
    for _ in range(100):
        if (await client.runs.get(thread_id, run["run_id"]))["status"] == "running":
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # inside the slow tool now
    return thread_id, dict(run)


def _humans(values: dict[str, Any]) -> list[str]:
    return [m["content"] for m in values["messages"] if m["type"] == "human"]


@pytest.mark.parametrize("graph", sorted(SLOW_GRAPHS))
async def test_reject_refuses_a_run_while_another_is_in_flight(
    slow: LangGraphClient, graph: str
) -> None:
    thread_id, first = await _in_flight(slow, graph)
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await slow.runs.create(
            thread_id,
            graph,
            input=user_input("what is the refund policy"),
            multitask_strategy="reject",
        )
    assert caught.value.response.status_code == 409
    assert caught.value.response.json() == {"detail": BUSY}
    await slow.runs.join(thread_id, first["run_id"])
    assert _humans(values_of((await slow.threads.get_state(thread_id))["values"])) == ["slow: nap"]
    assert (await slow.threads.get(thread_id))["status"] == "idle"


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
@pytest.mark.parametrize("graph", sorted(SLOW_GRAPHS))
async def test_interrupt_and_rollback_replace_the_run_in_flight(
    slow: LangGraphClient, graph: str, strategy: Literal["interrupt", "rollback"]
) -> None:
    thread_id, first = await _in_flight(slow, graph)
    second = await slow.runs.create(
        thread_id,
        graph,
        input=user_input("what is the refund policy"),
        context={"force_outcome": "success"},
        multitask_strategy=strategy,
    )
    await slow.runs.join(thread_id, second["run_id"])
    runs = {r["run_id"]: r["status"] for r in await slow.runs.list(thread_id, limit=10)}
    assert runs[second["run_id"]] == "success"
    if strategy == "interrupt":
        assert runs[first["run_id"]] == "interrupted"
    else:
        assert first["run_id"] not in runs  # rolled back: the run and its checkpoints go
    humans = _humans(values_of((await slow.threads.get_state(thread_id))["values"]))
    assert humans[-1] == "what is the refund policy"
    assert ("slow: nap" in humans) == (strategy == "interrupt")
    assert (await slow.threads.get(thread_id))["status"] == "idle"
