"""A hard stop's answer in the `response_format` a `create_agent` agent declares."""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from langchain.agents.middleware import (
    ExtendedModelResponse,
    ModelCallResult,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.types import Command
from pydantic import TypeAdapter, ValidationError

from stop_on_artifact._artifact import STRUCTURED_FIELD, contract
from stop_on_artifact._core import Engine
from stop_on_artifact._decision import StopDecision, logger
from stop_on_artifact._record import TURN_KEY

Calls = Generator["ModelRequest[Any] | None", "ModelResponse[Any] | None", Any]


def stopped(
    engine: Engine,
    request: ModelRequest[Any],
    decision: StopDecision,
    sent: Callable[[ModelResponse[Any] | None, Any], ModelResponse[Any]],
    answer: str | list[str | dict[str, Any]] | None = None,
) -> Calls:
    """Answer a stop: the polish call, or a hard stop's answer in the declared schema.

    A hard stop with a declared schema sends one call offered only the schema (none when
    the tool's artifact answered it, or when `max_model_calls=1` leaves none); the polish
    call with a schema is prose, then the structured call.
    """
    state, schema = request.state, request.response_format
    messages = state["messages"]
    if "answer_chars" not in decision:  # the one polish call (prose), then the schema
        prose = sent((yield request.override(tools=[], response_format=None)), decision)
        if schema is None:
            return prose
        asked: list[Any] = [*request.messages, *prose.result]
        shaped = sent((yield request.override(tools=[], messages=asked)), decision)
        return with_schema_answer(decision, prose.result, shaped)
    if answer is None:
        answer = engine.answer(decision, messages)
    reply = AIMessage(content=answer)
    if (payload := schema_payload(decision, messages)) is None:
        if engine.turn_settings(state).max_model_calls == 1:  # no call left for the schema
            return with_schema_answer(decision, [reply], None)
        asked = [*request.messages, reply]
        shaped = sent((yield request.override(tools=[], messages=asked)), decision)
        return with_schema_answer(decision, [reply], shaped)
    shape: Any = getattr(schema, "schema", schema)
    try:
        value = payload if isinstance(shape, dict) else TypeAdapter(shape).validate_python(payload)
    except ValidationError as error:
        fields = {".".join(map(str, e["loc"])) or "(root)" for e in error.errors()}
        logger.warning(
            "structured_response of tool %s does not match response_format (fields: %s): "
            "invalid_artifact, back to the model", decision["tool"], ", ".join(sorted(fields))
        )  # fmt: skip
        again = {k: v for k, v in decision.items() if k != "saved"}
        again.update(action="continue", rule="invalid_artifact", answer_from=[], unsettled=[])
        response = sent((yield request), again)
        return ExtendedModelResponse(response, Command(update={"stop_decision": again}))
    return ModelResponse(result=[reply], structured_response=value)


def with_schema_answer(
    decision: StopDecision, result: list[BaseMessage], shaped: ModelResponse[Any] | None
) -> ModelCallResult[Any]:
    """Return `result` with the schema's answer; without one, None and why, in the decision.

    A reply the strategy retries (ToolStrategy's `handle_errors`) goes back as it came.
    """
    if shaped is not None and shaped.structured_response is not None:
        return ModelResponse(result=result, structured_response=shaped.structured_response)
    if shaped is not None and any(isinstance(m, ToolMessage) for m in shaped.result):
        return shaped
    logger.warning("no structured_response: the model did not answer in the declared schema")
    missing = {**decision, "structured": "missing"}
    none = ModelResponse(result=result, structured_response=None)
    return ExtendedModelResponse(none, Command(update={"stop_decision": missing}))


def declares_schema(state: Mapping[str, Any]) -> bool:
    """Return whether this agent declares a response_format: its turn's record says."""
    record: Mapping[str, Any] = state.get(TURN_KEY) or {}
    return bool(record.get("schema", "structured_response" in state))  # an older record


def schema_payload(decision: StopDecision, messages: Sequence[BaseMessage]) -> Any:
    """Return the structured answer the one settled part's artifact holds, else None."""
    if len(decision["answer_from"]) != 1 or decision["unsettled"]:
        return None
    for message in reversed(messages):
        if isinstance(message, ToolMessage) and message.tool_call_id == decision["answer_from"][0]:
            artifact = contract(message.artifact)
            return artifact.get(STRUCTURED_FIELD) if isinstance(artifact, dict) else None
    return None
