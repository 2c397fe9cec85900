"""Test harness for any agent on the core: scripted model, forced outcomes, stop assertions."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Annotated, Any, Literal, cast, get_args

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.messages.tool import ToolCall, ToolMessage, tool_call_chunk
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import InjectedState
from langgraph.types import Command
from pydantic import BaseModel, Field

from stop_on_artifact import StopDecision, completed, fatal, policy_block, transient
from stop_on_artifact._approval import is_approval_request
from stop_on_artifact._artifact import contract
from stop_on_artifact._decision import (
    ANSWER_SEPARATOR,
    MODEL_CALL_LIMIT_MESSAGE,
    RETRY_BUDGET_MESSAGE,
)
from stop_on_artifact._turn import invocation_index, latest_tool_step, message_text, turn_start

__all__ = [
    "ANSWER_SEPARATOR", "MODEL_CALL_LIMIT_MESSAGE", "RETRY_BUDGET_MESSAGE", "ScriptedChatModel",
    "answer_in_schema", "approve", "assert_model_calls", "assert_stopped", "assert_structured",
    "call_then_answer", "forced_tool", "pending_approval", "reject", "tool_call",
]  # fmt: skip
Script = Callable[[Sequence[BaseMessage], Sequence[dict[str, Any]]], AIMessage]
"""`(messages, tools) -> AIMessage`: the bound tools, in OpenAI format (empty when none)."""
_Tools = Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool]
_Stop = list[str] | None
_Run = CallbackManagerForLLMRun | None
_ARun = AsyncCallbackManagerForLLMRun | None
_WORDS = re.compile(r"\S+\s*|\s+")
_HAS_CHUNK_POSITION = "chunk_position" in AIMessageChunk.model_fields  # langchain-core 1.x


def tool_call(tool: dict[str, Any] | str, args: dict[str, Any], call_id: str) -> ToolCall:
    """Build one tool call for a scripted reply; `tool` is a bound tool or a tool name."""
    name = tool if isinstance(tool, str) else tool["function"]["name"]
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


class ScriptedChatModel(BaseChatModel):
    """A fake chat model: each reply is what `script` returns for the call's history and tools.

    Replies carry `model_name` and approximate usage; a stream's last chunk holds the tool
    calls. A deterministic model overrides `respond` (stable in a major release).
    """

    script: Script | None = None
    model_name: str = "scripted"

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(
        self, tools: _Tools, *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Return a bound copy whose script sees `tools` (`tool_choice` is ignored)."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def respond(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]
    ) -> AIMessage:
        """Return the reply to one call: the script's (a ValueError without one), with metadata."""
        if self.script is None:
            msg = "ScriptedChatModel needs a script (or a subclass that overrides respond)"
            raise ValueError(msg)
        message = self.script(messages, tools)
        message.response_metadata = {**message.response_metadata, "model_name": self.model_name}
        if message.usage_metadata is None:
            i, o = count_tokens_approximately(messages), count_tokens_approximately([message])
            message.usage_metadata = {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}
        return message

    def _generate(
        self, messages: list[BaseMessage], stop: _Stop = None, run_manager: _Run = None, **kw: Any
    ) -> ChatResult:
        message = self.respond(messages, _offered(kw))
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: _Stop = None, run_manager: _ARun = None, **kw: Any
    ) -> ChatResult:
        return self._generate(messages, stop, **kw)

    def _stream(
        self, messages: list[BaseMessage], stop: _Stop = None, run_manager: _Run = None, **kw: Any
    ) -> Iterator[ChatGenerationChunk]:
        # GenericFakeChatModel drops tool calls with empty content; the last chunk has them all
        message = self.respond(messages, _offered(kw))
        last: dict[str, Any] = {"chunk_position": "last"} if _HAS_CHUNK_POSITION else {}
        chunks = [AIMessageChunk(content=word) for word in _WORDS.findall(message_text(message))]
        calls = [
            tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
            for i, c in enumerate(message.tool_calls)
        ]
        usage, metadata = message.usage_metadata, message.response_metadata
        last.update(tool_call_chunks=calls, usage_metadata=usage, response_metadata=metadata)
        chunks.append(AIMessageChunk(content="", **last))
        for chunk in (ChatGenerationChunk(message=m) for m in chunks):
            if run_manager and chunk.text:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self, messages: list[BaseMessage], stop: _Stop = None, run_manager: _ARun = None, **kw: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._stream(messages, stop, **kw):
            if run_manager and chunk.text:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


def _offered(kw: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The bound tools, then a declared response format (ProviderStrategy's) as its own entry."""
    fmt = kw.get("response_format")
    return [*(kw.get("tools") or []), *([fmt] if isinstance(fmt, dict) else [])]


def call_then_answer(
    tool: str | None = None,
    *,
    argument: str | None = None,
    calls: int = 1,
    answer: str = "The model answered after the tools.",
) -> Script:
    """Return the script most stop tests need: call a tool, retry what was transient, answer.

    On a user message it makes `calls` parallel calls of `tool` (default: the first bound)
    with `{argument: the user's text}` (default: its first parameter); after a tool step, the
    same for each `transient` result, with fresh ids (`call_<messages so far>_<i>`); else,
    or with no tools bound, it answers `answer`.
    """

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        bound = {t["function"]["name"]: t for t in tools if "function" in t}
        name = tool if tool is not None else next(iter(bound), None)
        if name is None or name not in bound or not messages:
            return AIMessage(content=answer)
        properties = bound[name]["function"].get("parameters", {}).get("properties", {})
        key = argument or next(iter(properties), "query")
        start = turn_start(messages)
        question = message_text(messages[start - 1]) if start else ""
        count = calls if isinstance(messages[-1], HumanMessage) else 0
        if isinstance(messages[-1], ToolMessage):
            step = [contract(m.artifact) for m in latest_tool_step(messages[start:])]
            count = sum(isinstance(a, dict) and a.get("reason") == "transient" for a in step)
        if not count:
            return AIMessage(content=answer)
        ids = [f"call_{len(messages)}_{i}" for i in range(count)]
        return AIMessage(content="", tool_calls=[tool_call(name, {key: question}, i) for i in ids])

    return script


Outcome = Literal["success", "completed", "transient", "retryable", "fatal", "policy_block"]
"""A forced outcome: `success` is `completed`, `retryable` is `transient`."""
_OUTCOMES: tuple[str, ...] = get_args(Outcome)
_FORCED: dict[str, tuple[str, Callable[[], dict[str, Any]]]] = {
    "completed": ("# {query}\n\nThe page about {query}.", completed),
    "transient": ("The service timed out (HTTP 503). Trying again may work.", transient),
    "fatal": ("Nothing matches {query}, and trying again will not help.", fatal),
    "policy_block": ("This request was refused by a policy before it ran.", policy_block),
}
_FORCED |= {"success": _FORCED["completed"], "retryable": _FORCED["transient"]}


def _forced_result(outcome: Outcome, query: str = "the query") -> tuple[str, dict[str, Any]]:
    """Return the `(content, artifact)` of a forced outcome; a ValueError for an unknown one."""
    if outcome not in _OUTCOMES:
        raise ValueError(f"outcome must be one of {list(_OUTCOMES)}")
    content, build = _FORCED[outcome]
    return content.format(query=query), build()


class _ForcedArgs(BaseModel):
    query: str = Field(description="What to look up.")
    messages: Annotated[list[Any], InjectedState("messages")]
    tool_call_id: Annotated[str, InjectedToolCallId]


def forced_tool(
    name: str = "search",
    outcomes: Outcome | Sequence[Outcome] = "success",
    *,
    description: str = "Look something up.",
) -> BaseTool:
    """Return a `content_and_artifact` tool, argument `query`, whose outcomes are forced.

    The turn's `i`-th tool call (in the order issued, whatever its tool) gets `outcomes[i]`,
    the last repeating; it reads the turn from `InjectedState("messages")`, on any thread.
    An outcome is `success` (or `completed`), `transient` (or `retryable`), `fatal` or
    `policy_block`.
    """
    forced = [outcomes] if isinstance(outcomes, str) else list(outcomes)
    if not forced or any(outcome not in _OUTCOMES for outcome in forced):
        raise ValueError(f"outcomes must be one or more of {list(_OUTCOMES)}")

    def run(query: str, messages: list[Any], tool_call_id: str) -> tuple[str, dict[str, Any]]:
        index = invocation_index(messages, tool_call_id)
        return _forced_result(forced[min(index, len(forced) - 1)], query)

    return StructuredTool.from_function(
        run,
        name=name,
        description=description,
        args_schema=_ForcedArgs,
        response_format="content_and_artifact",
    )


def _messages(result: Mapping[str, Any]) -> list[BaseMessage]:
    messages = result.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, BaseMessage) for m in messages):
        msg = "result must hold 'messages', a list of messages (the value of invoke/ainvoke)"
        raise TypeError(msg)
    return messages


def _stop_decision(result: Mapping[str, Any]) -> StopDecision:
    """Return `result["stop_decision"]` (of `invoke` or a snapshot); fail if none was made."""
    if (decision := result.get("stop_decision")) is None:
        raise AssertionError("no stop_decision: no tool step ran this turn")
    return decision  # type: ignore[no-any-return]


def assert_stopped(result: Mapping[str, Any], rule: str | None = None) -> StopDecision:
    """Assert that the run stopped, by `rule` (`completed`, `fatal`...) if given."""
    decision = _stop_decision(result)
    if decision["action"] != "stop":
        raise AssertionError(f"the run continued (rule {decision['rule']!r})")
    if rule is not None and decision["rule"] != rule:
        raise AssertionError(f"stopped by rule {decision['rule']!r}, not {rule!r}")
    return decision


def _model_calls(result: Mapping[str, Any] | Sequence[BaseMessage]) -> int:
    """Count this turn's model calls: AIMessages with tool calls or metadata (not a relay).

    `result` is what `invoke` returned (or a snapshot's values), or its messages.
    """
    messages = _messages(result) if isinstance(result, Mapping) else result
    replies = [m for m in messages[turn_start(messages) :] if isinstance(m, AIMessage)]
    return sum(bool(m.tool_calls or m.usage_metadata or m.response_metadata) for m in replies)


def answer_in_schema(
    schema: type | str, values: Mapping[str, Any], script: Script | None = None
) -> Script:
    """Return `script` answering the declared schema.

    `script` (default [call_then_answer][stop_on_artifact.testing.call_then_answer]) sees the
    ordinary tools only. Where it answers in plain text and a schema is offered, the reply is
    `values`: a call of ToolStrategy's tool (named `schema`, or its class name), or JSON under
    ProviderStrategy (a `json_schema` entry among the tools).

    Example: `ScriptedChatModel(script=answer_in_schema(Refund, {"days": 30}))`.
    """
    name = schema if isinstance(schema, str) else schema.__name__
    inner = script or call_then_answer()

    def answer(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        ordinary = [t for t in tools if t.get("type") != "json_schema"
                    and t.get("function", {}).get("name") != name]  # fmt: skip
        reply = inner(messages, ordinary)
        if reply.tool_calls or len(ordinary) == len(tools):
            return reply
        if any(t.get("type") == "json_schema" for t in tools):
            return AIMessage(json.dumps(dict(values)))
        return AIMessage("", tool_calls=[tool_call(name, dict(values), f"schema_{len(messages)}")])

    return answer


def assert_structured(result: Mapping[str, Any], expected: object = None) -> None:
    """Assert the run left a `structured_response` (equal to `expected` if given)."""
    value = result.get("structured_response")
    if value is None:
        why = (result.get("stop_decision") or {}).get("structured", "not declared or not reached")
        raise AssertionError(f"no structured_response ({why})")
    if expected is not None and value != expected:
        raise AssertionError(f"structured_response is {value!r}, expected {expected!r}")


def assert_model_calls(result: Mapping[str, Any], expected: int) -> None:
    """Assert the turn's model calls equal `expected`.

    Counted: the turn's AIMessages with tool calls or metadata (a stop's answer is no call).
    """
    if (counted := _model_calls(result)) != expected:
        raise AssertionError(f"{counted} model calls this turn, expected {expected}")


def approve(count: int = 1) -> Command[Any]:
    """Return the resume approving all `count` actions of a pending approval request."""
    return Command(resume={"decisions": [{"type": "approve"} for _ in range(count)]})


def reject(reason: str | None = None, *, count: int = 1) -> Command[Any]:
    """Return the resume rejecting all `count` actions, with the approver's `reason` if any."""
    decision = {"type": "reject"} | ({} if reason is None else {"message": reason})
    return Command(resume={"decisions": [dict(decision) for _ in range(count)]})


def pending_approval(graph: Any, config: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return the approval request (an interrupt value) a checkpointed thread waits on, or None."""
    values = (p.value for task in graph.get_state(config).tasks for p in task.interrupts)
    return next((cast("dict[str, Any]", v) for v in values if is_approval_request(v)), None)
