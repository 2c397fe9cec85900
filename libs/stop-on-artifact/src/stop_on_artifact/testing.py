"""The forced-outcome harness: prove your own agent's stop contract in pytest.

Three parts, each usable on its own with any agent that uses the core (``create_agent``
with :class:`~stop_on_artifact._middleware.StopOnArtifactMiddleware`, or a hand-built graph
with :class:`~stop_on_artifact.StopRouter`):

- :class:`ScriptedChatModel`: a fake chat model whose reply is a function of the history
  (:data:`Script`), so one compiled graph serves every thread, in-process or under
  ``langgraph dev``. ``bind_tools`` returns a bound copy whose tools the script sees; it
  streams tool calls (also with empty content), sync and async. :func:`call_then_answer`
  is the script most tests need.
- :func:`forced_tool` and :func:`forced_result`: a tool whose outcome this turn is forced
  (``["transient", "success"]``: the first call fails, the retry succeeds).
- Assertions: :func:`assert_stopped` (which rule stopped), :func:`assert_model_calls` (how
  many model calls ran this turn), :func:`assert_answer_is_settled_content` (a hard stop
  answers with the settled tools' content, verbatim).

::

    agent = create_agent(
        ScriptedChatModel(script=call_then_answer("search")),
        [forced_tool("search", ["transient", "success"])],
        middleware=[StopOnArtifactMiddleware()],
    )
    result = agent.invoke({"messages": [{"role": "user", "content": "store"}]})
    assert_stopped(result, "completed")
    assert_model_calls(result, 2)
    assert_answer_is_settled_content(result)

Imports only what langgraph 0.6 and langchain-core 0.3 have.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Annotated, Any, Literal, cast, get_args

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import InjectedState
from langgraph.types import Command
from pydantic import BaseModel, Field

from stop_on_artifact import _artifact as builders
from stop_on_artifact._approval import is_approval_request
from stop_on_artifact._decision import (
    ANSWER_SEPARATOR,
    MODEL_CALL_LIMIT_MESSAGE,
    RETRY_BUDGET_MESSAGE,
    StopDecision,
    final_text,
)
from stop_on_artifact.messages import (
    invocation_index,
    latest_tool_step,
    message_text,
    turn_start,
)

__all__ = [
    "ANSWERED",
    "ANSWER_SEPARATOR",
    "MODEL_CALL_LIMIT_MESSAGE",
    "RETRY_BUDGET_MESSAGE",
    "OUTCOMES",
    "Outcome",
    "Script",
    "ScriptedChatModel",
    "assert_answer_is_settled_content",
    "assert_model_calls",
    "approve",
    "assert_stopped",
    "call_then_answer",
    "forced_result",
    "forced_tool",
    "model_calls",
    "pending_approval",
    "reject",
    "stop_decision",
    "tool_call",
]

Script = Callable[[Sequence[BaseMessage], Sequence[dict[str, Any]]], AIMessage]
"""``(messages, tools) -> AIMessage``: the bound tools, in OpenAI format (empty when none)."""

_WORDS = re.compile(r"\S+\s*|\s+")
_HAS_CHUNK_POSITION = "chunk_position" in AIMessageChunk.model_fields  # langchain-core 1.x


def tool_call(tool: dict[str, Any] | str, args: dict[str, Any], call_id: str) -> ToolCall:
    """Build one tool call for a scripted reply.

    Args:
        tool: A bound tool in OpenAI format, or a tool name.
        args: The call's arguments.
        call_id: The call's id.

    Returns:
        The tool call.
    """
    name = tool if isinstance(tool, str) else tool["function"]["name"]
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


class ScriptedChatModel(BaseChatModel):
    """A fake chat model that answers whatever its script returns for the history.

    Every reply carries ``response_metadata["model_name"]`` and, unless the script set
    one, ``usage_metadata`` counted with ``count_tokens_approximately`` (no download), so
    it looks like a provider's reply to tracing and to :func:`model_calls`.

    It is also a supported base class for deterministic chat models, test double or not
    (an offline demo model, a replay of recorded replies): subclass it and override
    :meth:`respond`, and set ``model_name``. What a subclass relies on is stable within a
    major release: :meth:`respond` is called once per model call with the call's messages
    and its bound tools in OpenAI format; its reply gets ``model_name`` and, when it has
    none, approximate usage; ``bind_tools`` returns a bound copy; streaming (word by word,
    then one chunk with every tool call) and the async path are this class's.

    Attributes:
        script: Called with each call's messages and bound tools.
        model_name: Reported as ``response_metadata["model_name"]`` on every reply.
    """

    script: Script | None = None
    model_name: str = "scripted"

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools; the script sees them in OpenAI format on each call.

        Args:
            tools: Tools to offer.
            tool_choice: Accepted for interface compatibility and ignored.
            **kwargs: Passed to ``bind``.

        Returns:
            A bound copy: this model with the tools bound, the model itself unchanged.
        """
        del tool_choice
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def respond(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]
    ) -> AIMessage:
        """Return the reply to one call: the script's, with model name and usage.

        Args:
            messages: The messages of this call.
            tools: The tools bound for this call, in OpenAI format.

        Returns:
            The reply.

        Raises:
            ValueError: If the model has no script and the subclass does not override this.
        """
        if self.script is None:
            msg = "ScriptedChatModel needs a script (or a subclass that overrides respond)"
            raise ValueError(msg)
        message = self.script(messages, tools)
        message.response_metadata = {**message.response_metadata, "model_name": self.model_name}
        if message.usage_metadata is None:
            input_tokens = count_tokens_approximately(messages)
            output_tokens = count_tokens_approximately([message])
            message.usage_metadata = {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "total_tokens": input_tokens + output_tokens,
            }
        return message

    def _reply(self, messages: list[BaseMessage], kwargs: Mapping[str, Any]) -> AIMessage:
        return self.respond(messages, kwargs.get("tools") or [])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, kwargs))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, kwargs))])

    def _chunks(self, message: AIMessage) -> Iterator[ChatGenerationChunk]:
        """The text word by word, then one chunk with every tool call, usage and metadata.

        ``GenericFakeChatModel`` drops tool calls when it streams empty content, which
        breaks ``create_agent`` when a server streams it; this keeps them.
        """
        for word in _WORDS.findall(message_text(message)):
            yield ChatGenerationChunk(message=AIMessageChunk(content=word))
        last: dict[str, Any] = {"chunk_position": "last"} if _HAS_CHUNK_POSITION else {}
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                tool_call_chunks=[
                    {
                        "name": call["name"],
                        "args": json.dumps(call["args"]),
                        "id": call["id"],
                        "index": i,
                        "type": "tool_call_chunk",
                    }
                    for i, call in enumerate(message.tool_calls)
                ],
                usage_metadata=message.usage_metadata,
                response_metadata=message.response_metadata,
                **last,
            )
        )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self._chunks(self._reply(messages, kwargs)):
            if run_manager and chunk.text:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._chunks(self._reply(messages, kwargs)):
            if run_manager and chunk.text:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


ANSWERED = "The model answered after the tools."
"""What :func:`call_then_answer` says when it answers instead of calling a tool."""


def call_then_answer(
    tool: str | None = None,
    *,
    argument: str | None = None,
    calls: int = 1,
    answer: str = ANSWERED,
) -> Script:
    """Return the script most stop tests need: call a tool, retry what was transient, answer.

    - On a user message, with tools bound: ``calls`` calls of ``tool`` (the first bound
      tool when None) in one turn, each with ``{argument: the user's text}`` (the tool's
      first parameter when None).
    - After a tool step: the same calls again for every result whose artifact was
      ``transient``, with fresh ids.
    - Otherwise, or with no tools bound (a polish call): ``answer``.

    Call ids are ``call_<messages so far>_<i>``: unique in a thread, the same on a rerun.

    Args:
        tool: The tool's name.
        argument: The argument that receives the user's text.
        calls: Tool calls per turn (parallel calls in one AIMessage).
        answer: The model's prose answer.

    Returns:
        The script, for ``ScriptedChatModel(script=...)``.
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
        last = messages[-1]
        count = calls if isinstance(last, HumanMessage) else 0
        if isinstance(last, ToolMessage):
            count = sum(_reason(m) == "transient" for m in latest_tool_step(messages[start:]))
        if not count:
            return AIMessage(content=answer)
        ids = [f"call_{len(messages)}_{i}" for i in range(count)]
        return AIMessage(content="", tool_calls=[tool_call(name, {key: question}, i) for i in ids])

    return script


def _reason(message: ToolMessage) -> object:
    artifact = message.artifact
    return artifact.get("reason") if isinstance(artifact, dict) else None


# ---------------------------------------------------------------------------------------
# Forced outcomes.

Outcome = Literal["success", "completed", "transient", "retryable", "fatal", "policy_block"]
"""A forced outcome: ``success`` is ``completed``, ``retryable`` is ``transient``."""

OUTCOMES: tuple[str, ...] = get_args(Outcome)

_CONTENT: dict[str, str] = {
    "completed": "# {query}\n\nThe page about {query}.",
    "transient": "The service timed out (HTTP 503). Trying again may work.",
    "fatal": "Nothing matches {query}, and trying again will not help.",
    "policy_block": "This request was refused by a policy before it ran.",
}


def forced_result(outcome: Outcome, query: str = "the query") -> tuple[str, dict[str, Any]]:
    """Return the ``(content, artifact)`` a tool gives for a forced outcome.

    Args:
        outcome: The outcome to force.
        query: Put in the content of ``success`` and ``fatal``.

    Returns:
        Readable content and the artifact of the outcome's reason.

    Raises:
        ValueError: If ``outcome`` is not one of :data:`OUTCOMES`.
    """
    if outcome not in OUTCOMES:
        msg = f"outcome must be one of {list(OUTCOMES)}"
        raise ValueError(msg)
    reason = {"success": "completed", "retryable": "transient"}.get(outcome, outcome)
    build = {
        "completed": builders.completed,
        "transient": builders.transient,
        "fatal": builders.fatal,
        "policy_block": builders.policy_block,
    }[reason]
    return _CONTENT[reason].format(query=query), build()


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
    """Return a ``content_and_artifact`` tool whose outcomes this turn are forced.

    The ``i``-th tool call of the turn (in the order the model issued the calls, whatever
    tool they name) gets ``outcomes[i]``, the last one repeating, so
    ``["transient", "success"]`` fails once and then succeeds. The tool reads the turn
    from the graph state (``InjectedState("messages")``), so it works with ``ToolNode``
    and ``create_agent``, on every thread, in-process and on a server.

    Args:
        name: The tool's name.
        outcomes: One outcome for every call, or one per call this turn.
        description: The tool's description, for the model.

    Returns:
        The tool; it takes one argument, ``query``.

    Raises:
        ValueError: If ``outcomes`` is empty or holds an unknown outcome.
    """
    forced = [outcomes] if isinstance(outcomes, str) else list(outcomes)
    if not forced or any(outcome not in OUTCOMES for outcome in forced):
        msg = f"outcomes must be one or more of {list(OUTCOMES)}"
        raise ValueError(msg)

    def run(query: str, messages: list[Any], tool_call_id: str) -> tuple[str, dict[str, Any]]:
        index = invocation_index(messages, tool_call_id)
        return forced_result(forced[min(index, len(forced) - 1)], query)

    return StructuredTool.from_function(
        run,
        name=name,
        description=description,
        args_schema=_ForcedArgs,
        response_format="content_and_artifact",
    )


# ---------------------------------------------------------------------------------------
# Assertions.


def _messages(result: Mapping[str, Any]) -> list[BaseMessage]:
    messages = result.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, BaseMessage) for m in messages):
        msg = "result must hold 'messages', a list of messages (the value of invoke/ainvoke)"
        raise TypeError(msg)
    return messages


def stop_decision(result: Mapping[str, Any]) -> StopDecision:
    """Return the run's latest stop decision.

    Args:
        result: What ``invoke`` / ``ainvoke`` returned, or a state snapshot's ``values``.

    Returns:
        ``result["stop_decision"]``.

    Raises:
        AssertionError: If the run recorded no decision (no tool ran this turn).
    """
    decision = result.get("stop_decision")
    if decision is None:
        raise AssertionError("no stop_decision: no tool step ran this turn")
    return decision  # type: ignore[no-any-return]


def assert_stopped(result: Mapping[str, Any], rule: str | None = None) -> StopDecision:
    """Assert that the run stopped, and by ``rule`` when given.

    Args:
        result: What ``invoke`` / ``ainvoke`` returned.
        rule: The expected rule (``completed``, ``fatal``, ``retry_budget``, ...).

    Returns:
        The decision.
    """
    decision = stop_decision(result)
    if not (decision["action"] == "stop"):
        raise AssertionError(f"the run continued (rule {decision['rule']!r})")
    if rule is not None:
        if not (decision["rule"] == rule):
            raise AssertionError(f"stopped by rule {decision['rule']!r}, not {rule!r}")
    return decision


def model_calls(messages: Sequence[BaseMessage]) -> int:
    """Count this turn's model calls: AIMessages a chat model produced.

    A chat model's reply carries ``usage_metadata`` or ``response_metadata`` (every
    provider's does, and :class:`ScriptedChatModel`'s); a hard stop's relayed answer is an
    AIMessage with neither.

    Args:
        messages: The thread's messages.

    Returns:
        The number of model calls since the last user message.
    """
    return sum(
        isinstance(m, AIMessage) and bool(m.tool_calls or m.usage_metadata or m.response_metadata)
        for m in messages[turn_start(messages) :]
    )


def assert_model_calls(result: Mapping[str, Any], expected: int) -> None:
    """Assert how many model calls ran this turn (see :func:`model_calls`).

    Args:
        result: What ``invoke`` / ``ainvoke`` returned.
        expected: The number of calls.
    """
    counted = model_calls(_messages(result))
    if not (counted == expected):
        raise AssertionError(f"{counted} model calls this turn, expected {expected}")


def assert_answer_is_settled_content(result: Mapping[str, Any]) -> None:
    """Assert a hard stop: the last message is the settled tools' content, verbatim.

    The answer must be exactly :func:`~stop_on_artifact.final_text` of the decision (the
    content of every call in ``answer_from`` and the not-done line of every call in
    ``unsettled``, in the question's order, plus the user-safe text of a spent retry
    budget or model-call cap), and no model produced it.

    Args:
        result: What ``invoke`` / ``ainvoke`` returned.
    """
    decision = assert_stopped(result)
    messages = _messages(result)
    answer = messages[-1]
    if not (isinstance(answer, AIMessage)):
        raise AssertionError(f"the last message is a {type(answer).__name__}")
    if model_calls([answer]):
        raise AssertionError("the answer came from a model call, not the tools")
    expected = final_text(decision, messages[:-1])
    if not (message_text(answer) == expected):
        raise AssertionError("the answer is not the settled content verbatim")


def approve(count: int = 1) -> Command[Any]:
    """Return the resume that approves every action of a pending approval request.

    Args:
        count: How many actions the request holds (see :func:`pending_approval`).

    Returns:
        ``Command(resume={"decisions": [{"type": "approve"}, ...]})``.
    """
    return Command(resume={"decisions": [{"type": "approve"} for _ in range(count)]})


def reject(reason: str | None = None, *, count: int = 1) -> Command[Any]:
    """Return the resume that rejects every action of a pending approval request.

    Args:
        reason: The approver's reason, if any (it reaches the answer escaped and cut).
        count: How many actions the request holds.

    Returns:
        ``Command(resume={"decisions": [{"type": "reject", "message": reason}, ...]})``.
    """
    decision: dict[str, Any] = {"type": "reject"}
    if reason is not None:
        decision["message"] = reason
    return Command(resume={"decisions": [dict(decision) for _ in range(count)]})


def pending_approval(graph: Any, config: Mapping[str, Any]) -> dict[str, Any] | None:
    """Return the approval request a thread is paused on, or None.

    Args:
        graph: A compiled graph with a checkpointer.
        config: The thread's config (``{"configurable": {"thread_id": ...}}``).

    Returns:
        The interrupt's value (``{"action_requests": [...], "review_configs": [...]}``).
    """
    snapshot = graph.get_state(config)
    for task in snapshot.tasks:
        for pending in task.interrupts:
            if is_approval_request(pending.value):
                return cast("dict[str, Any]", pending.value)
    return None
