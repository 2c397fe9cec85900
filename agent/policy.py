"""Policies that run BEFORE a stop is interpreted, so a denial is never read as success.

Both graphs refuse with the same functions. ``legacy`` calls them in its tools node for
each call of the turn and runs its ``ToolNode`` on the calls they let through
(``ToolNode`` has no ``wrap_tool_call`` on langgraph 0.6); ``middleware`` wraps tool
calls with :func:`enforce_spend_cap` in :class:`agent.graphs.middleware.SpendCapMiddleware`,
placed before the stop middleware. There a call that is let through runs with
:func:`agent.tracing.metadata.with_artifact_metadata`, so a traced tool run records its
sanitized artifact (``legacy`` binds :func:`agent.tracing.metadata.traced_tool` copies).

The policy decides once per model turn, with the model's reply: :func:`screen` records a
:class:`Verdict` (which calls are refused, which are asked about and what the person is
shown, under which cap) in the thread state under :data:`VERDICT_KEY`, before any tool
of the step runs. ``legacy`` records it in its ``agent`` node, ``middleware`` in
``SpendCapMiddleware.wrap_model_call``. The tools step only applies the record.

With ``on_policy_block="ask"`` a checkout above the cap is not refused at once:
:func:`answers` pauses the run with one ``interrupt()`` for the whole step (an approval
request in the schema of langchain's ``HumanInTheLoopMiddleware``, see
:mod:`agent.approval`) built from the recorded actions, BEFORE any tool of the step runs,
and returns the person's decisions. ``legacy`` calls it at the top of its tools node,
``middleware`` in ``SpendCapMiddleware.after_model`` (``create_agent`` runs each tool call
as its own task, so only a hook before tools can pause the step once). Then
:func:`refusal_for` lets an approved call run (:func:`mark_approved` records
``approval="approved"`` on its artifact) and turns a rejected one into a ``policy_block``
refusal with ``approval="rejected"`` and the approver's reason, escaped and cut, in its
content only. A resume never screens again: whatever context it carries, the answer
applies to the calls the record says were asked (and the run goes on under the turn's own
settings, see :mod:`agent.graphs.commands`).

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
from typing import TYPE_CHECKING, Any, cast

import stop_on_artifact as stopping
from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from langgraph.types import Command
from stop_on_artifact.messages import turn_start
from typing_extensions import TypedDict

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


class AskedCall(TypedDict):
    """One call a person is asked about, and what they are shown."""

    tool_call_id: str
    action: ActionRequest
    """The action request as the person reads it (name, arguments, description)."""


class Verdict(TypedDict):
    """What the spend-cap policy decided about one model turn's calls.

    Recorded in the thread state with the model's reply (:data:`VERDICT_KEY`), before
    any tool of the step runs and before any pause, and read back by the tools step: a
    resume applies the person's answer to what was recorded here and never decides again
    whether to ask, whatever its own context says.
    """

    policy: str
    """The policy's name (:data:`POLICY`)."""
    spend_cap: float
    """The cap the calls were screened against."""
    screened: list[str]
    """Every ``tool_call_id`` of the model turn: the verdict belongs to these calls."""
    refused: list[str]
    """Calls refused at once (``on_policy_block="refuse"``)."""
    asked: list[AskedCall]
    """Calls a person decides on (``on_policy_block="ask"``), in call order."""
    carried: list[str]
    """Retries of a purchase approved this turn whose call timed out: approved already."""


VERDICT_KEY = "spend_cap_verdict"
"""State key of the latest model turn's :class:`Verdict` (None when it made no call)."""


def _refusal(call: ToolCall, text: str, artifact: dict[str, Any]) -> ToolMessage:
    bought = _purchase(call)
    item, amount = bought if bought is not None else ("", 0.0)
    return ToolMessage(
        content=escape_math(f"{label('Not purchased: ' + purchase(item, amount))}\n\n{text}"),
        name=call["name"],
        tool_call_id=call["id"] or "",
        artifact=artifact,
    )


def spend_cap_refusal(call: ToolCall, cap: float) -> ToolMessage:
    """Return the policy-block ToolMessage that stands in for a checkout above the cap.

    Args:
        call: The blocked call.
        cap: The spend cap it was screened against.

    Returns:
        A ``policy_block`` ToolMessage with the user-safe refusal.
    """
    artifact = stopping.policy_block(policy=POLICY, cap=cap)
    return _refusal(call, SPEND_CAP_MESSAGE, artifact)


def rejected_refusal(call: ToolCall, cap: float, reason: str | None) -> ToolMessage:
    """Return the refusal of an over-cap call an approver rejected.

    Args:
        call: The blocked call.
        cap: The spend cap it was screened against.
        reason: The approver's optional reason. It goes in the content only, escaped and
            cut to :data:`~agent.approval.MAX_REASON_CHARS`; never in the artifact, so
            never in trace metadata.

    Returns:
        A ``policy_block`` ToolMessage whose artifact says ``approval="rejected"``.
    """
    text = REJECTED_MESSAGE
    if reason is not None:
        text += f"\n\n**Reason given:** {excerpt(reason, MAX_REASON_CHARS)}"
    artifact = stopping.policy_block(policy=POLICY, cap=cap, approval="rejected")
    return _refusal(call, text, artifact)


def approval_action(call: ToolCall, cap: float) -> ActionRequest:
    """Return the action request a person reads about one blocked call.

    Args:
        call: An over-cap checkout.
        cap: The spend cap it is above.

    Returns:
        The call's name and arguments, and a description naming the item (escaped, cut),
        the amount and the cap (each ``$`` escaped: see :func:`~agent.tools.markdown.escape_math`).
    """
    bought = _purchase(call)
    item, amount = bought if bought is not None else ("", 0.0)
    description = escape_math(
        f"Approve this purchase above the spending limit? **{excerpt(item)}** for "
        f"${amount:,.2f}; the limit is ${cap:,.2f}. Nothing has been charged: "
        "approve to charge it, or reject (optionally with a reason) to refuse it."
    )
    return {"name": call["name"], "args": dict(call["args"]), "description": description}


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


def screen(
    calls: Sequence[ToolCall], context: Context, messages: Sequence[BaseMessage] = ()
) -> Verdict | None:
    """Decide, once, what the policy does with a model turn's calls.

    Call it with the model's reply, under the turn's settings, and record the result
    under :data:`VERDICT_KEY`: the tools step applies it (:func:`answers`,
    :func:`refusal_for`) and never screens again.

    Args:
        calls: The model turn's tool calls, in the order the model issued them.
        context: The turn's context, holding ``spend_cap`` and ``on_policy_block``.
        messages: The thread's messages before the reply (to find approved retries).

    Returns:
        The verdict; None when the turn made no call.
    """
    if not calls:
        return None
    blocked = [call for call in calls if over_cap(call, context)]
    verdict = Verdict(
        policy=POLICY,
        spend_cap=context.spend_cap,
        screened=[call["id"] or "" for call in calls],
        refused=[],
        asked=[],
        carried=[],
    )
    if context.on_policy_block != "ask":
        verdict["refused"] = [call["id"] or "" for call in blocked]
        return verdict
    approved_before = _retried_approvals(messages) if blocked else set()
    for call in blocked:
        if _purchase(call) in approved_before:
            verdict["carried"].append(call["id"] or "")
        else:
            action = approval_action(call, context.spend_cap)
            verdict["asked"].append({"tool_call_id": call["id"] or "", "action": action})
    return verdict


def recorded(
    state: Mapping[str, Any], calls: Sequence[ToolCall], context: Context
) -> Verdict | None:
    """Return the verdict recorded for ``calls``, screening them only if none was.

    A verdict is always recorded with the model's reply; screening here is only for a
    thread whose reply predates that record.

    Args:
        state: The graph state, holding :data:`VERDICT_KEY`.
        calls: The latest model turn's tool calls.
        context: The run's context, used only when nothing was recorded.

    Returns:
        The verdict for exactly these calls.
    """
    verdict = cast("Verdict | None", state.get(VERDICT_KEY))
    ids = [call["id"] or "" for call in calls]
    if verdict is not None and verdict["screened"] == ids:
        return verdict
    messages = cast("Sequence[BaseMessage]", state.get("messages", []))
    return screen(calls, context, messages[:-1])


def answers(verdict: Verdict | None) -> dict[str, ApprovalDecision]:
    """Pause once for the verdict's asked calls and return every approval, by call id.

    Call it before any tool of the step runs: on resume the calling node runs again from
    its start, and ``interrupt()`` then returns the resume value instead of pausing. The
    request is the one recorded in the verdict, so the answer applies to what the person
    was shown. A malformed answer does not fail the run: the same request is asked again,
    its descriptions saying what was wrong (see :func:`agent.approval.ask`).

    Args:
        verdict: The model turn's recorded verdict.

    Returns:
        The person's decision for each asked call, and an approval for each carried one;
        empty (and no pause) when nothing was asked.
    """
    if verdict is None:
        return {}
    decisions: dict[str, ApprovalDecision] = {i: {"type": "approve"} for i in verdict["carried"]}
    asked = verdict["asked"]
    if asked:
        trace_approval_asked(verdict["policy"])
        given = ask(approval_request([entry["action"] for entry in asked]))
        decisions.update({entry["tool_call_id"]: d for entry, d in zip(asked, given, strict=True)})
    return decisions


def context_for_answer(context: Context | Mapping[str, Any] | None) -> Context | dict[str, Any]:
    """Return the context of a run answering an approval on a thread with no turn context.

    Only for a thread paused before turns kept their context (:mod:`agent.turn`): the
    answer is honoured whatever the resuming run's context says about
    ``on_policy_block``, since a client such as Agent Chat UI resumes with no context.

    Args:
        context: The resuming run's context, as the server or the caller passed it.

    Returns:
        The same context with ``on_policy_block="ask"``.
    """
    if isinstance(context, Context):
        return context.model_copy(update={"on_policy_block": "ask"})
    return {**(context or {}), "on_policy_block": "ask"}


def refusal_for(
    call: ToolCall, verdict: Verdict | None, decisions: Decisions
) -> ToolMessage | None:
    """Return what stands in for a call the verdict blocked, or None to let it run.

    Args:
        call: A call of the model turn the verdict screened.
        verdict: The recorded verdict.
        decisions: The approvals from :func:`answers` (or the ids approved, as approvals).

    Returns:
        The refusal of a refused call, the rejected refusal of a rejected one, and the
        plain refusal of an asked call with no approval; None for a call the verdict let
        through, a carried one, or an approved one.
    """
    if verdict is None:
        return None
    call_id = call["id"] or ""
    cap = verdict["spend_cap"]
    if call_id in verdict["refused"]:
        return spend_cap_refusal(call, cap)
    if call_id not in {entry["tool_call_id"] for entry in verdict["asked"]}:
        return None  # within the cap, or carried
    decision = decisions.get(call_id)
    if decision is None:
        return spend_cap_refusal(call, cap)
    if decision["type"] == "approve":
        return None
    return rejected_refusal(call, cap, reject_reason(decision))


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


def approval_update(state: Mapping[str, Any], context: Context) -> dict[str, Any] | None:
    """Ask about the latest model turn's recorded asked calls; return the state update.

    For a hook that runs after the model and before tools (``after_model``): the
    rejected calls get their refusal now (so no tool runs for them) and the approved
    ones are listed under :data:`APPROVED_KEY` for :func:`enforce_spend_cap`.

    Args:
        state: The graph state: the messages, ending with the model's reply, and the
            reply's recorded :data:`VERDICT_KEY`.
        context: The run's context, used only when no verdict was recorded.

    Returns:
        The update, or None when nothing was asked and nothing needs clearing.
    """
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    calls = last.tool_calls if isinstance(last, AIMessage) else []
    verdict = recorded(state, calls, context) if calls else None
    decisions = answers(verdict)
    if not decisions:
        return {APPROVED_KEY: []} if state.get(APPROVED_KEY) else None
    refusals = [refusal_for(call, verdict, decisions) for call in calls]
    return {
        "messages": [refusal for refusal in refusals if refusal is not None],
        APPROVED_KEY: approved_ids(decisions),
    }


APPROVED_KEY = "spend_cap_approved"
"""Middleware state key: the ``tool_call_id``s approved this step (``after_model`` writes it,
``wrap_tool_call`` reads it)."""


def _screen(request: ToolCallRequest) -> tuple[ToolMessage | None, list[str]]:
    state = request.state if isinstance(request.state, Mapping) else {}
    context = resolve(request.runtime.context if request.runtime else None)
    approved = list(state.get(APPROVED_KEY) or [])
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    calls = last.tool_calls if isinstance(last, AIMessage) else [request.tool_call]
    if request.tool_call["id"] not in {call["id"] for call in calls}:
        calls = [request.tool_call]  # not the latest turn's call: screen it alone
    verdict = recorded(state, calls, context)
    decisions: dict[str, ApprovalDecision] = {i: {"type": "approve"} for i in approved}
    return refusal_for(request.tool_call, verdict, decisions), approved


def _marked(result: ToolResult, approved: Collection[str]) -> ToolResult:
    return mark_approved(result, approved) if isinstance(result, ToolMessage) else result


def enforce_spend_cap(
    request: ToolCallRequest, execute: Callable[[ToolCallRequest], ToolResult]
) -> ToolResult:
    """Refuse a checkout the recorded verdict blocked, unless a person approved it."""
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
