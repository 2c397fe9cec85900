"""A decision holds where it was made: every mixture of one step, however the resume is sent.

One model turn buys what the user listed ("a 100; b 700; z 2000": one ``checkout`` call per
item). ``hard_cap`` refuses anything above 1000; ``spend_cap`` asks a person about anything
above the context's ``cap`` (500 unless the run says otherwise). The step then pauses once,
and a resume answers it: with the context the turn started with, with none, with
conflicting settings (the other ``stop_mode``, a cap of 10,000), or with a lower limit (a cap
of 50, which would block a call nobody was asked about). Whatever the resume carries, a call
runs exactly when it was let through or approved, at most once, and the rest of the turn
decides under the settings the turn started with: the final state is the one a resume with
the same context gives. On a hand-built graph, ``create_agent`` and ``create_deep_agent``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from collections.abc import Sequence
from typing import Any, Literal

import pytest
from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command
from soa_graphs import has_middleware
from soa_policy_graphs import Till, shopper
from stop_on_artifact import (
    ApprovalUsedError,
    Block,
    PolicyGate,
    StopRouter,
    StopState,
    tool_policy,
)
from stop_on_artifact._record import StateSchemaError
from stop_on_artifact.testing import ScriptedChatModel, pending_approval
from typing_extensions import TypedDict


class Shop(TypedDict, total=False):
    """The run's context: the asking cap and the stop settings it sets."""

    cap: float
    stop_mode: Literal["hard", "polish", "never"]


@tool_policy("hard_cap", tools={"checkout"})
def hard_cap(call: ToolCall, context: Shop | None) -> Block | None:
    if float(call["args"]["amount"]) <= 1000:
        return None
    return Block(refusal="Above 1000: **not bought**.", description="never asked")


@tool_policy("spend_cap", tools={"checkout"}, on_block="ask")
def spend_cap(call: ToolCall, context: Shop | None) -> Block | None:
    cap = (context or {}).get("cap", 500)
    if float(call["args"]["amount"]) <= cap:
        return None
    return Block(
        refusal="Above the cap: not bought.",
        rejected="The approver declined: not bought.",
        description=f"Buy {call['args']['item']} for {call['args']['amount']}?",
    )


POLICIES = (hard_cap, spend_cap)


class GateState(StopState):
    policies_verdict: dict[str, Any] | None


def hand_built(till: Till, *, state: type[Any] = GateState) -> Any:
    """The library README's hand-built graph with the gate in both nodes."""
    gate = PolicyGate(policies=POLICIES)
    router = StopRouter(from_context=True)
    node = ToolNode(till.tools, handle_tool_errors=True)
    chat = ScriptedChatModel(script=shopper)

    def agent(state: Any) -> dict[str, Any]:  # the graph's own schema, not a hint's
        messages = state["messages"]
        reply = router.bind_model(chat, till.tools, state).invoke(messages)
        context = _context()
        return {
            "messages": [reply],
            **router.turn_update(messages, context),
            **gate.record(reply, messages, context),
        }

    def tools_node(state: Any) -> dict[str, Any]:
        def run_calls(calls: list[ToolCall]) -> list[ToolMessage]:
            step = state["messages"][-1].model_copy(update={"tool_calls": calls})
            return list(node.invoke({"messages": [step]}, get_config())["messages"])

        new = gate.run(state, run_calls)
        return {"messages": new, **router.after_tools(state, new)}

    builder = StateGraph(state, context_schema=Shop)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools_node)
    builder.add_node("finalize", router.finalize)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    builder.add_conditional_edges(
        "tools", router.route_after_tools, {"agent": "agent", "finalize": "finalize"}
    )
    builder.add_edge("finalize", END)
    return builder.compile(checkpointer=InMemorySaver())


def _context() -> Any:
    from langgraph.runtime import get_runtime

    return get_runtime().context


def with_middleware(till: Till) -> Any:
    from langchain.agents import create_agent
    from stop_on_artifact import StopOnArtifactMiddleware
    from stop_on_artifact._policy_middleware import PolicyMiddleware

    middleware: list[Any] = [
        PolicyMiddleware(policies=POLICIES),
        StopOnArtifactMiddleware(from_context=True),
    ]
    return create_agent(
        ScriptedChatModel(script=shopper),
        till.tools,
        middleware=middleware,
        context_schema=Shop,
        checkpointer=InMemorySaver(),
    )


def deep_agent(till: Till) -> Any:
    from deepagents import create_deep_agent
    from stop_on_artifact import PolicyMiddleware, StopOnArtifactMiddleware

    middleware: list[Any] = [
        PolicyMiddleware(policies=POLICIES),
        StopOnArtifactMiddleware(from_context=True),
    ]
    return create_deep_agent(
        model=ScriptedChatModel(script=shopper),
        tools=till.tools,
        middleware=middleware,
        context_schema=Shop,
        checkpointer=InMemorySaver(),
    )


def has_deepagents() -> bool:
    try:
        import deepagents  # noqa: F401
    except ImportError:
        return False
    return True


PATHS = [
    "hand_built",
    pytest.param("create_agent", marks=pytest.mark.skipif(
        not has_middleware(), reason="create_agent is langchain 1.x"
    )),
    pytest.param("create_deep_agent", marks=pytest.mark.skipif(
        not has_deepagents(), reason="deepagents is the app's dev dependency, not the library's"
    )),
]  # fmt: skip
BUILDERS = {"hand_built": hand_built, "create_agent": with_middleware}


def build(path: str, till: Till) -> Any:
    return deep_agent(till) if path == "create_deep_agent" else BUILDERS[path](till)


# (the user's list, the answers to the asked calls in call order, what is charged)
MIXTURES = {
    "asked-approved+refused": ("b 700; z 2000", ["approve"], ["b"]),
    "asked-rejected+refused": ("b 700; z 2000", ["reject"], []),
    "allowed+asked-approved": ("a 100; b 700", ["approve"], ["a", "b"]),
    "allowed+asked-rejected": ("a 100; b 700", ["reject"], ["a"]),
    "two-asked-split": ("b 700; c 800", ["approve", "reject"], ["b"]),
    "two-asked-split-other": ("b 700; c 800", ["reject", "approve"], ["c"]),
    "all-four": ("a 100; b 700; z 2000; c 800", ["approve", "reject"], ["a", "b"]),
}
RESUMES = ["same", "none", "conflicting", "lower-limit"]


def start_context(mode: str) -> Shop:
    return {"cap": 500, "stop_mode": mode}  # type: ignore[typeddict-item]


def resume_context(kind: str, mode: str) -> Shop | None:
    other = "never" if mode == "hard" else "hard"
    return {
        "same": start_context(mode),
        "none": None,
        "conflicting": {"cap": 10_000, "stop_mode": other},
        "lower-limit": {"cap": 50},
    }[kind]  # type: ignore[return-value]


def answer(decisions: Sequence[str]) -> Command[Any]:
    return Command(resume={"decisions": [{"type": d} for d in decisions]})


def shape(result: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """The final messages without their ids: kind, text, artifact."""
    return [
        (type(m).__name__, str(m.content), getattr(m, "artifact", None)) for m in result["messages"]
    ]


def run_turn(path: str, order: str, decisions: Sequence[str], mode: str, resume: str) -> Any:
    till = Till()
    graph = build(path, till)
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke(
        {"messages": [{"role": "user", "content": order}]}, config, context=start_context(mode)
    )
    request = pending_approval(graph, config)
    assert request is not None
    assert len(request["action_requests"]) == len(decisions)
    assert till.charged == []  # nothing of the step ran before the answer
    context = resume_context(resume, mode)
    result = graph.invoke(answer(decisions), config, context=context)
    assert pending_approval(graph, config) is None
    return till, result


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("mode", ["hard", "never"])
@pytest.mark.parametrize("resume", RESUMES)
@pytest.mark.parametrize("mixture", list(MIXTURES))
def test_a_call_runs_when_allowed_or_approved_and_the_turn_keeps_its_settings(
    path: str, mode: str, resume: str, mixture: str
) -> None:
    order, decisions, charged = MIXTURES[mixture]
    till, result = run_turn(path, order, decisions, mode, resume)
    assert sorted(till.charged) == charged  # create_agent runs a step's calls concurrently
    _, reference = run_turn(path, order, decisions, mode, "same")
    assert shape(result) == shape(reference)
    assert result["stop_decision"] == reference["stop_decision"]
    model_turns = [m for m in result["messages"] if isinstance(m, AIMessage) and m.tool_calls]
    assert len(model_turns) == 1
    calls = model_turns[0].tool_calls
    answered = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert sorted(m.tool_call_id for m in answered) == sorted(str(c["id"]) for c in calls)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("mode", "model_calls"), [("hard", 1), ("never", 2)])
@pytest.mark.parametrize("resume", RESUMES)
def test_the_resumed_turn_decides_under_the_mode_it_started_with(
    path: str, mode: str, model_calls: int, resume: str
) -> None:
    till, result = run_turn(path, "a 100; b 700", ["approve"], mode, resume)
    assert sorted(till.charged) == ["a", "b"]
    decision = result["stop_decision"]
    assert decision["rule"] == ("completed" if mode == "hard" else "stop_mode_never")
    replies = [m for m in result["messages"] if isinstance(m, AIMessage)]
    made = [m for m in replies if m.response_metadata.get("model_name") or m.tool_calls]
    assert len([m for m in replies if m.tool_calls]) == 1
    last = result["messages"][-1]
    if mode == "hard":
        assert "Bought a." in str(last.content) and "Bought b." in str(last.content)
    else:
        assert last.content == "All done."  # the model's second call answered
    assert len(made) <= model_calls


@pytest.mark.parametrize("path", PATHS)
def test_a_resume_with_other_settings_says_so_by_field_never_by_value(
    path: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="stop_on_artifact"):
        till, _ = run_turn(path, "a 100; b 700", ["approve"], "hard", "conflicting")
    assert sorted(till.charged) == ["a", "b"]
    lines = [r.getMessage() for r in caplog.records if r.name == "stop_on_artifact"]
    assert len(lines) == 1, lines
    assert re.search(r"\(stop_mode\)", lines[0])
    assert "never" not in lines[0]


def test_two_threads_reading_other_settings_at_once_log_one_line() -> None:
    # create_agent runs a step's calls in threads; each reads the record at the same moment.
    from langchain_core.messages import HumanMessage
    from stop_on_artifact import StopSettings
    from stop_on_artifact._record import new_record, recorded_settings

    messages = [HumanMessage("a 100", id="race")]
    state = {"messages": messages, "stop_turn": new_record(messages, StopSettings())}
    lines: list[str] = []

    class Slow(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            time.sleep(0.01)  # a handler that writes somewhere: the window of the race
            lines.append(record.getMessage())

    handler, barrier = Slow(), threading.Barrier(4)

    def read() -> None:
        barrier.wait()
        recorded_settings(state, "no record", StopSettings(stop_mode="never"), "run-race")

    logging.getLogger("stop_on_artifact").addHandler(handler)
    try:
        threads = [threading.Thread(target=read) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        logging.getLogger("stop_on_artifact").removeHandler(handler)
    assert len(lines) == 1, lines


def test_a_hand_built_state_without_the_record_fails_naming_the_fix() -> None:
    from langgraph.graph import MessagesState

    class Forgetful(MessagesState):
        stop_decision: Any
        policies_verdict: dict[str, Any] | None

    graph = hand_built(Till(), state=Forgetful)
    with pytest.raises(StateSchemaError, match="stop_turn.*StopState"):
        graph.invoke(
            {"messages": [{"role": "user", "content": "a 100"}]},
            {"configurable": {"thread_id": "t"}},
            context=start_context("hard"),
        )


def test_a_hand_built_state_without_the_verdict_fails_naming_the_key() -> None:
    graph = hand_built(Till(), state=StopState)
    with pytest.raises(StateSchemaError, match="policies_verdict"):
        graph.invoke(
            {"messages": [{"role": "user", "content": "a 100"}]},
            {"configurable": {"thread_id": "t"}},
            context=start_context("hard"),
        )


@pytest.mark.parametrize("path", PATHS)
def test_two_resumes_at_once_run_the_approved_call_once(path: str) -> None:
    till = Till()
    graph = build(path, till)
    config = {"configurable": {"thread_id": "t"}}
    order = {"messages": [{"role": "user", "content": "b 700"}]}
    graph.invoke(order, config, context=start_context("hard"))

    async def both() -> Sequence[Any]:
        return await asyncio.gather(
            graph.ainvoke(answer(["approve"]), config, context=None),
            graph.ainvoke(answer(["approve"]), config, context={"cap": 50}),
            return_exceptions=True,
        )

    outcomes = asyncio.run(both())
    assert till.charged == ["b"]
    used = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(used) == 1 and isinstance(used[0], ApprovalUsedError)
    assert "Bought b." in str(graph.get_state(config).values["messages"][-1].content)
