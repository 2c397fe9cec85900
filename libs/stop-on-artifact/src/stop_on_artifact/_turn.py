"""The scan of one turn that the decision and the answer read (internal: `messages` is public)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.prebuilt.tool_node import INVALID_TOOL_NAME_ERROR_TEMPLATE

from stop_on_artifact import _artifact
from stop_on_artifact._mark import MARK_TOOL, read_marks

_UNKNOWN = INVALID_TOOL_NAME_ERROR_TEMPLATE.split("{available_tools}")[0]  # ToolNode's, 0.6 on


def tool_calls(message: BaseMessage) -> list[dict[str, Any]]:
    """Return an AIMessage's tool calls as dicts, in the model's order; [] for others."""
    return [dict(call) for call in message.tool_calls] if isinstance(message, AIMessage) else []


NO_MESSAGES = (
    "input needs at least one message under 'messages', for example "
    "{'messages': [{'role': 'user', 'content': '...'}]}"
)


def require_messages(messages: Sequence[BaseMessage]) -> None:
    """Fail a run that has no messages with a `ValueError` naming `messages`."""
    if not messages:
        raise ValueError(NO_MESSAGES)


def message_text(message: BaseMessage) -> str:
    """Return a message's text: its string content, or its text blocks joined."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        block if isinstance(block, str) else str(block.get("text", ""))
        for block in content
        if isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")
    )


def latest_tool_step(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    """Return the latest tool step's ToolMessages in call order (unknown ids last, once each)."""
    for index in range(len(messages) - 1, -1, -1):
        calls = tool_calls(messages[index])
        if calls:
            return _in_call_order(calls, messages[index + 1 :])
    return []


def invocation_index(messages: Sequence[BaseMessage], tool_call_id: str) -> int:
    """Return a call's 0-based position among this turn's calls (their count if unknown)."""
    ids = [c["id"] for m in messages[turn_start(messages) :] for c in tool_calls(m)]
    return ids.index(tool_call_id) if tool_call_id in ids else len(ids)


def turn_start(messages: Sequence[BaseMessage], record: object = None) -> int:
    """Return the index where this turn begins.

    With the turn's `record`: just after the message it names (the last one present when
    the run began), or 0 once that message is gone. Without: just after the last user
    message that no tool added after its result and no middleware wrote as a summary.
    """
    anchor = record.get("turn") if isinstance(record, Mapping) else None
    if isinstance(anchor, str) and not anchor.startswith("#"):
        return next((i + 1 for i, m in enumerate(messages) if m.id == anchor), 0)
    for index in range(len(messages) - 1, -1, -1):
        if asks(messages, index):
            return index + 1
    return 0


def asks(messages: Sequence[BaseMessage], index: int) -> bool:
    """Return whether `messages[index]` is a user's question, not a tool's or a summary."""
    if not isinstance(message := messages[index], HumanMessage):
        return False
    if message.additional_kwargs.get("lc_source") == "summarization":
        return False
    back = (m for i in range(index - 1, -1, -1) if not isinstance(m := messages[i], HumanMessage))
    return not isinstance(next(back, None), ToolMessage)  # before any run of user messages


def in_place_retries(message: ToolMessage) -> int:
    """Return how many in-place retries ran for `message`'s call (0 when none)."""
    artifact = _artifact.contract(message.artifact)
    count = artifact.get(_artifact.IN_PLACE_FIELD) if isinstance(artifact, dict) else None
    return count if type(count) is int and count > 0 else 0


@dataclass(frozen=True)
class Verdict:
    """One ToolMessage judged on its own."""

    stop: bool
    rule: str  # its reason, or tool_error / invalid_artifact / no_artifact
    reason: str | None
    message: ToolMessage
    artifact: dict[str, Any] | None  # when it is valid, whatever the status
    problem: str | None = None  # why the artifact is invalid (names types, never values)

    @property
    def plain(self) -> bool:
        """Whether the result is an input, never a part: a success without the contract."""
        if self.message.status == "error":  # a call of no such tool, the model's slip, is none
            unknown = _UNKNOWN.format(requested_tool=self.message.name)
            return str(self.message.content).startswith(unknown)
        return not _artifact.speaks(self.message.artifact)


def judge(message: ToolMessage) -> Verdict:
    """Judge one ToolMessage (rule 1 of `stop_on_artifact.decide`); never raises."""
    artifact: dict[str, Any] | None = None
    problem: str | None = None
    if _artifact.speaks(message.artifact):
        try:
            artifact = _artifact.parse_artifact(message)
        except _artifact.InvalidArtifactError as exc:
            problem = str(exc)
    reason = artifact["reason"] if artifact is not None else None
    if message.status == "error":
        stops = reason in ("fatal", "policy_block")
        return Verdict(stops, str(reason) if stops else "tool_error", reason, message, artifact)
    if problem is not None:
        return Verdict(False, "invalid_artifact", None, message, None, problem)
    if artifact is None:
        return Verdict(False, "no_artifact", None, message, None)
    return Verdict(artifact["stop"], str(reason), reason, message, artifact)


@dataclass(frozen=True)
class Part:
    """One thing the question asked for; a retry takes the place of the call it retries."""

    call_id: str
    name: str
    args: object
    message: ToolMessage | None
    verdict: Verdict | None

    @property
    def settled(self) -> bool:
        """Whether the part's result stops: its content answers it."""
        return self.verdict is not None and self.verdict.stop

    @property
    def plain(self) -> bool:
        """Whether the call's result does not speak the contract (it is then no part)."""
        return self.verdict is not None and self.verdict.plain


@dataclass(frozen=True)
class Turn:
    """What the decision and the answer read from one turn."""

    parts: tuple[Part, ...]
    step: tuple[Verdict, ...]  # the latest tool step, judged, in the model's call order
    transients: int
    in_place: int
    model_calls: int
    approvals: tuple[tuple[str, str, str | None], ...]  # (call id, approval, policy), latest first
    counted: dict[str, Any]  # what the turn's record keeps of the counts


def scan_turn(messages: Sequence[BaseMessage], record: Mapping[str, Any] | None = None) -> Turn:
    """Read this turn once, never raising; `record` adds what a removed message counted."""
    judged: dict[int, Verdict] = {}

    def verdict(message: ToolMessage) -> Verdict:
        return judged.get(id(message)) or judged.setdefault(id(message), judge(message))

    record = record or {}  # what earlier decisions read: it survives a message's removal
    turn = read_marks(messages[turn_start(messages, record) :])
    fixed = {c["id"] for m in turn if isinstance(m, AIMessage) for c in m.invalid_tool_calls}
    read = record.get("steps") or {}  # each result id a decision read: its round
    results: dict[tuple[int, str], ToolMessage] = {}  # by (issuing reply, call id): ids recur
    issuer: dict[str, int] = {}  # each call id's latest issuing reply, by its group
    groups: list[list[dict[str, Any]]] = []
    last, gone, stand_ins = -1, None, set[int]()  # groups for removed replies, by round
    approvals: list[tuple[str, str, str | None]] = []
    for index, message in enumerate(turn):
        if calls := tool_calls(message):
            issuer.update((str(call.get("id") or ""), len(groups)) for call in calls)
            groups.append(calls)
            last, gone = index, None
        if not isinstance(message, ToolMessage):
            continue
        artifact = verdict(message).artifact or {}
        if isinstance(artifact.get("approval"), str):
            policy = p if isinstance(p := artifact.get("policy"), str) else None
            approvals.append((message.tool_call_id, artifact["approval"], policy))
        if message.tool_call_id in fixed:  # create_agent's result for a malformed call: no part
            continue
        key = (issuer.get(message.tool_call_id, -1), message.tool_call_id)
        if record and (key[0] < 0 or (key in results and key[0] in stand_ins)):  # reply gone
            if (round_ := read.get(str(message.id), -1)) != gone or key in results:
                stand_ins.add(len(groups))  # a new step: its results were read apart
                groups.append([])
                last, gone = index - 1, round_
            groups[-1].append({"id": key[1], "name": message.name or "", "args": None})
            issuer[key[1]] = len(groups) - 1
            key = (len(groups) - 1, key[1])
        results.setdefault(key, message)
    step = _in_call_order(groups[-1], turn[last + 1 :]) if groups else []
    if any(not verdict(m).plain for m in step):  # the mark's own result is read alone
        mark = {c["id"] for c in groups[-1] if c["name"] == MARK_TOOL}
        step = [m for m in step if m.tool_call_id not in mark]
    valid = [verdict(m) for m in results.values() if verdict(m).artifact is not None]
    in_place: dict[str, int] = {}
    counts: dict[str, int] = {}  # per call id, over every reply that issued it
    for v in valid:
        i, more = v.message.tool_call_id, in_place_retries(v.message)
        in_place[i] = in_place.get(i, 0) + more
        counts[i] = counts.get(i, 0) + (v.reason == "transient") + more
    earlier = record.get("transients") or {}
    transients = {**earlier, **{i: max(n, earlier.get(i, 0)) for i, n in counts.items()}}
    replies = [m.id for m in turn if isinstance(m, AIMessage)]
    known = list(dict.fromkeys([*(record.get("replies") or []), *filter(None, replies)]))
    rounds = int(record.get("rounds") or 0) + 1 if record else 0  # decisions, this one too
    return Turn(
        parts=_parts(groups, results, verdict),
        step=tuple(verdict(m) for m in step),
        transients=sum(transients.values()),
        in_place=sum(in_place.values()),
        model_calls=max(len(known) + replies.count(None), rounds),  # a round: one model call
        approvals=tuple(reversed(approvals)),
        counted={"replies": known, "transients": {k: n for k, n in transients.items() if n},
                 "rounds": rounds, "steps": {**read, **{m.id: rounds for m in step if m.id}}},
    )  # fmt: skip


def _in_call_order(
    calls: Sequence[dict[str, Any]], after: Sequence[BaseMessage]
) -> list[ToolMessage]:
    order = {call["id"]: position for position, call in enumerate(calls)}
    step: dict[str, ToolMessage] = {}
    for message in (m for m in after if isinstance(m, ToolMessage)):
        step.setdefault(message.tool_call_id, message)
    return sorted(step.values(), key=lambda m: order.get(m.tool_call_id, len(order)))


def _parts(
    groups: Sequence[Sequence[dict[str, Any]]],
    results: dict[tuple[int, str], ToolMessage],
    verdict: Any,
) -> tuple[Part, ...]:
    """Group the turn's calls into parts, in the order the model first asked for them."""
    # a later call of a tool retries an unsettled part of it (equal arguments first, then in
    # order); one AIMessage's calls are distinct parts; a plain retry resolves its part
    parts: list[Part] = []
    waiting: dict[str, list[int]] = {}  # each tool's unsettled parts: the turn read in one pass
    seen: set[tuple[int, str]] = set()
    for number, group in enumerate(groups):
        calls: list[Part] = []
        for call in group:
            call_id = str(call.get("id") or "")
            if (number, call_id) not in seen:
                seen.add((number, call_id))
                result = results.get((number, call_id))
                judged = verdict(result) if result is not None else None
                name = str(call.get("name", ""))
                calls.append(Part(call_id, name, call.get("args"), result, judged))
        retried = _retry_pairs(parts, calls, waiting)
        for index, part in enumerate(calls):
            place = retried.get(index, len(parts))
            parts[place : place + 1] = [part]
            if not (part.settled or part.plain):
                waiting.setdefault(part.name, []).append(place)
    parts += [  # without the turn's record, a result whose reply is gone comes last
        Part(k[1], m.name or "", None, m, verdict(m)) for k, m in results.items() if k not in seen
    ]
    return tuple(part for part in parts if not part.plain)


def _retry_pairs(
    parts: Sequence[Part], calls: Sequence[Part], waiting: dict[str, list[int]]
) -> dict[int, int]:
    """Return the index in `parts` each retrying call takes, by its index in `calls`."""
    pairs: dict[int, int] = {}
    for name in dict.fromkeys(call.name for call in calls):
        free = sorted(waiting.pop(name, []))
        asked = [i for i, call in enumerate(calls) if call.name == name]
        for index in asked:
            same = next((i for i in free if parts[i].args == calls[index].args), None)
            if same is not None:
                pairs[index] = same
                free.remove(same)
        rest = [i for i in asked if i not in pairs]
        pairs.update(zip(rest, free, strict=False))
        if free[len(rest) :]:
            waiting[name] = free[len(rest) :]
    return pairs
