"""Stop decisions as LangSmith run metadata: the deciding run, each tool run, the root run.

Nothing here runs unless the run is traced (``get_current_run_tree()`` is None
otherwise), and nothing here writes message or tool content: metadata holds the
decision's fields, sanitized artifacts and counts.

- The run that decides a tool step (``tools`` in ``legacy``,
  ``stop_on_artifact.wrap_model_call`` in ``middleware``) gets :data:`STOP_KEYS` and the
  tag ``stop:<rule>`` (:func:`annotate_decision`).
- Each tool's own run gets ``stop_artifact``, its sanitized artifact (:func:`traced_tool`:
  ``legacy`` binds traced copies of its tools, ``middleware`` swaps them in per call with
  :func:`with_artifact_metadata`).
- The root run of the trace gets :data:`STOP_KEYS` for the latest decision,
  :data:`TOTAL_KEYS` and :data:`SAVED_KEYS` (:func:`record_run`), rewritten after every
  model call and every tool step, so what the root run ends with describes the run's final
  decision. A hard stop also leaves the saving as feedback on the root run
  (:func:`send_saving_feedback`), which LangSmith dashboards can sum.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.config import get_config
from langsmith import RunTree
from langsmith.run_helpers import get_current_run_tree
from stop_on_artifact import StopDecision
from stop_on_artifact.messages import turn_start

from agent.frameworks.langchain_core import open_run
from agent.tracing.allowlist import sanitize_artifact
from agent.tracing.prices import price_of, read_prices, usd

if TYPE_CHECKING:  # langgraph 1.x only: the legacy graph imports this module on 0.6 too
    from langgraph.prebuilt.tool_node import ToolCallRequest

STOP_KEYS: tuple[str, ...] = (
    "stop_action",
    "stop_rule",
    "stop_reason",
    "stop_tool",
    "stop_tool_call_id",
    "stop_answer_from",
    "stop_unsettled",
    "stop_artifact",
    "stop_policy",
    "stop_approval",
)
"""Metadata of a decision; all None on a root run whose run made no tool call.

``stop_policy`` and ``stop_approval`` name the policy that asked a person and what they
decided (``approved`` / ``rejected``; ``asked`` on a run that paused for the answer); None
when nobody was asked. Never the approver's
reason: that is free text, and it stays in the refusal's content."""

TOTAL_KEYS: tuple[str, ...] = (
    "model_calls",
    "tool_calls",
    "input_tokens",
    "output_tokens",
    "model_name",
)
"""Root-run totals since the last user message."""

SAVED_KEYS: tuple[str, ...] = (
    "stop_saved_model_calls",
    "stop_saved_input_tokens",
    "stop_saved_output_tokens",
    "stop_saved_usd",
    "stop_saved_subagent_model_calls",
)
"""What the run's hard stop saved (``stop_decision["saved"]``); 0 on a run that did not stop
hard. ``stop_saved_usd`` is None when the model has no price (agent.tracing.prices);
``stop_saved_subagent_model_calls`` counts what subagents' stops behind it saved in turn."""

read_prices()  # a malformed AGENT_MODEL_PRICES fails when the graphs load, naming it

FEEDBACK_KEYS: dict[str, str] = {
    "stop_saved_model_calls": "stop_saved_model_calls",
    "stop_saved_input_tokens": "stop_saved_input_tokens",
    "stop_saved_output_tokens": "stop_saved_output_tokens",
    "stop_saved_usd": "stop_saved_micro_usd",
}
"""The feedback a hard stop leaves on the root run, by the metadata key it repeats. Dollars
go as millionths (``stop_saved_micro_usd``): LangSmith keeps 4 decimals of a score."""

logger = logging.getLogger(__name__)
_FEEDBACK = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stop-saved-feedback")
_PROJECTS: dict[str, UUID] = {}

TAG_PREFIX = "stop:"
"""The deciding run's tag is ``stop:<rule>``."""


def chosen_artifact(decision: StopDecision, messages: Sequence[BaseMessage]) -> object:
    """Return the artifact of the ToolMessage that decided, or None."""
    for message in reversed(messages):
        if isinstance(message, ToolMessage) and message.tool_call_id == decision["tool_call_id"]:
            return message.artifact
    return None


def decision_metadata(
    decision: StopDecision | None, messages: Sequence[BaseMessage]
) -> dict[str, Any]:
    """Return the ``stop_*`` metadata of a decision.

    Args:
        decision: A tool step's decision, or None when no tool ran.
        messages: The messages the decision was made from (to find its artifact).

    Returns:
        :data:`STOP_KEYS` mapped to the decision's fields and its sanitized artifact; all
        None when ``decision`` is None.
    """
    if decision is None:
        return dict.fromkeys(STOP_KEYS)
    return {
        "stop_action": decision["action"],
        "stop_rule": decision["rule"],
        "stop_reason": decision["reason"],
        "stop_tool": decision["tool"],
        "stop_tool_call_id": decision["tool_call_id"],
        "stop_answer_from": list(decision["answer_from"]),
        "stop_unsettled": list(decision.get("unsettled", [])),
        "stop_artifact": sanitize_artifact(chosen_artifact(decision, messages)),
        "stop_policy": decision.get("policy"),
        "stop_approval": decision.get("approval"),
    }


def saving_metadata(decision: StopDecision | None, model_name: str | None) -> dict[str, Any]:
    """Return :data:`SAVED_KEYS` for the run's latest decision and the model that ran."""
    saved = decision.get("saved") if decision is not None else None
    calls, read, written = (
        (saved["model_calls"], saved["input_tokens"], saved["output_tokens"])
        if saved
        else (0, 0, 0)
    )
    price = price_of(model_name)
    return {
        "stop_saved_model_calls": calls,
        "stop_saved_input_tokens": read,
        "stop_saved_output_tokens": written,
        "stop_saved_usd": usd(read, written, price) if price is not None else None,
        "stop_saved_subagent_model_calls": saved.get("subagent_model_calls", 0) if saved else 0,
    }


def run_totals(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """Count model calls, tool calls and tokens since the last user message.

    Args:
        messages: The thread's messages up to now.

    Returns:
        :data:`TOTAL_KEYS`: AIMessages (one per model call: call this before a stopped
        run appends its relayed answer), ToolMessages, the sums of ``usage_metadata``
        input and output tokens, and the last ``response_metadata["model_name"]`` seen.
    """
    turn = messages[turn_start(messages) :]
    model_calls = tool_calls = input_tokens = output_tokens = 0
    model_name: str | None = None
    for message in turn:
        if isinstance(message, ToolMessage):
            tool_calls += 1
        elif isinstance(message, AIMessage):
            model_calls += 1
            if message.usage_metadata is not None:
                input_tokens += message.usage_metadata["input_tokens"]
                output_tokens += message.usage_metadata["output_tokens"]
            name = message.response_metadata.get("model_name")
            model_name = name if isinstance(name, str) else model_name
    return {
        "model_calls": model_calls,
        "tool_calls": tool_calls,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "model_name": model_name,
    }


def root_run() -> RunTree | None:
    """Return the root run of the current trace, to update before it ends.

    LangChain runs have no ``parent_run`` link, so the root is looked up, under the trace
    id, among the open runs of the current config's ``LangChainTracer``
    (:func:`agent.frameworks.langchain_core.open_run`).

    Returns:
        The root run, or None outside a traced run.
    """
    current = get_current_run_tree()
    if current is None:
        return None
    try:
        callbacks = get_config().get("callbacks")
    except RuntimeError:  # not inside a runnable
        return None
    if isinstance(callbacks, BaseCallbackManager):
        handlers = callbacks.handlers
    else:
        handlers = list(callbacks or [])
    return open_run(handlers, str(current.trace_id))


def annotate_decision(decision: StopDecision, messages: Sequence[BaseMessage]) -> None:
    """Put the decision's metadata and the tag ``stop:<rule>`` on the current run.

    Args:
        decision: The tool step's decision.
        messages: The messages it was made from.
    """
    run = get_current_run_tree()
    if run is None:
        return
    run.add_metadata(decision_metadata(decision, messages))
    run.add_tags([f"{TAG_PREFIX}{decision['rule']}"])


def record_run(
    messages: Sequence[BaseMessage], decision: StopDecision | None
) -> tuple[RunTree, dict[str, Any]] | None:
    """Put the latest decision and the totals so far on the root run of the trace.

    Args:
        messages: The thread's messages up to now.
        decision: The latest tool step's decision this turn, or None if no tool ran.

    Returns:
        The root run and its :data:`SAVED_KEYS`, or None outside a traced run.
    """
    root = root_run()
    if root is None:
        return None
    totals = run_totals(messages)
    saving = saving_metadata(decision, totals["model_name"])
    root.add_metadata({**decision_metadata(decision, messages), **totals, **saving})
    return root, saving


def _artifact_of(result: object, response_format: str) -> object:
    if response_format == "content_and_artifact" and isinstance(result, tuple) and len(result) == 2:
        return result[1]
    if isinstance(result, ToolMessage):
        return result.artifact
    return None


def _annotate_tool_run(result: object, response_format: str) -> None:
    run = get_current_run_tree()
    if run is not None:
        run.add_metadata(
            {"stop_artifact": sanitize_artifact(_artifact_of(result, response_format))}
        )


def _sync(func: Callable[..., Any], response_format: str) -> Callable[..., Any]:
    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        result = func(*args, **kwargs)
        _annotate_tool_run(result, response_format)
        return result

    return call


def _async(
    func: Callable[..., Awaitable[Any]], response_format: str
) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(func)
    async def call(*args: Any, **kwargs: Any) -> Any:
        result = await func(*args, **kwargs)
        _annotate_tool_run(result, response_format)
        return result

    return call


def traced_tool(tool: BaseTool) -> BaseTool:
    """Return a copy of a tool whose own run records ``stop_artifact`` (sanitized).

    The metadata must be written inside the tool's run, before it ends, so the copy
    wraps the tool's function. Tools built with ``@tool`` / ``StructuredTool`` are
    wrapped; any other tool is returned unchanged.

    Args:
        tool: The tool about to run.

    Returns:
        The wrapped copy, or ``tool`` itself.
    """
    if not isinstance(tool, StructuredTool):
        return tool
    update: dict[str, Any] = {}
    if tool.func is not None:
        update["func"] = _sync(tool.func, tool.response_format)
    if tool.coroutine is not None:
        update["coroutine"] = _async(tool.coroutine, tool.response_format)
    return tool.model_copy(update=update)


def with_artifact_metadata(request: ToolCallRequest) -> ToolCallRequest:
    """Return the tool call request with :func:`traced_tool` applied, when traced.

    Args:
        request: The tool call about to run.

    Returns:
        The request unchanged when the run is not traced or has no tool, else a copy that
        runs the wrapped tool.
    """
    if request.tool is None or get_current_run_tree() is None:
        return request
    return request.override(tool=traced_tool(request.tool))


def trace_decision(decision: StopDecision, messages: Sequence[BaseMessage]) -> None:
    """Put a tool step's decision on the run that decided and on the root run, if traced.

    The stop core's ``on_decision`` hook in both graphs: the current run gets the
    ``stop_*`` metadata and the tag ``stop:<rule>``, and the root run the decision and the
    run's totals so far; after a hard stop, its saving as feedback too.

    Args:
        decision: The decision of one tool step.
        messages: The messages it was decided from, ending with the tool step.
    """
    annotate_decision(decision, messages)
    recorded = record_run(messages, decision)
    if recorded is not None and "saved" in decision:
        send_saving_feedback(*recorded)


def send_saving_feedback(root: RunTree, saving: Mapping[str, Any]) -> None:
    """Send a hard stop's :data:`SAVED_KEYS` as feedback on the root run.

    Scores only (:data:`FEEDBACK_KEYS`; dollars when the model has a price), from a
    background thread so the run never waits on LangSmith; a failure is logged by type.

    Args:
        root: The root run of the trace.
        saving: What :func:`record_run` put on it.
    """
    scores = {
        FEEDBACK_KEYS[key]: round(value * 1_000_000) if key == "stop_saved_usd" else value
        for key, value in saving.items()
        if key in FEEDBACK_KEYS and value is not None
    }
    _FEEDBACK.submit(_send, root.client, root.id, root.trace_id, root.session_name, scores)


def _send(
    client: Any, run_id: UUID, trace_id: UUID, project: str | None, scores: Mapping[str, Any]
) -> None:
    try:
        session = _PROJECTS.get(project or "")
        if session is None and project:
            session = _PROJECTS[project] = client.read_project(project_name=project).id
        for key, score in scores.items():
            client.create_feedback(
                run_id=run_id, trace_id=trace_id, key=key, score=score, session_id=session
            )
    except Exception as error:  # noqa: BLE001 - feedback must never fail a run
        logger.warning("the stop's saving feedback was not sent (%s)", type(error).__name__)


def flush_feedback() -> None:
    """Wait until the feedback sent so far has left (tests, and a process about to exit)."""
    done: Future[None] = _FEEDBACK.submit(lambda: None)
    done.result(timeout=60)


def trace_approval_asked(policy: str) -> None:
    """Mark the root run of the trace as paused for a person's approval, if traced.

    Sets ``stop_policy`` and ``stop_approval="asked"``; the run that answers records the
    outcome with its decision (:func:`trace_decision`), which replaces them.

    Args:
        policy: The policy that asks (``spend_cap``).
    """
    root = root_run()
    if root is not None:
        root.add_metadata({"stop_policy": policy, "stop_approval": "asked"})


def trace_model_call(messages: Sequence[BaseMessage], decision: StopDecision | None) -> None:
    """After a model call, put the run's totals so far on the root run, if traced.

    Args:
        messages: The messages including the model's reply.
        decision: The latest tool step's decision this turn, or None if no tool ran.
    """
    record_run(messages, decision)
