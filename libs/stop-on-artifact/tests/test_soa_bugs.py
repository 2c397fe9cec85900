"""Regression tests for the bugs fixed after f1656f0: each failed there and passes now.

1. An MCP tool's completed result after an in-place retry or a person's approval read as
   ``invalid_artifact``: the marks went beside ``structured_content``, not inside.
2. A resume whose context held an out-of-range setting raised pydantic's ``ValidationError``.
3. ``StopOnArtifactMiddleware`` was generated in ``__new__``: untyped, unpicklable, and
   ``type(mw)(...)`` hit an MRO error.
4. A builder accepted what ``parse_artifact`` then rejected (a 300-character field).
5. Each of a step's parallel calls got the whole in-place retry budget.
6. ``StopRouter(on_model_call=...)`` took a hook it never called.
7. ``StopRouter.after_tools`` failed outside a graph run.
8. A tool could write ``approval``, ``policy`` or ``in_place_retries`` in its artifact.
9. ``PolicyGate.run`` / ``arun`` took a context they never read.
10. A dataclass context naming a setting was ignored without a word.

And ``testing.model_calls`` took only a messages list (a result gave ``KeyError``).

Two kinds of test here fail on the fixed code too, on purpose: a resume with an out-of-range
context logs nothing (the README promises a line naming the fields), and the last section's,
found while writing these. ``test_with_from_context_a_dataclass_setting_still_fails...``
guards what 10 kept: it passed before as well.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import pickle
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import stop_on_artifact
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_config
from langgraph.prebuilt import ToolNode
from soa_graphs import (
    build,
    has_middleware,
    loop_graph,
    model_calls,
    retrying_graph,
    user,
    with_middleware,
)
from soa_policy_graphs import Shop
from soa_policy_graphs import build as build_shop
from stop_on_artifact import (
    Block,
    InvalidArtifactError,
    PolicyGate,
    StopRouter,
    StopSettings,
    StopState,
    completed,
    current_attempt,
    fatal,
    parse_artifact,
    policy_block,
    tool_policy,
    transient,
)
from stop_on_artifact._turn import message_text
from stop_on_artifact.testing import (
    ScriptedChatModel,
    approve,
    assert_model_calls,
    assert_stopped,
    call_then_answer,
    forced_tool,
    pending_approval,
    tool_call,
)
from typing_extensions import TypedDict

MODES = ["sync", "async"]
BUILDERS: dict[str, Callable[..., dict[str, Any]]] = {
    "completed": completed,
    "transient": transient,
    "fatal": fatal,
    "policy_block": policy_block,
}


def thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": "t"}}


def run(graph: Any, mode: str, inputs: Any, config: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Invoke ``graph`` as ``mode`` says: ``invoke`` or ``ainvoke``."""
    if mode == "async":
        result: dict[str, Any] = asyncio.run(graph.ainvoke(inputs, config, **kwargs))
    else:
        result = graph.invoke(inputs, config, **kwargs)
    return result


def tool_messages(result: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in result["messages"] if isinstance(m, ToolMessage)]


def retrying_agent(kind: str, model: BaseChatModel, tools: Sequence[BaseTool], **kw: Any) -> Any:
    """``kind``'s agent retrying transient calls in place (``retry_in_place=True``)."""
    if kind == "router":
        return retrying_graph(model, tools, StopRouter(retry_in_place=True, **kw))
    return with_middleware(model, tools, retry_in_place=True, **kw)


# --- 1. an MCP tool's marks go inside its structured content ------------------------------


@tool(response_format="content_and_artifact")
def kb_lookup(query: str) -> tuple[str, dict[str, Any]]:
    """Look a topic up in the handbook (an MCP tool: its artifact is the structured content)."""
    if current_attempt() == 0:
        return "The index timed out.", {"structured_content": transient()}
    return f"# {query}\n\nSee chapter 2.", {"structured_content": completed()}


@pytest.mark.parametrize("mode", MODES)
def test_mcp_result_after_an_in_place_retry_is_completed(kind: str, mode: str) -> None:
    model = ScriptedChatModel(script=call_then_answer("kb_lookup"))
    result = run(retrying_agent(kind, model, [kb_lookup]), mode, user("parking"))
    assert_stopped(result, "completed")
    assert_model_calls(result, 1)
    assert message_text(result["messages"][-1]) == "# parking\n\nSee chapter 2."
    [message] = tool_messages(result)
    assert list(message.artifact) == ["structured_content"]
    assert message.artifact["structured_content"]["in_place_retries"] == 1


async def test_a_real_mcp_servers_result_after_an_in_place_retry_is_completed(kind: str) -> None:
    pytest.importorskip(
        "langchain_mcp_adapters", reason="langchain-mcp-adapters is a dev dependency"
    )
    from langchain_mcp_adapters.tools import load_mcp_tools
    from mcp.shared.memory import create_connected_server_and_client_session
    from soa_mcp_server import server  # its lookup is transient on a flaky query's first call

    question = f"flaky in place {kind}"
    async with create_connected_server_and_client_session(server) as session:
        [lookup] = [t for t in await load_mcp_tools(session) if t.name == "lookup"]
        model = ScriptedChatModel(script=call_then_answer("lookup"))
        result = await retrying_agent(kind, model, [lookup]).ainvoke(user(question))
    assert_stopped(result, "completed")
    assert_model_calls(result, 1)
    assert message_text(result["messages"][-1]) == f"# {question}\n\nThe page about {question}."


@tool(response_format="content_and_artifact")
def checkout(item: str, amount: float) -> tuple[str, dict[str, Any]]:
    """Buy one item (an MCP tool: its artifact is the structured content)."""
    return f"Bought {item}.", {"structured_content": completed()}


@pytest.mark.parametrize("mode", MODES)
def test_mcp_result_after_a_persons_approval_is_completed(kind: str, mode: str) -> None:
    agent = build_shop(kind, [checkout], checkpointer=InMemorySaver(), asynchronous=mode == "async")
    run(agent, mode, user("desk 900"), thread(), context=Shop(on_block="ask"))
    assert pending_approval(agent, thread()) is not None
    result = run(agent, mode, approve(), thread(), context=Shop(on_block="ask"))
    decision = assert_stopped(result, "completed")
    assert decision.get("approval") == "approved"
    assert message_text(result["messages"][-1]) == "Bought desk."
    [message] = tool_messages(result)
    assert list(message.artifact) == ["structured_content"]
    assert message.artifact["structured_content"]["approval"] == "approved"


# --- 2. a resume's out-of-range context changes nothing ----------------------------------


class RunContext(TypedDict, total=False):
    """A run's context: the stop settings it may set."""

    max_retries: int
    stop_mode: str


@tool_policy("ask_first", on_block="ask")
def ask_first(call: ToolCall, context: Any) -> Block | None:
    return Block(refusal="Not looked up.", description="Look it up?")


@tool(response_format="content_and_artifact")
def lookup(query: str) -> tuple[str, dict[str, Any]]:
    """Look a topic up."""
    return f"Found {query}.", completed()


class GateState(StopState):
    policies_verdict: dict[str, Any] | None


def asking_graph(tools: Sequence[BaseTool]) -> Any:
    """A hand-built graph with ``from_context=True`` and a gate that asks about every call."""
    gate, router = PolicyGate(policies=[ask_first]), StopRouter(from_context=True)
    model = ScriptedChatModel(script=call_then_answer("lookup"))
    node = ToolNode(list(tools), handle_tool_errors=True)

    def agent(state: GateState) -> dict[str, Any]:
        messages = state["messages"]
        reply = router.bind_model(model, tools, state).invoke(messages)
        update = router.turn_update(messages)
        return {"messages": [reply], **update, **gate.record(reply, messages, None)}

    def step(state: GateState, calls: list[ToolCall]) -> dict[str, Any]:
        return {"messages": [state["messages"][-1].model_copy(update={"tool_calls": calls})]}

    def tools_sync(state: GateState) -> dict[str, Any]:
        def run_calls(calls: list[ToolCall]) -> list[ToolMessage]:
            return list(node.invoke(step(state, calls), get_config())["messages"])

        new = gate.run(state, run_calls)
        return {"messages": new, **router.after_tools(state, new)}

    async def tools_async(state: GateState) -> dict[str, Any]:
        async def run_calls(calls: list[ToolCall]) -> list[ToolMessage]:
            return list((await node.ainvoke(step(state, calls), get_config()))["messages"])

        new = await gate.arun(state, run_calls)
        return {"messages": new, **router.after_tools(state, new)}

    tools_node = RunnableLambda(tools_sync, afunc=tools_async, name="tools")
    return loop_graph(
        GateState,
        agent,
        tools_node,
        router,
        context_schema=RunContext,
        checkpointer=InMemorySaver(),
    )


def asking_agent(kind: str, tools: Sequence[BaseTool]) -> Any:
    if kind == "router":
        return asking_graph(tools)
    from langchain.agents import create_agent
    from stop_on_artifact import PolicyMiddleware, StopOnArtifactMiddleware

    middleware: list[Any] = [
        PolicyMiddleware(policies=[ask_first]),
        StopOnArtifactMiddleware(from_context=True),
    ]
    return create_agent(
        ScriptedChatModel(script=call_then_answer("lookup")),
        list(tools),
        middleware=middleware,
        context_schema=RunContext,
        checkpointer=InMemorySaver(),
    )


BAD_CONTEXTS = pytest.mark.parametrize(
    "context", [{"max_retries": 99}, {"stop_mode": "nope"}], ids=["max_retries", "stop_mode"]
)


def resume_with(kind: str, mode: str, context: RunContext) -> dict[str, Any]:
    """Pause a turn started with no setting, then approve with ``context``."""
    agent = asking_agent(kind, [lookup])
    run(agent, mode, user("parking"), thread(), context={})
    assert pending_approval(agent, thread()) is not None
    result = run(agent, mode, approve(), thread(), context=context)
    assert pending_approval(agent, thread()) is None
    return result


@pytest.mark.parametrize("mode", MODES)
@BAD_CONTEXTS
def test_a_resume_with_an_out_of_range_context_keeps_the_turns_settings(
    kind: str, mode: str, context: RunContext
) -> None:
    result = resume_with(kind, mode, context)
    assert_stopped(result, "completed")
    assert message_text(result["messages"][-1]) == "Found parking."


@pytest.mark.parametrize("mode", MODES)
@BAD_CONTEXTS
def test_a_resume_with_an_out_of_range_context_says_so_by_field_never_by_value(
    kind: str, mode: str, context: RunContext, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="stop_on_artifact"):
        resume_with(kind, mode, context)
    [(field, value)] = context.items()
    lines = [r.getMessage() for r in caplog.records if r.name == "stop_on_artifact"]
    assert len(lines) == 1 and field in lines[0], lines  # named ...
    assert str(value) not in lines[0]  # ... never quoted


# --- 3. the middleware is one plain class -------------------------------------------------

needs_middleware = pytest.mark.skipif(not has_middleware(), reason="create_agent is langchain 1.x")


@needs_middleware
@pytest.mark.parametrize(
    "arguments",
    [{}, {"stop_mode": "polish"}, {"retry_in_place": True, "max_retries": 1}],
    ids=["default", "polish", "retry_in_place"],
)
def test_the_middleware_pickles_copies_and_rebuilds_from_its_type(
    arguments: dict[str, Any],
) -> None:
    from langchain.agents import create_agent
    from stop_on_artifact import StopOnArtifactMiddleware

    middleware = StopOnArtifactMiddleware(**arguments)
    rebuilt = type(middleware)(retry_in_place=True)
    assert rebuilt.settings.retry_in_place
    for twin in (pickle.loads(pickle.dumps(middleware)), copy.deepcopy(middleware)):
        assert twin.settings == middleware.settings
        model = ScriptedChatModel(script=call_then_answer("search"))
        agent: Any = create_agent(model, [forced_tool("search")], middleware=[twin])
        result = agent.invoke(user("refunds"))
        assert_stopped(result, "completed")
        assert_model_calls(result, 2 if arguments.get("stop_mode") == "polish" else 1)
    # No class generated at run time: each instance takes one of the module's own classes,
    # the one whose hooks its settings can use (a layer a setting turns off is not there).
    module = sys.modules[StopOnArtifactMiddleware.__module__]
    for made in (middleware, rebuilt):
        assert isinstance(made, StopOnArtifactMiddleware)
        assert getattr(module, type(made).__qualname__) is type(made)
    assert type(StopOnArtifactMiddleware(**arguments)) is type(middleware)


MYPY = "--strict --no-site-packages --ignore-missing-imports --follow-imports=silent"


@needs_middleware
def test_a_misspelt_argument_fails_at_runtime_and_under_mypy_on_either_door(
    tmp_path: Path,
) -> None:
    from stop_on_artifact import StopOnArtifactMiddleware

    # The project's environment has mypy; a user's (the compat environments) may not.
    pytest.importorskip("mypy", reason="mypy is a dev dependency; the project's suite runs it")

    with pytest.raises(TypeError, match="stop_mod"):
        StopOnArtifactMiddleware(stop_mod="polish")  # type: ignore[call-arg]
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        "from stop_on_artifact import StopOnArtifactMiddleware, StopRouter\n"
        "\n"
        'StopOnArtifactMiddleware(stop_mode="polish", retry_in_place=True)\n'
        'StopOnArtifactMiddleware(stop_mod="polish")\n'
        'StopRouter(stop_mode="polish", retry_in_place=True)\n'
        'StopRouter(stop_mod="polish")\n'
        "StopRouter(subagent_stops=True)\n"
    )
    # The library's own source, found before site-packages (which mypy is told to skip, so
    # the check takes seconds: langchain's types cost half a minute on a cold cache).
    source = Path(stop_on_artifact.__file__).parents[1]
    cache = Path(tempfile.gettempdir()) / "stop-on-artifact-mypy-cache"
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", *MYPY.split(), "--cache-dir", str(cache), snippet.name],
        cwd=tmp_path,
        env={"MYPYPATH": str(source), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 3, checked.stdout + checked.stderr
    assert errors[0].startswith('snippet.py:4: error: Unexpected keyword argument "stop_mod"')
    assert errors[1].startswith('snippet.py:6: error: Unexpected keyword argument "stop_mod"')
    assert errors[2].startswith('snippet.py:7: error: Unexpected keyword argument "subagent_')


# --- 4. whatever a builder accepts, the parser accepts -----------------------------------

LIBRARY_FIELDS = frozenset({"stop", "reason", "approval", "policy", "in_place_retries"})
"""The fields only the library writes: a builder refuses them whatever the value."""
KEYS = st.sampled_from(["note", "source", "not_done", *sorted(LIBRARY_FIELDS)])
LONG = st.integers(min_value=0, max_value=700).map(lambda n: "x" * n)
VALUES = st.one_of(
    LONG, st.text(max_size=20), st.integers(), st.floats(allow_nan=False), st.booleans(),
    st.none(), st.lists(st.integers(), max_size=2),
)  # fmt: skip


@settings(deadline=None)
@given(builder=st.sampled_from(sorted(BUILDERS)), fields=st.dictionaries(KEYS, VALUES, max_size=3))
@example(builder="completed", fields={"note": "x" * 300})
@example(builder="fatal", fields={"source": "x" * 201})
@example(builder="transient", fields={"not_done": "x" * 501})
def test_what_a_builder_accepts_the_parser_accepts(builder: str, fields: dict[str, Any]) -> None:
    try:
        artifact = BUILDERS[builder](**fields)
    except InvalidArtifactError:
        if builder == "transient" and fields.get("not_done") is None:
            fields.pop("not_done", None)  # transient(not_done=None) writes no line
        if LIBRARY_FIELDS.isdisjoint(fields):  # else refused for the name alone
            # what the builder refuses, the parser refuses too
            with pytest.raises(InvalidArtifactError):
                parse_artifact({"stop": builder != "transient", "reason": builder, **fields})
        return
    assert parse_artifact(artifact) == artifact


def test_a_field_past_its_limit_is_refused_by_the_builder() -> None:
    with pytest.raises(InvalidArtifactError, match="'note'"):
        completed(note="x" * 300)
    with pytest.raises(InvalidArtifactError, match="'not_done'"):
        transient(not_done="x" * 501)
    assert parse_artifact(completed(note="x" * 200))["note"] == "x" * 200
    assert parse_artifact(transient(not_done="x" * 500))["not_done"] == "x" * 500


# --- 5. a step's parallel calls share the in-place budget ---------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_parallel_calls_share_the_in_place_retry_budget(kind: str, mode: str) -> None:
    ran: list[str] = []
    lock = threading.Lock()

    @tool(response_format="content_and_artifact")
    def busy(query: str) -> tuple[str, dict[str, Any]]:
        """A service that always times out."""
        with lock:
            ran.append(query)
        return "Timed out.", transient()

    model = ScriptedChatModel(script=call_then_answer("busy", calls=3))
    result = run(retrying_agent(kind, model, [busy], max_retries=2), mode, user("q"))
    assert len(ran) - 3 == 2  # three calls, two in-place retries between them all
    decision = assert_stopped(result, "retry_budget")
    assert decision.get("in_place_retries") == 2
    assert_model_calls(result, 1)


# --- 6. the router refuses on_model_call; the middleware calls it --------------------------


@pytest.mark.parametrize("mode", MODES)
def test_on_model_call_is_refused_by_the_router_and_called_by_the_middleware(
    kind: str, mode: str
) -> None:
    seen: list[tuple[int, Any]] = []

    def hook(messages: Sequence[BaseMessage], decision: Any) -> None:
        seen.append((len(messages), decision))

    if kind == "router":
        with pytest.raises(TypeError, match="on_model_call"):
            StopRouter(on_model_call=hook)  # type: ignore[call-arg]
        return
    model = ScriptedChatModel(script=call_then_answer("search"))
    agent = with_middleware(model, [forced_tool("search")], on_model_call=hook, stop_mode="polish")
    result = run(agent, mode, user("refunds"))
    assert_model_calls(result, 2)
    assert [n for n, _ in seen] == [2, 4]  # after each model call: user, call, result, answer
    assert seen[0][1] is None and seen[1][1]["rule"] == "completed"


# --- 7. the router's after_tools works outside a graph run --------------------------------


@pytest.mark.parametrize(("outcome", "route"), [(completed, "finalize"), (transient, "agent")])
def test_after_tools_works_in_plain_python(
    outcome: Callable[[], dict[str, Any]], route: str
) -> None:
    router = StopRouter()
    messages: list[BaseMessage] = [HumanMessage("refunds", id="u1")]
    state: dict[str, Any] = {"messages": messages, **router.turn_update(messages)}
    reply = AIMessage("", id="a1", tool_calls=[tool_call("search", {"query": "refunds"}, "c1")])
    state["messages"] = [*messages, reply]
    new = [ToolMessage("Within 30 days.", tool_call_id="c1", name="search", artifact=outcome())]
    update = router.after_tools(state, new)
    state = {**state, **update, "messages": [*state["messages"], *new]}
    assert update["stop_decision"]["reason"] == outcome()["reason"]
    assert router.route_after_tools(state) == route
    if route == "finalize":
        assert router.finalize(state)["messages"][0].content == "Within 30 days."


# --- 9. the gate takes no context: the verdict recorded with the reply decides -------------


@tool_policy("spend_cap", tools={"checkout"})
def spend_cap(call: ToolCall, context: Shop) -> Block | None:
    if float(call["args"]["amount"]) <= context.cap:
        return None
    return Block(refusal="Above the cap: not bought.", description="never asked")


@pytest.mark.parametrize("mode", MODES)
def test_the_gate_runs_without_a_context_and_the_recorded_verdict_decides(mode: str) -> None:
    for method in (PolicyGate.run, PolicyGate.arun):
        assert list(inspect.signature(method).parameters) == ["self", "state", "run_calls"]
    gate = PolicyGate(policies=[spend_cap])
    messages: list[BaseMessage] = [HumanMessage("desk 900")]
    reply = AIMessage("", tool_calls=[tool_call("checkout", {"item": "desk", "amount": 900}, "c1")])
    ran: list[str] = []

    def run_calls(calls: list[ToolCall]) -> list[ToolMessage]:
        ran.extend(str(c["id"]) for c in calls)
        return [ToolMessage("Bought desk.", tool_call_id=str(c["id"])) for c in calls]

    async def arun_calls(calls: list[ToolCall]) -> list[ToolMessage]:
        return run_calls(calls)

    answers = []
    for context in (Shop(cap=500), Shop(cap=10_000)):
        state = {"messages": [*messages, reply], **gate.record(reply, messages, context)}
        if mode == "async":
            [message] = asyncio.run(gate.arun(state, arun_calls))
        else:
            [message] = gate.run(state, run_calls)
        answers.append(message.content)
    assert answers == ["Above the cap: not bought.", "Bought desk."]
    assert ran == ["c1"]  # only the call the second recorded verdict let through


# --- 10. a dataclass context naming a setting is logged once ------------------------------


@dataclass
class DataclassContext:
    user_id: str = "u-1"
    stop_mode: str = "hard"


def test_an_ignored_dataclass_setting_is_logged_once_naming_the_field(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedChatModel(script=call_then_answer("search"))
    agent = build(kind, model, [forced_tool("search")], context_schema=DataclassContext)
    with caplog.at_level(logging.WARNING, logger="stop_on_artifact"):
        for _ in range(2):
            result = agent.invoke(user("refunds"), context=DataclassContext(stop_mode="never"))
            assert_stopped(result, "completed")  # the constructor's hard mode held
    lines = [r.getMessage() for r in caplog.records if r.name == "stop_on_artifact"]
    assert len(lines) == 1, lines
    assert "sets stop_mode" in lines[0] and "from_context=True" in lines[0]
    assert "never" not in lines[0]


def test_with_from_context_a_dataclass_setting_still_fails_naming_the_field(kind: str) -> None:
    with pytest.raises(TypeError, match="context field stop_mode is a dataclass field"):
        StopSettings().for_run(DataclassContext())
    model = ScriptedChatModel(script=call_then_answer("search"))
    agent = build(
        kind, model, [forced_tool("search")], context_schema=DataclassContext, from_context=True
    )
    with pytest.raises(TypeError, match="context field stop_mode is a dataclass field"):
        agent.invoke(user("refunds"), context=DataclassContext())


# --- testing.model_calls takes a result ---------------------------------------------------


def test_model_calls_takes_the_result_or_its_messages(kind: str) -> None:
    model = ScriptedChatModel(script=call_then_answer("search"))
    tools = [forced_tool("search", ["transient", "success"])]
    result = build(kind, model, tools).invoke(user("parking"))
    assert_stopped(result, "completed")
    assert model_calls(result) == model_calls(result["messages"]) == 2


# --- found while writing these: failing on the fixed code ---------------------------------


def test_the_router_allows_max_retries_transients_as_the_middleware_does(kind: str) -> None:
    """``max_retries=2``: two transients go back to the model, the third stops.

    Since 18da611 the router counts each transient twice (by ``tool_call_id`` while the
    result has no id in ``after_tools``, then by the id ``add_messages`` gives it).
    """
    model = ScriptedChatModel(script=call_then_answer("search"))
    result = build(kind, model, [forced_tool("search", "transient")]).invoke(user("parking"))
    assert_stopped(result, "retry_budget")
    assert len(tool_messages(result)) == 3
    assert_model_calls(result, 3)


@pytest.mark.parametrize("mode", MODES)
def test_an_mcp_tools_in_place_retries_count_as_a_plain_tools_do(kind: str, mode: str) -> None:
    """The in-place count now sits inside ``structured_content``, where nothing reads it."""
    ran: list[int] = []

    @tool(response_format="content_and_artifact")
    def kb_busy(query: str) -> tuple[str, dict[str, Any]]:
        """Look a topic up (an MCP tool whose server is always busy)."""
        ran.append(current_attempt())
        return "The index timed out.", {"structured_content": transient()}

    model = ScriptedChatModel(script=call_then_answer("kb_busy"))
    result = run(retrying_agent(kind, model, [kb_busy], max_retries=2), mode, user("q"))
    decision = assert_stopped(result, "retry_budget")
    assert ran == [0, 1, 2]  # one call, two retries in place: the budget is spent
    assert decision.get("in_place_retries") == 2
    assert_model_calls(result, 1)
