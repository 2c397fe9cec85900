"""Every door the same (#62): what a stranger's agent broke, each sync and async.

1. A person's approval holds for the model's retry of the call it answers, whatever the
   resume's context: a recorded verdict applies before any policy or context is read.
2. A tool that returns a ``Command`` carrying its ``ToolMessage`` (the ``InjectedToolCallId``
   pattern) is read as the bare ``ToolMessage`` is: retried in place, its approval recorded.
3. ``StopRouter(retry_in_place=True)`` retries in place in a hand-built graph whose
   ``ToolNode`` runs calls through the router, and says so when no call does.
4. An error speaks of the door the user built: a ``create_agent`` user is never told to
   return ``StopRouter.turn_update``.
6. deepagents with ``skills=`` (a ``before_model`` hook placed after the user's middleware):
   the stop decides after every such hook, so the agent runs and stops.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime
from langgraph.types import Command
from soa_graphs import hand_built, loop_graph, modes, needs_langchain, user
from soa_graphs import invoke as run
from stop_on_artifact import (
    Block,
    PolicyGate,
    StopRouter,
    StopState,
    completed,
    tool_policy,
    transient,
)
from stop_on_artifact.testing import (
    ScriptedChatModel,
    approve,
    assert_model_calls,
    assert_stopped,
    call_then_answer,
    forced_tool,
    pending_approval,
)


def timing_out_shop() -> tuple[Any, Any, list[float]]:
    """A checkout that times out once, then pays; the README's spend cap, whose mode reads the
    context (which a resume does not carry); and the amounts the checkout was called with."""
    attempts: list[float] = []

    @tool(response_format="content_and_artifact")
    def checkout(amount: float) -> tuple[str, dict[str, object]]:
        """Pay for the order."""
        attempts.append(amount)
        if len(attempts) == 1:
            return "The payment service timed out.", transient()
        return f"Paid {amount:.2f}.", completed()

    @tool_policy("spend_cap", tools={"checkout"}, on_block=lambda context: context["on_block"])
    def spend_cap(call: Any, context: Any) -> Block | None:
        if float(call["args"]["amount"]) <= 500:
            return None
        return Block(refusal="Above the 500 limit: not paid.", description="Pay above 500?")

    return checkout, spend_cap, attempts


@needs_langchain
@modes
async def test_an_approval_holds_for_the_retry_of_its_call_with_no_context(mode: str) -> None:
    from langchain.agents import create_agent
    from stop_on_artifact import PolicyMiddleware, StopOnArtifactMiddleware

    checkout, spend_cap, attempts = timing_out_shop()
    stack: list[Any] = [PolicyMiddleware(policies=[spend_cap]), StopOnArtifactMiddleware()]
    model = ScriptedChatModel(script=call_then_answer("checkout"))
    shop = create_agent(model, [checkout], middleware=stack, checkpointer=InMemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": f"retry-{mode}"}}
    await run(shop, {"messages": [user("900")["messages"][0]]}, mode, config,
              context={"on_block": "ask"})  # fmt: skip
    assert pending_approval(shop, config) is not None
    paid = await run(shop, approve(), mode, config)  # no context; the retry is the same call
    assert paid["messages"][-1].content == "Paid 900.00."
    assert attempts == [900.0, 900.0]  # the approved call, then the model's retry: no new ask
    assert pending_approval(shop, config) is None
    decision = assert_stopped(paid, "completed")
    assert decision.get("approval") == "approved"


@modes
@pytest.mark.parametrize("wrap", [True, False])
async def test_the_router_retries_in_place_through_toolnode(
    wrap: bool, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    if not hasattr(pytest.importorskip("langgraph.prebuilt.tool_node"), "ToolCallRequest"):
        pytest.skip("ToolNode(wrap_tool_call=...) is langgraph 1.x; 0.6 calls router.run_tool")
    said: list[str] = []

    @tool(response_format="content_and_artifact")
    def search(query: str) -> tuple[str, dict[str, object]]:
        """Look up."""
        said.append(query)
        if len(said) == 1:
            return "The search service timed out.", transient()
        return f"Found {query}", completed()

    model = ScriptedChatModel(script=call_then_answer("search"))
    graph = hand_built(model, [search], StopRouter(retry_in_place=True), wrap=wrap)
    with caplog.at_level("WARNING", logger="stop_on_artifact"):
        result = await run(graph, user("Refunds?"), mode, {})
    decision = assert_stopped(result, "completed")
    if wrap:  # the transient was retried in place: one model call
        assert decision.get("in_place_retries") == 1
        assert_model_calls(result, 1)
        assert "no tool call ran through this router" not in caplog.text
    else:  # the model retried it, and the log says why retry_in_place did nothing
        assert "in_place_retries" not in decision
        assert_model_calls(result, 2)
        assert "wrap_tool_call=router.wrap_tool_call" in caplog.text


@needs_langchain
@modes
async def test_deepagents_with_skills_runs_and_stops(mode: str, tmp_path: Path) -> None:
    deepagents = pytest.importorskip("deepagents")
    from stop_on_artifact import StopOnArtifactMiddleware

    skill = tmp_path / "skills" / "refunds"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: refunds\ndescription: How refunds work.\n---\n\nLook it up.\n", "utf-8"
    )
    model = ScriptedChatModel(script=call_then_answer("search"))
    agent = deepagents.create_deep_agent(
        model=model,
        tools=[forced_tool("search", "completed")],
        middleware=[StopOnArtifactMiddleware()],
        skills=[str(tmp_path / "skills")],
    )
    nodes = [n for n in agent.get_graph().nodes if n.endswith(".before_model")]
    assert any(n.startswith("SkillsMiddleware") for n in nodes), nodes  # a hook after the stop
    result = await run(agent, user("Refunds?"), mode, {})
    assert_stopped(result, "completed")
    assert result["messages"][-1].content == "# Refunds?\n\nThe page about Refunds?."
    assert_model_calls(result, 1)


def commanding(name: str, said: list[str]) -> Any:
    """A tool answering with a Command that carries its ToolMessage: transient, then completed."""

    @tool(name)
    def answer(query: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Look up, or pay."""
        said.append(query)
        first = len(said) == 1
        text, artifact = ("Timed out.", transient()) if first else (f"Done: {query}.", completed())
        message = ToolMessage(text, tool_call_id=tool_call_id, name=name, artifact=artifact)
        return Command(update={"messages": [message]})

    return answer


@needs_langchain
@modes
async def test_a_command_result_is_retried_in_place(mode: str) -> None:
    from langchain.agents import create_agent
    from stop_on_artifact import StopOnArtifactMiddleware

    said: list[str] = []
    model = ScriptedChatModel(script=call_then_answer("lookup"))
    stack: list[Any] = [StopOnArtifactMiddleware(retry_in_place=True)]
    agent = create_agent(model, [commanding("lookup", said)], middleware=stack)
    result = await run(agent, user("refunds"), mode, {})
    decision = assert_stopped(result, "completed")
    assert decision.get("in_place_retries") == 1 and len(said) == 2
    assert_model_calls(result, 1)
    assert result["messages"][-1].content == "Done: refunds."


@needs_langchain
@modes
async def test_a_command_results_approval_is_recorded_and_holds_for_its_retry(mode: str) -> None:
    from langchain.agents import create_agent
    from stop_on_artifact import PolicyMiddleware, StopOnArtifactMiddleware

    @tool_policy("spend_cap", tools={"checkout"}, on_block="ask")
    def spend_cap(call: Any, context: Any) -> Block | None:
        return Block(refusal="Not paid.", description="Pay?")

    said: list[str] = []
    stack: list[Any] = [PolicyMiddleware(policies=[spend_cap]), StopOnArtifactMiddleware()]
    model = ScriptedChatModel(script=call_then_answer("checkout"))
    agent = create_agent(
        model, [commanding("checkout", said)], middleware=stack, checkpointer=InMemorySaver()
    )
    config: dict[str, Any] = {"configurable": {"thread_id": f"command-{mode}"}}
    await run(agent, user("900"), mode, config)
    assert pending_approval(agent, config) is not None
    paid = await run(agent, approve(), mode, config)
    assert pending_approval(agent, config) is None  # the retry carried the approval
    assert paid["messages"][-1].content == "Done: 900."
    decision = assert_stopped(paid, "completed")
    assert decision.get("approval") == "approved" and len(said) == 2


class GatedState(StopState):
    policies_verdict: dict[str, Any] | None


@modes
async def test_a_command_result_in_a_hand_built_graph_keeps_the_middlewares_promises(
    mode: str,
) -> None:
    """The gate marks the Command's approval, the router retries it in place and decides."""

    @tool_policy("spend_cap", tools={"checkout"}, on_block="ask")
    def spend_cap(call: Any, context: Any) -> Block | None:
        return Block(refusal="Not paid.", description="Pay?")

    said: list[str] = []
    checkout = commanding("checkout", said)
    gate, router = PolicyGate(policies=[spend_cap]), StopRouter(retry_in_place=True)
    model = ScriptedChatModel(script=call_then_answer("checkout"))

    def agent(state: GatedState) -> dict[str, Any]:
        reply = router.bind_model(model, [checkout], state).invoke(state["messages"])
        update = {**router.turn_update(state), **gate.record(reply, state["messages"], None)}
        return {"messages": [reply], **update}

    def tools(state: GatedState) -> list[Any]:
        def run_calls(calls: list[Any]) -> list[Any]:
            call = {**calls[0], "type": "tool_call"}
            return [router.run_tool(lambda: checkout.invoke(call), state)]

        results = gate.run(state, run_calls)  # a Command per call: its ToolMessage marked
        assert all(isinstance(result, Command) for result in results)
        return [*results, router.after_tools(state, results)]

    graph = loop_graph(GatedState, agent, tools, router, checkpointer=InMemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": f"hand-command-{mode}"}}
    await run(graph, user("900"), mode, config)
    assert pending_approval(graph, config) is not None
    paid = await run(graph, approve(), mode, config)
    assert paid["messages"][-1].content == "Done: 900."
    decision = assert_stopped(paid, "completed")
    assert decision.get("approval") == "approved" and decision.get("in_place_retries") == 1
    assert len(said) == 2 and pending_approval(graph, config) is None
    assert_model_calls(paid, 1)


@modes
async def test_in_a_hand_built_graph_an_approval_holds_for_its_retry_with_no_context(
    mode: str,
) -> None:
    """The README's context-read mode, a resume with no context, a transient then completed."""
    checkout, spend_cap, attempts = timing_out_shop()

    gate, router = PolicyGate(policies=[spend_cap]), StopRouter()
    model = ScriptedChatModel(script=call_then_answer("checkout"))

    def agent(state: GatedState, runtime: Runtime[Any]) -> dict[str, Any]:
        reply = router.bind_model(model, [checkout], state).invoke(state["messages"])
        screened = gate.record(reply, state["messages"], runtime.context)
        return {"messages": [reply], **router.turn_update(state), **screened}

    def tools(state: GatedState) -> dict[str, Any]:
        def run_calls(calls: list[Any]) -> list[Any]:
            return [checkout.invoke({**call, "type": "tool_call"}) for call in calls]

        new = gate.run(state, run_calls)
        return {"messages": new, **router.after_tools(state, new)}

    graph = loop_graph(GatedState, agent, tools, router, checkpointer=InMemorySaver())
    config: dict[str, Any] = {"configurable": {"thread_id": f"hand-retry-{mode}"}}
    await run(graph, user("900"), mode, config, context={"on_block": "ask"})
    assert pending_approval(graph, config) is not None
    paid = await run(graph, approve(), mode, config)  # no context; the retry is the same call
    assert paid["messages"][-1].content == "Paid 900.00."
    assert attempts == [900.0, 900.0] and pending_approval(graph, config) is None
    decision = assert_stopped(paid, "completed")
    assert decision.get("approval") == "approved"


@needs_langchain
def test_a_missing_record_is_explained_in_the_middlewares_terms() -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage
    from stop_on_artifact import StopOnArtifactMiddleware
    from stop_on_artifact._record import StateSchemaError
    from stop_on_artifact.testing import tool_call

    stack: list[Any] = [StopOnArtifactMiddleware(retry_in_place=True)]
    model = ScriptedChatModel(script=call_then_answer("search"))
    agent: Any = create_agent(
        model, [forced_tool("search")], middleware=stack, checkpointer=InMemorySaver()
    )
    config: dict[str, Any] = {"configurable": {"thread_id": "no-record"}}
    reply = AIMessage("", tool_calls=[tool_call("search", {"query": "refunds"}, "c0")])
    agent.update_state(config, {"messages": [user("refunds")["messages"][0], reply]}, "model")
    with pytest.raises(StateSchemaError) as raised:
        agent.invoke(None, config)
    said = str(raised.value)
    assert said.startswith("StopOnArtifactMiddleware found no record of this turn"), said
    assert "StopRouter" not in said and "_WithToolLayer" not in said


@needs_langchain
def test_each_door_shows_the_keyword_arguments_it_honours_and_documents_each() -> None:
    import inspect

    from stop_on_artifact import StopOnArtifactMiddleware, StopSettings

    shared = {*StopSettings.model_fields, "settings", "from_context", "settings_from_context",
              "on_decision", "retry_budget_message", "model_call_limit_message",
              "not_done_message"}  # fmt: skip
    own = {StopRouter: shared, StopOnArtifactMiddleware: shared | {"on_model_call",
           "subagent_stops"}}  # fmt: skip
    for door, names in own.items():
        parameters = inspect.signature(door).parameters.values()
        assert {p.name for p in parameters} == names, door
        assert all(p.kind is p.KEYWORD_ONLY for p in parameters), door
        documented = inspect.getdoc(door) or ""
        assert all(f"`{n}`" in documented or f"{n}:" in documented for n in names), door
    for layered in (True, False):  # a wrap_tool_call layer only where a setting uses one
        stop = StopOnArtifactMiddleware(retry_in_place=layered)
        assert (
            isinstance(stop, StopOnArtifactMiddleware) and stop.settings.retry_in_place is layered
        )
        has_layer = type(stop).wrap_tool_call is not StopOnArtifactMiddleware.wrap_tool_call
        assert has_layer is layered
