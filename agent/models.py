"""Model loading: the deterministic offline model, and ``provider:model`` strings."""

from __future__ import annotations

import inspect
import json
import math
import os
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately
from stop_on_artifact import InvalidArtifactError, parse_artifact
from stop_on_artifact.messages import turn_results, turn_start
from stop_on_artifact.testing import ScriptedChatModel

from agent.context import OFFLINE_MODEL
from agent.question import Part, read_question, unclear_answer
from agent.tools.markdown import escape_math
from agent.tools.search import topic_index

# Linear time on any text: no pattern below can rescan what an earlier attempt scanned.
# ``buy <item> for <amount>`` is two scans, not one lazy pattern (``buy.+?for``
# restarts its scan at every ``buy`` and is quadratic on "buy buy buy ...").
_BUY_WORD = re.compile(r"\bbuy\s", re.I)
_FOR_AMOUNT = re.compile(r"\sfor\s+\$?(?P<amount>\d[\d,]*(?:\.\d+)?)", re.I)
_TAGS = re.compile(r"<[^<>]+>")  # [^>]+ would rescan "<<<<..." from every "<"
ANSWER_CHARS = 280
"""Longest tool excerpt the offline model quotes in an answer."""

_COUNTS_TOOLS = "tools" in inspect.signature(count_tokens_approximately).parameters
"""langchain-core 1.x counts bound tool schemas itself; 0.3 counts messages only."""


def parse_buy(text: str) -> tuple[str, float] | None:
    """Read ``buy <item> for <amount>`` from one line of a user message.

    The first ``buy`` (a word, any case) that is followed on its line by
    ``for <amount>`` wins; the item is the text between them, stripped. The amount may
    carry a ``$`` and thousands commas. It runs in linear time on any input. (The offline
    model reads a whole question with :func:`agent.question.read_question`; this reads one
    purchase, as the fake Groq server in the tests does.)

    Args:
        text: A user message, or one part of it.

    Returns:
        ``(item, amount)``, or None when no line holds a purchase.
    """
    for line in text.splitlines():
        buy = _BUY_WORD.search(line)
        if buy is None:
            continue
        # At least one item character: "for" must follow buy's space plus one more.
        # If the first "buy" on a line has no "for <amount>" after it, no later one has.
        found = _FOR_AMOUNT.search(line, buy.end() + 1)
        if found is not None:
            item = line[buy.end() : found.start()].strip()
            return item, float(found["amount"].replace(",", ""))
    return None


def latest_tool_step(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    """The ToolMessages after the last AIMessage with tool calls, in call order (once each)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AIMessage) and message.tool_calls:
            order = {call["id"]: position for position, call in enumerate(message.tool_calls)}
            step: dict[str, ToolMessage] = {}
            for after in messages[index + 1 :]:
                if isinstance(after, ToolMessage):
                    step.setdefault(after.tool_call_id, after)
            return sorted(step.values(), key=lambda m: order.get(m.tool_call_id, len(order)))
    return []


def _text(message: BaseMessage) -> str:
    """A message's text: ``.text`` is a property in langchain-core 1.x, a method in 0.3."""
    text: Any = message.text
    return text if isinstance(text, str) else str(text())


def _summary(content: str) -> str:
    """Shorten tool content into one readable line.

    A Markdown page gives its ``# `` title and first paragraph; anything else is
    flattened to one line. Either is cut at :data:`ANSWER_CHARS`.
    """
    lines = content.strip().splitlines()
    if lines and lines[0].startswith("# "):
        paragraph = next((line for line in lines[1:] if line.strip()), "")
        text = f"{lines[0][2:].strip()}: {paragraph.strip()}"
    else:
        text = _TAGS.sub(" ", content)
    text = " ".join(text.split())
    return text if len(text) <= ANSWER_CHARS else text[: ANSWER_CHARS - 3].rstrip() + "..."


def _artifact(message: ToolMessage) -> dict[str, Any] | None:
    """Return the call's artifact as the library reads it (an MCP tool's one level down)."""
    try:
        return parse_artifact(message)
    except InvalidArtifactError:
        return None


def _is_transient(message: ToolMessage) -> bool:
    artifact = _artifact(message)
    return artifact is not None and artifact["reason"] == "transient"


def _first_param(tool: dict[str, Any]) -> str:
    properties = tool.get("function", {}).get("parameters", {}).get("properties", {})
    return next(iter(properties), "query")


def billed_input_tokens(
    messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]] = ()
) -> int:
    """Count a call's input tokens as a provider bills them.

    Args:
        messages: Every message sent, a system prompt included.
        tools: The tool schemas bound for this call; empty when none are bound.

    Returns:
        The approximate input tokens: messages plus bound tool schemas.
    """
    if not tools:
        return count_tokens_approximately(messages)
    if _COUNTS_TOOLS:
        return count_tokens_approximately(messages, tools=list(tools))
    # langchain-core 0.3: count a schema dict as 1.x does, its JSON at 4 characters a token.
    schema_chars = sum(len(json.dumps(tool)) for tool in tools)
    return count_tokens_approximately(messages) + math.ceil(schema_chars / 4)


class OfflineChatModel(ScriptedChatModel):
    """A deterministic chat model that decides from the message history alone.

    One graph object serves every thread on the server, so nothing here is a shared
    iterator: the reply is a pure function of the messages and the bound tools.

    - A user message makes one tool call per thing it asks, all in one turn:
      ``buy <item> for <amount>`` calls ``checkout``, ``<tool>: <text>`` calls that
      bound tool with ``text`` as its first argument, anything else calls ``search``.
      Parts are read by :func:`agent.question.read_question`, by what the message names:
      every knowledge-base topic (by name or alias, in English, Spanish, German or French)
      is searched on its own ("¿Cómo funcionan los checkpointers y las interrupciones?" is
      two searches), every item with a price is bought ("I'd like a laptop for $300, and a
      mouse for $20"; "buy 3 coffees for 4.50 each" charges 13.50), and a sentence that
      only sets the context ("I am building a support bot.") is not searched. ``;`` and line
      breaks always separate parts; a comma, a sentence end or a joining word separates two
      only where a price ends the left side, the right side starts a new request that does
      not point back ("... and how long is shipping", not "... and how does it work"), or
      both sides name a topic; elsewhere the words stay in one item ("buy salt and pepper
      for 5").
    - When a part cannot be done as written (a purchase with no price, "buy a laptop and a
      mouse"; words after a price it cannot read; nothing bound that can do it), it makes
      no call that turn and answers in Markdown, part by part in the question's order, with
      what it understood and how to write what it did not.
    - After a tool step, only the calls whose result was transient are issued again,
      with the same arguments.
    - Otherwise, or with no tools bound, it answers from the turn's tool content.

    Every reply reports ``usage_metadata`` from ``count_tokens_approximately``, counted the
    way a provider bills: the input is every message sent (a system prompt included) plus
    the schemas of the tools bound for that call (none for a call with no tools bound).
    Binding, streaming and the async path come from its base,
    :class:`~stop_on_artifact.testing.ScriptedChatModel`, which the library documents as a
    supported base class for deterministic models (``respond`` overridden, stable within a
    major release), not as a test internal.
    """

    model_name: str = OFFLINE_MODEL

    @property
    def _llm_type(self) -> str:
        return "offline"

    def respond(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]
    ) -> AIMessage:
        """Return the reply to one call, with the usage a provider would bill.

        :class:`~stop_on_artifact.testing.ScriptedChatModel` does the rest: tools bound on a
        copy, tool calls streamed, sync and async.

        Args:
            messages: The messages of this call.
            tools: The tools bound for this call, in OpenAI format.

        Returns:
            The reply, from :meth:`reply`, with usage and response metadata.
        """
        return self._result(messages, tools)

    def reply(self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        """Return the next AIMessage for a history, without usage numbers.

        Args:
            messages: The conversation so far.
            tools: Bound tools in OpenAI format (empty when none are bound).

        Returns:
            An AIMessage with tool calls or a prose answer.
        """
        names = {t["function"]["name"]: t for t in tools if "function" in t}
        call_id = f"call_{len(messages)}_{{}}"
        last = messages[-1] if messages else None
        if names and isinstance(last, HumanMessage):
            calls = self._first_calls(_text(last), names)
            if isinstance(calls, str):
                return AIMessage(content=calls)
            if calls:
                return AIMessage(
                    content="",
                    tool_calls=[
                        {"name": name, "args": args, "id": call_id.format(i), "type": "tool_call"}
                        for i, (name, args) in enumerate(calls)
                    ],
                )
        step = latest_tool_step(messages[turn_start(messages) :])
        if names and isinstance(last, ToolMessage):
            retries = self._retries(messages, step, names)
            if retries:
                return AIMessage(
                    content="",
                    tool_calls=[
                        {"name": name, "args": args, "id": call_id.format(i), "type": "tool_call"}
                        for i, (name, args) in enumerate(retries)
                    ],
                )
        return AIMessage(content=self._answer(messages, step))

    @staticmethod
    def _first_calls(
        text: str, tools: dict[str, dict[str, Any]]
    ) -> list[tuple[str, dict[str, Any]]] | str:
        """One call per part of the message, or the answer naming a part it cannot do.

        The parts are :func:`agent.question.read_question`'s. When any part cannot be done
        as written, no call is made: the answer says what was understood and what was not.
        """
        topics = topic_index() if "search" in tools else ()
        reading = read_question(text, tools, topics)
        if not reading.clear:
            return unclear_answer(reading)
        return [OfflineChatModel._call_for(part, tools) for part in reading.parts]

    @staticmethod
    def _call_for(part: Part, tools: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        """The call for one clear part: ``checkout``, ``search`` or the tool it names."""
        if part.kind == "tool":
            return part.tool, {_first_param(tools[part.tool]): part.argument}
        if part.kind == "purchase":
            other = {"currency": part.currency} if part.currency != "USD" else {}
            return "checkout", {"item": part.item, "amount": part.amount, **other}
        return "search", {"query": part.text}

    @staticmethod
    def _retries(
        messages: Sequence[BaseMessage],
        step: Sequence[ToolMessage],
        tools: dict[str, dict[str, Any]],
    ) -> list[tuple[str, dict[str, Any]]]:
        issued = {
            call["id"]: call
            for message in messages
            if isinstance(message, AIMessage)
            for call in message.tool_calls
        }
        retries = []
        for message in step:
            call = issued.get(message.tool_call_id)
            if call and _is_transient(message) and call["name"] in tools:
                retries.append((call["name"], dict(call["args"])))
        return retries

    @staticmethod
    def _answer(messages: Sequence[BaseMessage], step: Sequence[ToolMessage]) -> str:
        if not step:
            start = turn_start(messages)
            question = _text(messages[start - 1]) if start else ""
            return escape_math(
                f"I could not look that up with a tool. You asked: {_summary(question)}"
            )
        # Each part of the question once, in the order it was asked, by its latest result
        # (as a hard stop answers it); a part still transient is named by its not-done line.
        parts = []
        for result in turn_results(messages):
            if result is None:
                continue
            if _is_transient(result):
                line = (_artifact(result) or {}).get("not_done")
                if isinstance(line, str) and line.strip():
                    parts.append(_summary(line))
                continue
            parts.append(f"{result.name}: {_summary(_text(result))}")
        parts = parts or [f"{m.name}: {_summary(_text(m))}" for m in step]
        # The tools' content has its $ escaped already; escape_math leaves those as they are.
        return escape_math("Here is what I found. " + " | ".join(parts))

    def _result(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]
    ) -> AIMessage:
        message = self.reply(messages, tools)
        input_tokens = billed_input_tokens(messages, tools)
        output_tokens = count_tokens_approximately([message])
        message.usage_metadata = {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        }
        message.response_metadata = {"model_name": self.model_name, "model_provider": "offline"}
        return message


class ModelLoadError(ValueError):
    """A context's ``model`` string names no model that can be built here."""


PROVIDER_KEYS = {
    "anthropic": "ANTHROPIC_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistralai": "MISTRAL_API_KEY",
    "openai": "OPENAI_API_KEY",
}
"""The environment variable each provider reads its API key from, to name a missing one."""


def _missing_key(name: str) -> str | None:
    """Return the API key variable a ``provider:model`` string needs and the server lacks."""
    provider = name.split(":", 1)[0] if ":" in name else ""
    key = PROVIDER_KEYS.get(provider)
    return key if key is not None and not os.environ.get(key) else None


@lru_cache(maxsize=32)
def load_model(name: str) -> BaseChatModel:
    """Return the chat model a context's ``model`` field names.

    Args:
        name: ``offline`` or a ``provider:model`` string for ``init_chat_model``.

    Returns:
        The model, cached per name.

    Raises:
        ModelLoadError: If ``init_chat_model`` cannot build the model. The message names
            the ``model`` field and the cause's type, or the provider's API key variable
            when the server lacks it (``GROQ_API_KEY is not set``), never the string.
    """
    if name == OFFLINE_MODEL:
        return OfflineChatModel()
    try:
        return init_chat_model(name)
    except Exception as error:
        # The provider's message quotes the string (which may be a pasted secret), and a
        # chained cause would print it in the server log's traceback: drop both.
        missing = _missing_key(name)
        if missing is not None:
            msg = f"model could not be loaded: {missing} is not set on the server"
        else:
            msg = (
                f"model could not be loaded ({type(error).__name__}): expected 'offline' or a "
                "'provider:model' string whose provider package is installed and configured"
            )
        raise ModelLoadError(msg) from None
