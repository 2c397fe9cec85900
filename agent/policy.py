"""Policies that run BEFORE a stop is interpreted, so a denial is never read as success.

Both graphs refuse with the same functions. ``legacy`` calls them in its tools node for
each call of the turn and runs its ``ToolNode`` on the calls they let through
(``ToolNode`` has no ``wrap_tool_call`` on langgraph 0.6); ``middleware`` wraps tool
calls with :func:`enforce_spend_cap` in :class:`agent.graphs.middleware.SpendCapMiddleware`,
placed before the stop middleware. There a call that is let through runs with
:func:`agent.tracing.metadata.with_artifact_metadata`, so a traced tool run records its
sanitized artifact (``legacy`` binds :func:`agent.tracing.metadata.traced_tool` copies).

With ``on_policy_block="ask"`` a checkout above the cap is not refused at once:
:func:`ask_for_approval` pauses the run with one ``interrupt()`` for the whole step (an
approval request in the schema of langchain's ``HumanInTheLoopMiddleware``, see
:mod:`agent.approval`) BEFORE any tool of the step runs, and returns the person's
decisions. ``legacy`` calls it at the top of its tools node, ``middleware`` in
``SpendCapMiddleware.after_model`` (``create_agent`` runs each tool call as its own task,
so only a hook before tools can pause the step once). Then :func:`spend_cap_verdict`
lets an approved call run (:func:`mark_approved` records ``approval="approved"`` on its
artifact) and turns a rejected one into a ``policy_block`` refusal with
``approval="rejected"`` and the approver's reason, escaped and cut, in its content only.

Why not ``HumanInTheLoopMiddleware`` itself: its ``when`` predicate can say which calls to
ask about, but a reject becomes its own ToolMessage ("User rejected the tool call ...")
with no ``policy_block`` artifact, so the stop decision would not see a refusal; an approve
only lets the call reach this policy, which would refuse it; and ``legacy`` has no
middleware. The request and the response keep that middleware's schema, so front ends
cannot tell the difference.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import stop_on_artifact as stopping
from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from langgraph.types import Command
from stop_on_artifact.decision import turn_start

from agent.approval import MAX_REASON_CHARS, approval_request, ask, reject_reason
from agent.context import Context, resolve
from agent.tools.checkout import purchase
from agent.tools.markdown import escape_math, excerpt, label
from agent.tracing.metadata import trace_approval_asked, with_artifact_metadata

SPEND_CAP_MESSAGE = (
    "This purchase is above the spending limit set for this assistant, so it was not "
    "attempted. No payment was made. Please contact support to raise the limit."
)
"""The user-safe answer when the spend cap refuses a checkout."""

REJECTED_MESSAGE = (
    "This purchase is above the spending limit set for this assistant, and the person "
    "asked to approve it declined, so it was not attempted. No payment was made."
)
"""The user-safe answer when an approver rejects an over-cap checkout."""

POLICY = "spend_cap"
"""The policy's name, on its artifacts and in the stop record."""

TOOL_ERROR_TEMPLATE = "The tool failed with {error}. It did not complete."
"""What the model reads when a tool raised. Names the exception type, never its text."""

if TYPE_CHECKING:  # langchain / langgraph 1.x only: the legacy graph runs on 0.6 too
    from langchain.agents.middleware.human_in_the_loop import ActionRequest
    from langgraph.prebuilt.tool_node import ToolCallRequest

    from agent.approval import ApprovalDecision

ToolResult = ToolMessage | Command[Any]
Decisions = Mapping[str, "ApprovalDecision"]
"""A person's decisions on this step's blocked calls, by ``tool_call_id``."""


def _purchase(call: ToolCall) -> tuple[str, float] | None:
    """Return ``(item, amount)`` of a checkout whose amount is a number, else None."""
    if call["name"] != "checkout":
        return None
    amount = call["args"].get("amount")
    if not isinstance(amount, int | float) or isinstance(amount, bool):
        return None  # the tool's own argument validation reports it
    return str(call["args"].get("item", "")), float(amount)


def over_cap(call: ToolCall, context: Context) -> bool:
    """Return True if this call is a checkout above ``context.spend_cap``.

    Args:
        call: The tool call about to run, as the model issued it.
        context: The run's context, holding ``spend_cap``.

    Returns:
        True when the spend-cap policy blocks it (a non-finite amount is blocked too).
    """
    bought = _purchase(call)
    if bought is None:
        return False
    amount = bought[1]
    return not (math.isfinite(amount) and amount <= context.spend_cap)


def _refusal(call: ToolCall, text: str, artifact: dict[str, Any]) -> ToolMessage:
    bought = _purchase(call)
    item, amount = bought if bought is not None else ("", 0.0)
    return ToolMessage(
        content=escape_math(f"{label('Not purchased: ' + purchase(item, amount))}\n\n{text}"),
        name=call["name"],
        tool_call_id=call["id"] or "",
        artifact=artifact,
    )


def spend_cap_refusal(call: ToolCall, context: Context) -> ToolMessage | None:
    """Return a policy-block ToolMessage if this call is a checkout above the cap.

    Args:
        call: The tool call about to run, as the model issued it.
        context: The run's context, holding ``spend_cap``.

    Returns:
        The refusal, or None to let the call run.
    """
    if not over_cap(call, context):
        return None
    artifact = stopping.policy_block(policy=POLICY, cap=context.spend_cap)
    return _refusal(call, SPEND_CAP_MESSAGE, artifact)


def rejected_refusal(call: ToolCall, context: Context, reason: str | None) -> ToolMessage:
    """Return the refusal of an over-cap call an approver rejected.

    Args:
        call: The blocked call.
        context: The run's context, holding ``spend_cap``.
        reason: The approver's optional reason. It goes in the content only, escaped and
            cut to :data:`~agent.approval.MAX_REASON_CHARS`; never in the artifact, so
            never in trace metadata.

    Returns:
        A ``policy_block`` ToolMessage whose artifact says ``approval="rejected"``.
    """
    text = REJECTED_MESSAGE
    if reason is not None:
        text += f"\n\n**Reason given:** {excerpt(reason, MAX_REASON_CHARS)}"
    artifact = stopping.policy_block(policy=POLICY, cap=context.spend_cap, approval="rejected")
    return _refusal(call, text, artifact)


def approval_action(call: ToolCall, context: Context) -> ActionRequest:
    """Return the action request a person reads about one blocked call.

    Args:
        call: An over-cap checkout.
        context: The run's context, holding ``spend_cap``.

    Returns:
        The call's name and arguments, and a description naming the item (escaped, cut),
        the amount and the cap (each ``$`` escaped: see :func:`~agent.tools.markdown.escape_math`).
    """
    bought = _purchase(call)
    item, amount = bought if bought is not None else ("", 0.0)
    description = escape_math(
        f"Approve this purchase above the spending limit? **{excerpt(item)}** for "
        f"${amount:,.2f}; the limit is ${context.spend_cap:,.2f}. Nothing has been charged: "
        "approve to charge it, or reject (optionally with a reason) to refuse it."
    )
    return {"name": call["name"], "args": dict(call["args"]), "description": description}


def calls_to_ask_about(calls: Sequence[ToolCall], context: Context) -> list[ToolCall]:
    """Return the calls of a step a person must decide on: none unless ``ask``.

    Args:
        calls: The step's tool calls, in the order the model issued them.
        context: The run's context.

    Returns:
        The over-cap calls when ``on_policy_block`` is ``ask``, in call order.
    """
    if context.on_policy_block != "ask":
        return []
    return [call for call in calls if over_cap(call, context)]


def _retried_approvals(messages: Sequence[BaseMessage]) -> set[tuple[str, float]]:
    """Return the purchases approved this turn whose call timed out: a retry needs no ask.

    Only a ``transient`` result counts (nothing was charged, and the model is expected to
    retry); an approved purchase that completed is never approved again by this.
    """
    turn = messages[turn_start(messages) :]
    calls = {call["id"]: call for m in turn if isinstance(m, AIMessage) for call in m.tool_calls}
    carried: set[tuple[str, float]] = set()
    for message in turn:
        if not isinstance(message, ToolMessage) or not isinstance(message.artifact, dict):
            continue
        artifact = message.artifact
        if artifact.get("approval") == "approved" and artifact.get("reason") == "transient":
            call = calls.get(message.tool_call_id)
            bought = _purchase(call) if call is not None else None
            if bought is not None:
                carried.add(bought)
    return carried


def ask_for_approval(
    calls: Sequence[ToolCall], context: Context, messages: Sequence[BaseMessage] = ()
) -> dict[str, ApprovalDecision]:
    """Pause the run once for this step's blocked calls and return the person's decisions.

    Call it before any tool of the step runs: on resume the calling node runs again from
    its start, and ``interrupt()`` then returns the resume value instead of pausing. A
    malformed answer does not fail the run: the same request is asked again, its
    descriptions saying what was wrong (see :func:`agent.approval.ask`). The retry of a
    purchase approved this turn whose call timed out is approved without asking again.

    Args:
        calls: The step's tool calls, in the order the model issued them.
        context: The run's context.
        messages: The thread's messages before this step (to find approved retries).

    Returns:
        The decisions by ``tool_call_id``; empty (and no pause) when nothing is blocked
        or ``on_policy_block`` is ``refuse``.
    """
    blocked = calls_to_ask_about(calls, context)
    carried = _retried_approvals(messages) if blocked else set()
    decisions: dict[str, ApprovalDecision] = {
        call["id"] or "": {"type": "approve"} for call in blocked if _purchase(call) in carried
    }
    to_ask = [call for call in blocked if (call["id"] or "") not in decisions]
    if to_ask:
        trace_approval_asked(POLICY)
        answers = ask(approval_request([approval_action(call, context) for call in to_ask]))
        decisions.update({call["id"] or "": d for call, d in zip(to_ask, answers, strict=True)})
    return decisions


def context_for_answer(context: Context | Mapping[str, Any] | None) -> Context | dict[str, Any]:
    """Return the context a run answering a pending approval request runs with.

    The answer is honoured whatever the resuming run's context says about
    ``on_policy_block``: a client such as Agent Chat UI resumes with no context, and the
    defaults would refuse the call a person just approved. Other fields are the run's
    own; resume with the ``spend_cap`` the run paused with (or set it on the assistant).

    Args:
        context: The resuming run's context, as the server or the caller passed it.

    Returns:
        The same context with ``on_policy_block="ask"``.
    """
    if isinstance(context, Context):
        return context.model_copy(update={"on_policy_block": "ask"})
    return {**(context or {}), "on_policy_block": "ask"}


def spend_cap_verdict(call: ToolCall, context: Context, decisions: Decisions) -> ToolMessage | None:
    """Return the policy's refusal of a call, or None to let it run.

    Args:
        call: The tool call about to run.
        context: The run's context.
        decisions: The person's decisions on this step (from :func:`ask_for_approval`).

    Returns:
        None for a call within the cap or an approved one; the rejected refusal for a
        rejected one; the plain refusal for any other over-cap call.
    """
    if not over_cap(call, context):
        return None
    decision = decisions.get(call["id"] or "")
    if decision is None:
        return spend_cap_refusal(call, context)
    if decision["type"] == "approve":
        return None
    return rejected_refusal(call, context, reject_reason(decision))


def mark_approved(message: ToolMessage, approved: Collection[str]) -> ToolMessage:
    """Record on an approved call's artifact that a person approved it.

    Args:
        message: The result of a call that ran.
        approved: The ``tool_call_id``s a person approved this step.

    Returns:
        The message, its artifact with ``policy`` and ``approval="approved"`` when the call
        was approved and returned a dict artifact; otherwise unchanged.
    """
    if message.tool_call_id not in approved or not isinstance(message.artifact, dict):
        return message
    artifact = {**message.artifact, "policy": POLICY, "approval": "approved"}
    return message.model_copy(update={"artifact": artifact})


def approved_ids(decisions: Decisions) -> list[str]:
    """Return the ``tool_call_id``s a person approved."""
    return [call_id for call_id, d in decisions.items() if d["type"] == "approve"]


def approval_update(
    messages: Sequence[BaseMessage], context: Context, previous: Collection[str] = ()
) -> dict[str, Any] | None:
    """Ask about the latest model turn's blocked calls; return the state update for it.

    For a hook that runs after the model and before tools (``after_model``): the
    rejected calls get their refusal now (so no tool runs for them) and the approved
    ones are listed under :data:`APPROVED_KEY` for :func:`enforce_spend_cap`.

    Args:
        messages: The thread's messages, ending with the model's reply.
        context: The run's context.
        previous: What :data:`APPROVED_KEY` holds now (cleared when nothing is asked).

    Returns:
        The update, or None when nothing was asked and nothing needs clearing.
    """
    last = messages[-1] if messages else None
    calls = last.tool_calls if isinstance(last, AIMessage) else []
    decisions = ask_for_approval(calls, context, messages)
    if not decisions:
        return {APPROVED_KEY: []} if previous else None
    refusals = [spend_cap_verdict(call, context, decisions) for call in calls]
    return {
        "messages": [refusal for refusal in refusals if refusal is not None],
        APPROVED_KEY: approved_ids(decisions),
    }


def _approved_in(request: ToolCallRequest) -> list[str]:
    state = request.state if isinstance(request.state, Mapping) else {}
    return list(state.get(APPROVED_KEY) or [])


APPROVED_KEY = "spend_cap_approved"
"""Middleware state key: the ``tool_call_id``s approved this step (``after_model`` writes it,
``wrap_tool_call`` reads it)."""


def _screen(request: ToolCallRequest) -> tuple[ToolMessage | None, list[str]]:
    context = resolve(request.runtime.context if request.runtime else None)
    approved = _approved_in(request)
    decisions: dict[str, ApprovalDecision] = {i: {"type": "approve"} for i in approved}
    return spend_cap_verdict(request.tool_call, context, decisions), approved


def _marked(result: ToolResult, approved: Collection[str]) -> ToolResult:
    return mark_approved(result, approved) if isinstance(result, ToolMessage) else result


def enforce_spend_cap(
    request: ToolCallRequest, execute: Callable[[ToolCallRequest], ToolResult]
) -> ToolResult:
    """Refuse a checkout above ``spend_cap`` before it runs, unless a person approved it."""
    refusal, approved = _screen(request)
    if refusal is not None:
        return refusal
    return _marked(execute(with_artifact_metadata(request)), approved)


async def aenforce_spend_cap(
    request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[ToolResult]]
) -> ToolResult:
    """Async twin of :func:`enforce_spend_cap`."""
    refusal, approved = _screen(request)
    if refusal is not None:
        return refusal
    return _marked(await execute(with_artifact_metadata(request)), approved)


def tool_error_content(error: Exception, *_: object) -> str:
    """Describe a tool's exception for the model without echoing its message."""
    return TOOL_ERROR_TEMPLATE.format(error=type(error).__name__)
