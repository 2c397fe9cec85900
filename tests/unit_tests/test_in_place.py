"""retry_in_place on both graphs: a transient-then-success question costs one model call."""

from __future__ import annotations

from langchain_core.messages import ToolMessage

from tests.support.graph_runs import build, run

QUESTION = "How does a checkpointer work?"


async def test_a_transient_then_success_costs_one_model_call(graph_name: str) -> None:
    context = {"retry_in_place": True, "force_outcome": ["transient", "success"]}
    observed = await run(build(graph_name), QUESTION, context)
    assert observed.model_calls == 1
    [result] = [m for m in observed.messages if isinstance(m, ToolMessage)]
    assert result.artifact["reason"] == "completed" and result.artifact["in_place_retries"] == 1
    decision = observed.decision
    assert decision is not None
    assert (decision["rule"], decision["in_place_retries"]) == ("completed", 1)
    assert observed.answer.content == result.content


async def test_without_it_the_model_retries(graph_name: str) -> None:
    context = {"force_outcome": ["transient", "success"]}
    observed = await run(build(graph_name), QUESTION, context)
    assert observed.model_calls == 2
    assert "in_place_retries" not in (observed.decision or {})


async def test_in_place_retries_count_against_max_retries(graph_name: str) -> None:
    context = {"retry_in_place": True, "force_outcome": "transient", "max_retries": 2}
    observed = await run(build(graph_name), QUESTION, context)
    decision = observed.decision
    assert decision is not None
    assert (decision["rule"], decision["in_place_retries"]) == ("retry_budget", 2)
    assert observed.model_calls == 1  # the budget is spent in place: no model retry
    [result] = [m for m in observed.messages if isinstance(m, ToolMessage)]
    assert result.artifact["in_place_retries"] == 2
