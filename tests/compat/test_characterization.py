"""Characterization: what this project relies on, checked on whatever versions are installed.

Three groups:

- **Can the graphs run here?** Each graph module needs specific APIs (``ToolNode`` with
  ``InjectedState`` and ``get_runtime`` for ``legacy``; ``create_agent`` and its middleware
  for ``middleware``). When one is missing the test says which, in one line, instead of an
  ImportError deep in a module.
- **Framework pins.** Behaviours of langchain/langgraph the design depends on, checked on
  the framework alone (scripted model, tiny tools, no project code), so an upgrade that
  changes one fails here by name: the ``Command(goto=END)`` that ``create_agent`` ignores,
  the relay-message pitfall of ``return_direct``, a model-call layer that answers in place
  of the model, one ``tools``
  task per tool call, artifacts kept on ``ToolMessage``, prebuilt ``return_direct``.
- **The forced-outcome matrix** of ``client.scenarios`` on each graph, and the model-call
  cap against the default recursion limit.

``python -m tests.compat.run`` runs this file on other releases. An environment where a
graph cannot run at all (langgraph 0.6.6 predates ``create_agent``, so ``middleware`` cannot;
``legacy`` runs there) names it in
``COMPAT_UNRUNNABLE``; those tests then skip with the reason, and fail if nothing blocks.
Everywhere else, a blocker is a failure.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata
import json
import operator
import os
import types
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.errors import GraphRecursionError
from langgraph.graph import END, START, MessagesState, StateGraph
from stop_on_artifact.testing import ScriptedChatModel, tool_call

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = ("legacy", "middleware")
UNRUNNABLE_ENV = "COMPAT_UNRUNNABLE"
"""Comma-separated: graphs (and ``create_agent``) this environment is known not to run."""
ANSWERED = "the model answered after the tools"
PAGE = "page about {query}"


# ---------------------------------------------------------------------------------------
# Versions and blockers.


def version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def versions() -> str:
    names = ("langgraph", "langchain", "langchain-core", "langgraph-prebuilt")
    return ", ".join(f"{name} {version(name)}" for name in names)


def _missing(module: str, names: Sequence[str], why: str) -> list[str]:
    try:
        imported = importlib.import_module(module)
    except ImportError as error:
        return [f"{module} cannot be imported ({error}); {why}"]
    absent = []
    for name in names:
        try:
            getattr(imported, name)
        except Exception:  # a lazy __getattr__ may raise ImportError, not AttributeError
            absent.append(name)
    return [f"{module} has no {', '.join(absent)}; {why}"] if absent else []


def create_agent_blockers() -> list[str]:
    """What ``langchain.agents.create_agent`` with middleware needs, and lacks here."""
    return _missing(
        "langchain.agents", ["create_agent", "AgentState"], "create_agent arrived in langchain 1.0"
    ) + _missing(
        "langchain.agents.middleware",
        ["AgentMiddleware", "ModelRequest", "ModelResponse", "ToolErrorMiddleware", "hook_config"],
        "the middleware graph is built from these",
    )


def blockers(graph: str) -> list[str]:
    """Why ``agent.graphs.<graph>`` cannot run on the installed versions; empty when it can."""
    reasons = _missing(
        "langgraph.prebuilt",
        ["ToolNode", "InjectedState", "tools_condition"],
        "the tools node and the tools are built on them",
    )
    reasons += _missing(
        "langchain_core.tools", ["InjectedToolCallId"], "the tools read their call id through it"
    )
    reasons += _missing(
        "langgraph.runtime", ["Runtime", "get_runtime"], "nodes and tools read the context so"
    )
    if graph == "middleware":
        reasons += _missing(
            "langgraph.prebuilt.tool_node",
            ["ToolCallRequest"],
            "PolicyMiddleware wraps tool calls with it",
        )
        reasons += create_agent_blockers()
    if not reasons:
        try:
            importlib.import_module(f"agent.graphs.{graph}")
        except Exception as error:  # anything else that stops the module: name it
            reasons.append(f"import agent.graphs.{graph} failed: {type(error).__name__}: {error}")
    return reasons


def expected_unrunnable() -> set[str]:
    return {name.strip() for name in os.environ.get(UNRUNNABLE_ENV, "").split(",") if name.strip()}


def require(name: str, reasons: list[str]) -> None:
    """Fail on a blocker, unless this environment declared ``name`` unrunnable: then skip."""
    if name in expected_unrunnable():
        assert reasons, f"{name} was declared unrunnable on {versions()}, but nothing blocks it"
        pytest.skip(f"{name} cannot run on {versions()}: " + "; ".join(reasons))
    assert not reasons, f"{name} cannot run on {versions()}: " + "; ".join(reasons)


def require_graph(graph: str) -> None:
    require(graph, blockers(graph))


def require_create_agent() -> None:
    require("create_agent", create_agent_blockers())


def load_contract() -> types.ModuleType:
    """Import the stop core, ``stop_on_artifact``: importing it builds no graph."""
    return importlib.import_module("stop_on_artifact")


@pytest.mark.parametrize("graph", GRAPHS)
def test_the_graph_can_run_on_these_versions(graph: str) -> None:
    require_graph(graph)
    module = importlib.import_module(f"agent.graphs.{graph}")
    nodes = {
        "legacy": {"agent", "tools", "finalize"},
        "middleware": {"model", "tools"},
    }[graph]
    assert nodes <= set(module.graph.nodes), f"{graph} nodes on {versions()}: {module.graph.nodes}"


def test_the_contract_runs_on_these_versions() -> None:
    """stop_on_artifact needs only langchain-core messages and pydantic: it runs anywhere."""
    contract = load_contract()
    context = importlib.import_module("agent.context").Context(model="offline")
    call = {"name": "search", "args": {}, "id": "c0", "type": "tool_call"}
    for artifact, action in (
        (contract.completed(), "stop"),
        (contract.transient(), "continue"),
        (contract.fatal(), "stop"),
        (contract.policy_block(), "stop"),
        ({"stop": "false", "reason": "completed"}, "continue"),
    ):
        messages = [
            HumanMessage("q"),
            AIMessage("", tool_calls=[call]),
            ToolMessage("page", tool_call_id="c0", name="search", artifact=artifact),
        ]
        assert contract.decide(messages, context)["action"] == action, artifact


# ---------------------------------------------------------------------------------------
# A scripted model and tiny tools: the framework alone.


def scripted(calls: list[str]) -> ScriptedChatModel:
    """First turn: call ``calls`` (one call each, in order). After tools: answer in prose."""

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        if isinstance(messages[-1], HumanMessage) and tools:
            return AIMessage(
                content="",
                tool_calls=[
                    tool_call(name, {"query": f"q{i}"}, f"call_{i}") for i, name in enumerate(calls)
                ],
            )
        return AIMessage(content=ANSWERED)

    return ScriptedChatModel(script=script)


@tool(response_format="content_and_artifact")
def probe(query: str) -> tuple[str, dict[str, Any]]:
    """Look something up."""
    return PAGE.format(query=query), {"stop": True, "reason": "completed"}


@tool(response_format="content_and_artifact", return_direct=True)
def direct_probe(query: str) -> tuple[str, dict[str, Any]]:
    """Look something up; return_direct."""
    return PAGE.format(query=query), {"stop": True, "reason": "completed"}


def model_calls(messages: Sequence[BaseMessage]) -> int:
    """AIMessages the scripted model produced (relays carry tool content instead)."""
    return sum(
        isinstance(m, AIMessage) and (bool(m.tool_calls) or m.content == ANSWERED) for m in messages
    )


def agent_with(middleware: Sequence[Any], tools: Sequence[BaseTool], calls: list[str]) -> Any:
    from langchain.agents import create_agent

    return create_agent(scripted(calls), list(tools), middleware=list(middleware))


def tool_wrapper(
    wrap: Callable[[ToolMessage], Any],
) -> Any:
    """A middleware whose ``wrap_tool_call`` runs the tool, then returns ``wrap(result)``."""
    from langchain.agents.middleware import AgentMiddleware

    class Wrap(AgentMiddleware):  # type: ignore[type-arg]
        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            return wrap(handler(request))

    return Wrap()


def user(text: str = "look it up") -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


# ---------------------------------------------------------------------------------------
# Pins on create_agent.


def test_pin_command_goto_end_from_wrap_tool_call_does_not_end_a_create_agent_run() -> None:
    require_create_agent()
    from langgraph.types import Command

    graph = agent_with(
        [tool_wrapper(lambda result: Command(goto=END, update={"messages": [result]}))],
        [probe],
        ["probe"],
    )
    messages = graph.invoke(user())["messages"]
    assert model_calls(messages) == 2, (
        f"On {versions()} a wrap_tool_call returning Command(goto=END) ended the run "
        "after the tool: create_agent changed; re-check why the stop lives in wrap_model_call"
    )
    assert messages[-1].content == ANSWERED


@pytest.mark.parametrize("relay", [False, True], ids=["result-only", "result-and-relay"])
def test_pin_a_relay_message_hides_the_tool_call_from_the_return_direct_exit(relay: bool) -> None:
    """The article's pitfall: same Command, one extra AIMessage, a different route."""
    require_create_agent()
    from langgraph.types import Command

    def wrap(result: ToolMessage) -> Any:
        update = [result, AIMessage(content=str(result.content))] if relay else [result]
        return Command(update={"messages": update})

    graph = agent_with([tool_wrapper(wrap)], [direct_probe], ["direct_probe"])
    messages = graph.invoke(user())["messages"]
    if relay:
        assert model_calls(messages) == 2, (
            f"On {versions()} a relay AIMessage beside the ToolMessage no longer sends the "
            "run back to the model: the return_direct exit check changed"
        )
        assert messages[-1].content == ANSWERED
    else:
        assert model_calls(messages) == 1, (
            f"On {versions()} a return_direct tool no longer ends the run after the tool"
        )
        assert isinstance(messages[-1], ToolMessage)
        assert messages[-1].content == PAGE.format(query="q0")


def test_pin_a_model_call_layer_that_answers_in_place_of_the_model_ends_the_turn() -> None:
    """A wrap_model_call that returns a reply without calling the model: no extra node."""
    require_create_agent()
    from langchain.agents.middleware import AgentMiddleware, ModelResponse

    class StopOnArtifact(AgentMiddleware):  # type: ignore[type-arg]
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            last = request.state["messages"][-1]
            if isinstance(last, ToolMessage) and (last.artifact or {}).get("stop"):
                return ModelResponse(result=[AIMessage(content=last.content)])
            return handler(request)

    graph = agent_with([StopOnArtifact()], [probe], ["probe"])
    path = [node for update in graph.stream(user(), stream_mode="updates") for node in update]
    assert path == ["model", "tools", "model"], f"path on {versions()}: {path}"
    messages = graph.invoke(user())["messages"]
    assert model_calls(messages) == 1
    assert messages[-1].content == PAGE.format(query="q0")


def test_pin_create_agent_runs_each_tool_call_as_its_own_tools_task() -> None:
    require_create_agent()
    from langchain.agents.middleware import AgentMiddleware

    class Watch(AgentMiddleware):  # type: ignore[type-arg]
        def before_model(self, state: Any, runtime: Any) -> None:
            return None

    graph = agent_with([Watch()], [probe], ["probe", "probe"])
    path = [node for update in graph.stream(user(), stream_mode="updates") for node in update]
    hook = "Watch.before_model"
    assert path == [hook, "model", "tools", "tools", hook, "model"], (
        f"On {versions()} two tool calls in one turn gave the path {path}; "
        "client/scenarios.py expects one `tools` update per call and one hook run after both"
    )


def test_pin_create_agent_stops_on_return_direct_only_when_every_executed_tool_is() -> None:
    require_create_agent()
    graph = agent_with([], [direct_probe, probe], ["direct_probe", "probe"])
    messages = graph.invoke(user())["messages"]
    assert model_calls(messages) == 2, f"create_agent's return_direct rule changed on {versions()}"


# ---------------------------------------------------------------------------------------
# Pins on langgraph alone (these run on langgraph 0.6.6 too).


def test_pin_tool_node_keeps_the_artifact_out_of_the_content() -> None:
    from langgraph.prebuilt import ToolNode

    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode([probe]))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    call = {"name": "probe", "args": {"query": "x"}, "id": "c0", "type": "tool_call"}
    result = builder.compile().invoke({"messages": [AIMessage("", tool_calls=[call])]})
    message = result["messages"][-1]
    assert isinstance(message, ToolMessage)
    assert message.artifact == {"stop": True, "reason": "completed"}
    assert message.content == PAGE.format(query="x")
    assert "stop" not in message.content


def test_pin_a_task_inside_a_node_keeps_its_result_when_the_node_runs_again() -> None:
    """The ``legacy`` tools step runs each call as a ``langgraph.func.task``: one that finished
    is saved at once and given back, not run again, when the failed step runs again."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.func import task

    ran: dict[str, int] = {"a": 0, "b": 0}

    async def call(name: str) -> str:
        ran[name] += 1
        if name == "b" and ran["b"] == 1:
            await asyncio.sleep(0.05)  # "a" has finished by now
            raise RuntimeError("the step dies")
        return name

    call.__name__ = "call"
    run_call = task(call)

    class State(TypedDict):
        done: Annotated[list[str], operator.add]

    async def node(state: State) -> dict[str, list[str]]:
        return {"done": list(await asyncio.gather(run_call("a"), run_call("b")))}

    builder = StateGraph(State)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}

    async def both() -> dict[str, Any]:
        with pytest.raises(RuntimeError):
            await graph.ainvoke({"done": []}, config)
        return dict(await graph.ainvoke(None, config))

    assert asyncio.run(both()) == {"done": ["a", "b"]}
    assert ran == {"a": 1, "b": 2}


def test_pin_prebuilt_react_agent_stops_if_any_tool_is_return_direct() -> None:
    """create_react_agent (deprecated in 1.x) stops when ANY executed tool is return_direct."""
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(scripted(["direct_probe", "probe"]), [direct_probe, probe])
    messages = graph.invoke(user())["messages"]
    assert model_calls(messages) == 1, (
        f"create_react_agent's return_direct rule changed on {versions()}"
    )
    assert isinstance(messages[-1], ToolMessage), "it answers with messages[-1], a tool's output"


def hand_built_router(search: BaseTool, contract: types.ModuleType, context: Any) -> Any:
    """The article's legacy graph: agent -> tools -> finalize, the edge asks decide()."""
    from langgraph.prebuilt import ToolNode

    model = scripted([search.name]).bind_tools([search])

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def route_after_agent(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    def route_after_tools(state: MessagesState) -> str:
        decision = contract.decide(state["messages"], context)
        return "finalize" if decision["action"] == "stop" else "agent"

    def finalize(state: MessagesState) -> dict[str, Any]:
        # The settled tools' content, verbatim, composed by the core.
        decision = contract.decide(state["messages"], context)
        return {"messages": [AIMessage(content=contract.final_text(decision, state["messages"]))]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([search]))
    builder.add_node("finalize", finalize)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route_after_agent, {"tools": "tools", END: END})
    builder.add_conditional_edges(
        "tools", route_after_tools, {"agent": "agent", "finalize": "finalize"}
    )
    builder.add_edge("finalize", END)
    return builder.compile()


@pytest.mark.parametrize(
    ("outcome", "path"),
    [
        ("completed", ["agent", "tools", "finalize"]),
        ("transient", ["agent", "tools", "agent"]),
        ("fatal", ["agent", "tools", "finalize"]),
    ],
)
def test_pin_the_articles_hand_built_router_stops_on_the_artifact(
    outcome: str, path: list[str]
) -> None:
    """The legacy design on any langgraph, with the project's own decide()."""
    contract = load_contract()
    context = importlib.import_module("agent.context").Context(model="offline")
    artifact = getattr(contract, outcome)()

    @tool(response_format="content_and_artifact")
    def search(query: str) -> tuple[str, dict[str, Any]]:
        """Search."""
        return PAGE.format(query=query), artifact

    graph = hand_built_router(search, contract, context)
    seen = [node for update in graph.stream(user(), stream_mode="updates") for node in update]
    assert seen == path, f"{outcome} on {versions()}: {seen}"
    messages = graph.invoke(user())["messages"]
    assert model_calls(messages) == path.count("agent")
    if path[-1] == "finalize":
        assert messages[-1].content == PAGE.format(query="q0")


def default_recursion_limit(probe_steps: int = 200) -> int | None:
    """Steps a graph may take with no ``recursion_limit`` set; None if at least ``probe_steps``."""
    count = {"steps": 0}

    def step(state: MessagesState) -> dict[str, Any]:
        count["steps"] += 1
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges(
        "step", lambda s: END if count["steps"] >= probe_steps else "step", ["step", END]
    )
    try:
        builder.compile().invoke({"messages": []})
    except GraphRecursionError:
        return count["steps"]
    return None


# ---------------------------------------------------------------------------------------
# The project's graphs.


@pytest.fixture(autouse=True)
def payments_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's own payment record (``agent.tools.payments``), never the clone's."""
    path = tmp_path / "payments.sqlite3"
    monkeypatch.setenv("AGENT_PAYMENTS_DB", str(path))
    return path


STEPS_PER_MODEL_CALL = {"legacy": 2, "middleware": 3}
"""Steps a run takes per model call (see the ``max_model_calls`` description); plus 2 in all."""


@dataclass
class Observed:
    """What one run of a project graph showed."""

    path: list[str]
    state: dict[str, Any]
    events: list[dict[str, Any]]
    interrupts: list[Any] = dataclass_field(default_factory=list)
    """The approval requests the run paused on (``on_policy_block="ask"``)."""

    @property
    def decision(self) -> Any:
        return self.state.get("stop_decision")

    @property
    def model_calls(self) -> int:
        from client.scenarios import model_calls

        return model_calls(self.path, self.decision)

    @property
    def answer(self) -> BaseMessage:
        return self.state["messages"][-1]  # type: ignore[no-any-return]


def run_graph(
    graph_name: str, text: str, context: dict[str, Any], resume: Sequence[Any] = ()
) -> Observed:
    """Build ``agent.graphs.<graph_name>`` afresh and run ``text`` with ``context``.

    Only the graph's own module is imported, so ``legacy`` runs where ``middleware``
    cannot (``tests/unit_tests/conftest.py`` builds both). With ``resume``, the one
    approval request the run pauses on is answered with those decisions.
    """
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import Command

    module = importlib.import_module(f"agent.graphs.{graph_name}")
    graph = getattr(module, f"build_{graph_name}")(checkpointer=InMemorySaver())
    # A thread of its own: a purchase's idempotency key names it.
    config: Any = {"configurable": {"thread_id": f"compat-{uuid.uuid4().hex}"}}

    async def run() -> Observed:
        path: list[str] = []
        events: list[dict[str, Any]] = []
        interrupts: list[Any] = []
        inputs: list[Any] = [{"messages": [{"role": "user", "content": text}]}]
        if resume:
            inputs.append(Command(resume={"decisions": list(resume)}))
        for given in inputs:
            async for mode, chunk in graph.astream(
                given, config, context=context, stream_mode=["updates", "custom"]
            ):
                if mode == "updates":
                    path.extend(chunk)
                else:
                    events.append(chunk)
            snapshot = await graph.aget_state(config)
            interrupts.extend(i.value for i in snapshot.interrupts)
        return Observed(path, snapshot.values, events, interrupts)

    return asyncio.run(run())


@pytest.mark.parametrize("graph", GRAPHS)
def test_forced_outcome_matrix(graph: str) -> None:
    require_graph(graph)
    from client.scenarios import APPROVAL_SCENARIOS, SCENARIOS

    mismatches = []
    for scenario in (*SCENARIOS, *APPROVAL_SCENARIOS):
        observed = run_graph(graph, scenario.query, scenario.context, scenario.resume)
        decision = observed.decision or {}
        seen = (decision.get("action"), decision.get("rule"), observed.model_calls, observed.path)
        want = (scenario.action, scenario.rule, scenario.model_calls, scenario.path(graph))
        if seen != want:
            mismatches.append(f"{scenario.name}: got {seen[:3]}, path {seen[3]}; want {want}")
    assert not mismatches, f"{graph} on {versions()}:\n" + "\n".join(mismatches)


def transcript(observed: Observed) -> dict[str, Any]:
    """A run as ``tests/unit_tests/test_golden.py`` normalizes it (ids removed)."""
    messages = []
    for message in observed.state["messages"]:
        entry: dict[str, Any] = {"type": message.type, "content": message.content}
        if isinstance(message, AIMessage) and message.tool_calls:
            entry["tool_calls"] = [
                {"name": c["name"], "args": c["args"]} for c in message.tool_calls
            ]
        if isinstance(message, ToolMessage):
            entry.update(name=message.name, status=message.status, artifact=message.artifact)
        messages.append(entry)
    decision = dict(observed.decision or {})
    decision.pop("tool_call_id", None)
    entry: dict[str, Any] = {
        "path": observed.path,
        "model_calls": observed.model_calls,
        "stop_decision": decision,
        "events": [event["stop_decision"]["rule"] for event in observed.events],
        "messages": messages,
    }
    if observed.interrupts:
        entry["interrupts"] = observed.interrupts
    return entry


@pytest.mark.parametrize("graph", GRAPHS)
def test_golden_transcripts(graph: str) -> None:
    """Every scenario gives the transcript tests/unit_tests/golden holds, message for message."""
    require_graph(graph)
    from client.scenarios import APPROVAL_SCENARIOS, SCENARIOS

    golden = ROOT / "tests" / "unit_tests" / "golden" / graph
    changed = []
    for scenario in (*SCENARIOS, *APPROVAL_SCENARIOS):
        expected = json.loads((golden / f"{scenario.name}.json").read_text("utf-8"))
        observed = run_graph(graph, scenario.query, scenario.context, scenario.resume)
        actual = json.loads(json.dumps(transcript(observed)))
        if actual != expected:
            changed.append(scenario.name)
    assert not changed, f"{graph} on {versions()} differs from its golden transcripts: {changed}"


@pytest.mark.parametrize("graph", GRAPHS)
def test_the_model_call_cap_ends_the_run_within_the_default_recursion_limit(graph: str) -> None:
    """The ceiling ``max_model_calls=50`` fits LangGraph 1.x's default recursion limit.

    langgraph 0.6 defaulted to 25 steps: there the largest cap that fits ends on
    ``model_call_limit``, and one model call more ends on ``step_limit`` at the same call.
    """
    require_graph(graph)
    from stop_on_artifact.testing import MODEL_CALL_LIMIT_MESSAGE

    from agent.context import Context

    field = Context.model_fields["max_model_calls"]
    ceiling = int(next(m.le for m in field.metadata if hasattr(m, "le")))
    limit = default_recursion_limit()
    cap = ceiling if limit is None else min(ceiling, (limit - 2) // STEPS_PER_MODEL_CALL[graph])
    query = "How does a checkpointer work?"
    context = {"force_outcome": "retryable", "max_retries": 50, "max_model_calls": cap}
    try:
        observed = run_graph(graph, query, context)
    except GraphRecursionError:
        pytest.fail(
            f"On {versions()} the default recursion limit is {limit}: max_model_calls="
            f"{cap} ends in GraphRecursionError before the model-call cap"
        )
    assert observed.decision["rule"] == "model_call_limit"
    assert observed.answer.content.endswith(MODEL_CALL_LIMIT_MESSAGE)
    assert observed.answer.content.startswith("**Not searched: ")  # the part, named as not done
    assert observed.model_calls == cap
    if cap < ceiling:  # the boundary is exact: one more model call does not fit, and the
        # run's step limit ends it as a budget would, never GraphRecursionError
        over = run_graph(graph, query, {**context, "max_model_calls": cap + 1})
        assert over.decision["rule"] == "step_limit"
        assert over.answer.content.endswith(MODEL_CALL_LIMIT_MESSAGE)
        assert over.model_calls == cap
