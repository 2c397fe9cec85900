"""A stop and ``response_format``: every run that ends on a stop leaves the schema's answer.

Each way a run ends, under ToolStrategy, ProviderStrategy and AutoStrategy, sync and async:
the model calls are counted by the model itself (the structured call's reply is replaced by
the stop's text), and what each call was offered is kept.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import BaseModel
from soa_graphs import assert_answer_is_settled_content, invoke, modes, needs_langchain
from soa_policy_graphs import REFUSAL, REJECTED, Shop, Till, spend_cap
from stop_on_artifact import completed
from stop_on_artifact.testing import (
    ScriptedChatModel,
    answer_in_schema,
    approve,
    assert_stopped,
    assert_structured,
    call_then_answer,
    forced_tool,
    reject,
    tool_call,
)

pytestmark = needs_langchain
strategies = pytest.mark.parametrize("strategy", ["tool", "provider", "auto"])
TEXT = {"text": "from the model"}


class Answer(BaseModel):
    text: str


class Counted:
    """A scripted model that keeps what each call was offered (tool names, or the schema)."""

    def __init__(self, script: Any) -> None:
        self.offered: list[list[str]] = []
        self.script = script

    def __call__(self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> Any:
        self.offered.append(
            [t["function"]["name"] if "function" in t else t["type"] for t in tools]
        )
        return self.script(messages, tools)

    @property
    def calls(self) -> int:
        return len(self.offered)


def fmt(strategy: str) -> Any:
    from langchain.agents.structured_output import AutoStrategy, ProviderStrategy, ToolStrategy

    return {"tool": ToolStrategy, "provider": ProviderStrategy, "auto": AutoStrategy}[strategy](
        Answer
    )


def agent(
    strategy: str,
    tools: list[BaseTool],
    model: Counted,
    *,
    extra: Sequence[Any] = (),
    checkpointer: Any = None,
    context_schema: Any = None,
    **settings: Any,
) -> Any:
    from langchain.agents import create_agent
    from stop_on_artifact import StopOnArtifactMiddleware

    return create_agent(
        ScriptedChatModel(script=model),
        tools,
        middleware=[*extra, StopOnArtifactMiddleware(**settings)],
        response_format=fmt(strategy),
        checkpointer=checkpointer,
        context_schema=context_schema,
    )


def schema_only(strategy: str) -> list[str]:
    """What the structured call is offered: the schema, no ordinary tool."""
    return ["json_schema"] if strategy == "provider" else ["Answer"]


def lookup(structured: dict[str, Any] | None = None) -> BaseTool:
    def run_lookup(query: str) -> tuple[str, dict[str, Any]]:
        fields = {} if structured is None else {"structured_response": structured}
        return "Refunds: within 30 days.", completed(**fields)

    return StructuredTool.from_function(
        run_lookup, name="lookup", description="Look up.", response_format="content_and_artifact"
    )


# --- each end of a run ------------------------------------------------------------------------

ENDS: dict[str, tuple[Any, dict[str, Any], str]] = {
    # tool outcomes, settings, the rule the run ends on
    "completed": ("completed", {}, "completed"),
    "fatal": ("fatal", {}, "fatal"),
    "retry_budget": ("transient", {"max_retries": 1}, "retry_budget"),
    "model_call_limit": (None, {"max_model_calls": 3}, "model_call_limit"),
}


def plain_search() -> BaseTool:
    return StructuredTool.from_function(
        lambda query: "Still looking.", name="search", description="Look up."
    )


@strategies
@modes
@pytest.mark.parametrize("end", list(ENDS))
async def test_every_stop_leaves_the_schemas_answer_with_exactly_one_call(
    end: str, strategy: str, mode: str
) -> None:
    outcome, settings, rule = ENDS[end]
    tool = plain_search() if outcome is None else forced_tool("search", outcome)
    script = call_then_answer("search") if outcome else always("search")
    model = Counted(answer_in_schema(Answer, TEXT, script))
    result = await invoke(agent(strategy, [tool], model, **settings), user("refunds"), mode)
    decision = assert_stopped(result, rule)
    assert_structured(result, Answer(**TEXT))
    rounds = {"retry_budget": 2, "model_call_limit": 2}.get(end, 1)  # the cap keeps one call
    assert model.calls == rounds + 1
    assert model.offered[-1] == schema_only(strategy)
    assert_answer_is_settled_content(result)  # the stop's own text, every part
    assert decision["saved"]["model_calls"] == 0  # the structured call is not saved


def always(name: str) -> Any:
    """Call ``name`` on every reply that can (a plain tool the model never tires of)."""

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        if not tools:
            return AIMessage("done")
        return AIMessage("", tool_calls=[tool_call(name, {"query": "q"}, f"c{len(messages)}")])

    return script


def user(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


@strategies
@modes
async def test_a_tools_structured_answer_spends_no_call(strategy: str, mode: str) -> None:
    model = Counted(answer_in_schema(Answer, TEXT, call_then_answer("lookup")))
    built = agent(strategy, [lookup({"text": "within 30 days"})], model)
    result = await invoke(built, user("Refunds?"), mode)
    assert_structured(result, Answer(text="within 30 days"))
    assert model.calls == 1
    assert result["messages"][-1].content == "Refunds: within 30 days."


@strategies
@modes
async def test_the_step_limit_leaves_the_schemas_answer(strategy: str, mode: str) -> None:
    model = Counted(answer_in_schema(Answer, TEXT, call_then_answer("search")))
    built = agent(strategy, [forced_tool("search", "transient")], model, max_retries=50)
    result = await invoke(built, user("refunds"), mode, {"recursion_limit": 10})
    assert_stopped(result, "step_limit")
    assert_structured(result, Answer(**TEXT))
    assert model.offered[-1] == schema_only(strategy)


@strategies
@modes
async def test_a_tool_error_goes_back_to_the_model_which_answers_in_the_schema(
    strategy: str, mode: str
) -> None:
    def broken(query: str) -> str:
        raise ToolException(query)

    tool = StructuredTool.from_function(
        broken, name="search", description="Look up.", handle_tool_error=True
    )
    model = Counted(answer_in_schema(Answer, TEXT, call_then_answer("search")))
    result = await invoke(agent(strategy, [tool], model), user("refunds"), mode)
    assert result["stop_decision"]["rule"] == "tool_error"
    assert_structured(result, Answer(**TEXT))
    assert model.calls == 2  # create_agent's own path: the model answers


@strategies
@modes
async def test_a_two_part_stop_answers_both_parts_and_the_schema(strategy: str, mode: str) -> None:
    model = Counted(answer_in_schema(Answer, TEXT, call_then_answer("search", calls=2)))
    result = await invoke(agent(strategy, [forced_tool("search")], model), user("a"), mode)
    assert_stopped(result, "completed")
    assert_structured(result, Answer(**TEXT))
    assert str(result["messages"][-1].content).count("The page about a") == 1
    assert model.calls == 2


@strategies
@modes
async def test_polish_keeps_the_prose_last_and_the_schema_beside_it(
    strategy: str, mode: str
) -> None:
    prose = "Refunds take 30 days, as the handbook says."

    def polish(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        if not tools:
            return AIMessage(prose)
        return call_then_answer("search")(messages, tools)

    model = Counted(answer_in_schema(Answer, TEXT, polish))
    built = agent(strategy, [forced_tool("search")], model, stop_mode="polish")
    result = await invoke(built, user("refunds"), mode)
    assert result["messages"][-1].content == prose
    assert_structured(result, Answer(**TEXT))
    assert model.offered[1] == [] and model.offered[2] == schema_only(strategy)
    assert model.calls == 3


@strategies
@modes
async def test_never_is_create_agents_own_path(strategy: str, mode: str) -> None:
    model = Counted(answer_in_schema(Answer, TEXT, call_then_answer("search")))
    built = agent(strategy, [forced_tool("search")], model, stop_mode="never")
    result = await invoke(built, user("refunds"), mode)
    assert result["stop_decision"]["rule"] == "stop_mode_never"
    assert_structured(result, Answer(**TEXT))
    assert model.calls == 2 and "search" in model.offered[-1]  # not restricted


@strategies
@modes
async def test_a_checkpointed_second_turn_answers_afresh(strategy: str, mode: str) -> None:
    answers = iter([{"text": "first"}, {"text": "second"}])
    current: dict[str, Any] = {}

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        if isinstance(messages[-1], HumanMessage):
            current.update(next(answers))
        return answer_in_schema(Answer, current, call_then_answer("search"))(messages, tools)

    model = Counted(script)
    built = agent(strategy, [forced_tool("search")], model, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    first = await invoke(built, user("a"), mode, config)
    second = await invoke(built, user("b"), mode, config)
    assert_structured(first, Answer(text="first"))
    assert_structured(second, Answer(text="second"))
    assert "The page about b" in str(second["messages"][-1].content)
    assert model.calls == 4


# --- the strategy's own error handling ----------------------------------------------------


@modes
async def test_a_tool_strategy_retry_keeps_the_stop_and_offers_no_ordinary_tool(mode: str) -> None:
    tries: Iterator[dict[str, Any]] = iter([{"wrong": 1}, TEXT])

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        if any(t.get("function", {}).get("name") == "search" for t in tools):
            return call_then_answer("search")(messages, tools)
        return AIMessage("", tool_calls=[tool_call("Answer", next(tries), f"s{len(messages)}")])

    model = Counted(script)
    result = await invoke(agent("tool", [forced_tool("search")], model), user("a"), mode)
    assert_stopped(result, "completed")
    assert_structured(result, Answer(**TEXT))
    assert model.offered[1:] == [["Answer"], ["Answer"]]
    assert "The page about a" in str(result["messages"][-1].content)


@modes
async def test_a_provider_strategy_answer_that_does_not_parse_raises(mode: str) -> None:
    from langchain.agents.structured_output import StructuredOutputValidationError

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        if any("function" in t for t in tools):
            return call_then_answer("search")(messages, tools)
        return AIMessage("not json")

    built = agent("provider", [forced_tool("search")], Counted(script))
    with pytest.raises(StructuredOutputValidationError):
        await invoke(built, user("a"), mode)


@pytest.mark.parametrize("strategy", ["tool", "auto"])  # ProviderStrategy raises (above)
@modes
async def test_a_model_that_ignores_the_schema_leaves_none_and_says_why(
    strategy: str, mode: str
) -> None:
    model = Counted(call_then_answer("search", answer="plain words"))
    result = await invoke(agent(strategy, [forced_tool("search")], model), user("a"), mode)
    assert result["structured_response"] is None
    assert result["stop_decision"]["structured"] == "missing"
    assert "The page about a" in str(result["messages"][-1].content)
    with pytest.raises(AssertionError, match="missing"):
        assert_structured(result)


@modes
async def test_max_model_calls_one_leaves_no_call_for_the_schema(mode: str) -> None:
    model = Counted(answer_in_schema(Answer, TEXT, call_then_answer("search")))
    built = agent("tool", [forced_tool("search")], model, max_model_calls=1)
    result = await invoke(built, user("a"), mode)
    assert_stopped(result, "completed")
    assert model.calls == 1
    assert result["stop_decision"]["structured"] == "missing"


# --- a policy: refused, or asked and answered later by a fresh agent ------------------------


def shop_agent(strategy: str, model: Counted, saver: Any) -> Any:
    from stop_on_artifact import PolicyMiddleware

    return agent(
        strategy,
        Till().tools,
        model,
        extra=[PolicyMiddleware(policies=[spend_cap])],
        checkpointer=saver,
        context_schema=Shop,
    )


def buys(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
    if isinstance(messages[-1], HumanMessage):
        args = {"item": "desk", "amount": 900}
        return AIMessage("", tool_calls=[tool_call("checkout", args, "c1")])
    return AIMessage("bought")


@strategies
@modes
@pytest.mark.parametrize("how", ["refused", "approved", "rejected"])
async def test_a_policy_stop_leaves_the_schemas_answer(strategy: str, mode: str, how: str) -> None:
    saver, config = InMemorySaver(), {"configurable": {"thread_id": "t"}}
    model = Counted(answer_in_schema(Answer, TEXT, buys))
    on_block = "refuse" if how == "refused" else "ask"
    context = Shop(on_block=on_block)  # type: ignore[arg-type]
    built = shop_agent(strategy, model, saver)
    if mode == "async":
        result = await built.ainvoke(user("desk"), config, context=context)
    else:
        result = built.invoke(user("desk"), config, context=context)
    if how != "refused":
        assert "__interrupt__" in result
        fresh = shop_agent(strategy, model, saver)  # another process, no context
        answer: Command[Any] = approve() if how == "approved" else reject()
        result = await invoke(fresh, answer, mode, config)
    assert_structured(result, Answer(**TEXT))
    text = str(result["messages"][-1].content)
    if how == "approved":
        assert result["stop_decision"]["rule"] == "completed" and "desk" in text
    else:
        assert result["stop_decision"]["rule"] == "policy_block"
        assert text == (REFUSAL if how == "refused" else REJECTED)
    assert model.offered[-1] == schema_only(strategy)
    assert [m for m in result["messages"] if isinstance(m, ToolMessage)]


# --- whether a schema is declared is the agent's setting, not a key in the thread (#61) --------


def plain_agent(model: Counted, saver: Any, **settings: Any) -> Any:
    from langchain.agents import create_agent
    from stop_on_artifact import StopOnArtifactMiddleware

    middleware = [StopOnArtifactMiddleware(**settings)]
    return create_agent(
        ScriptedChatModel(script=model), [forced_tool("search")], middleware=middleware,
        checkpointer=saver,
    )  # fmt: skip


@pytest.mark.parametrize("strategy", ["tool", "provider"])
@modes
@pytest.mark.parametrize("left", ["an_answer", "none"])
async def test_a_schema_another_agent_declared_costs_no_call(
    strategy: str, mode: str, left: str, caplog: pytest.LogCaptureFixture
) -> None:
    saver, config = InMemorySaver(), {"configurable": {"thread_id": "t"}}
    earlier = Counted(answer_in_schema(Answer, TEXT, call_then_answer("search")))
    calls = 1 if left == "none" else 25  # one: no call left for the schema, None in the thread
    built = agent(
        strategy, [forced_tool("search")], earlier, checkpointer=saver, max_model_calls=calls
    )
    first = await invoke(built, user("a"), mode, config)
    assert (first["structured_response"] is None) == (left == "none")
    caplog.clear()
    model = Counted(call_then_answer("search"))
    result = await invoke(plain_agent(model, saver), user("b"), mode, config)
    decision = assert_stopped(result, "completed")
    assert model.calls == 1
    assert "structured" not in decision and decision["saved"]["model_calls"] == 1
    assert "The page about b" in str(result["messages"][-1].content)
    assert "declared schema" not in caplog.text


def prose_or(script: Any) -> Any:
    """Write prose when offered no tool (the polish call); else ``script``."""

    def reply(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        return AIMessage("Polished prose.") if not tools else script(messages, tools)

    return reply


@pytest.mark.parametrize("strategy", ["tool", "provider"])
@modes
@pytest.mark.parametrize("cap", [1, 2])
async def test_polish_and_the_schema_call_count_against_max_model_calls(
    strategy: str, mode: str, cap: int
) -> None:
    model = Counted(answer_in_schema(Answer, TEXT, prose_or(call_then_answer("search"))))
    settings: dict[str, Any] = {"stop_mode": "polish", "max_model_calls": cap}
    built = agent(strategy, [forced_tool("search")], model, **settings)
    result = await invoke(built, user("a"), mode)
    decision = assert_stopped(result, "completed")
    assert model.calls == cap  # no polish call: the stop's own text answers
    assert "The page about a" in str(result["messages"][-1].content)
    assert "answer_chars" in decision and [] not in model.offered
    if cap == 1:  # nor a call for the schema
        assert decision["structured"] == "missing" and result["structured_response"] is None
    else:
        assert_structured(result, Answer(**TEXT))
        assert model.offered[-1] == schema_only(strategy)


@modes
async def test_polish_at_max_model_calls_one_answers_with_the_stops_text(mode: str) -> None:
    model = Counted(prose_or(call_then_answer("search")))
    built = plain_agent(model, None, stop_mode="polish", max_model_calls=1)
    result = await invoke(built, user("a"), mode)
    decision = assert_stopped(result, "completed")
    assert model.calls == 1
    assert "The page about a" in str(result["messages"][-1].content)
    assert decision["saved"]["model_calls"] == 1  # the polish call it skipped
