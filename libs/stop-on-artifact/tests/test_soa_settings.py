"""One settings type, and per-run settings without a trap.

The constructor's settings hold for every run unless the router or middleware is built
with ``from_context=True`` (or ``settings_from_context=``); then a constructor setting is
replaced only by a value the run actually set: a context field's default never replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel, ValidationError
from soa_graphs import build, has_middleware, user
from stop_on_artifact import StopRouter, StopSettings, decide
from stop_on_artifact._settings import MAX_LIMIT, StopMode
from stop_on_artifact.testing import (
    ScriptedChatModel,
    assert_model_calls,
    call_then_answer,
    forced_tool,
)
from typing_extensions import TypedDict


class PydanticContext(BaseModel):
    user_id: str = "u-1"
    stop_mode: StopMode = "hard"
    max_retries: int = 2


@dataclass
class DataclassContext:
    user_id: str = "u-1"
    stop_mode: str = "hard"


class DictContext(TypedDict, total=False):
    user_id: str
    stop_mode: str


POLISH = StopSettings(stop_mode="polish")


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"stop_mode": "sk-secret-bogus"}, "stop_mode"),
        ({"parallel_policy": "sk-secret-bogus"}, "parallel_policy"),
        ({"max_retries": -1}, "max_retries"),
        ({"max_retries": MAX_LIMIT + 1}, "max_retries"),
        ({"max_retries": True}, "max_retries"),
        ({"max_model_calls": 0}, "max_model_calls"),
        ({"max_model_calls": "3"}, "max_model_calls"),
        ({"max_model_call": 3}, "max_model_call"),
    ],
)
def test_a_bad_setting_is_refused_naming_the_field_never_the_value(
    value: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        StopSettings(**value)
    assert field in str(caught.value)
    assert "sk-secret" not in str(caught.value)


def test_settings_are_frozen_and_the_router_takes_only_the_type() -> None:
    with pytest.raises(ValidationError):
        POLISH.stop_mode = "hard"
    with pytest.raises(TypeError, match="StopSettings"):
        StopRouter(settings={"stop_mode": "hard"})  # type: ignore[arg-type]
    assert StopRouter().settings == StopSettings()


def test_for_run_takes_only_what_the_run_set() -> None:
    assert POLISH.for_run(None) is POLISH
    assert POLISH.for_run(PydanticContext()) is POLISH  # defaults are not choices
    assert POLISH.for_run(PydanticContext(stop_mode="hard")).stop_mode == "hard"
    validated = PydanticContext.model_validate({"stop_mode": "never"})
    assert POLISH.for_run(validated).stop_mode == "never"
    assert POLISH.for_run({"stop_mode": "hard", "user_id": "x"}).stop_mode == "hard"
    assert POLISH.for_run({"stop_mode": None}) is POLISH
    with pytest.raises(ValidationError, match="stop_mode"):
        POLISH.for_run({"stop_mode": "bogus"})


@dataclass
class UnrelatedContext:
    user_id: str = "u-1"


class AttributeContext:
    max_retries = 1


@pytest.mark.parametrize(
    ("context", "field", "kind"),
    [
        (DataclassContext(stop_mode="sk-secret-hard"), "stop_mode", "a dataclass field"),
        (AttributeContext(), "max_retries", "an attribute"),
    ],
)
def test_a_context_that_keeps_no_record_of_what_was_set_is_refused_out_loud(
    context: object, field: str, kind: str
) -> None:
    with pytest.raises(TypeError) as caught:
        POLISH.for_run(context)
    message = str(caught.value)
    assert f"context field {field} is {kind}" in message
    assert "settings_from_context=" in message
    assert "pydantic model or TypedDict" in message
    assert "sk-secret" not in message
    assert POLISH.for_run(UnrelatedContext()) is POLISH  # no setting named: nothing to refuse


def test_a_dataclass_context_with_a_setting_fails_the_run_naming_the_field(kind: str) -> None:
    graph = polish_agent(kind, DataclassContext)
    with pytest.raises(TypeError, match="context field stop_mode is a dataclass field"):
        graph.invoke(user("store"), context=DataclassContext(stop_mode="never"))


@pytest.mark.parametrize(
    "context",
    [{"max_retries": MAX_LIMIT + 1}, PydanticContext.model_construct(max_retries=-1)],
    ids=["dict", "model"],
)
def test_an_out_of_range_run_value_fails_the_run_naming_the_field(kind: str, context: Any) -> None:
    graph = polish_agent(kind, PydanticContext)
    with pytest.raises(ValidationError, match="max_retries") as caught:
        graph.invoke(user("store"), context=context)
    assert str(MAX_LIMIT + 1) not in str(caught.value)


def polish_agent(kind: str, context_schema: type[Any], **extra: Any) -> Any:
    model = ScriptedChatModel(script=call_then_answer("search"))
    tools = [forced_tool("search", "success")]
    if "settings_from_context" not in extra:
        extra.setdefault("from_context", True)
    return build(kind, model, tools, context_schema=context_schema, settings=POLISH, **extra)


@pytest.mark.parametrize(
    "context", [PydanticContext(stop_mode="hard"), {"stop_mode": "hard"}], ids=["model", "dict"]
)
def test_without_from_context_a_run_context_changes_nothing_and_says_so_once(
    kind: str, context: Any, caplog: pytest.LogCaptureFixture
) -> None:
    graph = polish_agent(kind, PydanticContext, from_context=False)
    with caplog.at_level("WARNING", logger="stop_on_artifact"):
        first = graph.invoke(user("store"), context=context)
        second = graph.invoke(user("store"), context=context)
    assert_model_calls(first, 2)  # polish held
    assert_model_calls(second, 2)
    lines = [r.getMessage() for r in caplog.records if r.name == "stop_on_artifact"]
    assert len(lines) == 1 and "sets stop_mode" in lines[0] and "from_context=True" in lines[0]
    assert "hard" not in lines[0].replace("stop_mode", "")


def test_from_context_and_settings_from_context_are_one_or_the_other() -> None:
    with pytest.raises(TypeError, match="from_context=True or settings_from_context="):
        StopRouter(from_context=True, settings_from_context=lambda context: None)


@pytest.mark.parametrize("schema", [PydanticContext, DictContext])
def test_a_context_field_default_never_replaces_the_constructor_setting(
    kind: str, schema: type[Any]
) -> None:
    graph = polish_agent(kind, schema)
    context: Any = {} if schema is DictContext else schema()
    result = graph.invoke(user("store"), context=context)
    assert_model_calls(result, 2)  # polish held: one more model call after the stop
    assert graph.invoke(user("store"))["stop_decision"]["rule"] == "completed"


@pytest.mark.parametrize(
    "context", [PydanticContext(stop_mode="hard"), {"stop_mode": "hard"}], ids=["model", "dict"]
)
def test_a_value_the_run_set_replaces_it(kind: str, context: Any) -> None:
    result = polish_agent(kind, PydanticContext).invoke(user("store"), context=context)
    assert_model_calls(result, 1)  # hard, for this run only


def test_a_dataclass_context_drives_settings_through_settings_from_context(kind: str) -> None:
    def settings_from_context(context: DataclassContext | None) -> StopSettings | None:
        return StopSettings(stop_mode=context.stop_mode) if context else None  # type: ignore[arg-type]

    graph = polish_agent(kind, DataclassContext, settings_from_context=settings_from_context)
    assert_model_calls(graph.invoke(user("store"), context=DataclassContext()), 1)
    polished = graph.invoke(user("store"), context=DataclassContext(stop_mode="polish"))
    assert_model_calls(polished, 2)


def test_settings_from_context_must_return_settings(kind: str) -> None:
    graph = polish_agent(kind, DictContext, settings_from_context=lambda context: "hard")
    with pytest.raises(TypeError, match="settings_from_context must return StopSettings"):
        graph.invoke(user("store"), context={})


@pytest.mark.parametrize("owner", ["router", "middleware"])
def test_flat_arguments_like_langchains_middleware(owner: str) -> None:
    if owner == "middleware" and not has_middleware():
        pytest.skip("create_agent is langchain 1.x")
    make: Any = StopRouter
    if owner == "middleware":
        from stop_on_artifact import StopOnArtifactMiddleware

        make = StopOnArtifactMiddleware
    made = make(stop_mode="polish", max_retries=1)
    router = made
    assert router.settings == StopSettings(stop_mode="polish", max_retries=1)
    assert isinstance(make(settings=POLISH), make)
    assert make().__class__ is make
    with pytest.raises(TypeError, match="either settings= or the flat arguments"):
        make(settings=POLISH, max_model_calls=3)


@pytest.mark.parametrize(
    ("argument", "value", "allowed"),
    [
        ("stop_mode", "sk-secret-bogus", "'hard', 'polish' or 'never'"),
        ("parallel_policy", "sk-secret-bogus", "'all', 'priority' or 'any'"),
        ("max_retries", MAX_LIMIT + 1, f"less than or equal to {MAX_LIMIT}"),
        ("max_retries", True, "a valid integer"),
        ("max_model_calls", 0, "greater than or equal to 1"),
    ],
)
def test_a_bad_flat_argument_is_a_value_error_naming_it_and_the_allowed_values(
    argument: str, value: Any, allowed: str
) -> None:
    with pytest.raises(ValueError, match=f"StopRouter argument {argument}") as caught:
        StopRouter(**{argument: value})
    assert allowed in str(caught.value)
    assert "sk-secret" not in str(caught.value)


class LooseSettings:
    """Settings typed as plain strings: what SettingsLike used to accept."""

    stop_mode: str = "hard"
    parallel_policy: str = "all"
    max_retries: int = 2
    max_model_calls: int = 6


def test_a_misspelt_mode_fails_type_checking() -> None:
    # mypy strict warns on an unused ignore: each line below must stay a type error.
    with pytest.raises(ValueError, match="stop_mode"):
        StopRouter(stop_mode="polsh")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="parallel_policy"):
        StopRouter(parallel_policy="every")  # type: ignore[arg-type]
    decide([HumanMessage("hi")], LooseSettings())  # type: ignore[arg-type]
