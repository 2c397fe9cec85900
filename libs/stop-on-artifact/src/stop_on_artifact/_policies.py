"""Tool policies: refuse a call, or ask a person first, before any stop is read.

`screen` decides once per model turn, recorded with the reply, so a resume answers it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from typing_extensions import TypedDict

from stop_on_artifact._approval import ask, reject_reason
from stop_on_artifact._artifact import (
    LIBRARY_FIELDS,
    build,
    carried,
    contract,
    library_fields,
    with_carried,
    with_library_fields,
)
from stop_on_artifact.messages import turn_start

if TYPE_CHECKING:
    from stop_on_artifact._approval import Action, Decision

__all__ = ["answers", "mark_approved", "refusal_for", "screen"]

Scalar: TypeAlias = str | int | float | bool | None
OnBlock = Literal["refuse", "ask"]
Mode: TypeAlias = OnBlock | Callable[[Any], OnBlock]
Check: TypeAlias = Callable[[ToolCall, Any], "Block | None"]
AskHook: TypeAlias = Callable[[str], None] | None
Messages: TypeAlias = Sequence[BaseMessage]
Result: TypeAlias = Any  # a ToolMessage, or a Command carrying one
Merge: TypeAlias = Callable[[Sequence[Result]], list[Result]]
RunCalls: TypeAlias = Callable[[list[ToolCall]], Awaitable[Sequence[Result]]]
RunCallsSync: TypeAlias = Callable[[list[ToolCall]], Sequence[Result]]
Verdicts: TypeAlias = Mapping[str, str]  # call id -> the policy that blocked it
_SCALARS = (str, int, float, bool, type(None))


class PolicyError(ValueError):
    """A policy, a block or a gate built with a value of the wrong form."""


def _require(ok: object, msg: str) -> None:
    if not ok:
        raise PolicyError(msg)


def _identifier(value: object, field_name: str) -> str:
    ok = isinstance(value, str) and value.isidentifier()
    _require(ok, f"{field_name} must be a non-empty identifier (letters, digits, underscores)")
    return cast("str", value)


@dataclass(frozen=True, kw_only=True)
class Block:
    """What a policy says about a call it blocks.

    Args:
        refusal: The user-safe Markdown that answers the blocked call.
        description: What a person approves, when the policy asks.
        rejected: The answer after a person rejects it (None: `refusal`).
        fields: Small scalars for the artifact.

    Example:
        A policy's check returns it to block a call:

            >>> from stop_on_artifact import Block
            >>> block = Block(refusal="Over $500: ask a manager.", description="Refund $900")
            >>> block.rejected is None, block.fields
            (True, {})
    """

    refusal: str
    description: str
    rejected: str | None = None
    fields: Mapping[str, Scalar] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Check the texts and fields (`PolicyError` names the field); copy the fields."""
        for name in ("refusal", "description"):
            _require(isinstance(getattr(self, name), str), f"Block.{name} must be a string")
        _require(isinstance(self.rejected, str | None), "Block.rejected must be a string or None")
        _require(isinstance(self.fields, Mapping), "Block.fields must be a mapping")
        for key, value in self.fields.items():
            ok = isinstance(key, str) and isinstance(value, _SCALARS)
            _require(ok, "Block.fields must map str names to str, int, float, bool or None")
            ok = key not in {"stop", "reason", "policy", "approval"}
            _require(ok, "Block.fields may not set stop, reason, policy or approval")
        object.__setattr__(self, "fields", dict(self.fields))


@dataclass(frozen=True)
class ToolPolicy:
    """A named check run on each call of `tools` (None: every tool) before it runs.

    Args:
        name: The policy's name, an identifier (the artifact's `policy`).
        check: `(call, context) -> Block | None`: None lets the call run.
        on_block: `"refuse"`, `"ask"`, or a function of the run's context saying which.
        tools: The tool names checked (None: every tool).

    Example:
        A check that lets every call of `refund` run:

            >>> from stop_on_artifact._policies import ToolPolicy
            >>> ToolPolicy("refunds", lambda call, context: None, tools={"refund"}).tools
            frozenset({'refund'})
    """

    name: str
    check: Check
    on_block: Mode = "refuse"
    tools: frozenset[str] | None = None

    def __post_init__(self) -> None:
        """Check every field (`PolicyError` names the field)."""
        _identifier(self.name, "ToolPolicy.name")
        ok = callable(self.check)
        _require(ok, "ToolPolicy.check must be a function (call, context) -> Block | None")
        ok = callable(self.on_block) or self.on_block in ("refuse", "ask")
        _require(ok, "ToolPolicy.on_block must be 'refuse', 'ask' or a function of the context")
        if self.tools is not None:
            ok = isinstance(self.tools, Iterable) and not isinstance(self.tools, str)
            _require(ok, "ToolPolicy.tools must be a set of tool names or None")
            names = frozenset(self.tools)
            ok = bool(names) and all(isinstance(name, str) and name for name in names)
            _require(ok, "ToolPolicy.tools must be a non-empty set of tool names or None")
            object.__setattr__(self, "tools", names)

    def _block(self, call: ToolCall, context: Any) -> Block | None:
        if self.tools is not None and call["name"] not in self.tools:
            return None
        block = self.check(call, context)
        ok = block is None or isinstance(block, Block)
        _require(ok, f"the check of policy {self.name} must return a Block or None")
        return block

    def mode(self, context: Any) -> OnBlock:
        """Return what a block does under `context`; `PolicyError` if not a mode."""
        mode = self.on_block(context) if callable(self.on_block) else self.on_block
        _require(mode in ("refuse", "ask"), "ToolPolicy.on_block must return 'refuse' or 'ask'")
        return mode


def tool_policy(
    name: str, *, on_block: Mode = "refuse", tools: Iterable[str] | None = None
) -> Callable[[Check], ToolPolicy]:
    """Make a `(call, context)` check a policy (a decorator; the middleware's `policies=`).

    Args:
        name: The policy's name.
        on_block: `"refuse"`, `"ask"`, or a function of the run's context saying which.
        tools: The tool names checked (None: every tool).

    Example:
        The check, decorated, is the policy:

            >>> from stop_on_artifact import Block, tool_policy
            >>> @tool_policy("refunds", tools=["refund"])
            ... def refunds(call, context):
            ...     return Block(refusal="Ask a manager.", description="Refund") if call else None
            >>> refunds.name, refunds.on_block
            ('refunds', 'refuse')
    """
    names = frozenset(tools) if tools is not None and not isinstance(tools, str) else tools
    return lambda check: ToolPolicy(name, check, on_block, cast("frozenset[str] | None", names))


class RefusedCall(TypedDict):
    """A call refused at once: its id, the policy, the answer and the artifact's fields."""

    id: str
    policy: str
    refusal: str
    fields: dict[str, Scalar]


class AskedCall(RefusedCall):
    """A call a person is asked about: the action they read and the answer after a reject."""

    action: dict[str, Any]
    rejected: str


class PolicyVerdict(TypedDict):
    """The decision on a turn's calls (`screened`); `carried`: approved retries."""

    screened: list[str]
    refused: list[RefusedCall]
    asked: list[AskedCall]
    carried: list[str]
    blocked_by: dict[str, str]


def _call_id(call: ToolCall) -> str:
    return call["id"] or ""


def _approved_retries(messages: Messages) -> list[tuple[str, dict[str, Any]]]:
    """Return `(tool, args)` of calls approved this turn whose result was `transient`."""
    turn = messages[turn_start(messages) :]
    calls = {c["id"]: c for m in turn if isinstance(m, AIMessage) for c in m.tool_calls}
    approved = []
    for message in (m for m in turn if isinstance(m, ToolMessage)):
        artifact, call = contract(message.artifact), calls.get(message.tool_call_id)
        if isinstance(artifact, dict) and call and artifact.get("reason") == "transient":
            if artifact.get("approval") == "approved" and "approval" in library_fields(message):
                approved.append((call["name"], dict(call["args"])))
    return approved


def screen(
    calls: Sequence[ToolCall], policies: Sequence[ToolPolicy], context: Any, messages: Messages = ()
) -> PolicyVerdict | None:
    """Decide once what the policies do with a turn's calls (`messages`: before the reply)."""
    if not calls:
        return None
    verdict = PolicyVerdict(
        screened=[_call_id(c) for c in calls], refused=[], asked=[], carried=[], blocked_by={}
    )
    retries: list[tuple[str, dict[str, Any]]] | None = None
    for call in calls:
        found = next(((p, b) for p in policies if (b := p._block(call, context)) is not None), None)
        if found is None:
            continue
        policy, block = found
        call_id = _call_id(call)
        verdict["blocked_by"][call_id] = policy.name
        fields = dict(block.fields)
        refused = RefusedCall(id=call_id, policy=policy.name, refusal=block.refusal, fields=fields)
        retries = _approved_retries(messages) if retries is None else retries
        if (call["name"], args := dict(call["args"])) in retries:  # before the mode: it holds
            verdict["carried"].append(call_id)
            continue
        if policy.mode(context) == "refuse":
            verdict["refused"].append(refused)
            continue
        action = {"name": call["name"], "args": args, "description": block.description}
        rejected = block.refusal if block.rejected is None else block.rejected
        verdict["asked"].append({**refused, "action": action, "rejected": rejected})
    return verdict


def answers(verdict: PolicyVerdict | None, on_ask: AskHook = None) -> dict[str, Decision]:
    """Pause once, before any tool of the step runs, for the asked calls; return all decisions.

    `on_ask` gets each asking policy's name at the pause and each resume; carried is approved.
    """
    if verdict is None:
        return {}
    decisions: dict[str, Decision] = {i: {"type": "approve"} for i in verdict["carried"]}
    if asked := verdict["asked"]:
        if on_ask is not None:
            for name in dict.fromkeys(entry["policy"] for entry in asked):
                on_ask(name)
        given = ask(cast("list[Action]", [entry["action"] for entry in asked]))
        decisions.update({entry["id"]: d for entry, d in zip(asked, given, strict=True)})
    return decisions


def _refusal(call: ToolCall, entry: RefusedCall, text: str, **more: Scalar) -> ToolMessage:
    fields = {**entry["fields"], **more, "policy": entry["policy"]}
    message = ToolMessage(text, name=call["name"], tool_call_id=_call_id(call))
    return with_library_fields(message, **build("policy_block", fields, LIBRARY_FIELDS))


def refusal_for(
    call: ToolCall, verdict: PolicyVerdict | None, decisions: Mapping[str, Decision]
) -> ToolMessage | None:
    """Return the refusal answering a blocked call (after a reject, with the reason), or None."""
    if verdict is None:
        return None
    call_id = _call_id(call)
    if refused := [entry for entry in verdict["refused"] if entry["id"] == call_id]:
        return _refusal(call, refused[0], refused[0]["refusal"])
    asked = next((entry for entry in verdict["asked"] if entry["id"] == call_id), None)
    if asked is None or (decision := decisions.get(call_id)) is None:
        return None if asked is None else _refusal(call, asked, asked["refusal"])
    if decision["type"] == "approve":
        return None
    text = asked["rejected"]
    if (reason := reject_reason(decision)) is not None:
        text += f"\n\n**Reason given:** {reason}"
    return _refusal(call, asked, text, approval="rejected")


def mark_approved(result: Any, decisions: Mapping[str, Decision], policy_of: Verdicts) -> Any:
    """Add `policy` and `approval="approved"` to an approved call's dict artifact.

    `result`: a ToolMessage, or a Command carrying one (marked where the Command holds it).
    """
    message = carried(result)
    decision = decisions.get(message.tool_call_id) if message is not None else None
    if message is None or decision is None or decision["type"] != "approve":
        return result
    if not isinstance(message.artifact, dict):
        return result
    policy = policy_of.get(message.tool_call_id)
    return with_carried(result, with_library_fields(message, policy=policy, approval="approved"))
