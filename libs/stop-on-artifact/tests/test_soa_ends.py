"""Where agents end: a declared ``response_format``, a subagent handing back, the step limit.

Each runs sync and async, on the newest releases. With a schema, every way a run ends leaves a
``structured_response`` of it (a tool's artifact may hold it, validated; else the stop spends
the one structured call). ``subagent_stops=True`` lets a deepagents subagent's stop end the
parent's turn. The run's ``recursion_limit`` is a budget: the turn ends with the closing line,
never ``GraphRecursionError``. Then the smaller ones: one field rule for builders and parser, a
call another middleware refused named as not done, and the trimmed-turn bugs.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langchain_core.tools import StructuredTool
from pydantic import BaseModel
from soa_graphs import CLOSING, build, deep, model_calls, modes, needs_langchain, retry_line, user
from soa_graphs import invoke as run
from stop_on_artifact import (
    InvalidArtifactError,
    StopSettings,
    completed,
    decide,
    fatal,
    parse_artifact,
    policy_block,
    transient,
)
from stop_on_artifact._turn import scan_turn
from stop_on_artifact.messages import turn_results
from stop_on_artifact.testing import (
    ScriptedChatModel,
    assert_model_calls,
    assert_stopped,
    call_then_answer,
    forced_tool,
    tool_call,
)

# --- 1. a stop and response_format ----------------------------------------------------------


class Answer(BaseModel):
    text: str


def lookup(structured: dict[str, Any] | None) -> StructuredTool:
    def run_lookup(query: str) -> tuple[str, dict[str, Any]]:
        fields = {} if structured is None else {"structured_response": structured}
        return "Refunds: within 30 days.", completed(**fields)

    return StructuredTool.from_function(
        run_lookup, name="lookup", description="Look up.", response_format="content_and_artifact"
    )


def structured_script(provider: bool) -> Any:
    """Call ``lookup``; then answer in the schema (a JSON reply, or the schema's tool)."""

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        if isinstance(messages[-1], HumanMessage):
            return AIMessage("", tool_calls=[tool_call("lookup", {"query": "refunds"}, "c1")])
        if provider:
            return AIMessage(json.dumps({"text": "from the model"}))
        return AIMessage("", tool_calls=[tool_call("Answer", {"text": "from the model"}, "s1")])

    return script


def structured_agent(strategy: str, structured: dict[str, Any] | None, **settings: Any) -> Any:
    from langchain.agents import create_agent
    from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
    from stop_on_artifact import StopOnArtifactMiddleware

    fmt = ProviderStrategy(Answer) if strategy == "provider" else ToolStrategy(Answer)
    model = ScriptedChatModel(script=structured_script(strategy == "provider"))
    return create_agent(
        model,
        [lookup(structured)],
        middleware=[StopOnArtifactMiddleware(**settings)],
        response_format=fmt,
    )


@needs_langchain
@modes
@pytest.mark.parametrize("strategy", ["tool", "provider"])
async def test_a_tools_structured_answer_ends_the_run_with_no_model_call(
    strategy: str, mode: str
) -> None:
    agent = structured_agent(strategy, {"text": "within 30 days"})
    result = await run(agent, user("Refunds?"), mode)
    assert result["structured_response"] == Answer(text="within 30 days")
    assert result["messages"][-1].content == "Refunds: within 30 days."
    assert_model_calls(result, 1)
    assert assert_stopped(result, "completed")["saved"]["model_calls"] == 1


@needs_langchain
@modes
@pytest.mark.parametrize("strategy", ["tool", "provider"])
async def test_without_one_the_stop_spends_exactly_the_structured_call(
    strategy: str, mode: str
) -> None:
    agent = structured_agent(strategy, None)
    result = await run(agent, user("Refunds?"), mode)
    assert result["structured_response"] == Answer(text="from the model")
    assert result["messages"][-1].content == "Refunds: within 30 days."  # the tool's, verbatim
    assert model_calls(result["messages"]) == 1  # the structured call's reply is replaced
    assert assert_stopped(result, "completed")["saved"] == {
        "model_calls": 0, "input_tokens": 0, "output_tokens": 0,
    }  # fmt: skip


@needs_langchain
@modes
@pytest.mark.parametrize("strategy", ["tool", "provider"])
async def test_a_structured_answer_that_does_not_match_goes_back_to_the_model(
    strategy: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    agent = structured_agent(strategy, {"wrong": "field"})
    with caplog.at_level(logging.WARNING, logger="stop_on_artifact"):
        result = await run(agent, user("Refunds?"), mode)
    assert result["structured_response"] == Answer(text="from the model")
    decision = result["stop_decision"]
    assert (decision["action"], decision["rule"]) == ("continue", "invalid_artifact")
    assert "does not match response_format (fields: text)" in caplog.text
    assert "wrong" not in caplog.text  # the tool's payload is never logged


@needs_langchain
@modes
async def test_polish_and_a_spent_budget_also_leave_a_structured_response(mode: str) -> None:
    polished = await run(structured_agent("tool", None, stop_mode="polish"), user("Refunds?"), mode)
    assert polished["structured_response"] == Answer(text="from the model")
    assert_model_calls(polished, 2)
    spent = structured_agent("tool", {"text": "x"}, max_model_calls=1, stop_mode="never")
    result = await run(spent, user("Refunds?"), mode)
    assert assert_stopped(result, "model_call_limit")
    assert result["structured_response"] == Answer(text="x")  # the settled part's, validated


# --- 2. a subagent's stop ends the parent's turn --------------------------------------------


def parent_script(*subagents: str) -> Any:
    """Delegate to each subagent in one step; then relay what came back."""

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        if isinstance(messages[-1], HumanMessage):
            calls = [
                tool_call("task", {"description": "Refunds?", "subagent_type": name}, f"t{i}")
                for i, name in enumerate(subagents)
            ]
            return AIMessage("", tool_calls=calls)
        relayed = [m.content for m in messages if isinstance(m, ToolMessage)]
        return AIMessage(f"PARENT RELAYS: {relayed}")

    return script


def plain_lookup() -> StructuredTool:
    return StructuredTool.from_function(
        lambda query: "Shipping: 3 days.", name="plain_lookup", description="Look up plainly."
    )


def deep_parent(*subagents: str, compiled: bool = False, stops: bool = True) -> Any:
    from deepagents import create_deep_agent
    from langchain.agents import create_agent
    from stop_on_artifact import StopOnArtifactMiddleware

    specs: list[Any] = []
    for name in dict.fromkeys(subagents):  # one spec per name; the parent may call it twice
        tool = lookup(None) if name == "kb" else plain_lookup()
        model = ScriptedChatModel(script=call_then_answer(tool.name, answer="SUB ANSWER"))
        if compiled:
            runnable = create_agent(model, [tool], middleware=[StopOnArtifactMiddleware()])
            specs.append({"name": name, "description": f"{name}.", "runnable": runnable})
        else:
            specs.append({
                "name": name, "description": f"{name}.", "system_prompt": "Look it up.",
                "model": model, "tools": [tool], "middleware": [StopOnArtifactMiddleware()],
            })  # fmt: skip
    return create_deep_agent(
        model=ScriptedChatModel(script=parent_script(*subagents)),
        subagents=specs,
        middleware=[StopOnArtifactMiddleware(subagent_stops=stops)],
    )


@needs_langchain
@modes
@pytest.mark.parametrize("compiled", [False, True])
async def test_a_subagents_stop_ends_the_parents_turn_verbatim(compiled: bool, mode: str) -> None:
    pytest.importorskip("deepagents")
    result = await run(deep_parent("kb", compiled=compiled), user("Refunds?"), mode)
    assert result["messages"][-1].content == "Refunds: within 30 days."
    assert_model_calls(result, 1)
    decision = assert_stopped(result, "completed")
    assert (decision["tool"], decision["saved"]["model_calls"]) == ("task", 1)
    handed = [m for m in result["messages"] if isinstance(m, ToolMessage)][-1]
    assert parse_artifact(handed.artifact)["subagent_saved_calls"] == 1  # the subagent's own


@needs_langchain
@modes
async def test_off_or_a_subagent_that_does_not_stop_the_parent_goes_on(mode: str) -> None:
    pytest.importorskip("deepagents")
    off = await run(deep_parent("kb", stops=False), user("Refunds?"), mode)
    assert off["messages"][-1].content.startswith("PARENT RELAYS")
    assert_model_calls(off, 2)
    plain = await run(deep_parent("chat"), user("Shipping?"), mode)
    assert plain["messages"][-1].content == "PARENT RELAYS: ['SUB ANSWER']"
    both = await run(deep_parent("kb", "chat"), user("Both?"), mode)  # two task calls, one step
    assert both["messages"][-1].content.startswith("PARENT RELAYS")
    assert "Refunds: within 30 days." in both["messages"][-1].content
    assert both["stop_decision"]["action"] == "continue"  # a plain result the model has not read


# --- 3. the step limit is a budget like the others ------------------------------------------


@modes
@pytest.mark.parametrize(
    ("limit", "settings"), [(6, {}), (8, {}), (20, {"max_retries": 10, "max_model_calls": 20})]
)
async def test_the_step_limit_ends_the_turn_with_the_closing_line(
    kind: str, mode: str, limit: int, settings: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    model = ScriptedChatModel(script=call_then_answer())
    agent = build(kind, model, [forced_tool("search", "transient")], **settings)
    with caplog.at_level(logging.WARNING, logger="stop_on_artifact"):
        result = await run(agent, user("Refunds?"), mode, {"recursion_limit": limit})
    fits = kind != "deep" and limit == 8  # 2 nodes a round: the retry budget comes first
    assert_stopped(result, "retry_budget" if fits else "step_limit")
    answer = result["messages"][-1].content
    assert answer.startswith("**Not done: this request (`search`)**")
    assert (retry_line("search", 3) if fits else CLOSING) in answer
    assert ("raise recursion_limit" in caplog.text) is not fits  # named in the log when it ends


@needs_langchain
@modes
async def test_the_step_limit_holds_in_a_deep_agent(mode: str) -> None:
    pytest.importorskip("deepagents")
    model = ScriptedChatModel(script=call_then_answer("search"))
    agent = deep(model, [forced_tool("search", "transient")])
    result = await run(agent, user("Refunds?"), mode, {"recursion_limit": 8})
    assert_stopped(result, "step_limit")
    assert CLOSING in result["messages"][-1].content


# --- 4. one field rule; a call another middleware refused is a part -------------------------


BUILDERS = {"completed": completed, "transient": transient, "fatal": fatal}
BUILDERS["policy_block"] = policy_block


@pytest.mark.parametrize("builder", sorted(BUILDERS))
@pytest.mark.parametrize(
    "fields",
    [
        {"policy": "spend_cap"},
        {"approval": "approved", "in_place_retries": 1},
        {"items": [1, 2]},
        {"note": "x" * 201},
        {"k" * 60: [1]},
        {"structured_response": {"text": "a"}},
        {"structured_response": "not a dict"},
    ],
)
def test_the_builders_accept_exactly_what_the_parser_accepts(
    builder: str, fields: dict[str, Any]
) -> None:
    reason = builder
    raw = {"stop": reason != "transient", "reason": reason, **fields}
    try:
        parsed: Any = parse_artifact(raw)
    except InvalidArtifactError as error:
        parsed = str(error)
    try:
        built: Any = BUILDERS[builder](**fields)
    except InvalidArtifactError as error:
        built = str(error)
    assert built == parsed  # the same artifact, or the same error
    assert "k" * 41 not in str(built)  # a long field name is never echoed


def test_a_builder_refuses_only_what_it_sets_itself() -> None:
    with pytest.raises(InvalidArtifactError, match="'reason' is set by the builder"):
        completed(reason="fatal")


@needs_langchain
@modes
async def test_a_call_another_middleware_refused_is_named_as_not_done(mode: str) -> None:
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolCallLimitMiddleware
    from stop_on_artifact import StopOnArtifactMiddleware

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        if isinstance(messages[-1], HumanMessage):
            calls = [tool_call("search", {"query": q}, f"c{i}") for i, q in enumerate("ab")]
            return AIMessage("", tool_calls=calls)
        return AIMessage("The model answered.")

    layers: list[Any] = [
        ToolCallLimitMiddleware(tool_name="search", run_limit=1),
        StopOnArtifactMiddleware(max_model_calls=1),
    ]
    agent = create_agent(
        ScriptedChatModel(script=script),
        [forced_tool("search", "completed")],
        middleware=layers,
    )
    result = await run(agent, user("a and b?"), mode)
    parts = result["messages"][-1].content.split("\n\n---\n\n")
    assert parts[0].startswith("# a")
    assert parts[1].startswith("**Not done: part 2 of 2 (`search`)**: the call `query='b'`")


# --- the three bugs -------------------------------------------------------------------------


class Trimmer:
    """A ``before_model`` middleware that removes the reply that issued the last tool step."""

    @staticmethod
    def make() -> Any:
        from langchain.agents.middleware import AgentMiddleware

        class TrimReplies(AgentMiddleware):
            def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
                messages = state["messages"]
                if not isinstance(messages[-1], ToolMessage):
                    return None
                reply = next(m for m in reversed(messages) if isinstance(m, AIMessage))
                return {"messages": [RemoveMessage(id=str(reply.id))]}

        return TrimReplies()


@needs_langchain
@modes
async def test_a_trimmed_turn_keeps_its_budgets(mode: str) -> None:
    from langchain.agents import create_agent
    from stop_on_artifact import StopOnArtifactMiddleware

    def again(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        call = tool_call("search", {"query": "refunds"}, f"c{len(messages)}")
        return AIMessage("", tool_calls=[call])  # the model retries whatever it can see

    agent = create_agent(
        ScriptedChatModel(script=again),
        [forced_tool("search", "transient")],
        middleware=[Trimmer.make(), StopOnArtifactMiddleware()],
    )
    result = await run(agent, user("Refunds?"), mode, {"recursion_limit": 200})
    assert_stopped(result, "retry_budget")  # not step_limit, never GraphRecursionError


def test_the_budgets_hold_on_a_step_another_middleware_emptied() -> None:
    settings = StopSettings(max_model_calls=2)
    messages = [HumanMessage("q", id="h")]
    record = {"replies": ["r1", "r2"], "transients": {}}
    decision = decide(messages, settings, record)  # the two replies were removed
    assert (decision["action"], decision["rule"]) == ("stop", "model_call_limit")


def test_a_transient_counts_once_after_its_reply_is_removed() -> None:
    settings = StopSettings(max_retries=1)
    reply = AIMessage("", id="r1", tool_calls=[tool_call("search", {"query": "q"}, "c1")])
    result = ToolMessage("busy", tool_call_id="c1", artifact=transient())
    seen = scan_turn([HumanMessage("q"), reply, result])
    trimmed = [HumanMessage("q"), result]
    assert scan_turn(trimmed, seen.counted).transients == 1
    assert decide(trimmed, settings, seen.counted)["rule"] != "retry_budget"


def test_the_policy_middlewares_import_error_names_the_public_path() -> None:
    code = (
        "import sys; sys.modules['langchain.agents'] = None\n"
        "try:\n    import stop_on_artifact._policy_middleware\n"
        "except ImportError as error:\n    print(error)"
    )
    said = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert "from stop_on_artifact import PolicyGate" in said
    assert "_policies" not in said


def test_a_turn_of_hundreds_of_calls_pairs_every_retry_in_place() -> None:
    messages: list[BaseMessage] = [HumanMessage("many")]
    for step in range(300):  # 300 parts, each failing once and retried in other words
        calls = [tool_call("search", {"query": f"q{step}"}, f"a{step}")]
        messages += [AIMessage("", id=f"r{step}", tool_calls=calls)]
        messages += [ToolMessage("busy", tool_call_id=f"a{step}", artifact=transient())]
    retry = [tool_call("search", {"query": f"q{i} again"}, f"b{i}") for i in range(300)]
    messages += [AIMessage("", id="last", tool_calls=retry)]
    messages += [
        ToolMessage(f"ok {i}", tool_call_id=f"b{i}", artifact=completed()) for i in range(300)
    ]
    assert [m.tool_call_id for m in turn_results(messages) if m] == [f"b{i}" for i in range(300)]


@needs_langchain
@modes
@pytest.mark.parametrize("stops", [False, True])
@pytest.mark.parametrize("subagents", [("kb", "kb"), ("kb", "chat", "kb")])
async def test_subagents_side_by_side_never_crash_the_parent(
    subagents: tuple[str, ...], stops: bool, mode: str
) -> None:
    pytest.importorskip("deepagents")
    result = await run(deep_parent(*subagents, stops=stops), user("All?"), mode)
    decision = result["stop_decision"]
    assert decision["tool"] == "task"  # the parent's own decision, never a subagent's
    assert decision["tool_call_id"] in {f"t{i}" for i in range(len(subagents))}
    if stops and "chat" not in subagents:  # every subagent stopped: one answer in call order
        assert result["messages"][-1].content == "Refunds: within 30 days."
        assert_model_calls(result, 1)
    else:  # off, or a subagent answered through its model: the parent's model reads them all
        assert result["messages"][-1].content.startswith("PARENT RELAYS")
        assert_model_calls(result, 2)


class Outcome(BaseModel):
    stop: bool
    reason: str
    source: str = "kb"


@dataclasses.dataclass
class OutcomeData:
    stop: bool
    reason: str


class Opaque:
    """Names ``stop`` but is no mapping, model or dataclass."""

    stop = True
    secret = "sk-live-123"


@pytest.mark.parametrize(
    "artifact", [Outcome(stop=True, reason="completed"), OutcomeData(True, "completed")]
)
def test_a_model_or_dataclass_artifact_is_read_as_its_fields(artifact: Any) -> None:
    assert parse_artifact(artifact)["reason"] == "completed"
    step = [
        HumanMessage("q"),
        AIMessage("", tool_calls=[tool_call("lookup", {"query": "q"}, "c1")]),
        ToolMessage("Refunds: within 30 days.", tool_call_id="c1", artifact=artifact),
    ]
    assert decide(step, StopSettings())["rule"] == "completed"


def test_an_artifact_naming_stop_that_cannot_be_read_is_named_in_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    step = [
        HumanMessage("q"),
        AIMessage("", tool_calls=[tool_call("lookup", {"query": "q"}, "c1")]),
        ToolMessage("text", tool_call_id="c1", artifact=Opaque()),
    ]
    with caplog.at_level(logging.WARNING, logger="stop_on_artifact"):
        decision = decide(step, StopSettings())
    assert decision["action"] == "continue"  # read as no artifact: a plain result
    assert "Opaque" in caplog.text and "sk-live" not in caplog.text
