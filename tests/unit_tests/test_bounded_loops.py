"""Bounded loops, in-process: a model that never stops calling tools still ends cleanly.

Two kinds of runaway model, on both graphs:

- the offline model retrying a tool that is transient forever (the retry budget, or with
  a huge ``max_retries`` the model-call cap, ends it);
- a scripted model that issues a NEW tool call, with a query it never used, on every
  turn, against tools that never say stop (the model-call cap ends it).

Every run must end with a recorded ``stop_decision``, its custom event, the user-safe
answer of the rule, and no ``GraphRecursionError`` under the default recursion limit.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.errors import GraphRecursionError
from stop_on_artifact.testing import (
    ANSWER_SEPARATOR,
    MODEL_CALL_LIMIT_MESSAGE,
    ScriptedChatModel,
    tool_call,
)

from agent.context import Context
from agent.models import load_model
from agent.tools import TOOLS
from client.scenarios import GRAPHS
from tests.support.closing import retry_closing
from tests.support.graph_runs import Observed, build, run

FRESH_CALLS_MODEL = "scripted:fresh-calls"
"""Context ``model`` value that selects :func:`fresh_calls` in these tests."""

DEFAULTS = Context(model="offline")
MAX_MODEL_CALLS_CEILING = int(
    next(m.le for m in Context.model_fields["max_model_calls"].metadata if hasattr(m, "le"))
)
"""The largest ``max_model_calls`` a context accepts."""

STEPS_PER_MODEL_CALL = {"legacy": 2, "middleware": 3}
"""Graph steps one model call with tools costs: agent+tools, or model+after_model (the
spend-cap policy, where a step can pause)+tools: the stop decides in the model node."""


STEPS_TO_ANSWER = {"legacy": 1, "middleware": 2}
"""Graph steps a stop's answer takes: ``finalize``, or the model node and its after_model."""


def steps_needed(graph: str, model_calls: int) -> int:
    """The smallest ``recursion_limit`` a run capped at ``model_calls`` fits in.

    One step per node on the path, plus the answer's steps, plus one: LangGraph raises when
    the step counter reaches the limit.
    """
    return STEPS_PER_MODEL_CALL[graph] * model_calls + STEPS_TO_ANSWER[graph] + 1


def fresh_calls(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
    """A runaway model: every turn it calls the first bound tool with a never-used query.

    It decides from the history alone (the query is numbered by how many AIMessages the
    history holds), so the same graph object can serve any number of threads.
    """
    turn = sum(isinstance(m, AIMessage) for m in messages)
    if not tools:  # a polish call: tools unbound, answer in prose
        return AIMessage(content=f"Polished after {turn} calls.")
    function = tools[0]["function"]
    argument = next(iter(function["parameters"]["properties"]))
    query = f"a question never asked before, number {turn}"
    call = tool_call(tools[0], {argument: query}, f"fresh_{len(messages)}")
    return AIMessage(content="", tool_calls=[call])


@pytest.fixture
def fresh_calls_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Let ``model="scripted:fresh-calls"`` select :func:`fresh_calls` in both graphs."""
    model = ScriptedChatModel(script=fresh_calls, model_name=FRESH_CALLS_MODEL)

    def loader(name: str) -> BaseChatModel:
        return model if name == FRESH_CALLS_MODEL else load_model(name)

    # ``agent.graphs.legacy`` as an attribute is the graph (agent/__init__ re-exports it): patch
    # the modules themselves.
    for module in ("agent.graphs.legacy", "agent.graphs.middleware"):
        monkeypatch.setattr(importlib.import_module(module), "load_model", loader)
    yield


@tool
def lookup(query: str) -> str:
    """Look something up (a tool that ignores the artifact contract: no artifact)."""
    return f"Nothing conclusive about {query!r}; maybe ask differently."


@tool
def flaky(query: str) -> str:
    """Look something up in a service that always fails."""
    raise ConnectionError(f"backend down while looking up {query!r}")


def assert_clean_end(observed: Observed, rule: str, message: str) -> None:
    """The run ended on ``rule``: recorded, streamed, answered with the user-safe text."""
    decision = observed.decision
    assert decision is not None, "the stop is recorded in the thread state"
    assert decision["action"] == "stop"
    assert decision["rule"] == rule
    assert observed.events, "every tool step streams its decision"
    assert observed.events[-1] == {"stop_decision": decision}
    assert all(e["stop_decision"]["action"] == "continue" for e in observed.events[:-1])
    # The answer: every part of the turn, settled or named as not done, then the user-safe
    # text. Every call here is a new part (fresh arguments) or a retry of the one before.
    settled = [observed.tool_message(i) for i in decision["answer_from"]]
    assert all(m.artifact["reason"] in ("completed", "fatal", "policy_block") for m in settled)
    unsettled = [observed.tool_message(i) for i in decision["unsettled"]]
    assert not set(decision["answer_from"]) & set(decision["unsettled"])
    issued = [c["id"] for m in observed.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    listed = sorted([*settled, *unsettled], key=lambda m: issued.index(m.tool_call_id))
    lines = str(observed.answer.content).split(ANSWER_SEPARATOR)
    assert len(lines) == len(listed) + 1 and lines[-1] == message
    for k, (m, line) in enumerate(zip(listed, lines, strict=False)):
        if m in settled:
            assert line == m.text
        else:  # the tool's own line, or the generic one naming the part and the tool
            own = m.artifact.get("not_done") if isinstance(m.artifact, dict) else None
            where = f"part {k + 1} of {len(listed)}" if len(listed) > 1 else "this request"
            assert line == own or line.startswith(f"**Not done: {where} (`{m.name}`)**")
    assert not observed.answer.tool_calls
    assert decision["tool_call_id"] in {
        m.tool_call_id for m in observed.messages if isinstance(m, ToolMessage)
    }


# ---------------------------------------------------------------------------------------
# Transient forever.


@pytest.mark.parametrize("stop_mode", ["hard", "polish", "never"])
async def test_transient_forever_ends_on_the_retry_budget(graph_name: str, stop_mode: str) -> None:
    context = {"force_outcome": "retryable", "stop_mode": stop_mode}
    observed = await run(build(graph_name), "How does a checkpointer work?", context)

    closing = retry_closing("search", DEFAULTS.max_retries + 1)  # the one part, tried each time
    assert_clean_end(observed, "retry_budget", closing)
    # Default budget: max_retries transient outcomes allowed, the next one stops.
    assert observed.model_calls == DEFAULTS.max_retries + 1
    assert len(observed.events) == DEFAULTS.max_retries + 1


@pytest.mark.parametrize("stop_mode", ["hard", "polish", "never"])
async def test_transient_forever_with_a_huge_retry_budget_ends_on_the_model_call_cap(
    graph_name: str, stop_mode: str
) -> None:
    context = {"force_outcome": "retryable", "stop_mode": stop_mode, "max_retries": 50}
    observed = await run(build(graph_name), "How does a checkpointer work?", context)

    assert_clean_end(observed, "model_call_limit", MODEL_CALL_LIMIT_MESSAGE)
    assert observed.model_calls == DEFAULTS.max_model_calls
    assert len(observed.events) == DEFAULTS.max_model_calls


# ---------------------------------------------------------------------------------------
# A new tool call every turn.


@pytest.mark.usefixtures("fresh_calls_model")
@pytest.mark.parametrize(
    ("tools", "context", "continue_rule"),
    [
        pytest.param([lookup], {}, "no_artifact", id="tool-without-artifact"),
        pytest.param([flaky], {}, "tool_error", id="tool-that-raises"),
        pytest.param(
            TOOLS,
            {"stop_mode": "never", "force_outcome": "success"},
            "stop_mode_never",
            id="search-never",
        ),
        pytest.param(
            TOOLS,
            {"force_outcome": "retryable", "max_retries": 50},
            "transient",
            id="search-transient",
        ),
    ],
)
@pytest.mark.parametrize("stop_mode", ["hard", "polish"])
async def test_a_new_tool_call_every_turn_ends_on_the_model_call_cap(
    graph_name: str,
    tools: list[BaseTool],
    context: dict[str, Any],
    continue_rule: str,
    stop_mode: str,
) -> None:
    context = {"stop_mode": stop_mode, **context, "model": FRESH_CALLS_MODEL}
    observed = await run(build(graph_name, tools), "Tell me everything.", context)

    assert_clean_end(observed, "model_call_limit", MODEL_CALL_LIMIT_MESSAGE)
    assert observed.model_calls == DEFAULTS.max_model_calls
    assert [e["stop_decision"]["rule"] for e in observed.events[:-1]] == [continue_rule] * (
        DEFAULTS.max_model_calls - 1
    )
    queries = [
        call["args"] for m in observed.messages if isinstance(m, AIMessage) for call in m.tool_calls
    ]
    assert len(queries) == DEFAULTS.max_model_calls
    assert len({str(q) for q in queries}) == len(queries), "every call was a new one"


@pytest.mark.usefixtures("fresh_calls_model")
async def test_both_graphs_end_a_runaway_model_the_same_way() -> None:
    context = {"model": FRESH_CALLS_MODEL, "max_model_calls": 4}
    seen = []
    for graph_name in GRAPHS:
        observed = await run(build(graph_name, [lookup]), "Tell me everything.", context)
        seen.append((observed.agreed, observed.answer.content))
    assert seen[0] == seen[1]


# ---------------------------------------------------------------------------------------
# The cap against LangGraph's recursion limit.


@pytest.mark.usefixtures("fresh_calls_model")
async def test_the_largest_cap_fits_the_default_recursion_limit(graph_name: str) -> None:
    """max_model_calls at its ceiling still ends on the cap, not on GraphRecursionError."""
    context = {"model": FRESH_CALLS_MODEL, "max_model_calls": MAX_MODEL_CALLS_CEILING}
    observed = await run(build(graph_name, [lookup]), "Tell me everything.", context)

    assert_clean_end(observed, "model_call_limit", MODEL_CALL_LIMIT_MESSAGE)
    assert observed.model_calls == MAX_MODEL_CALLS_CEILING


@pytest.mark.usefixtures("fresh_calls_model")
@pytest.mark.parametrize("max_model_calls", [1, DEFAULTS.max_model_calls])
async def test_a_recursion_limit_below_the_cap_ends_on_the_step_limit(
    graph_name: str, max_model_calls: int, caplog: pytest.LogCaptureFixture
) -> None:
    """The cap needs ``steps_needed`` steps; with one fewer, the step limit ends the turn.

    With LangGraph's old default of 25 steps, ``middleware`` fits 7 model calls and
    ``legacy`` 11: below ``steps_needed(graph, max_model_calls)`` the run's
    ``recursion_limit`` is the budget that ends it (rule ``step_limit``), with the same
    closing line and never ``GraphRecursionError``.
    """
    graph = build(graph_name, [lookup])
    context = {"model": FRESH_CALLS_MODEL, "max_model_calls": max_model_calls}
    inputs = {"messages": [{"role": "user", "content": "Tell me everything."}]}
    limit = steps_needed(graph_name, max_model_calls)

    fits = {"configurable": {"thread_id": "fits"}, "recursion_limit": limit}
    state = await graph.ainvoke(inputs, fits, context=context)
    assert state["stop_decision"]["rule"] == "model_call_limit"
    assert state["messages"][-1].content.endswith(MODEL_CALL_LIMIT_MESSAGE)
    # A plain tool's results are inputs the model read, never parts: only the closing line.
    assert state["stop_decision"]["unsettled"] == state["stop_decision"]["answer_from"] == []
    assert state["messages"][-1].content == MODEL_CALL_LIMIT_MESSAGE

    short = {"configurable": {"thread_id": "short"}, "recursion_limit": limit - 1}
    if max_model_calls == 1:  # not even one tool round fits: LangGraph's own error names it
        with pytest.raises(GraphRecursionError, match="recursion_limit"):
            await graph.ainvoke(inputs, short, context=context)
        return
    with caplog.at_level(logging.WARNING, logger="stop_on_artifact"):
        state = await graph.ainvoke(inputs, short, context=context)
    assert state["stop_decision"]["rule"] == "step_limit"
    assert state["messages"][-1].content == MODEL_CALL_LIMIT_MESSAGE
    assert "raise recursion_limit or lower max_model_calls" in caplog.text


def test_the_default_cap_fits_langgraphs_old_default_recursion_limit() -> None:
    # ``legacy`` runs on langgraph 0.6, whose default was 25 steps; ``middleware`` needs
    # create_agent (langgraph 1.x, default 10 007), and its stop adds no step: it fits too.
    assert steps_needed("legacy", DEFAULTS.max_model_calls) <= 25
    assert steps_needed("middleware", DEFAULTS.max_model_calls) <= 25
