"""Policies for a tool step: refuse a call, or ask a person, before any stop is read.

A policy is a small function: given a tool call and the run's context, it lets the call
through (None) or blocks it with a :class:`Block` (a user-safe refusal and a one-line
description a person can approve against). A :class:`ToolPolicy` names it and says what
a block does: ``"refuse"`` (the call never runs; its part is answered by the refusal, a
``policy_block`` artifact naming the policy) or ``"ask"`` (the step pauses once, before any
tool of it runs, with the request of langchain's ``HumanInTheLoopMiddleware``; approve
runs the call once, reject answers with the refusal and the approver's reason)::

    @tool_policy("spend_cap", tools={"checkout"}, on_block="ask")
    def spend_cap(call, context):
        if call["args"]["amount"] <= 500:
            return None
        return Block(refusal="Over the limit: not bought.", description="Approve it?")

The policies decide once per model turn, with the model's reply: :func:`screen` returns a
:class:`PolicyVerdict` (JSON-able) recorded in the thread state before any pause; the
tools step applies the record (:func:`answers`, :func:`refusal_for`,
:func:`mark_approved`) and never screens again, so a resume answers exactly what was asked,
whatever context it carries. :class:`PolicyGate` does all of it for a hand-built
``StateGraph`` (langgraph 0.6.6 too); :class:`~stop_on_artifact._policy_middleware.PolicyMiddleware`
for ``create_agent``. Either way, place the policies before the stop decision: the
refusal is then a part of the step the decision reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, cast

from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from typing_extensions import TypedDict

from stop_on_artifact._approval import (
    ALLOWED_DECISIONS,
    MAX_REASON_CHARS,
    ActionRequest,
    ApprovalDecision,
    ApprovalOutcome,
    ApprovalRequest,
    ResumeError,
    ReviewConfig,
    approval_request,
    ask,
    decisions_problem,
    is_approval_request,
    read_decisions,
    reject_reason,
    resume_shape_problem,
    with_problem,
)
from stop_on_artifact._artifact import policy_block
from stop_on_artifact._claims import ApprovalUsedError, claim_answer
from stop_on_artifact._markdown import excerpt
from stop_on_artifact._record import StateSchemaError
from stop_on_artifact.messages import turn_start

__all__ = [
    "ALLOWED_DECISIONS",
    "MAX_REASON_CHARS",
    "ActionRequest",
    "ApprovalDecision",
    "ApprovalOutcome",
    "ApprovalRequest",
    "ApprovalUsedError",
    "AskedCall",
    "Block",
    "OnBlock",
    "PolicyError",
    "PolicyGate",
    "PolicyVerdict",
    "RefusedCall",
    "ResumeError",
    "ReviewConfig",
    "ToolPolicy",
    "answers",
    "approval_request",
    "decisions_problem",
    "is_approval_request",
    "mark_approved",
    "read_decisions",
    "refusal_for",
    "resume_shape_problem",
    "screen",
    "tool_policy",
    "with_problem",
]

Scalar: TypeAlias = str | int | float | bool | None
"""A value a ``policy_block`` artifact may carry."""

OnBlock = Literal["refuse", "ask"]
"""What a block does: refuse the call at once, or ask a person first."""

Check: TypeAlias = Callable[[ToolCall, Any], "Block | None"]
"""A policy's function: ``(call, context) -> Block | None``."""

AskHook: TypeAlias = Callable[[str], None]
"""Called with a policy's name each time the step pauses on calls it blocked."""

Decisions: TypeAlias = Mapping[str, ApprovalDecision]
"""A person's decisions on a step's blocked calls, by ``tool_call_id``."""

_SCALARS = (str, int, float, bool, type(None))


class PolicyError(ValueError):
    """A policy, a block or a gate built with a value of the wrong form."""


def _identifier(value: object, field_name: str) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        msg = f"{field_name} must be a non-empty identifier (letters, digits, underscores)"
        raise PolicyError(msg)
    return value


@dataclass(frozen=True, kw_only=True)
class Block:
    """What a policy says about a call it blocks.

    Example:
        ```python
        Block(
            refusal="This purchase is above the limit, so it was not attempted.",
            description="Approve a purchase of $900.00 above the $500.00 limit?",
            fields={"cap": 500},
        )
        ```
    """

    refusal: str
    """User-safe Markdown: the part's answer when the call is refused."""
    description: str
    """The one line a person approves against (``on_block="ask"``)."""
    rejected: str | None = None
    """The part's answer after a person rejects; None means :attr:`refusal`."""
    fields: Mapping[str, Scalar] = field(default_factory=dict)
    """Small scalars for the ``policy_block`` artifact (``cap``, say); never caller text."""

    def __post_init__(self) -> None:
        """Check the texts and fields; freeze the fields.

        Raises:
            PolicyError: If a text is not a string or a field is not a small scalar.
        """
        for name in ("refusal", "description"):
            if not isinstance(getattr(self, name), str):
                msg = f"Block.{name} must be a string"
                raise PolicyError(msg)
        if self.rejected is not None and not isinstance(self.rejected, str):
            msg = "Block.rejected must be a string or None"
            raise PolicyError(msg)
        if not isinstance(self.fields, Mapping):
            msg = "Block.fields must be a mapping of names to small scalars"
            raise PolicyError(msg)
        for key, value in self.fields.items():
            if not isinstance(key, str) or not isinstance(value, _SCALARS):
                msg = "Block.fields must map str names to str, int, float, bool or None"
                raise PolicyError(msg)
            if key in {"stop", "reason", "policy", "approval"}:
                msg = "Block.fields may not set stop, reason, policy or approval"
                raise PolicyError(msg)
        object.__setattr__(self, "fields", dict(self.fields))  # a copy: the caller's may change


@dataclass(frozen=True)
class ToolPolicy:
    """A named check run on each tool call before it runs.

    Example:
        ```python
        from stop_on_artifact._policies import Block, ToolPolicy


        def over_limit(call, context):
            if call["args"].get("amount", 0) <= 500:
                return None
            return Block(refusal="Over the limit: not bought.", description="Buy anyway?")


        spend_cap = ToolPolicy("spend_cap", over_limit, "ask", frozenset({"checkout"}))
        ```
    """

    name: str
    """The policy's name: on its artifacts (``policy``) and in the stop decision."""
    check: Check
    """``(call, context) -> Block | None``: None lets the call through."""
    on_block: OnBlock | Callable[[Any], OnBlock] = "refuse"
    """What a block does, or a function of the run's context that says so per run."""
    tools: frozenset[str] | None = None
    """The tools it screens; None screens every tool."""

    def __post_init__(self) -> None:
        """Check every field.

        Raises:
            PolicyError: Naming the field, if one has the wrong form.
        """
        _identifier(self.name, "ToolPolicy.name")
        if not callable(self.check):
            msg = "ToolPolicy.check must be a function (call, context) -> Block | None"
            raise PolicyError(msg)
        if not callable(self.on_block) and self.on_block not in ("refuse", "ask"):
            msg = "ToolPolicy.on_block must be 'refuse', 'ask' or a function of the context"
            raise PolicyError(msg)
        if self.tools is not None:
            tools = self.tools
            if isinstance(tools, str) or not isinstance(tools, Iterable):
                msg = "ToolPolicy.tools must be a set of tool names or None"
                raise PolicyError(msg)
            names = frozenset(tools)
            if not names or not all(isinstance(name, str) and name for name in names):
                msg = "ToolPolicy.tools must be a non-empty set of tool names or None"
                raise PolicyError(msg)
            object.__setattr__(self, "tools", names)

    def applies_to(self, call: ToolCall) -> bool:
        """Return True when this policy screens ``call``'s tool."""
        return self.tools is None or call["name"] in self.tools

    def mode(self, context: Any) -> OnBlock:
        """Return what a block does in a run with this context.

        Args:
            context: The run's context.

        Returns:
            ``"refuse"`` or ``"ask"``.

        Raises:
            PolicyError: If the ``on_block`` function returns anything else.
        """
        mode = self.on_block(context) if callable(self.on_block) else self.on_block
        if mode not in ("refuse", "ask"):
            msg = "ToolPolicy.on_block must return 'refuse' or 'ask'"
            raise PolicyError(msg)
        return mode


def tool_policy(
    name: str,
    *,
    on_block: OnBlock | Callable[[Any], OnBlock] = "refuse",
    tools: Iterable[str] | None = None,
) -> Callable[[Check], ToolPolicy]:
    """Build a :class:`ToolPolicy` from the function it decorates.

    Args:
        name: The policy's name.
        on_block: ``"refuse"``, ``"ask"``, or a function of the run's context.
        tools: The tool names it screens; None screens every tool.

    Returns:
        A decorator turning ``(call, context) -> Block | None`` into the policy.
    """
    names = frozenset(tools) if tools is not None and not isinstance(tools, str) else tools

    def build(check: Check) -> ToolPolicy:
        return ToolPolicy(name, check, on_block, cast("frozenset[str] | None", names))

    return build


class RefusedCall(TypedDict):
    """A call refused at once, and its answer."""

    id: str
    """The call's ``tool_call_id``."""
    policy: str
    """The policy that refused it."""
    refusal: str
    """The part's answer."""
    fields: dict[str, Scalar]
    """The ``policy_block`` artifact's extra fields."""


class AskedCall(TypedDict):
    """A call a person is asked about, what they are shown, and both possible answers."""

    id: str
    """The call's ``tool_call_id``."""
    policy: str
    """The policy that blocked it."""
    action: ActionRequest
    """The action request as the person reads it (name, arguments, description)."""
    refusal: str
    """The part's answer with no approval."""
    rejected: str
    """The part's answer after a reject (the reason is added to it)."""
    fields: dict[str, Scalar]
    """The ``policy_block`` artifact's extra fields."""


class PolicyVerdict(TypedDict):
    """What the policies decided about one model turn's calls, recorded with the reply.

    Recorded in the thread state before any tool of the step runs and before any pause, and
    read back by the tools step: a resume applies the person's answer to what was recorded
    here and never decides again whether to ask.
    """

    screened: list[str]
    """Every ``tool_call_id`` of the model turn: the verdict belongs to these calls."""
    refused: list[RefusedCall]
    """Calls refused at once, in call order."""
    asked: list[AskedCall]
    """Calls a person decides on, in call order."""
    carried: list[str]
    """Retries of a call approved this turn whose result was transient (same tool and
    arguments): approved already, not asked again."""
    blocked_by: dict[str, str]
    """The policy that blocked each refused, asked or carried call, by ``tool_call_id``."""


def _call_id(call: ToolCall) -> str:
    return call["id"] or ""


def _approved_retries(messages: Sequence[BaseMessage]) -> list[tuple[str, dict[str, Any]]]:
    """Return ``(tool, args)`` of calls approved this turn whose result was transient.

    Only a ``transient`` result counts (the call did not complete, and the model is expected
    to retry); an approved call that completed is never approved again by this.
    """
    turn = messages[turn_start(messages) :]
    calls = {c["id"]: c for m in turn if isinstance(m, AIMessage) for c in m.tool_calls}
    carried: list[tuple[str, dict[str, Any]]] = []
    for message in turn:
        if not isinstance(message, ToolMessage) or not isinstance(message.artifact, dict):
            continue
        artifact = message.artifact
        if artifact.get("approval") == "approved" and artifact.get("reason") == "transient":
            call = calls.get(message.tool_call_id)
            if call is not None:
                carried.append((call["name"], dict(call["args"])))
    return carried


def _first_block(
    call: ToolCall, policies: Sequence[ToolPolicy], context: Any
) -> tuple[ToolPolicy, Block] | None:
    for policy in policies:
        if not policy.applies_to(call):
            continue
        block = policy.check(call, context)
        if block is None:
            continue
        if not isinstance(block, Block):
            msg = f"the check of policy {policy.name} must return a Block or None"
            raise PolicyError(msg)
        return policy, block
    return None


def screen(
    calls: Sequence[ToolCall],
    policies: Sequence[ToolPolicy],
    context: Any,
    messages: Sequence[BaseMessage] = (),
) -> PolicyVerdict | None:
    """Decide, once, what the policies do with a model turn's calls.

    Call it with the model's reply, under the turn's context, and record the result: the
    tools step applies it and never screens again. The first policy (in list order) that
    blocks a call decides for it.

    Args:
        calls: The model turn's tool calls, in the order the model issued them.
        policies: The policies, in order.
        context: The run's context, passed to each check and ``on_block`` function.
        messages: The thread's messages before the reply (to find approved retries).

    Returns:
        The verdict; None when the turn made no call.
    """
    if not calls:
        return None
    refused: list[RefusedCall] = []
    asked: list[AskedCall] = []
    carried: list[str] = []
    blocked_by: dict[str, str] = {}
    retries: list[tuple[str, dict[str, Any]]] | None = None
    for call in calls:
        found = _first_block(call, policies, context)
        if found is None:
            continue
        policy, block = found
        call_id = _call_id(call)
        blocked_by[call_id] = policy.name
        fields = dict(block.fields)
        if policy.mode(context) == "refuse":
            refused.append(
                {"id": call_id, "policy": policy.name, "refusal": block.refusal, "fields": fields}
            )
            continue
        if retries is None:
            retries = _approved_retries(messages)
        if (call["name"], dict(call["args"])) in retries:
            carried.append(call_id)
            continue
        action: ActionRequest = {
            "name": call["name"],
            "args": dict(call["args"]),
            "description": block.description,
        }
        asked.append(
            {
                "id": call_id,
                "policy": policy.name,
                "action": action,
                "refusal": block.refusal,
                "rejected": block.refusal if block.rejected is None else block.rejected,
                "fields": fields,
            }
        )
    return {
        "screened": [_call_id(call) for call in calls],
        "refused": refused,
        "asked": asked,
        "carried": carried,
        "blocked_by": blocked_by,
    }


def recorded_for(verdict: object, calls: Sequence[ToolCall], key: str) -> PolicyVerdict | None:
    """Return the recorded ``verdict`` when it screened every one of ``calls``.

    The verdict is read by call id, never from the position of the last message, and a
    call it holds is never screened again: a resume, whatever context it carries, applies
    exactly what was recorded with the model's reply.

    Args:
        verdict: The verdict read from the state (or None).
        calls: The calls about to be asked about or run.
        key: The state key it was read from, named in the error.

    Returns:
        The verdict; None when there are no calls.

    Raises:
        StateSchemaError: If no recorded verdict holds these calls (the graph's state does
            not declare ``key``, or the model node did not return the record).
    """
    if not calls:
        return None
    ids = {_call_id(call) for call in calls}
    if isinstance(verdict, Mapping) and ids <= set(verdict.get("screened") or ()):
        return cast("PolicyVerdict", verdict)
    msg = (
        f"no policy verdict recorded for these tool calls under '{key}': declare "
        f"'{key}: dict | None' in the graph's state and return PolicyGate.record(...) with "
        "the model's reply (PolicyMiddleware declares it itself)"
    )
    raise StateSchemaError(msg)


def answers(
    verdict: PolicyVerdict | None, on_ask: AskHook | None = None
) -> dict[str, ApprovalDecision]:
    """Pause once for the verdict's asked calls and return every approval, by call id.

    Call it before any tool of the step runs: on resume the calling node runs again from
    its start, and ``interrupt()`` then returns the resume value instead of pausing. The
    request is the one recorded in the verdict, so the answer applies to what the person
    was shown. A malformed answer does not fail the run: the same request is asked again,
    its descriptions led by "The last answer could not be used: <problem>.".

    Args:
        verdict: The model turn's recorded verdict.
        on_ask: Called with each asking policy's name (once per policy, in call order)
            before the pause, and again on each resume (a trace hook, say).

    Returns:
        The person's decision for each asked call, and an approval for each carried one;
        empty (and no pause) when nothing was asked.
    """
    if verdict is None:
        return {}
    decisions: dict[str, ApprovalDecision] = {i: {"type": "approve"} for i in verdict["carried"]}
    asked = verdict["asked"]
    if asked:
        if on_ask is not None:
            for name in dict.fromkeys(entry["policy"] for entry in asked):
                on_ask(name)
        given = ask(approval_request([entry["action"] for entry in asked]))
        claim_answer()  # one run uses an answer, even when two resumes send it at once
        decisions.update({entry["id"]: d for entry, d in zip(asked, given, strict=True)})
    return decisions


def _refusal(
    call: ToolCall, policy: str, text: str, fields: Mapping[str, Scalar], **more: Scalar
) -> ToolMessage:
    return ToolMessage(
        content=text,
        name=call["name"],
        tool_call_id=_call_id(call),
        artifact=policy_block(policy=policy, **fields, **more),
    )


def refusal_for(
    call: ToolCall, verdict: PolicyVerdict | None, decisions: Decisions
) -> ToolMessage | None:
    """Return what stands in for a call the verdict blocked, or None to let it run.

    Args:
        call: A call of the model turn the verdict screened.
        verdict: The recorded verdict.
        decisions: The approvals from :func:`answers`.

    Returns:
        The ``policy_block`` refusal of a refused call, and of an asked call with no
        decision; after a reject the rejected text, plus "**Reason given:** ..." (escaped
        for Markdown, ``$`` included, cut to :data:`MAX_REASON_CHARS`) when a reason was
        given, its artifact with ``approval="rejected"``. None for a call the verdict let
        through, a carried one, or an approved one. The reason reaches the content only,
        never the artifact, so never trace metadata.
    """
    if verdict is None:
        return None
    call_id = _call_id(call)
    for entry in verdict["refused"]:
        if entry["id"] == call_id:
            return _refusal(call, entry["policy"], entry["refusal"], entry["fields"])
    asked = next((entry for entry in verdict["asked"] if entry["id"] == call_id), None)
    if asked is None:
        return None  # let through, or carried
    decision = decisions.get(call_id)
    if decision is None:
        return _refusal(call, asked["policy"], asked["refusal"], asked["fields"])
    if decision["type"] == "approve":
        return None
    text = asked["rejected"]
    reason = reject_reason(decision)
    if reason is not None:
        text += f"\n\n**Reason given:** {excerpt(reason, MAX_REASON_CHARS)}"
    return _refusal(call, asked["policy"], text, asked["fields"], approval="rejected")


def mark_approved(
    message: ToolMessage, decisions: Decisions, policy_of: Mapping[str, str]
) -> ToolMessage:
    """Record on an approved call's artifact that a person approved it.

    Args:
        message: The result of a call that ran.
        decisions: The decisions from :func:`answers`.
        policy_of: The policy that blocked each call, by id (``verdict["blocked_by"]``).

    Returns:
        The message, its artifact gaining ``policy`` and ``approval="approved"`` when the
        call was approved and returned a dict artifact; otherwise unchanged.
    """
    decision = decisions.get(message.tool_call_id)
    if decision is None or decision["type"] != "approve":
        return message
    if not isinstance(message.artifact, dict):
        return message
    policy = policy_of.get(message.tool_call_id)
    artifact = {**message.artifact, "policy": policy, "approval": "approved"}
    return message.model_copy(update={"artifact": artifact})


def _latest_calls(messages: Sequence[BaseMessage]) -> tuple[AIMessage, list[ToolCall]]:
    issued = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    if issued is None:
        msg = "No AIMessage found in input"  # ToolNode's own error for this state
        raise ValueError(msg)
    return issued, list(issued.tool_calls)


RunCalls: TypeAlias = Callable[[list[ToolCall]], Awaitable[Sequence[ToolMessage]]]
"""Runs the calls the policies let through; returns one ToolMessage per call."""


class PolicyGate:
    """The policies in a hand-built ``StateGraph``'s model and tools nodes.

    :meth:`record` goes in the model node (its update records the verdict with the reply,
    under :attr:`verdict_key`, which the graph's state must declare); :meth:`arun` (or
    :meth:`run`) is the tools node's body: it asks (before any tool runs), refuses, runs
    the calls let through and returns every call's ToolMessage in call order. Hand that
    list to the stop decision (``StopRouter.after_tools``) afterwards. Needs only langgraph
    (0.6.6 too).

    Example:
        ```python
        gate = PolicyGate(policies=[spend_cap])


        def agent(state, runtime):
            reply = model.invoke(state["messages"])
            return {"messages": [reply], **gate.record(reply, state["messages"], runtime.context)}


        async def tools(state, runtime):
            async def run_calls(calls):
                step = state["messages"][-1].model_copy(update={"tool_calls": calls})
                return (await tool_node.ainvoke({"messages": [step]}))["messages"]

            new = await gate.arun(state, runtime.context, run_calls)
            messages = [*state["messages"], *new]
            return {"messages": new, **router.after_tools(messages, runtime.context)}
        ```
    """

    def __init__(
        self,
        *,
        policies: Sequence[ToolPolicy],
        name: str = "policies",
        on_ask: AskHook | None = None,
    ) -> None:
        """Check and keep the policies.

        Args:
            policies: The policies, in order; the first that blocks a call decides for it.
            name: Names the state keys: ``<name>_verdict`` (the recorded verdict) and, in
                ``create_agent``, ``<name>_approved``.
            on_ask: Called with an asking policy's name when a step pauses (and on resume).

        Raises:
            PolicyError: Naming the argument, if one has the wrong form.
        """
        if isinstance(policies, ToolPolicy) or not isinstance(policies, Sequence):
            msg = "policies must be a list of ToolPolicy"
            raise PolicyError(msg)
        if not all(isinstance(policy, ToolPolicy) for policy in policies):
            msg = "policies must be a list of ToolPolicy"
            raise PolicyError(msg)
        names = [policy.name for policy in policies]
        if len(set(names)) != len(names):
            msg = "policies must have distinct names"
            raise PolicyError(msg)
        if on_ask is not None and not callable(on_ask):
            msg = "on_ask must be a function of the policy's name, or None"
            raise PolicyError(msg)
        self.policies: tuple[ToolPolicy, ...] = tuple(policies)
        self.name = _identifier(name, "name")
        self.on_ask = on_ask

    @property
    def verdict_key(self) -> str:
        """The state key of the latest model turn's :class:`PolicyVerdict`."""
        return f"{self.name}_verdict"

    @property
    def approved_key(self) -> str:
        """The state key of the ids approved this step (``create_agent`` only)."""
        return f"{self.name}_approved"

    def screen(
        self, calls: Sequence[ToolCall], context: Any, messages: Sequence[BaseMessage] = ()
    ) -> PolicyVerdict | None:
        """Return :func:`screen` of ``calls`` under these policies."""
        return screen(calls, self.policies, context, messages)

    def record(
        self, reply: BaseMessage, messages: Sequence[BaseMessage], context: Any
    ) -> dict[str, Any]:
        """Return the state update recording the verdict on ``reply``'s calls.

        Args:
            reply: The model's reply.
            messages: The messages the model read (before the reply).
            context: The run's context.

        Returns:
            ``{verdict_key: verdict}`` (None when the reply made no call).
        """
        calls = reply.tool_calls if isinstance(reply, AIMessage) else []
        return {self.verdict_key: self.screen(calls, context, messages)}

    def verdict(self, state: Mapping[str, Any], calls: Sequence[ToolCall]) -> PolicyVerdict | None:
        """Return the verdict recorded with the model's reply for ``calls``, by call id.

        Args:
            state: The graph state.
            calls: Calls of the latest model turn.

        Returns:
            The recorded verdict (None when there are no calls); never a second screening.

        Raises:
            StateSchemaError: If the state holds no verdict for these calls.
        """
        return recorded_for(state.get(self.verdict_key), calls, self.verdict_key)

    def _decide(
        self, state: Mapping[str, Any], context: Any
    ) -> tuple[
        list[ToolCall], PolicyVerdict | None, dict[str, ApprovalDecision], list[ToolMessage | None]
    ]:
        _, calls = _latest_calls(state.get("messages") or [])
        verdict = self.verdict(state, calls)
        decisions = answers(verdict, self.on_ask)
        refusals = [refusal_for(call, verdict, decisions) for call in calls]
        return calls, verdict, decisions, refusals

    @staticmethod
    def _merge(
        calls: Sequence[ToolCall],
        verdict: PolicyVerdict | None,
        decisions: Decisions,
        refusals: Sequence[ToolMessage | None],
        ran: Sequence[ToolMessage],
    ) -> list[ToolMessage]:
        policy_of = verdict["blocked_by"] if verdict is not None else {}
        by_id = {m.tool_call_id: mark_approved(m, decisions, policy_of) for m in ran}
        merged: list[ToolMessage] = []
        for call, refusal in zip(calls, refusals, strict=True):
            if refusal is not None:
                merged.append(refusal)
            elif _call_id(call) in by_id:
                merged.append(by_id[_call_id(call)])
            else:
                msg = "run_calls must return one ToolMessage per call, paired by tool_call_id"
                raise PolicyError(msg)
        return merged

    async def arun(
        self, state: Mapping[str, Any], context: Any, run_calls: RunCalls
    ) -> list[ToolMessage]:
        """Apply the recorded verdict to the latest model turn and run what it lets through.

        Asks first (one pause for the step, before any tool runs; a resume runs the node
        again from its start and the answer applies to the recorded request).

        Args:
            state: The graph state, ending with the model's reply.
            context: The run's context (used only when no verdict was recorded).
            run_calls: Runs a list of calls (a ``ToolNode`` on a copy of the reply holding
                only them, say) and returns their ToolMessages.

        Returns:
            One ToolMessage per call of the reply, in call order: refusals in place, the
            others as ``run_calls`` returned them, approved ones marked.
        """
        calls, verdict, decisions, refusals = self._decide(state, context)
        allowed = [call for call, refusal in zip(calls, refusals, strict=True) if refusal is None]
        ran = list(await run_calls(allowed)) if allowed else []
        return self._merge(calls, verdict, decisions, refusals, ran)

    def run(
        self,
        state: Mapping[str, Any],
        context: Any,
        run_calls: Callable[[list[ToolCall]], Sequence[ToolMessage]],
    ) -> list[ToolMessage]:
        """Sync twin of :meth:`arun`."""
        calls, verdict, decisions, refusals = self._decide(state, context)
        allowed = [call for call, refusal in zip(calls, refusals, strict=True) if refusal is None]
        ran = list(run_calls(allowed)) if allowed else []
        return self._merge(calls, verdict, decisions, refusals, ran)
