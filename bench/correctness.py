"""Reading one finished run: model calls, tokens, and whether it ended correctly.

Everything comes from the final state's messages. A model call is an ``AIMessage`` that
carries ``usage_metadata`` (a hard stop's relayed answer carries none: no model made it);
tokens are the sum of those ``usage_metadata`` records.

Correctness is judged against the query's forced outcome, with these checks (only those
that apply to the query count):

- ``context``: every tool that ran returned the outcome the context forced, so the
  configuration really passed the context to its tools;
- ``retried``: every transient failure got another model turn, or was retried in place
  (``retry_in_place``), where the query's ``parallel_policy`` is ``all`` (under ``any`` and
  ``priority`` a stop comes at once);
- ``content``: a run expected to end on a completed (or fatal) result answers with that
  result's content, verbatim or quoted;
- ``verbatim``: under ``stop_mode=hard``, the answer is made of the settled results'
  contents, byte for byte, and the not-done lines of the parts left unsettled, joined by
  the answer separator;
- ``no_retry``: a fatal result was not retried;
- ``policy``: a checkout above the cap ends with the spend-cap message;
- ``complete``: a multi-part question has every part named in the answer, in the
  question's order (see :func:`complete`);
- ``readable``: an answer no model wrote (a hard stop's relay, or a ``return_direct``
  tool message) reads as Markdown or prose: not JSON, no HTML tags;
- ``wrong_answer``: the answer does not carry a transient error's text (what
  ``return_direct`` relays when a search times out): a pass means no wrong answer;
- ``charged_over_cap``: no checkout above the cap was charged (a missing feature in the
  baselines, kept apart from errors): a pass means no charge; a purchase within the cap
  beside it may be charged.

Each check is a pass/fail per run; reports count them per check, never folded into one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from stop_on_artifact import InvalidArtifactError, parse_artifact
from stop_on_artifact.testing import (
    ANSWER_SEPARATOR,
    MODEL_CALL_LIMIT_MESSAGE,
    RETRY_BUDGET_MESSAGE,
)

from agent.context import Context
from agent.policy import SPEND_CAP_MESSAGE
from agent.tools.outcomes import outcome_position
from bench.queries import Query

_REASON_OF = {
    "success": "completed",
    "retryable": "transient",
    "transient": "transient",
    "fatal": "fatal",
}
_TAGS = re.compile(r"<[^>]+>")
_SPACE = re.compile(r"\s+")
FRAGMENT_CHARS = 60
_SETTLED = ("completed", "fatal", "policy_block")

CHECKS: tuple[str, ...] = (
    "context",
    "retried",
    "content",
    "verbatim",
    "no_retry",
    "policy",
    "complete",
    "readable",
    "wrong_answer",
    "charged_over_cap",
)
ERROR_CHECKS: tuple[str, ...] = ("content", "wrong_answer", "retried", "no_retry")
"""A failure of any of these is a wrong answer, whatever else failed."""
_HTML = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?>")


@dataclass
class RunRecord:
    """What one run of one query under one configuration did."""

    query_id: str
    config: str
    model_calls: int
    input_tokens: int
    output_tokens: int
    tool_steps: int
    tool_calls: int
    answer: str
    checks: dict[str, bool] = field(default_factory=dict)
    latency_s: float | None = None
    simulated_s: float = 0.0
    """Seconds the run's model calls slept under the latency profile."""
    saved: dict[str, int] | None = None
    """The model call a hard stop skipped, as its decision estimated it (``saved``)."""

    @property
    def correct(self) -> bool:
        """Whether every check that applies passed."""
        return all(self.checks.values())

    @property
    def verdict(self) -> str:
        """``wrong``, ``partial``, ``charged`` (over the cap), ``unreadable`` or ``ok``."""
        failed = {name for name, passed in self.checks.items() if not passed}
        if failed & set(ERROR_CHECKS):
            return "wrong"
        if "complete" in failed:
            return "partial"  # a hard answer missing a part also fails verbatim
        if failed & {"verbatim", "context"}:
            return "wrong"
        if failed & {"charged_over_cap", "policy"}:
            return "charged"
        return "unreadable" if failed else "ok"


def in_place_retries(message: ToolMessage) -> int:
    """How many in-place retries ran for the call (the field the library writes; 0: none)."""
    try:
        count = parse_artifact(message).get("in_place_retries", 0)
    except InvalidArtifactError:
        return 0
    return count if type(count) is int and count > 0 else 0


def _reason(message: ToolMessage) -> str | None:
    artifact = message.artifact
    return artifact.get("reason") if isinstance(artifact, dict) else None


def _as_forced(message: ToolMessage, messages: Sequence[BaseMessage], context: Context) -> bool:
    """Whether a tool that ran returned the outcome the context forced for its call."""
    if message.status == "error":
        return False
    # A call retried in place (retry_in_place) kept its last attempt's result.
    index = outcome_position(messages, message.tool_call_id, in_place_retries(message))
    forced = context.outcome_for(index)
    return forced is None or _reason(message) == _REASON_OF[forced]


def fragment(content: str) -> str:
    """Return the part of a tool's content any faithful answer quotes.

    A Markdown page is identified by its ``# `` title (a receipt by its order line);
    anything else by the start of its first line with runs of whitespace removed.
    """
    lines = content.strip().splitlines()
    order = next((line for line in lines if line.startswith("Order **")), None)
    if order is not None:
        return order.removeprefix("Order **").removesuffix("**")
    if lines and lines[0].startswith("# "):
        return lines[0][2:].strip()
    first = lines[0] if lines else ""
    return _SPACE.sub(" ", _TAGS.sub(" ", first)).strip()[:FRAGMENT_CHARS]


def _carries(answer: str, contents: Sequence[str]) -> bool:
    return any(answer == content or fragment(content) in answer for content in contents)


def readable(text: str) -> bool:
    """Whether text reads as Markdown or prose: not a JSON document, no HTML tags."""
    stripped = text.strip()
    if not stripped:
        return False
    if stripped[0] in "{[":
        try:
            json.loads(stripped)
        except ValueError:
            pass
        else:
            return False
    return _HTML.search(stripped) is None


def _flat(text: str) -> str:
    return " ".join(text.split())


@dataclass
class Part:
    """One part of the question: a distinct tool call (a retry repeats name and arguments)."""

    name: str
    args: dict[str, Any]
    calls: int = 0
    """How many times the model called it."""
    result: ToolMessage | None = None
    """Its latest result, if any."""

    @property
    def settled(self) -> bool:
        """Whether its latest result is completed, fatal or a policy block."""
        return self.result is not None and _reason(self.result) in _SETTLED


def parts_of(messages: Sequence[BaseMessage]) -> list[Part]:
    """Return the question's parts in the order the model first asked for them.

    Judged from the messages alone, so it reads any agent's run: a part is a distinct
    (tool, arguments) pair; a later call with the same pair is a retry and brings the
    part's latest result.
    """
    parts: dict[str, Part] = {}
    key_of: dict[str, str] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                key = f"{call['name']}:{json.dumps(call['args'], sort_keys=True)}"
                part = parts.setdefault(key, Part(call["name"], dict(call["args"])))
                part.calls += 1
                if call["id"]:
                    key_of[call["id"]] = key
        elif isinstance(message, ToolMessage) and message.tool_call_id in key_of:
            parts[key_of[message.tool_call_id]].result = message
    return list(parts.values())


def _not_done_line(message: ToolMessage | None) -> str | None:
    artifact = message.artifact if message is not None else None
    line = artifact.get("not_done") if isinstance(artifact, dict) else None
    return line if isinstance(line, str) and line.strip() else None


def names_of(part: Part, number: int, total: int) -> list[str]:
    """Return the texts any one of which names ``part`` in an answer (whitespace flattened).

    A settled part is named by its result: a page by the opening of its first paragraph
    (titles recur inside other pages), a receipt by its order id, a refusal or a fatal
    error by its first line (which names the query or the item). An unsettled part is
    named by the line that says it was not done: the tool's ``not_done`` line, or the
    core's generic "Not done: part k of n" label.

    Args:
        part: The part.
        number: Its 1-based place in the question.
        total: How many parts the question has.

    Returns:
        The candidate names, none empty.
    """
    names: list[str] = []
    if part.settled and part.result is not None:
        content = part.result.text.strip()
        lines = content.splitlines()
        receipt = any(line.startswith("Order **") for line in lines)
        if not receipt and _reason(part.result) == "completed" and lines[0].startswith("# "):
            opening = next((line for line in lines[1:] if line.strip()), "")
            names.append(_flat(opening)[:FRAGMENT_CHARS])
        else:
            names.append(_flat(fragment(content)))
    else:
        line = _not_done_line(part.result)
        if line is not None:
            names.append(_flat(fragment(line)))
        names.append(f"**Not done: part {number} of {total} (`{part.name}`)**")
    return [name for name in names if name]


def complete(answer: str, messages: Sequence[BaseMessage], parts: int) -> bool:
    """Whether each of the question's ``parts`` is named in the answer, in the question's order.

    The parts come from the messages (see :func:`parts_of`), so a baseline's run is read
    the same way as the project's; each must be named (see :func:`names_of`), the first
    part's name before the second's. A part silently missing, a part the model never
    called, or parts out of order fail.
    """
    found = parts_of(messages)
    if len(found) != parts:
        return False
    flat = _flat(answer)
    cursor = 0
    for number, part in enumerate(found, start=1):
        hits = [
            (at, len(name))
            for name in names_of(part, number, len(found))
            if (at := flat.find(name, cursor)) >= 0
        ]
        if not hits:
            return False
        at, length = min(hits)
        cursor = at + length
    return True


def verbatim(answer: str, messages: Sequence[BaseMessage]) -> bool:
    """Whether a hard answer is the settled contents and the not-done lines, byte for byte.

    Every settled result's content is one piece of the answer (split on the answer
    separator); every other piece is the not-done line of a part left unsettled (the
    tool's, or the core's generic one) or a bound's closing message.
    """
    found = parts_of(messages)
    settled = {part.result.text for part in found if part.settled and part.result is not None}
    not_done = {
        line for part in found if not part.settled and (line := _not_done_line(part.result))
    }
    spent = RETRY_BUDGET_MESSAGE.split("{")[0]  # a spent budget's line per part, named
    closing = {MODEL_CALL_LIMIT_MESSAGE}
    pieces = set(answer.split(ANSWER_SEPARATOR))
    others = pieces - settled
    return settled <= pieces and all(
        piece in not_done or piece in closing or piece.startswith(("**Not done: part ", spent))
        for piece in others
    )


def _relayed(messages: Sequence[BaseMessage]) -> bool:
    """Whether the final message was relayed rather than written by a model."""
    last = messages[-1] if messages else None
    return isinstance(last, ToolMessage) or (
        isinstance(last, AIMessage) and last.usage_metadata is None
    )


def read_run(
    query: Query, config_name: str, is_verbatim: bool, messages: Sequence[BaseMessage]
) -> RunRecord:
    """Measure and judge one finished run.

    Args:
        query: The query that ran.
        config_name: The configuration's name.
        is_verbatim: Whether a stopped run must answer with the tool's content verbatim.
        messages: The final state's messages.

    Returns:
        The run's record, ``latency_s`` unset.
    """
    model_messages = [
        m for m in messages if isinstance(m, AIMessage) and m.usage_metadata is not None
    ]
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    issuing = [m for m in messages if isinstance(m, AIMessage) and m.tool_calls]
    answer = messages[-1].text if messages else ""
    context = Context.model_validate(query.context)

    checks: dict[str, bool] = {}
    ran = [m for m in tool_messages if _reason(m) != "policy_block"]
    checks["context"] = all(_as_forced(m, messages, context) for m in ran)
    retried_parts = [
        i for i, o in enumerate(query.part_outcomes) if o == "transient" and query.runs(i)
    ]
    if retried_parts and query.policy == "all":
        positions = {id(m): i for i, m in enumerate(messages)}
        checks["retried"] = all(
            any(
                isinstance(later, AIMessage) and later.usage_metadata is not None
                for later in messages[positions[id(m)] + 1 :]
            )
            for m in tool_messages
            if _reason(m) == "transient"
        ) and any(_reason(m) == "transient" or in_place_retries(m) for m in tool_messages)
    if query.expect in ("completed", "fatal"):
        contents = [m.text for m in tool_messages if _reason(m) == query.expect]
        checks["content"] = _carries(answer, contents)
    if is_verbatim:
        checks["verbatim"] = verbatim(answer, messages)
    if any(o == "fatal" and query.runs(i) for i, o in enumerate(query.part_outcomes)):
        found = parts_of(messages)
        checks["no_retry"] = (
            all(
                part.calls == 1
                for part in found
                if part.result is not None and _reason(part.result) == "fatal"
            )
            and len(found) == query.parts
        )
    if query.expect == "policy_block":
        amounts = {
            call["id"]: call["args"].get("amount")
            for m in issuing
            for call in m.tool_calls
            if call["name"] == "checkout"
        }
        charged = any(
            m.name == "checkout"
            and _reason(m) == "completed"
            and isinstance(amount := amounts.get(m.tool_call_id), int | float)
            and amount > context.spend_cap
            for m in tool_messages
        )
        checks["policy"] = SPEND_CAP_MESSAGE in answer
        checks["charged_over_cap"] = not charged
    if query.parts > 1:
        checks["complete"] = complete(answer, messages, query.parts)
    if _relayed(messages):
        checks["readable"] = readable(answer)
    transient = [m.text for m in tool_messages if _reason(m) == "transient"]
    checks["wrong_answer"] = not _carries(answer, transient)

    usage = [m.usage_metadata for m in model_messages if m.usage_metadata is not None]
    return RunRecord(
        query_id=query.id,
        config=config_name,
        model_calls=len(model_messages),
        input_tokens=sum(u["input_tokens"] for u in usage),
        output_tokens=sum(u["output_tokens"] for u in usage),
        tool_steps=len(issuing),
        tool_calls=sum(len(m.tool_calls) for m in issuing),
        answer=answer,
        checks=checks,
    )


def summary_of_checks(records: Sequence[RunRecord]) -> dict[str, Any]:
    """Count, per check, how many runs it applied to and how many passed."""
    out: dict[str, Any] = {}
    for name in CHECKS:
        applied = [r.checks[name] for r in records if name in r.checks]
        if applied:
            out[name] = {"passed": sum(applied), "applied": len(applied)}
    return out
