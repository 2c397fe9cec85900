"""A LangGraph agent as an AgentDojo pipeline element, so AgentDojo itself judges each run.

``suite.run_task_with_pipeline(AgentPipeline(...), task, None, {})`` gives the agent the
task's prompt, a ``FunctionsRuntime`` and the task's environment, exactly as it gives them to
any model's pipeline; :class:`AgentPipeline` builds the suite's tools on that environment, runs
the configuration's agent with the replay model (or a real one, :mod:`bench.agentdojo.model`),
and hands back the run as AgentDojo's chat
messages. AgentDojo then scores it with the task's own ``utility()`` (or
``utility_from_traces()``, which reads the calls from those messages), untouched.

A run that ends on a tool message (``return_direct``) answers with that message's text: an
assistant message carrying it is appended, as a chat client would show it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentdojo.agent_pipeline.base_pipeline_element import BasePipelineElement
from agentdojo.functions_runtime import EmptyEnv, Env, FunctionCall, FunctionsRuntime
from agentdojo.types import (
    ChatAssistantMessage,
    ChatMessage,
    ChatSystemMessage,
    ChatToolResultMessage,
    ChatUserMessage,
    text_content_block_from_string,
)
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from bench.agentdojo.configs import Config, system_prompt
from bench.agentdojo.parallel import steps
from bench.agentdojo.replay import ReplayChatModel
from bench.agentdojo.suites import Task
from bench.agentdojo.tools import CallLog, Faults, suite_tools

RECURSION_LIMIT = 200
"""Far above any run here (18 calls plus faults): a loop fails instead of spinning."""


@dataclass(frozen=True)
class Run:
    """One finished run: the agent's final state, what its tools did, its wall time."""

    messages: list[BaseMessage]
    state: dict[str, Any]
    log: CallLog
    wall_s: float
    tools: tuple[str, ...] = ()
    """The names of the tools the agent had."""


class Requests(BaseCallbackHandler):
    """Every model request that was answered, as ``(input tokens, output tokens)``.

    Read from the model's callbacks, so a run that raises (a provider error after some
    answers, a harness error) still counts the requests it made.
    """

    def __init__(self) -> None:
        """Start with no request."""
        self.usage: list[tuple[int, int]] = []

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        """Count one answered request (tokens 0 when the answer reports none)."""
        del kwargs
        for generations in response.generations:
            for generation in generations[:1]:
                message = generation.message if isinstance(generation, ChatGeneration) else None
                usage = getattr(message, "usage_metadata", None) or {}
                self.usage.append((usage.get("input_tokens", 0), usage.get("output_tokens", 0)))


def _text(text: str) -> list[Any]:
    return [text_content_block_from_string(text)]


def _calls(message: AIMessage) -> list[FunctionCall]:
    return [
        FunctionCall(function=call["name"], args=dict(call["args"]), id=call["id"])
        for call in message.tool_calls
    ]


def to_agentdojo(messages: Sequence[BaseMessage], prompt: str) -> list[ChatMessage]:
    """Return a run's messages as AgentDojo's chat messages (system and user first)."""
    converted: list[ChatMessage] = [
        ChatSystemMessage(role="system", content=_text(system_prompt())),
        ChatUserMessage(role="user", content=_text(prompt)),
    ]
    issued: dict[str, FunctionCall] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            calls = _calls(message)
            issued |= {str(call.id): call for call in calls}
            converted.append(
                ChatAssistantMessage(
                    role="assistant", content=_text(message.text), tool_calls=calls or None
                )
            )
        elif isinstance(message, ToolMessage):
            call = issued.get(message.tool_call_id) or FunctionCall(function="", args={})
            error = message.text if message.status == "error" else None
            converted.append(
                ChatToolResultMessage(
                    role="tool",
                    content=_text(message.text),
                    tool_call=call,
                    tool_call_id=message.tool_call_id,
                    error=error,
                )
            )
    last = messages[-1] if messages else None
    if isinstance(last, ToolMessage):  # return_direct: the tool's text is the answer
        converted.append(
            ChatAssistantMessage(role="assistant", content=_text(last.text), tool_calls=None)
        )
    return converted


class AgentPipeline(BasePipelineElement):  # type: ignore[misc]  # AgentDojo is untyped
    """Run ``config``'s agent on one task, with the replay model; keep the run in ``run``.

    With ``model`` the agent runs on that model instead: it decides its own calls, marks and
    parallel calls (no oracle). AgentDojo runs the pipeline again when a run gives no answer
    (up to three times); the runs before the last are kept in ``earlier``.
    """

    def __init__(
        self,
        config: Config,
        task: Task,
        faults: Faults,
        *,
        mark: int | tuple[int, ...] | None = None,
        mark_argument: str | None = None,
        model: BaseChatModel | None = None,
    ) -> None:
        """Keep what the run needs; ``mark`` is the call(s) the replay marks, if any."""
        self.config = config
        self.task = task
        self.faults = faults
        self.marks = (mark,) if isinstance(mark, int) else tuple(mark or ())
        self.mark_argument = mark_argument
        self.name = config.name
        self.model = model
        self.run: Run | None = None
        self.earlier: list[Run] = []
        self.log: CallLog | None = None
        """The current run's calls, kept even when the run raises."""
        self.requests = Requests()
        """Every answered request of every run of this pipeline (with ``model`` only)."""

    def query(
        self,
        query: str,
        runtime: FunctionsRuntime,
        env: Env = EmptyEnv(),  # noqa: B008  (AgentDojo's signature)
        messages: Sequence[ChatMessage] = (),
        extra_args: dict[str, Any] | None = None,
    ) -> tuple[str, FunctionsRuntime, Env, Sequence[ChatMessage], dict[str, Any]]:
        """Run the agent on ``env`` and return its messages in AgentDojo's form."""
        log = self.log = CallLog(self.task.key, self.faults)
        if self.config.parallel:
            log.calls = [(c.function, dict(c.args)) for c in self.task.calls]
            log.steps = steps(self.task)
        kinds = self.config.kinds(self.task.suite)
        tools = suite_tools(runtime, env, kinds, log, default=self.config.others)
        model = self.model or ReplayChatModel(
            calls=[{"name": c.function, "args": dict(c.args)} for c in self.task.calls],
            output=self.task.output,
            marks=self.marks,
            mark_argument=self.mark_argument,
            steps=steps(self.task) if self.config.parallel else None,
        )
        if self.run is not None:
            self.earlier.append(self.run)
        graph = self.config.build(model, tools)
        start = time.perf_counter()
        options: dict[str, Any] = {"recursion_limit": RECURSION_LIMIT}
        if self.model is not None:  # the replay raises only on a harness bug
            options["callbacks"] = [self.requests]
        state = graph.invoke({"messages": [HumanMessage(content=query)]}, options)
        wall_s = time.perf_counter() - start
        result = list(state["messages"])
        names = tuple(tool.name for tool in tools)
        self.run = Run(messages=result, state=dict(state), log=log, wall_s=wall_s, tools=names)
        converted = to_agentdojo(result[1:], query)  # the first is the prompt itself
        return query, runtime, env, [*messages, *converted], dict(extra_args or {})
