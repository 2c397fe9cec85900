"""Context validation and the offline model."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from pydantic import ValidationError
from stop_on_artifact import StopSettings, transient

from agent.context import GROQ_DEFAULT_MODEL, Context, default_model, resolve
from agent.models import ModelLoadError, OfflineChatModel, load_model
from agent.tools import TOOLS
from tests.support.graph_runs import build, run


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("stop_mode", "bogus"),
        ("parallel_policy", "most"),
        ("force_outcome", "maybe"),
        ("force_outcome", []),
        ("force_outcome", ["success", "nope"]),
        ("max_retries", -1),
        ("spend_cap", -5),
        ("model", "gpt4"),
        ("temperature", 0.2),
    ],
)
def test_bad_context_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as info:
        Context.model_validate({field: value})
    assert field in str(info.value)


PASTED_SECRET = "sk-pasted-0123456789abcdef"


@pytest.mark.parametrize("field", sorted(Context.model_fields))
def test_bad_context_never_quotes_the_value(field: str) -> None:
    with pytest.raises(ValidationError) as info:
        Context.model_validate({field: PASTED_SECRET + " x"})
    assert field in str(info.value)
    assert PASTED_SECRET not in str(info.value)
    assert PASTED_SECRET not in repr(info.value)


def test_a_model_that_fails_to_load_is_not_quoted() -> None:
    with pytest.raises(ModelLoadError) as info:
        load_model(f"nosuchprovider:{PASTED_SECRET}")
    assert "model" in str(info.value)
    assert PASTED_SECRET not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


async def test_bad_context_fails_the_run(graph_name: str) -> None:
    with pytest.raises(ValidationError, match="stop_mode"):
        await run(build(graph_name), "checkpointer", {"stop_mode": "bogus"})


def test_default_model_follows_groq_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    assert default_model() == "offline" == Context().model
    monkeypatch.setenv("GROQ_API_KEY", "dummy")
    assert Context().model == GROQ_DEFAULT_MODEL


def test_outcome_list_repeats_last() -> None:
    context = Context(force_outcome=["retryable", "success"])
    assert [context.outcome_for(i) for i in range(4)] == [
        "transient",  # the two spellings mean the same outcome
        "success",
        "success",
        "success",
    ]
    assert Context(force_outcome="fatal").outcome_for(9) == "fatal"
    assert Context().outcome_for(0) is None


def bound() -> object:
    return OfflineChatModel().bind_tools(TOOLS)


def test_offline_model_plans_calls() -> None:
    model = OfflineChatModel().bind_tools(TOOLS)
    reply = model.invoke([HumanMessage("checkpointer; streaming ;")])
    assert [c["args"] for c in reply.tool_calls] == [
        {"query": "checkpointer"},
        {"query": "streaming"},
    ]
    assert reply.usage_metadata is not None and reply.usage_metadata["input_tokens"] > 0
    assert reply.response_metadata["model_name"] == "offline"
    buy = model.invoke([HumanMessage("Please buy a red chair for $1,250.50")])
    assert buy.tool_calls[0]["name"] == "checkout"
    assert buy.tool_calls[0]["args"] == {"item": "a red chair", "amount": 1250.5}
    # One call per part, whatever the tool.
    mixed = model.invoke([HumanMessage("buy a laptop for 900; buy a mouse for 20; store")])
    assert [(c["name"], c["args"]) for c in mixed.tool_calls] == [
        ("checkout", {"item": "a laptop", "amount": 900.0}),
        ("checkout", {"item": "a mouse", "amount": 20.0}),
        ("search", {"query": "store"}),
    ]
    assert len({c["id"] for c in mixed.tool_calls}) == 3


def test_offline_model_retries_transient_and_answers_otherwise() -> None:
    model = OfflineChatModel().bind_tools(TOOLS)
    call = {"name": "search", "args": {"query": "store"}, "id": "c1", "type": "tool_call"}
    history = [
        HumanMessage("store"),
        AIMessage("", tool_calls=[call]),
        ToolMessage("503", tool_call_id="c1", name="search", artifact=transient()),
    ]
    retry = model.invoke(history)
    assert retry.tool_calls[0]["args"] == {"query": "store"}
    assert retry.tool_calls[0]["id"] != "c1"
    history[-1] = ToolMessage(
        "# Store\n\nLong-term memory.\n\n## More\n\nText.", tool_call_id="c1", name="search"
    )
    answer = model.invoke(history)
    assert not answer.tool_calls
    assert "Store: Long-term memory." in answer.text
    # No tools bound: always prose.
    assert not OfflineChatModel().invoke([HumanMessage("store")]).tool_calls


def test_offline_model_streams_tool_calls() -> None:
    model = OfflineChatModel().bind_tools(TOOLS)
    chunks = list(model.stream([HumanMessage("checkpointer; store")]))
    total = chunks[0]
    assert isinstance(total, AIMessageChunk)
    for chunk in chunks[1:]:
        assert isinstance(chunk, AIMessageChunk)
        total += chunk
    assert isinstance(total, AIMessageChunk)
    assert [c["args"]["query"] for c in total.tool_calls] == ["checkpointer", "store"]
    assert total.usage_metadata is not None
    history = [HumanMessage("hi"), AIMessage("Here is a long answer with words")]
    words = list(OfflineChatModel().stream(history))
    assert len(words) > 2


async def test_one_model_serves_many_threads_independently(graph_name: str) -> None:
    graph = build(graph_name)
    first = await run(graph, "store", {"force_outcome": "success"}, thread_id="x")
    second = await run(graph, "store", {"force_outcome": "fatal"}, thread_id="y")
    again = await run(graph, "store", {"force_outcome": "success"}, thread_id="z")
    assert first.decision is not None and second.decision is not None
    assert (first.decision["rule"], second.decision["rule"]) == ("completed", "fatal")
    assert again.answer.content == first.answer.content


@pytest.mark.parametrize("payload", [{}, {"messages": []}])
async def test_a_run_without_messages_names_messages(
    graph_name: str, payload: dict[str, Any]
) -> None:
    graph = build(graph_name)
    with pytest.raises(ValueError, match="'messages'"):
        await graph.ainvoke(payload, {"configurable": {"thread_id": "empty"}})


def test_the_context_is_the_librarys_settings_type_and_drives_every_setting_per_run() -> None:
    # One definition: the four fields are StopSettings', defaults, bounds and descriptions.
    assert issubclass(Context, StopSettings)
    for name, field in StopSettings.model_fields.items():
        mine = Context.model_fields[name]
        assert (mine.default, mine.description, mine.metadata) == (
            field.default,
            field.description,
            field.metadata,
        )
    chosen: dict[str, Any] = {"stop_mode": "polish", "parallel_policy": "any"}
    chosen |= {"max_retries": 0, "max_model_calls": 3}
    built = StopSettings()  # what both graphs' router and middleware are built with
    assert built.for_run(resolve({**chosen, "seed": 4})) == StopSettings(**chosen)
    assert built.for_run(resolve(None)) == built
    assert built.for_run(resolve({"seed": 4})) == built


def test_a_missing_provider_key_is_named_not_quoted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    with pytest.raises(ModelLoadError) as info:
        load_model(f"groq:{PASTED_SECRET}")
    assert "GROQ_API_KEY is not set on the server" in str(info.value)
    assert PASTED_SECRET not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
