"""One scripted fake chat model for tests: its reply is a function of the history.

A graph compiled once serves every thread (on the dev server, and in the tests that run
many threads through one graph object), so a fake that pops replies from a shared list
answers one thread with another's script. `ScriptedChatModel` instead calls a script
with the messages of *this* call and the tools bound for it::

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        if tools and isinstance(messages[-1], HumanMessage):
            return AIMessage("", tool_calls=[tool_call(tools[0], {"query": "x"}, "c0")])
        return AIMessage("done")

    model = ScriptedChatModel(script=script)

``bind_tools`` returns a bound copy (tools in OpenAI format reach the script), and
streaming yields the content word by word, then one chunk carrying the tool calls (a
``GenericFakeChatModel`` drops tool calls when it streams empty content, which breaks
``create_agent`` when the server streams it).

This module imports only what langchain-core 0.3 also has, so the compat suite
(``python -m tests.compat.run``, langgraph 0.6.6) uses it too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

__all__ = ["Script", "ScriptedChatModel", "tool_call"]

Script = Callable[[Sequence[BaseMessage], Sequence[dict[str, Any]]], AIMessage]
"""``(messages, tools) -> AIMessage``: tools are the bound ones, in OpenAI format."""


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

    Attributes:
        script: Called with each call's messages and bound tools.
        model_name: Reported as ``response_metadata["model_name"]`` on every reply.
    """

    script: Script
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
            A runnable that calls this model with the tools bound.
        """
        del tool_choice
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        message = self.script(messages, kwargs.get("tools") or [])
        message.response_metadata = {**message.response_metadata, "model_name": self.model_name}
        return message

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, kwargs))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        message = self._reply(messages, kwargs)
        text = message.content if isinstance(message.content, str) else ""
        for word in re.findall(r"\S+\s*|\s+", text):
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=word))
            if run_manager:
                run_manager.on_llm_new_token(word, chunk=chunk)
            yield chunk
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
                response_metadata=message.response_metadata,
            )
        )
