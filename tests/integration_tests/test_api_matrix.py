"""The forced-outcome matrix through the real `langgraph dev`, three ways a client runs.

Every scenario of `client.scenarios.SCENARIOS`, on both graphs, through `runs.wait`,
`runs.stream` and a background run (`runs.create`, then `runs.join`; its stream replayed
with `join_stream`). All runs go to the server at once (the queue, not the graphs, sets
the pace), then each (scenario, graph, way) is checked on its own.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.schema import StreamMode
from stop_on_artifact import parse_artifact

from client.scenarios import GRAPHS, SCENARIOS, Scenario, by_name, model_calls
from tests.support.api import (
    answer_ids,
    api_tool_record,
    assert_answer,
    canonical,
    current_turn,
    decisions_in_history,
    model_messages,
    reference_run,
    run_request,
    tool_record,
    tool_steps,
    turns,
    unsettled_ids,
    user_input,
    values_of,
)

WAYS = ("wait", "stream", "background")
STREAM_MODES: list[StreamMode] = ["updates", "custom"]
IN_FLIGHT = 24


@dataclass
class ApiRun:
    """What one run showed over the API."""

    output: dict[str, Any]
    """`runs.wait` output, or `runs.join` result: the thread's values after the run."""
    state: dict[str, Any]
    history: list[dict[str, Any]]
    path: list[str] | None = None
    events: list[dict[str, Any]] | None = None
    streamed_tools: list[dict[str, Any]] | None = None
    """ToolMessages as the updates stream carried them."""
    status: str | None = None

    @property
    def values(self) -> dict[str, Any]:
        return values_of(self.state["values"])

    @property
    def turn(self) -> list[dict[str, Any]]:
        return current_turn(self.values["messages"])


def _read_stream(part: Any, run: ApiRun) -> None:
    assert part.event != "error", part.data
    assert run.path is not None and run.events is not None and run.streamed_tools is not None
    if part.event == "updates":
        for node, update in part.data.items():
            run.path.append(node)
            for message in (update or {}).get("messages", []):
                if message["type"] == "tool":
                    run.streamed_tools.append(message)
    elif part.event == "custom":
        run.events.append(part.data["stop_decision"])


async def drive(client: LangGraphClient, way: str, graph: str, scenario: Scenario) -> ApiRun:
    thread_id = (await client.threads.create())["thread_id"]
    request = run_request(scenario.query, scenario.context)
    run = ApiRun(output={}, state={}, history=[])
    if way == "wait":
        run.output = values_of(await client.runs.wait(thread_id, graph, **request))
    elif way == "stream":
        run.path, run.events, run.streamed_tools = [], [], []
        async for part in client.runs.stream(thread_id, graph, stream_mode=STREAM_MODES, **request):
            _read_stream(part, run)
    else:
        created = await client.runs.create(
            thread_id, graph, stream_mode=STREAM_MODES, stream_resumable=True, **request
        )
        run.output = await client.runs.join(thread_id, created["run_id"])
        run.status = (await client.runs.get(thread_id, created["run_id"]))["status"]
        # The background run is over: replay its whole stream from the first event.
        run.path, run.events, run.streamed_tools = [], [], []
        async for part in client.runs.join_stream(thread_id, created["run_id"], last_event_id="-1"):
            if part.event in ("updates", "custom", "error"):
                _read_stream(part, run)
    run.state = dict(await client.threads.get_state(thread_id))
    run.history = [dict(s) for s in await client.threads.get_history(thread_id, limit=100)]
    return run


CASES = [(s, g, w) for s in SCENARIOS for g in GRAPHS for w in WAYS]


@pytest.fixture(scope="module")
async def observed(client: LangGraphClient) -> dict[tuple[str, str, str], ApiRun]:
    gate = asyncio.Semaphore(IN_FLIGHT)

    async def one(scenario: Scenario, graph: str, way: str) -> ApiRun:
        async with gate:
            return await drive(client, way, graph, scenario)

    runs = await asyncio.gather(*(one(s, g, w) for s, g, w in CASES))
    return {(s.name, g, w): run for (s, g, w), run in zip(CASES, runs, strict=True)}


@pytest.fixture(scope="module")
async def references() -> dict[tuple[str, str], list[Any]]:
    return {(s.name, g): await reference_run(g, s) for s in SCENARIOS for g in GRAPHS}


@pytest.mark.parametrize(
    ("scenario", "graph", "way"), CASES, ids=[f"{s.name}-{g}-{w}" for s, g, w in CASES]
)
def test_scenario_over_the_api(
    scenario: Scenario,
    graph: str,
    way: str,
    observed: dict[tuple[str, str, str], ApiRun],
    references: dict[tuple[str, str], list[Any]],
) -> None:
    run = observed[(scenario.name, graph, way)]
    turn = run.turn

    # The decision, checkpointed in the thread state, names the chosen call.
    decision = run.values["stop_decision"]
    assert (decision["action"], decision["rule"]) == (scenario.action, scenario.rule)
    steps = tool_steps(turn)
    assert len(steps) == scenario.tool_steps
    assert [len(step) for step in steps] == list(scenario.calls or (1,) * scenario.tool_steps)
    chosen = steps[scenario.chosen_step][scenario.chosen]
    assert (decision["tool"], decision["tool_call_id"]) == (chosen["name"], chosen["tool_call_id"])
    assert decision["answer_from"] == answer_ids(scenario, turn)
    assert decision["unsettled"] == unsettled_ids(scenario, turn)

    # `runs.wait` returns the output schema; `runs.join` the thread's values, which in
    # `middleware` also hold create_agent's private `jump_to` after a hard stop.
    if way == "wait":
        assert run.output == {key: run.values[key] for key in ("messages", "stop_decision")}
    if way == "background":
        assert run.output == run.values
        assert run.status == "success"

    # Model calls: counted from the messages, and from the updates stream.
    assert len(model_messages(turn)) == scenario.model_calls
    if run.path is not None:
        assert run.path == scenario.path(graph)
        assert model_calls(run.path, run.values.get("stop_decision")) == scenario.model_calls

    # One custom event per tool step, in order; the last one is the checkpointed decision.
    if run.events is not None:
        assert len(run.events) == scenario.tool_steps
        for number, (event, step) in enumerate(zip(run.events, steps, strict=True)):
            # Each step's event names a call of that step, but the last one may name the
            # refusal of an earlier step that decides the settled turn.
            named = steps[scenario.chosen_step] if number == len(steps) - 1 else step
            assert event["tool_call_id"] in {m["tool_call_id"] for m in named}
        assert run.events[-1] == decision

    # The history holds every decision the run went through, oldest first.
    assert run.history[0]["values"] == run.values
    assert run.history[0]["checkpoint_id"] == run.state["checkpoint_id"]
    history_decisions = decisions_in_history(run.history)
    assert history_decisions[-1] == decision
    assert len(history_decisions) == scenario.tool_steps
    if run.events is not None:
        assert history_decisions == run.events

    # Artifacts: a dict the contract accepts, exactly what the tools built in-process.
    api_tools = [m for m in turn if m["type"] == "tool"]
    for message in api_tools:
        assert parse_artifact(message["artifact"]) == message["artifact"]
        assert '"stop"' not in message["content"]  # never leaked to the model
    reference = [tool_record(m) for m in references[(scenario.name, graph)] if m.type == "tool"]
    assert canonical([api_tool_record(m) for m in api_tools]) == canonical(reference)
    if run.streamed_tools is not None:
        # Parallel `tools` tasks stream in the order they finish; the state keeps call order.
        def by_call(messages: list[dict[str, Any]]) -> str:
            return canonical(sorted(messages, key=lambda m: m["tool_call_id"]))

        assert by_call(run.streamed_tools) == by_call(api_tools)

    assert_answer(scenario, turn)


async def test_each_user_message_starts_a_fresh_retry_budget(client: LangGraphClient) -> None:
    # Four turns on one thread. Without a fresh budget per user message, every turn after
    # the first would stop on retry_budget right after its first transient outcome.
    plan = [by_name(name) for name in ("retries_exhausted-hard", "retry_then_success-hard")] * 2

    async def converse(graph: str) -> None:
        thread_id = (await client.threads.create())["thread_id"]
        for scenario in plan:
            path: list[str] = []
            events: list[dict[str, Any]] = []
            async for part in client.runs.stream(
                thread_id,
                graph,
                input=user_input(scenario.query),
                context=scenario.context,
                stream_mode=STREAM_MODES,
            ):
                assert part.event != "error", part.data
                if part.event == "updates":
                    path.extend(part.data)
                elif part.event == "custom":
                    events.append(part.data["stop_decision"])
            assert path == scenario.path(graph), (graph, scenario.name)
            assert events[0]["rule"] == "transient"
            assert (events[-1]["action"], events[-1]["rule"]) == (scenario.action, scenario.rule)

        state = await client.threads.get_state(thread_id)
        messages = state["values"]["messages"]  # type: ignore[call-overload]
        assert len(turns(messages)) == len(plan)
        for scenario, turn in zip(plan, turns(messages), strict=True):
            assert len(model_messages(turn)) == scenario.model_calls
            assert len(tool_steps(turn)) == scenario.tool_steps
            assert_answer(scenario, turn)

    await asyncio.gather(*(converse(graph) for graph in GRAPHS))
