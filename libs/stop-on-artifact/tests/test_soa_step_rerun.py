"""A tools step run again decides as it did: a fork before the tools, a resume inside a retry.

The in-place retry budget belongs to one execution of the tools step. A fork from the
checkpoint before the tools is a new execution with the whole budget; a resume of an
``interrupt()`` raised inside an in-place retry re-runs the same execution, whose retries
already granted are granted again. The same agent object and a freshly built one decide
the same and call the model as often.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command, interrupt
from soa_graphs import invoke, modes, needs_langchain, retrying_graph, user, with_middleware
from stop_on_artifact import StopRouter, completed, current_attempt, transient
from stop_on_artifact.testing import (
    ScriptedChatModel,
    assert_model_calls,
    assert_stopped,
    call_then_answer,
)

kinds = pytest.mark.parametrize(
    "kind", ["router", pytest.param("middleware", marks=needs_langchain)]
)


@tool(response_format="content_and_artifact")
def flaky(query: str) -> tuple[str, dict[str, Any]]:
    """Look ``query`` up; the first two attempts of each call time out."""
    if current_attempt() < 2:
        return "timed out", transient()
    return f"found {query}", completed()


@tool(response_format="content_and_artifact")
def asks(query: str) -> tuple[str, dict[str, Any]]:
    """Look ``query`` up; the first attempt times out, the retry asks a person."""
    if current_attempt() == 0:
        return "timed out", transient()
    answer = interrupt({"question": f"look up {query}?"})
    return f"found {query} ({answer})", completed()


def agent_of(kind: str, tools: list[BaseTool], saver: InMemorySaver, **settings: Any) -> Any:
    model = ScriptedChatModel(script=call_then_answer(tools[0].name))
    if kind == "router":
        router = StopRouter(retry_in_place=True, **settings)
        return retrying_graph(model, tools, router, checkpointer=saver)
    return with_middleware(model, tools, retry_in_place=True, checkpointer=saver, **settings)


def fresh_or_same(
    kind: str, tools: list[BaseTool], saver: InMemorySaver, **settings: Any
) -> dict[str, Callable[[Any], Any]]:
    return {
        "same": lambda agent: agent,
        "fresh": lambda _: agent_of(kind, tools, saver, **settings),
    }


@kinds
@modes
@pytest.mark.parametrize("who", ["same", "fresh"])
async def test_a_fork_before_the_tools_gets_the_whole_budget(
    kind: str, mode: str, who: str
) -> None:
    saver = InMemorySaver()
    agent = agent_of(kind, [flaky], saver, max_retries=2)
    config = {"configurable": {"thread_id": "t"}}
    first = await invoke(agent, user("refunds"), mode, config)
    assert_stopped(first, "completed")
    assert_model_calls(first, 1)
    before_tools = next(s for s in agent.get_state_history(config) if s.next == ("tools",))
    again = fresh_or_same(kind, [flaky], saver, max_retries=2)[who](agent)
    forked = await invoke(again, None, mode, before_tools.config)
    assert_stopped(forked, "completed")
    assert_model_calls(forked, 1)
    assert forked["messages"][-1].content == "found refunds"


@kinds
@modes
@pytest.mark.parametrize("who", ["same", "fresh"])
async def test_a_resume_inside_an_in_place_retry_keeps_the_retry(
    kind: str, mode: str, who: str
) -> None:
    saver = InMemorySaver()
    agent = agent_of(kind, [asks], saver, max_retries=1)
    config = {"configurable": {"thread_id": "t"}}
    paused = await invoke(agent, user("refunds"), mode, config)
    assert "__interrupt__" in paused
    again = fresh_or_same(kind, [asks], saver, max_retries=1)[who](agent)
    resumed = await invoke(again, Command(resume="yes"), mode, config)
    assert_stopped(resumed, "completed")
    assert_model_calls(resumed, 1)
    assert resumed["messages"][-1].content == "found refunds (yes)"
