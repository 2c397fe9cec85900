"""Many runs at once without cross-talk, threads that survive a graceful restart, and
what a ``kill -9`` of ``langgraph dev`` loses (as docs/deployment.md says)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient

from client.scenarios import GRAPHS, Scenario, by_name
from tests.support.api import (
    api_tool_record,
    assert_answer,
    canonical,
    metadata_of,
    reference_run,
    tool_record,
    turns,
    user_input,
    values_of,
)
from tests.support.dev_server import dev_server

THREADS = 25
RUNS_PER_THREAD = 4
MIXED = [
    by_name(name)
    for name in (
        "success-hard",
        "fatal-hard",
        "retry_then_success-hard",
        "retries_exhausted-hard",
        "checkout_over_cap-hard",
    )
]


def tagged(scenario: Scenario, thread: int, run: int) -> str:
    # The tag names no knowledge-base topic and no amount, so the scenario behaves as usual;
    # it leads, since words after a purchase's price make the offline model ask instead.
    return f"[{thread:02d}-{run}] {scenario.query}"


async def test_a_hundred_runs_over_25_threads_at_once(client: LangGraphClient) -> None:
    plan: list[tuple[str, Scenario]] = [
        (GRAPHS[i % len(GRAPHS)], MIXED[i % len(MIXED)]) for i in range(THREADS)
    ]
    thread_ids = [
        t["thread_id"] for t in await asyncio.gather(*(client.threads.create() for _ in plan))
    ]

    async def start(i: int, k: int) -> tuple[int, str]:
        graph, scenario = plan[i]
        run = await client.runs.create(
            thread_ids[i],
            graph,
            input=user_input(tagged(scenario, i, k)),
            context=scenario.context,
            multitask_strategy="enqueue",  # runs on one thread queue up, in order
        )
        return i, run["run_id"]

    started = await asyncio.gather(
        *(start(i, k) for i in range(THREADS) for k in range(RUNS_PER_THREAD))
    )
    joined = await asyncio.gather(*(client.runs.join(thread_ids[i], run) for i, run in started))
    runs = await asyncio.gather(*(client.runs.get(thread_ids[i], run) for i, run in started))

    assert len(runs) == THREADS * RUNS_PER_THREAD == 100
    failed = [(run["run_id"], run["status"]) for run in runs if run["status"] != "success"]
    assert failed == []
    assert all("__error__" not in output for output in joined)

    # The reference of each run is the same tagged question in-process: a fatal result
    # names the query it answers, tag included.
    references = {
        tagged(scenario, i, k): [
            tool_record(m)
            for m in await reference_run(graph, scenario, tagged(scenario, i, k))
            if m.type == "tool"
        ]
        for i, (graph, scenario) in enumerate(plan)
        for k in range(RUNS_PER_THREAD)
    }
    # Each join saw its own run's decision; each thread holds only its own turns.
    for (i, _), output in zip(started, joined, strict=True):
        graph, scenario = plan[i]
        assert output["stop_decision"]["rule"] == scenario.rule, (i, graph, scenario.name)
    states = await asyncio.gather(*(client.threads.get_state(t) for t in thread_ids))
    for i, state in enumerate(states):
        graph, scenario = plan[i]
        values: dict[str, Any] = state["values"]  # type: ignore[assignment]
        assert values["stop_decision"]["rule"] == scenario.rule
        asked = [m["content"] for m in values["messages"] if m["type"] == "human"]
        assert sorted(asked) == [tagged(scenario, i, k) for k in range(RUNS_PER_THREAD)]
        for question, turn in zip(asked, turns(values["messages"]), strict=True):
            assert_answer(scenario, turn)
            tools = [api_tool_record(m) for m in turn if m["type"] == "tool"]
            assert canonical(tools) == canonical(references[question]), (i, graph, scenario.name)
            for message in turn:
                for call in message.get("tool_calls") or []:
                    assert f"[{i:02d}-" in str(call["args"]) or call["name"] == "checkout"


async def test_threads_survive_a_restart(tmp_path: Path) -> None:
    # The in-memory runtime flushes its pickles every 10 s and on a clean shutdown; the
    # fixture stops the server with SIGTERM, so the shutdown path must write everything.
    first_turn = by_name("retry_then_success-hard")
    second_turn = by_name("fatal-hard")
    before: dict[str, tuple[Any, Any]] = {}
    with dev_server(workdir=tmp_path) as first:
        sdk = get_client(url=first.url, api_key=None)
        threads = {}
        for graph in GRAPHS:
            thread_id = (await sdk.threads.create(metadata={"graph": graph}))["thread_id"]
            threads[graph] = thread_id
            await sdk.runs.wait(
                thread_id,
                graph,
                input=user_input(first_turn.query),
                context=first_turn.context,
            )
            state = await sdk.threads.get_state(thread_id)
            history = await sdk.threads.get_history(thread_id, limit=100)
            before[graph] = (state, history)
        await sdk.aclose()
    assert first.process.returncode is not None
    saved = {path.name for path in (tmp_path / ".langgraph_api").iterdir()}
    assert any(name.startswith(".langgraph_checkpoint") for name in saved), saved

    with dev_server(workdir=tmp_path) as second:
        assert second.url != first.url or second.port == first.port
        sdk = get_client(url=second.url, api_key=None)
        try:
            for graph, thread_id in threads.items():
                state_before, history_before = before[graph]
                thread = await sdk.threads.get(thread_id)
                assert metadata_of(thread)["graph"] == graph
                assert await sdk.threads.get_state(thread_id) == state_before
                assert await sdk.threads.get_history(thread_id, limit=100) == history_before
                assert state_before["values"]["stop_decision"]["rule"] == first_turn.rule
                # The thread goes on where it stopped: a second turn, fresh budget included.
                output = await sdk.runs.wait(
                    thread_id,
                    graph,
                    input=user_input(second_turn.query),
                    context=second_turn.context,
                )
                assert isinstance(output, dict)
                assert output["stop_decision"]["rule"] == second_turn.rule
                first_messages, second_messages = turns(output["messages"])
                assert_answer(first_turn, first_messages)
                assert_answer(second_turn, second_messages)
        finally:
            await sdk.aclose()


def _saved(workdir: Path) -> dict[str, float]:
    folder = workdir / ".langgraph_api"
    if not folder.exists():
        return {}
    return {path.name: path.stat().st_mtime for path in folder.iterdir()}


async def test_a_kill_minus_9_loses_what_the_readme_says(tmp_path: Path) -> None:
    # What docs/deployment.md's restart section promises NOT to keep, as langgraph dev
    # behaves today. If an upgrade makes a kill -9 keep this, the test fails: update that section.
    with dev_server(workdir=tmp_path) as first:
        sdk = get_client(url=first.url, api_key=None)
        read = (await sdk.threads.create(metadata={"case": "read"}))["thread_id"]
        await sdk.runs.wait(read, GRAPHS[0], input=user_input("checkpointer"))
        assert [r["status"] for r in await sdk.runs.list(read)] == ["success"]
        assert values_of((await sdk.threads.get_state(read))["values"])[
            "messages"
        ]  # any client's read
        after_read = time.time() - 0.01
        # Wait for the periodic flush (every ~10 s) after the read: threads and runs are
        # written, checkpoints are not.
        for _ in range(150):
            if _saved(tmp_path).get(".langgraph_ops.pckl", 0) > after_read:
                break
            await asyncio.sleep(0.1)
        saved = _saved(tmp_path)
        assert saved.get(".langgraph_ops.pckl", 0) > after_read, saved
        assert not [name for name in saved if name.startswith(".langgraph_checkpoint")], saved
        # Right after that flush: a thread created less than 10 s before the kill.
        late = (await sdk.threads.create(metadata={"case": "late"}))["thread_id"]
        await sdk.aclose()
        os.killpg(first.process.pid, signal.SIGKILL)
        first.process.wait(timeout=15)

    with dev_server(workdir=tmp_path) as second:
        sdk = get_client(url=second.url, api_key=None)
        try:
            # The thread and its run came back, the run still says success...
            assert metadata_of(await sdk.threads.get(read))["case"] == "read"
            assert [r["status"] for r in await sdk.runs.list(read)] == ["success"]
            # ...but the state did not.
            assert (await sdk.threads.get_state(read))["values"] in ({}, None, [])
            # The late thread is gone altogether.
            with pytest.raises(httpx.HTTPStatusError) as caught:
                await sdk.threads.get(late)
            assert caught.value.response.status_code == 404
        finally:
            await sdk.aclose()
