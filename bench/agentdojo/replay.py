"""A perfect model, said to be one: it replays a task's ground truth.

:class:`ReplayChatModel` is the library's ``ScriptedChatModel`` deciding from the history
alone: the next call is the ground truth's call number *k*, where *k* is how many of this
turn's tool results succeeded; a failed result (an error ``ToolMessage`` or a ``transient``
artifact) makes it issue the same call again, as a perfect model would. After the last call it
writes the task's ``GROUND_TRUTH_OUTPUT``, as AgentDojo's ``GroundTruthPipeline`` does. It
never sees the environment: only the calls and the answer it was built with.

Usage is counted as a provider bills it: every message sent plus the bound tools' schemas
(``count_tokens_approximately(messages, tools=...)``), and the reply's text and calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from stop_on_artifact import mark_tool
from stop_on_artifact.messages import turn_start
from stop_on_artifact.testing import ScriptedChatModel, tool_call

REPLAY_MODEL = "agentdojo-ground-truth-replay"
MARK_TOOL = mark_tool().name
"""The shared mark's name: the replay calls it beside a marked call when it is bound."""


def failed(message: ToolMessage) -> bool:
    """Return whether a tool result failed: an error status or a ``transient`` artifact."""
    artifact = message.artifact
    transient = isinstance(artifact, dict) and artifact.get("reason") == "transient"
    return message.status == "error" or transient


def succeeded(messages: Sequence[BaseMessage]) -> int:
    """Count this turn's tool results that succeeded (the shared mark's is no ground-truth call)."""
    turn = messages[turn_start(messages) :]
    return sum(isinstance(m, ToolMessage) and not failed(m) and m.name != MARK_TOOL for m in turn)


def succeeded_calls(messages: Sequence[BaseMessage]) -> set[int]:
    """Return the ground-truth indices of this turn's calls that succeeded (from their ids)."""
    turn = messages[turn_start(messages) :]
    return {
        int(m.tool_call_id.split("_")[1])
        for m in turn
        if isinstance(m, ToolMessage) and not failed(m) and m.tool_call_id.startswith("call_")
    }


_SCHEMAS: dict[tuple[str, ...], dict[str, Any]] = {}


def _key(tool: object) -> tuple[str, ...] | None:
    if not isinstance(tool, BaseTool):
        return None
    # adopt() keeps the name and description; stops="when_marked" adds an argument
    return (tool.name, tool.description, str(getattr(tool, "stops", "plain")))


def _schema(tool: dict[str, Any] | type | Callable[..., Any] | BaseTool) -> dict[str, Any]:
    key = _key(tool)
    if key is None:
        return convert_to_openai_tool(tool)
    if key not in _SCHEMAS:
        _SCHEMAS[key] = convert_to_openai_tool(tool)
    return _SCHEMAS[key]


class ReplayChatModel(ScriptedChatModel):
    """Replay ``calls`` one per model step (or ``steps``), then answer ``output``.

    ``marks`` (indices into ``calls``) and ``mark_argument`` make the replay set
    ``{mark_argument: True}`` on those calls when the bound tool declares the argument: the
    oracle for tools that stop when the model marks a call. When none of them declares it and
    the shared mark (:data:`MARK_TOOL`) is bound, the reply calls the mark beside them instead.

    ``steps`` (:func:`bench.agentdojo.parallel.steps`) makes it issue several calls in one
    ``AIMessage``: the calls of the first step not all succeeded, those that have not (a
    failed one is issued again, alone or with its step's other failed calls). Which calls
    succeeded it reads from the results' call ids, which name the ground-truth index.
    """

    calls: list[dict[str, Any]]
    """``{"name": ..., "args": {...}}`` per ground-truth call, in order."""
    output: str
    marks: tuple[int, ...] = ()
    mark_argument: str | None = None
    steps: tuple[tuple[int, ...], ...] | None = None
    model_name: str = REPLAY_MODEL

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Return a bound copy; each tool's schema is converted once per process.

        ``create_agent`` binds the tools before every model call, and every task builds its
        own tools; converting 24 schemas each time was a fifth of the benchmark's time. A
        schema depends only on the AgentDojo function and how it was adopted (:func:`_key`).
        """
        del tool_choice
        return self.bind(tools=[_schema(tool) for tool in tools], **kwargs)

    def respond(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]
    ) -> AIMessage:
        """Return the next ground-truth call(s), or the task's answer once all succeeded."""
        indices = self._next(messages)
        if not indices or not tools:
            reply = AIMessage(content=self.output)
        else:
            calls = []
            for index in indices:
                call = self.calls[index]
                args = dict(call["args"])
                if index in self.marks and self._declares_mark(tools, call["name"]):
                    args[str(self.mark_argument)] = True
                calls.append(tool_call(call["name"], args, f"call_{index}_{len(messages)}"))
            shared = self._binds(tools, MARK_TOOL) and set(indices) & set(self.marks)
            if shared and not any(str(self.mark_argument) in c["args"] for c in calls):
                calls.append(tool_call(MARK_TOOL, {}, f"mark_{len(messages)}"))
            reply = AIMessage(content="", tool_calls=calls)
        reply.response_metadata = {"model_name": self.model_name}
        sent = count_tokens_approximately(messages, tools=list(tools) or None)
        written = count_tokens_approximately([reply])
        reply.usage_metadata = {
            "input_tokens": sent,
            "output_tokens": written,
            "total_tokens": sent + written,
        }
        return reply

    def _next(self, messages: Sequence[BaseMessage]) -> list[int]:
        if self.steps is None:
            index = succeeded(messages)
            return [index] if index < len(self.calls) else []
        done = succeeded_calls(messages)
        for step in self.steps:
            left = [index for index in step if index not in done]
            if left:
                return left
        return []

    def _binds(self, tools: Sequence[dict[str, Any]], name: str) -> bool:
        return any(tool.get("function", {}).get("name") == name for tool in tools)

    def _declares_mark(self, tools: Sequence[dict[str, Any]], name: str) -> bool:
        if self.mark_argument is None:
            return False
        for tool in tools:
            function = tool.get("function", {})
            if function.get("name") == name:
                properties = function.get("parameters", {}).get("properties", {})
                return self.mark_argument in properties
        return False
