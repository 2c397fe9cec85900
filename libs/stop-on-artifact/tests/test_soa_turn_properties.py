"""The turn record's promise over any mixture of one step, not only the matrix's seven.

One model turn buys one to five items, each allowed (at most 500), asked about (501 to
1000) or refused (above 1000), in any order; a person answers each asked call (approve or
reject, any split) and the resume carries any of the matrix's contexts. On every path, a
call runs exactly when it was allowed or approved, once, and every call of the turn is
answered.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import ToolMessage
from soa_policy_graphs import Till
from stop_on_artifact.testing import pending_approval
from test_soa_turn_record import PATHS, RESUMES, answer, build, resume_context, start_context

AMOUNTS = {"allowed": 100, "asked": 700, "refused": 2000}

steps = st.lists(st.sampled_from(list(AMOUNTS)), min_size=1, max_size=5)


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kinds=steps,
    data=st.data(),
    mode=st.sampled_from(["hard", "never"]),
    resume=st.sampled_from(RESUMES),
)
def test_any_mixture_runs_exactly_the_allowed_and_approved_calls(
    path: str, kinds: list[str], data: st.DataObject, mode: str, resume: str
) -> None:
    items = [f"i{index}" for index in range(len(kinds))]
    order = "; ".join(f"{item} {AMOUNTS[kind]}" for item, kind in zip(items, kinds, strict=True))
    asked = [item for item, kind in zip(items, kinds, strict=True) if kind == "asked"]
    decisions = [data.draw(st.sampled_from(["approve", "reject"])) for _ in asked]
    till = Till()
    graph: Any = build(path, till)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke(
        {"messages": [{"role": "user", "content": order}]}, config, context=start_context(mode)
    )
    if asked:
        request = pending_approval(graph, config)
        assert request is not None and len(request["action_requests"]) == len(asked)
        assert till.charged == []
        result = graph.invoke(answer(decisions), config, context=resume_context(resume, mode))
    else:
        result = graph.get_state(config).values
    assert pending_approval(graph, config) is None
    approved = {item for item, d in zip(asked, decisions, strict=True) if d == "approve"}
    allowed = {item for item, kind in zip(items, kinds, strict=True) if kind == "allowed"}
    assert sorted(till.charged) == sorted(allowed | approved)  # each at most once
    answered = {m.tool_call_id for m in result["messages"] if isinstance(m, ToolMessage)}
    assert len(answered) == len(items)
