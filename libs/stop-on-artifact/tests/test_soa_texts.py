"""Texts a team can change, and the core's one-scan promises (one warning per bad artifact).

A hard stop's own lines are plain ``str`` arguments of the router and the middleware
(``retry_budget_message``, ``model_call_limit_message``, ``not_done_message``) and of
:func:`final_text`, with today's English as defaults; a tool's own ``not_done`` line wins.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from soa_graphs import build, retry_line, user
from stop_on_artifact import StopRouter, StopSettings, completed, decide, final_text, transient
from stop_on_artifact._decision import (
    ANSWER_SEPARATOR,
    MODEL_CALL_LIMIT_MESSAGE,
    NOT_DONE_MESSAGE,
    RETRY_BUDGET_MESSAGE,
)
from stop_on_artifact.testing import ScriptedChatModel, call_then_answer, forced_tool

SPANISH: dict[str, Any] = {
    "retry_budget_message": "El servicio sigue sin responder; inténtalo más tarde.",
    "model_call_limit_message": "No pude terminar en los pasos permitidos.",
    "not_done_message": "**Sin hacer: `{tool}`**: pídelo de nuevo.",
}


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
    router = StopRouter()
    assert router.texts == {
        "retry_budget_message": RETRY_BUDGET_MESSAGE,
        "model_call_limit_message": MODEL_CALL_LIMIT_MESSAGE,
        "not_done_message": NOT_DONE_MESSAGE,
    }
    messages = two_parts_one_spent()
    decision = decide(messages, StopSettings())
    assert final_text(decision, messages).split(ANSWER_SEPARATOR)[1] == (
        "**Not done: part 2 of 2 (`buy`)**: it failed for a reason that may pass (a timeout "
        "or a busy service), so it was not completed. Ask again to retry."
    )


def test_a_spanish_set_writes_every_line_of_a_hard_stop() -> None:
    messages = two_parts_one_spent()
    decision = decide(messages, StopSettings())
    assert decision["rule"] == "retry_budget"
    assert final_text(decision, messages, **SPANISH) == ANSWER_SEPARATOR.join(
        ["the page", "**Sin hacer: `buy`**: pídelo de nuevo.", SPANISH["retry_budget_message"]]
    )


def test_the_model_call_limit_line_is_the_teams() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("q"),
        AIMessage("", tool_calls=[call("search", "a")]),
        result("a", "timed out", transient()),
    ]
    decision = decide(messages, StopSettings(max_model_calls=1))
    assert decision["rule"] == "model_call_limit"
    text = final_text(decision, messages, **SPANISH)
    assert text.endswith(SPANISH["model_call_limit_message"])


def test_a_tools_own_not_done_line_is_kept() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("q"),
        AIMessage("", tool_calls=[call("buy", "a")]),
        result("a", "timed out", transient(not_done="**No comprado**: ratón."), name="buy"),
    ]
    decision = decide(messages, StopSettings(max_retries=0))
    assert final_text(decision, messages, **SPANISH).startswith("**No comprado**: ratón.")


@pytest.mark.parametrize(
    "field", ["retry_budget_message", "model_call_limit_message", "not_done_message"]
)
def test_an_empty_text_is_refused_by_name(field: str) -> None:
    for bad in ("", "   ", 3):
        with pytest.raises(ValueError) as caught:
            StopRouter(**{field: bad})  # type: ignore[arg-type]
        assert field in str(caught.value)


@pytest.mark.parametrize(
    "template",
    ["{where} {secret_token}", "{where.__class__}", "{where!r}", "unbalanced { brace"],
)
def test_a_template_may_use_only_its_own_placeholders(template: str) -> None:
    with pytest.raises(ValueError) as caught:
        StopRouter(not_done_message=template)
    assert "not_done_message" in str(caught.value)
    assert template not in str(caught.value)


@pytest.mark.parametrize("template", ["{where} {why}", "{tries:>3}", "{tool!r}", "a { brace"])
def test_the_retry_budget_line_may_use_only_its_own_placeholders(template: str) -> None:
    with pytest.raises(ValueError) as caught:
        StopRouter(retry_budget_message=template)
    assert "retry_budget_message" in str(caught.value)
    assert template not in str(caught.value)
    StopRouter(retry_budget_message="{where} {tool} {tries} {{literal}}")


def test_a_spent_budget_names_the_part_it_stopped_retrying() -> None:
    messages = two_parts_one_spent()
    decision = decide(messages, StopSettings())
    closing = final_text(decision, messages).split(ANSWER_SEPARATOR)[-1]
    assert closing == (  # named as its not-done line names it: never its arguments
        "**Stopped retrying part 2 of 2 (`buy`)**: tried 4×, the service is still unavailable. "
        "Please try again in a few minutes."
    )
    mine = "{tool} {where}: {tries}"
    assert final_text(decision, messages, retry_budget_message=mine).endswith("buy part 2 of 2: 4")


def test_texts_are_not_settings() -> None:
    with pytest.raises(ValueError, match="texts"):
        StopSettings(texts={"retry_budget": "x"})  # type: ignore[call-arg]
    assert StopSettings().for_run({"stop_mode": "never"}).stop_mode == "never"


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
    graph = build("router", model, tools, max_retries=1, **SPANISH)
    answer = graph.invoke(user("refund policy"))["messages"][-1]
    assert isinstance(answer, AIMessage)
    assert answer.content == ANSWER_SEPARATOR.join(
        ["**Sin hacer: `search`**: pídelo de nuevo.", SPANISH["retry_budget_message"]]
    )
    plain = build("router", model, tools, max_retries=0).invoke(user("q"))["messages"][-1]
    assert plain.content.endswith(ANSWER_SEPARATOR + retry_line("search", 1))


def test_the_middleware_answers_in_the_teams_language() -> None:
    pytest.importorskip("langchain.agents.middleware")
    model = ScriptedChatModel(script=call_then_answer("search"))
    tools = [forced_tool("search", "transient")]
    graph = build("middleware", model, tools, max_retries=0, **SPANISH)
    answer = graph.invoke(user("q"))["messages"][-1]
    assert answer.content.endswith(ANSWER_SEPARATOR + SPANISH["retry_budget_message"])
