"""The step limit (issue #53, item 1; #61, shape 6): ``recursion_limit`` is a budget in every stack.

A tool that is always transient and generous bounds leave the run's ``recursion_limit`` the
bound that binds. The arithmetic (FINDINGS, "Superstep arithmetic"): the node at index ``i``
of a run sees ``limit - 1 - i`` steps left, and LangGraph raises at a node that sees 0. A stack
is ``(offset, loop, end)``: ``loop`` is one round (every ``before_model`` node + model + every
``after_model`` node + tools; the router: agent + tools), ``offset`` the nodes before the first
model call (``before_agent`` and ``before_model`` nodes; 0 for the router), ``end`` the nodes
after the call that answers (every ``after_model`` and ``after_agent`` node; the router's
``finalize``).

The middleware adds no node: it decides in the model call's layer, so the graph is stock's.
Model call ``k`` sees ``limit - 1 - offset - (k - 1) * loop`` steps left; when that leaves no
room for another round and an answer (``<= loop + end``), a reply that calls tools ends the
turn on ``step_limit`` instead (stock would raise there), and a reply without tools answers as
stock's does. The turn's first call is stock's own. So the smallest limit that ends cleanly is
``offset + loop + end + 2``. The router decides after its tools node: one more round only if
more than ``loop + end`` steps are left, ``(limit - offset - end - 1) // loop`` model calls,
smallest ``offset + loop + end + 1``.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from soa_graphs import (
    CLOSING,
    build,
    invoke,
    model_calls,
    modes,
    needs_langchain,
    noop_hooks,
    retry_line,
    user,
)
from stop_on_artifact.testing import (
    MODEL_CALL_LIMIT_MESSAGE,
    ScriptedChatModel,
    assert_stopped,
    call_then_answer,
    forced_tool,
)

CLOSING_OF = {"model_call_limit": MODEL_CALL_LIMIT_MESSAGE}
CLOSING_OF["step_limit"] = MODEL_CALL_LIMIT_MESSAGE  # the same closing line, named in the log
GENEROUS = {"max_retries": 50, "max_model_calls": 50}

# stack: (offset, loop, end), measured on langchain 1.5.2, langgraph 1.2.24, deepagents 0.7
SHAPES = {
    "alone": (0, 2, 0),  # model | tools: stock's graph
    "before": (1, 3, 0),  # + another before_model node
    "policy": (0, 3, 1),  # + PolicyMiddleware's after_model node
    "crowded": (1, 5, 3),  # ModelCallLimit (before+after_model), an after_agent, policy
    "deep": (1, 2, 1),  # deepagents: + a before_agent and an after_agent node
    "router": (0, 2, 1),  # the hand-built graph: agent | tools; then finalize
}


def smallest(stack: str) -> int:
    offset, loop, end = SHAPES[stack]
    return offset + loop + end + (1 if stack == "router" else 2)


def case(stack: str, *values: Any, xfail: str = "") -> Any:
    """One parameter set; the router's needs no langchain."""
    marks = [] if stack == "router" else [needs_langchain]
    marks += [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(stack, *values, marks=marks)


NOT_REACHED = "another middleware's node comes first and LangGraph stops the run there"
STACKS = [case(name) for name in SHAPES]
FITTING = [case(name, limit) for name in SHAPES for limit in range(smallest(name), 31)]
BELOW = [  # the turn's start names the limit; strictly xfail where no library node runs
    case(name, limit, xfail="" if limit > SHAPES[name][0] else NOT_REACHED)
    for name in SHAPES
    for limit in range(1, smallest(name))
]


def rounds(stack: str, limit: int) -> int:
    """The model calls (one transient each) a run at ``limit`` makes before its step limit."""
    offset, loop, end = SHAPES[stack]
    if stack == "router":
        return (limit - offset - end - 1) // loop
    return max(1, -(-(limit - 1 - offset - loop - end) // loop))  # the call after: dropped


def expected(stack: str, limit: int, settings: dict[str, int]) -> tuple[str, int]:
    """The rule that ends the run and its model calls: the first bound reached, in rule order."""
    bounds = {  # the round after which each bound stops the run
        "retry_budget": settings["max_retries"] + 1,  # more transients than allowed
        "model_call_limit": settings["max_model_calls"],
        "step_limit": rounds(stack, limit),
    }
    calls = min(bounds.values())
    return next(rule for rule, at in bounds.items() if at == calls), calls


def agent_for(stack: str, checkpointer: Any = None, **settings: Any) -> Any:
    model = ScriptedChatModel(script=call_then_answer("search"))
    tools = [forced_tool("search", "transient")]
    if stack in ("router", "deep"):
        if stack == "deep":
            pytest.importorskip("deepagents")
        return build(stack, model, tools, checkpointer=checkpointer, **settings)
    from langchain.agents import create_agent
    from langchain.agents.middleware import ModelCallLimitMiddleware
    from stop_on_artifact import StopOnArtifactMiddleware, tool_policy
    from stop_on_artifact._policy_middleware import PolicyMiddleware

    before_hook, after_hook = noop_hooks()

    allow = tool_policy("allow", tools={"search"})(lambda call, context: None)
    policy = PolicyMiddleware(policies=[allow], name="allow")
    before: dict[str, list[Any]] = {
        "alone": [],
        "before": [before_hook],
        "policy": [policy],
        "crowded": [ModelCallLimitMiddleware(run_limit=99), after_hook, policy],
    }
    stop = StopOnArtifactMiddleware(**settings)
    return create_agent(model, tools, middleware=[*before[stack], stop], checkpointer=checkpointer)


async def run(agent: Any, mode: str, limit: int, thread: str | None = None) -> Any:
    config: dict[str, Any] = {"recursion_limit": limit}
    if thread is not None:
        config["configurable"] = {"thread_id": thread}
    return await invoke(agent, user("Refunds?"), mode, config)


def assert_ended(result: Any, rule: str, calls: int) -> None:
    assert_stopped(result, rule)
    assert model_calls(result) == calls
    turn = result["messages"][-(2 * calls + 1) :]  # the turn: a call and its result per round
    reasons = [(m.artifact or {}).get("reason") for m in turn if isinstance(m, ToolMessage)]
    assert reasons == ["transient"] * calls
    answer = result["messages"][-1].content
    assert answer.startswith("**Not done: this request (`search`)**")
    closing = CLOSING_OF.get(rule) or retry_line("search", calls)
    assert answer.endswith(closing)
    assert (CLOSING in answer) is (rule != "retry_budget")


@pytest.mark.parametrize("stack", STACKS)
def test_the_shapes_are_the_graphs_nodes(stack: str) -> None:
    nodes = [n for n in agent_for(stack).get_graph().nodes if not n.startswith("__")]
    if stack == "router":
        assert sorted(nodes) == ["agent", "finalize", "tools"]
        return
    hooks = ("before_agent", "before_model", "after_model", "after_agent")
    count = {hook: sum(n.endswith(f".{hook}") for n in nodes) for hook in hooks}
    offset = count["before_agent"] + count["before_model"]
    loop = count["before_model"] + count["after_model"] + 2
    assert (offset, loop, count["after_model"] + count["after_agent"]) == SHAPES[stack]


@pytest.mark.parametrize(("stack", "limit"), FITTING)
@modes
async def test_every_limit_from_the_smallest_ends_with_the_closing_line(
    stack: str, limit: int, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="stop_on_artifact"):
        result = await run(agent_for(stack, **GENEROUS), mode, limit)  # never GraphRecursionError
    rule, calls = expected(stack, limit, GENEROUS)
    assert rule == "step_limit"  # generous bounds: the step limit binds up to 30
    assert_ended(result, rule, calls)
    assert "raise recursion_limit" in caplog.text
    assert "at this turn's start" not in caplog.text  # it fits: no alarm at the start


SMALLER = [{"max_retries": 2, "max_model_calls": 50}, {"max_retries": 50, "max_model_calls": 3}]


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("settings", SMALLER)
@modes
async def test_a_smaller_budget_binds_first(
    stack: str, settings: dict[str, int], mode: str
) -> None:
    result = await run(agent_for(stack, **settings), mode, 30)
    rule, calls = expected(stack, 30, settings)
    assert rule != "step_limit"
    assert_ended(result, rule, calls)


@pytest.mark.parametrize(("stack", "limit"), BELOW)
@modes
async def test_below_the_smallest_limit_langgraph_raises_and_the_log_names_it(
    stack: str, limit: int, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """LangGraph's GraphRecursionError, after the turn's start named the limit in the log."""
    with (
        caplog.at_level(logging.WARNING, logger="stop_on_artifact"),
        pytest.raises(GraphRecursionError),
    ):
        await run(agent_for(stack, **GENEROUS), mode, limit)
    assert "at this turn's start" in caplog.text and "raise recursion_limit" in caplog.text


@pytest.mark.parametrize("stack", STACKS)
@modes
async def test_each_turn_of_a_thread_gets_its_own_step_budget(stack: str, mode: str) -> None:
    agent = agent_for(stack, checkpointer=InMemorySaver(), **GENEROUS)
    limit = max(8, smallest(stack))  # 8 fits every stack but the crowded one (11)
    for _ in range(3):
        result = await run(agent, mode, limit, thread=f"{stack}-{mode}")
        assert_ended(result, "step_limit", rounds(stack, limit))  # the same rounds every turn


@needs_langchain
@pytest.mark.parametrize("deep", [False, True])
@modes
async def test_a_strangers_agent_with_default_settings_at_limit_8(deep: bool, mode: str) -> None:
    from langchain.agents import create_agent
    from stop_on_artifact import StopOnArtifactMiddleware

    model = ScriptedChatModel(script=call_then_answer("search"))
    tool = forced_tool("search", "transient")
    if deep:
        create_deep_agent = pytest.importorskip("deepagents").create_deep_agent
        agent = create_deep_agent(model, [tool], middleware=[StopOnArtifactMiddleware()])
    else:
        agent = create_agent(model, [tool], middleware=[StopOnArtifactMiddleware()])
    result = await run(agent, mode, 8)  # deepagents' smallest is 6: 8 fits
    rule, calls = expected("deep" if deep else "alone", 8, {"max_retries": 2, "max_model_calls": 6})
    assert (rule, calls) == (("step_limit", 2) if deep else ("retry_budget", 3))
    assert_ended(result, rule, calls)
