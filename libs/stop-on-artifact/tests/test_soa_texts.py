"""Texts a team can change, and the core's one-scan promises (one warning per bad artifact).

A Spanish set of :class:`StopTexts` goes through :func:`final_text`, through the hand-built
graph's ``StopRouter(settings=StopSettings(texts=...))`` (everywhere, langgraph 0.6.6
included), and per run through a context that sets ``texts``.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import ValidationError
from soa_graphs import build, user
from stop_on_artifact import (
    ANSWER_SEPARATOR,
    MODEL_CALL_LIMIT_MESSAGE,
    RETRY_BUDGET_MESSAGE,
    StopRouter,
    StopSettings,
    StopTexts,
    completed,
    decide,
    final_text,
    not_done_text,
    transient,
)
from stop_on_artifact.testing import ScriptedChatModel, call_then_answer, forced_tool

SPANISH = StopTexts(
    retry_budget="El servicio sigue sin responder; inténtalo más tarde.",
    model_call_limit="No pude terminar en los pasos permitidos.",
    not_done="**Sin hacer: {where} (`{tool}`)**: {why}. Pídelo de nuevo.",
    not_done_part="parte {number} de {count}",
    not_done_whole="esta petición",
    why_transient="falló por un motivo pasajero",
    why_tool_error="la herramienta terminó con un error",
    why_unconfirmed="no se pudo confirmar su resultado",
    why_missing="no devolvió ningún resultado",
)


def call(name: str, call_id: str, query: str = "q") -> dict[str, Any]:
    return {"name": name, "args": {"query": query}, "id": call_id, "type": "tool_call"}


def result(call_id: str, content: str, artifact: Any, name: str = "search") -> ToolMessage:
    return ToolMessage(content=content, tool_call_id=call_id, name=name, artifact=artifact)


def two_parts_one_spent() -> list[BaseMessage]:
    """A page and a mouse; the mouse times out on every try."""
    messages: list[BaseMessage] = [
        HumanMessage("page and mouse"),
        AIMessage("", tool_calls=[call("search", "a"), call("buy", "b")]),
        result("a", "the page", completed()),
        result("b", "timed out", transient(), name="buy"),
    ]
    for n in range(3):
        messages += [
            AIMessage("", tool_calls=[call("buy", f"b{n}")]),
            result(f"b{n}", "timed out", transient(), name="buy"),
        ]
    return messages


def test_the_defaults_are_todays_english() -> None:
    texts = StopTexts()
    assert texts.retry_budget == RETRY_BUDGET_MESSAGE
    assert texts.model_call_limit == MODEL_CALL_LIMIT_MESSAGE
    assert StopSettings().texts == texts
    line = not_done_text(2, 3, None, "buy")
    assert line == (
        "**Not done: part 2 of 3 (`buy`)**: it returned no result, so it was not completed. "
        "Ask again to retry."
    )


def test_a_spanish_set_writes_every_line_of_a_hard_stop() -> None:
    messages = two_parts_one_spent()
    settings = StopSettings(texts=SPANISH)
    decision = decide(messages, settings)
    assert decision["rule"] == "retry_budget"
    assert final_text(decision, messages, settings.texts) == ANSWER_SEPARATOR.join(
        [
            "the page",
            "**Sin hacer: parte 2 de 2 (`buy`)**: falló por un motivo pasajero. Pídelo de nuevo.",
            SPANISH.retry_budget,
        ]
    )
    assert not_done_text(1, 1, None, "buy", SPANISH) == (
        "**Sin hacer: esta petición (`buy`)**: no devolvió ningún resultado. Pídelo de nuevo."
    )


def test_the_model_call_limit_line_is_the_teams() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("q"),
        AIMessage("", tool_calls=[call("search", "a")]),
        result("a", "timed out", transient()),
    ]
    settings = StopSettings(max_model_calls=1, texts=SPANISH)
    decision = decide(messages, settings)
    assert decision["rule"] == "model_call_limit"
    assert final_text(decision, messages, settings.texts).endswith(SPANISH.model_call_limit)


def test_a_tools_own_not_done_line_is_kept() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("q"),
        AIMessage("", tool_calls=[call("buy", "a")]),
        result("a", "timed out", transient(not_done="**No comprado**: ratón."), name="buy"),
    ]
    decision = decide(messages, StopSettings(max_retries=0))
    assert final_text(decision, messages, SPANISH).startswith("**No comprado**: ratón.")


@pytest.mark.parametrize(
    "field",
    ["retry_budget", "model_call_limit", "not_done", "not_done_part", "why_missing"],
)
def test_an_empty_or_overlong_text_is_refused_by_name(field: str) -> None:
    secret = "sk-live-" + "x" * 600
    for bad in ("", secret):
        with pytest.raises(ValidationError) as caught:
            StopTexts(**{field: bad})
        assert field in str(caught.value)
        assert "sk-live" not in str(caught.value)


@pytest.mark.parametrize(
    ("field", "template"),
    [
        ("not_done", "{where} {secret_token}"),
        ("not_done", "{where.__class__}"),
        ("not_done", "{where!r}"),
        ("not_done", "unbalanced { brace"),
        ("not_done_part", "{number} of {where}"),
    ],
)
def test_a_template_may_use_only_its_own_placeholders(field: str, template: str) -> None:
    with pytest.raises(ValidationError) as caught:
        StopTexts(**{field: template})
    assert field in str(caught.value)
    assert template not in str(caught.value)


def test_texts_are_frozen_and_strict() -> None:
    with pytest.raises(ValidationError):
        StopTexts(retry_budget=3)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        StopTexts(unknown="x")  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        SPANISH.retry_budget = "x"


def test_a_run_sets_its_texts_the_way_it_sets_the_other_settings() -> None:
    agent = StopSettings(stop_mode="hard")
    assert agent.for_run({"texts": SPANISH.model_dump()}).texts == SPANISH
    assert agent.for_run({"stop_mode": "never"}).texts == StopTexts()
    assert StopSettings(texts=SPANISH).for_run({"max_retries": 0}).texts == SPANISH


def test_an_invalid_artifact_logs_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    messages: list[BaseMessage] = [
        HumanMessage("q"),
        AIMessage("", tool_calls=[call("search", "a"), call("search", "b")]),
        result("a", "timed out", transient()),
        result("b", "odd", {"stop": "yes"}),
    ]
    with caplog.at_level(logging.WARNING, logger="stop_on_artifact"):
        decision = decide(messages, StopSettings(max_retries=0))  # the retry budget path
    assert decision["rule"] == "retry_budget"
    warnings = [r for r in caplog.records if "invalid artifact" in r.getMessage()]
    assert len(warnings) == 1
    assert "tool_call_id=b" in warnings[0].getMessage()
    assert "odd" not in warnings[0].getMessage()  # never the tool's content


def test_the_hand_built_graph_answers_in_the_teams_language() -> None:
    model = ScriptedChatModel(script=call_then_answer("search"))
    tools = [forced_tool("search", "transient")]
    router_settings = StopSettings(max_retries=1, texts=SPANISH)
    graph = build("router", model, tools, settings=router_settings)
    answer = graph.invoke(user("refund policy"))["messages"][-1]
    assert isinstance(answer, AIMessage)
    assert answer.content == ANSWER_SEPARATOR.join(
        [
            "**Sin hacer: esta petición (`search`)**: falló por un motivo pasajero. "
            "Pídelo de nuevo.",
            SPANISH.retry_budget,
        ]
    )


def test_a_run_context_sets_the_texts_of_a_hand_built_graph() -> None:
    model = ScriptedChatModel(script=call_then_answer("search"))
    tools = [forced_tool("search", "transient")]
    graph = build("router", model, tools, settings=StopSettings(max_retries=0), from_context=True)
    out = graph.invoke(user("q"), context={"texts": {"retry_budget": "Se acabó."}})
    assert out["messages"][-1].content.endswith(ANSWER_SEPARATOR + "Se acabó.")
    plain = graph.invoke(user("q"))["messages"][-1].content
    assert plain.endswith(ANSWER_SEPARATOR + RETRY_BUDGET_MESSAGE)


def test_the_middleware_answers_in_the_teams_language() -> None:
    pytest.importorskip("langchain.agents.middleware")
    model = ScriptedChatModel(script=call_then_answer("search"))
    tools = [forced_tool("search", "transient")]
    graph = build("middleware", model, tools, settings=StopSettings(max_retries=0, texts=SPANISH))
    answer = graph.invoke(user("q"))["messages"][-1]
    assert answer.content.endswith(ANSWER_SEPARATOR + SPANISH.retry_budget)
    assert isinstance(StopRouter(settings=StopSettings(texts=SPANISH)).settings.texts, StopTexts)


def test_a_run_context_sets_the_texts_of_the_middleware() -> None:
    pytest.importorskip("langchain.agents.middleware")
    model = ScriptedChatModel(script=call_then_answer("search"))
    graph = build("middleware", model, [forced_tool("search", "transient")], from_context=True)
    out = graph.invoke(user("q"), context={"max_retries": 0, "texts": {"retry_budget": "Fin."}})
    assert out["messages"][-1].content.endswith(ANSWER_SEPARATOR + "Fin.")
