"""Internal: one scan of a turn into frozen values (may change in any release).

:func:`scan_turn` reads the messages after the last user message once and returns a
:class:`Turn`: the parts the question asked for, in the order the model first asked for
them (a retry taking the place of the call it retries), the latest tool step's verdicts,
and the counts the bounds read. :mod:`stop_on_artifact._rules` decides from it and
:mod:`stop_on_artifact._answer` writes a hard stop's answer from it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from stop_on_artifact._artifact import InvalidArtifactError, parse_artifact
from stop_on_artifact._retry import in_place_retries
from stop_on_artifact.messages import tool_calls, turn_start


@dataclass(frozen=True)
class Verdict:
    """One ToolMessage judged on its own."""

    stop: bool
    """Whether this result, alone, ends the run."""
    rule: str
    """The rule it gives: its reason, or ``tool_error`` / ``invalid_artifact`` / ``no_artifact``."""
    reason: str | None
    """The valid artifact's reason (None when none decided)."""
    message: ToolMessage
    """The message judged."""
    artifact: dict[str, Any] | None
    """The artifact when it is valid, whatever the status; None otherwise."""
    problem: str | None = None
    """Why the artifact is invalid, on rule ``invalid_artifact`` only (names types, not values)."""


def judge(message: ToolMessage) -> Verdict:
    """Judge one ToolMessage: rule 1 of :func:`stop_on_artifact.decide`.

    Args:
        message: A tool's result.

    Returns:
        The verdict. It never raises.
    """
    artifact: dict[str, Any] | None = None
    problem: str | None = None
    if message.artifact is not None:
        try:
            artifact = parse_artifact(message.artifact)
        except InvalidArtifactError as exc:
            problem = str(exc)
    reason = artifact["reason"] if artifact is not None else None
    if message.status == "error":
        if reason in ("fatal", "policy_block"):
            return Verdict(True, str(reason), reason, message, artifact)
        return Verdict(False, "tool_error", reason, message, artifact)
    if problem is not None:
        return Verdict(False, "invalid_artifact", None, message, None, problem)
    if artifact is None:
        return Verdict(False, "no_artifact", None, message, None)
    return Verdict(artifact["stop"], reason or "", reason, message, artifact)


@dataclass(frozen=True)
class Part:
    """One thing the question asked for, answered once."""

    call_id: str
    """The latest call of this part: a retry takes the place of the call it retries."""
    name: str
    """The tool's name, as the model called it."""
    args: object
    """The latest call's arguments (None for a result no AIMessage issued)."""
    message: ToolMessage | None
    """The first result of ``call_id``; None when the call has no result."""
    verdict: Verdict | None
    """``message`` judged; None when there is no result."""

    @property
    def settled(self) -> bool:
        """Whether the part's result stops: its content answers it."""
        return self.verdict is not None and self.verdict.stop


@dataclass(frozen=True)
class Approval:
    """A valid artifact's ``approval`` (and ``policy``) fields, with the call that carried them."""

    tool_call_id: str
    approval: str
    policy: str | None


@dataclass(frozen=True)
class Turn:
    """Everything the decision and the answer read from one turn."""

    parts: tuple[Part, ...]
    """The turn's parts, in the order the model first asked for them."""
    step: tuple[Verdict, ...]
    """The latest tool step's results judged, in the order the model issued the calls."""
    transients: int
    """Transient outcomes this turn, the in-place attempts included."""
    in_place: int
    """In-place retries that ran this turn (:mod:`stop_on_artifact._retry`)."""
    model_calls: int
    """AIMessages this turn."""
    approvals: tuple[Approval, ...]
    """Every result of this turn that carries an approval, latest first."""

    def approval_for(self, tool_call_id: str | None) -> Approval | None:
        """Return the deciding call's approval, else the turn's latest, else None."""
        own = (a for a in self.approvals if a.tool_call_id == tool_call_id)
        return next(own, self.approvals[0] if self.approvals else None)


def scan_turn(messages: Sequence[BaseMessage]) -> Turn:
    """Read this turn once into a :class:`Turn`.

    Args:
        messages: The thread's messages.

    Returns:
        The turn. It never raises on malformed messages or artifacts.
    """
    verdicts: dict[int, Verdict] = {}  # by message identity: each message judged once

    def verdict(message: ToolMessage) -> Verdict:
        if id(message) not in verdicts:
            verdicts[id(message)] = judge(message)
        return verdicts[id(message)]

    results: dict[str, ToolMessage] = {}
    groups: list[list[dict[str, Any]]] = []
    step: list[ToolMessage] = []
    step_ids: set[str] = set()
    step_order: dict[Any, int] = {}
    model_calls = 0
    approvals: list[Approval] = []
    for message in messages[turn_start(messages) :]:
        model_calls += isinstance(message, AIMessage)
        calls = tool_calls(message)
        if calls:
            groups.append(calls)
            step, step_ids = [], set()
            step_order = {call["id"]: i for i, call in enumerate(calls)}
        if not isinstance(message, ToolMessage):
            continue
        results.setdefault(message.tool_call_id, message)
        if groups and message.tool_call_id not in step_ids:
            step_ids.add(message.tool_call_id)
            step.append(message)
        judged = verdict(message)
        approval = judged.artifact.get("approval") if judged.artifact else None
        if judged.artifact is not None and isinstance(approval, str):
            policy = judged.artifact.get("policy")
            policy = policy if isinstance(policy, str) else None
            approvals.append(Approval(message.tool_call_id, approval, policy))
    step.sort(key=lambda m: step_order.get(m.tool_call_id, len(step_order)))
    transients = sum(
        verdict(m).artifact is not None and verdict(m).reason == "transient"
        for m in results.values()
    )
    # Each in-place retry followed a transient attempt of the same call: it counts too.
    in_place = sum(in_place_retries(m) for m in results.values() if verdict(m).artifact)
    return Turn(
        parts=_parts(groups, results, verdict),
        step=tuple(verdict(m) for m in step),
        transients=transients + in_place,
        in_place=in_place,
        model_calls=model_calls,
        approvals=tuple(reversed(approvals)),
    )


def _parts(
    groups: Sequence[Sequence[dict[str, Any]]],
    results: dict[str, ToolMessage],
    verdict: Callable[[ToolMessage], Verdict],
) -> tuple[Part, ...]:
    """Group the turn's tool calls into parts, in the order the model first asked.

    A call of a later model call retries an unsettled part of the same tool and takes its
    place, its arguments changed or not (see :func:`_retry_pairs` for which part); any
    other call starts a new part, after the existing ones. Results for ids no AIMessage
    issued are parts of their own, last. A repeated ``tool_call_id`` counts once, its
    first result deciding.
    """
    parts: list[Part] = []
    seen: set[str] = set()
    for group in groups:
        calls: list[Part] = []
        for call in group:
            call_id = str(call.get("id") or "")
            if call_id in seen:
                continue
            seen.add(call_id)
            result = results.get(call_id)
            judged = verdict(result) if result is not None else None
            calls.append(Part(call_id, str(call.get("name", "")), call.get("args"), result, judged))
        # Paired against the parts of earlier model calls only: calls of one AIMessage
        # are always parts of their own.
        retried = _retry_pairs(parts, calls)
        for index, part in enumerate(calls):
            if index in retried:
                parts[retried[index]] = part
            else:
                parts.append(part)
    for call_id, result in results.items():
        if call_id not in seen:
            parts.append(Part(call_id, result.name or "", None, result, verdict(result)))
    return tuple(parts)


def _retry_pairs(parts: Sequence[Part], calls: Sequence[Part]) -> dict[int, int]:
    """Pair one model call's tool calls with the unsettled parts they retry.

    For each tool, a call whose arguments equal an unsettled part's latest arguments
    retries that part (calls in the order the model issued them, each taking the first
    such part); the tool's other calls then retry its other unsettled parts, in the
    question's order. A call left over starts a new part.

    Args:
        parts: The turn's parts before this model call.
        calls: This model call's tool calls, in the order the model issued them.

    Returns:
        The index in ``parts`` each retrying call takes, by its index in ``calls``.
    """
    pairs: dict[int, int] = {}
    for name in dict.fromkeys(call.name for call in calls):
        waiting = [i for i, part in enumerate(parts) if part.name == name and not part.settled]
        asked = [i for i, call in enumerate(calls) if call.name == name]
        for index in asked:
            same = next((i for i in waiting if parts[i].args == calls[index].args), None)
            if same is not None:
                pairs[index] = same
                waiting.remove(same)
        pairs.update(zip((i for i in asked if i not in pairs), waiting, strict=False))
    return pairs
