"""The one function that decides, after a tool step, whether the run stops.

:func:`decide` reads the tool step's artifacts (see :mod:`stop_on_artifact.artifact`) and
returns a :class:`StopDecision`; :func:`final_text` composes a hard stop's answer. The
router, the middleware and any other agent import them (from :mod:`stop_on_artifact`) and
never re-implement a rule. Nothing here needs more than ``langchain-core``: it runs on
langchain-core 0.3 and 1.x alike.

Public here: :func:`decide`, :class:`StopDecision`, :data:`Rule` / :data:`RULES`,
:func:`final_text`, :func:`not_done_text`, :func:`is_hard_stop` and the answer texts. The
message-scanning helpers (:func:`message_text`, :func:`turn_start`, :func:`latest_tool_step`,
:func:`invocation_index`, :func:`model_call_count`, :func:`transient_count`,
:func:`turn_results`) are internal: the library and its harness use them, and they may
change in any release.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal, NotRequired, get_args

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from typing_extensions import TypedDict

from stop_on_artifact.artifact import (
    NOT_DONE_FIELD,
    InvalidArtifactError,
    Reason,
    parse_artifact,
)
from stop_on_artifact.settings import SettingsLike

logger = logging.getLogger(__name__)

Rule = Literal[
    "completed",
    "fatal",
    "policy_block",
    "retry_budget",
    "transient",
    "invalid_artifact",
    "tool_error",
    "no_artifact",
    "stop_mode_never",
    "model_call_limit",
    "no_tool_step",
]
"""Public rule names: metadata, stream events and tests use them."""

RULES: tuple[str, ...] = get_args(Rule)

ALWAYS_HARD: frozenset[str] = frozenset({"policy_block", "retry_budget", "model_call_limit"})
"""Rules that end the run with their own text in every ``stop_mode``."""

_PRIORITY: dict[str, int] = {"policy_block": 0, "fatal": 1, "completed": 2}
"""Among stops under ``parallel_policy="priority"``: lower wins."""

RETRY_BUDGET_MESSAGE = (
    "The service is still unavailable after several attempts, so I stopped retrying. "
    "Please try again in a few minutes."
)
"""The user-safe answer when the retry budget is spent."""

ANSWER_SEPARATOR = "\n\n---\n\n"
"""Between the parts of a hard stop's answer: a Markdown horizontal rule."""

MODEL_CALL_LIMIT_MESSAGE = (
    "I could not finish this request within the allowed number of steps, so I stopped "
    "here. Please narrow the question and try again."
)
"""The user-safe answer when the model-call cap ends a run."""


class StopDecision(TypedDict):
    """What the router decided after one tool step.

    Checkpointed in the thread state under ``stop_decision`` and streamed as a custom
    event, so a client can always tell why a run ended or went on.
    """

    action: Literal["stop", "continue"]
    """``stop`` ends the loop with a tool's content; ``continue`` goes back to the model."""
    rule: Rule
    """The public name of the rule that matched."""
    reason: Reason | None
    """The chosen artifact's reason, or None when no valid artifact decided."""
    tool: str | None
    """Name of the tool whose message decided."""
    tool_call_id: str | None
    """The ``tool_call_id`` of the message that decided."""
    answer_from: list[str]
    """On a hard stop, the ``tool_call_id``s of the settled calls whose content is in the
    answer, in the order the question asked for them (see :func:`decide`); empty
    otherwise (the model answers)."""
    unsettled: list[str]
    """On a hard stop, the ``tool_call_id``s of the calls answered as not done (transient,
    errored, invalid, artifact-less or missing results), in the question's order; empty
    otherwise. Every call of the turn is in ``answer_from`` or here, or was retried by a
    call that is."""
    approval: NotRequired[str]
    """Present when a person was asked about a call of this step: the artifact's
    ``approval`` field (``approved`` / ``rejected``), the deciding call's first."""
    policy: NotRequired[str]
    """Beside ``approval``: the artifact's ``policy`` field, the policy that asked."""


# ---------------------------------------------------------------------------------------
# Reading the message list.


def message_text(message: BaseMessage) -> str:
    """Return a message's text: its string content, or its text blocks joined.

    ``BaseMessage.text`` is a method in langchain-core 0.3 and a property in 1.x; this
    reads the content itself, the same on both.
    """
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def _tool_calls(message: BaseMessage) -> list[dict[str, Any]]:
    if isinstance(message, AIMessage):
        return [dict(call) for call in message.tool_calls]
    return []


def turn_start(messages: Sequence[BaseMessage]) -> int:
    """Return the index just after the last user message (0 when there is none)."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return index + 1
    return 0


def latest_tool_step(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    """Return the ToolMessages of the latest tool step, in the order the model issued them.

    The step is every ToolMessage after the last AIMessage that has tool calls. Messages
    are ordered by their position in that AIMessage's ``tool_calls`` (not by when they
    finished); a repeated ``tool_call_id`` counts once; messages for unknown ids go last.

    Args:
        messages: The thread's messages.

    Returns:
        The step's ToolMessages, possibly empty.
    """
    for index in range(len(messages) - 1, -1, -1):
        calls = _tool_calls(messages[index])
        if calls:
            order = {call["id"]: position for position, call in enumerate(calls)}
            seen: set[str] = set()
            step: list[ToolMessage] = []
            for message in messages[index + 1 :]:
                if isinstance(message, ToolMessage) and message.tool_call_id not in seen:
                    seen.add(message.tool_call_id)
                    step.append(message)
            return sorted(step, key=lambda m: order.get(m.tool_call_id, len(order)))
    return []


def invocation_index(messages: Sequence[BaseMessage], tool_call_id: str) -> int:
    """Return the 0-based position of a tool call among this turn's tool calls.

    Calls are counted since the last user message, in the order the model issued them,
    so ``force_outcome=["retryable", "success"]`` applies to the first and second call
    whatever order they finish in.

    Args:
        messages: The thread's messages, including the AIMessage that issued the call.
        tool_call_id: The call to locate.

    Returns:
        The call's index, or the number of calls this turn if the id is unknown.
    """
    ids = [
        call["id"] for message in messages[turn_start(messages) :] for call in _tool_calls(message)
    ]
    return ids.index(tool_call_id) if tool_call_id in ids else len(ids)


def model_call_count(messages: Sequence[BaseMessage]) -> int:
    """Count model calls (AIMessages) since the last user message."""
    return sum(isinstance(m, AIMessage) for m in messages[turn_start(messages) :])


def transient_count(messages: Sequence[BaseMessage]) -> int:
    """Count valid ``transient`` outcomes since the last user message.

    A repeated ``tool_call_id`` counts once, its first copy deciding, as in
    :func:`latest_tool_step`.
    """
    count = 0
    seen: set[str] = set()
    for message in messages[turn_start(messages) :]:
        if not isinstance(message, ToolMessage) or message.tool_call_id in seen:
            continue
        seen.add(message.tool_call_id)
        artifact = message.artifact
        if isinstance(artifact, dict) and artifact.get("reason") == "transient":
            try:
                parse_artifact(artifact)
            except InvalidArtifactError:
                continue
            count += 1
    return count


# ---------------------------------------------------------------------------------------
# Deciding.


class _Verdict(TypedDict):
    stop: bool
    rule: Rule
    reason: Reason | None
    message: ToolMessage


def _verdict(message: ToolMessage, *, quiet: bool = False) -> _Verdict:
    """Judge one ToolMessage on its own; ``quiet`` skips the invalid-artifact warning."""
    artifact: dict[str, Any] | None = None
    problem: str | None = None
    if message.artifact is not None:
        try:
            artifact = parse_artifact(message.artifact)
        except InvalidArtifactError as exc:
            problem = str(exc)
    if message.status == "error":
        if artifact is not None and artifact["reason"] in ("fatal", "policy_block"):
            return {
                "stop": True,
                "rule": artifact["reason"],
                "reason": artifact["reason"],
                "message": message,
            }
        return {
            "stop": False,
            "rule": "tool_error",
            "reason": artifact["reason"] if artifact else None,
            "message": message,
        }
    if problem is not None:
        if quiet:
            return {"stop": False, "rule": "invalid_artifact", "reason": None, "message": message}
        # Names the tool, the call and the type problem; never the tool's content.
        logger.warning(
            "invalid artifact from tool %r (tool_call_id=%s): %s; continuing to the model",
            message.name,
            message.tool_call_id,
            problem,
        )
        return {"stop": False, "rule": "invalid_artifact", "reason": None, "message": message}
    if artifact is None:
        return {"stop": False, "rule": "no_artifact", "reason": None, "message": message}
    reason = artifact["reason"]
    return {"stop": artifact["stop"], "rule": reason, "reason": reason, "message": message}


def _decision(
    action: Literal["stop", "continue"],
    rule: Rule,
    verdict: _Verdict | None,
    reason: Reason | None = None,
) -> StopDecision:
    message = verdict["message"] if verdict else None
    return {
        "action": action,
        "rule": rule,
        "reason": reason if reason is not None else (verdict["reason"] if verdict else None),
        "tool": message.name if message else None,
        "tool_call_id": message.tool_call_id if message else None,
        "answer_from": [],
        "unsettled": [],
    }


def turn_results(messages: Sequence[BaseMessage]) -> list[ToolMessage | None]:
    """Return the latest result of each part of this turn, in the question's order.

    Parts are the turn's tool calls in the order the model first asked for them, a retry
    taking the place of the call it retries (see :func:`decide`); a part whose call has
    no result yet is None. A model that writes the answer itself can read the turn the way
    a hard stop answers it.

    Args:
        messages: The thread's messages.

    Returns:
        One entry per part, possibly empty.
    """
    return [part["message"] for part in _parts(messages[turn_start(messages) :])]


def _choose(verdicts: list[_Verdict], policy: str, blocked: _Verdict | None) -> _Verdict:
    """Pick the verdict that decides a step; ``blocked`` is the turn's first refused part."""
    stops = [v for v in verdicts if v["stop"]]
    goes = [v for v in verdicts if not v["stop"]]
    if policy == "all":
        # A refusal stands, but it waits for a sibling that can still be retried: the turn
        # stops once every part is settled (or a bound is reached), the refusal deciding.
        if goes:
            return goes[0]
        return blocked or stops[0]
    blocks = [v for v in stops if v["rule"] == "policy_block"]
    if blocks:
        return blocks[0]  # priority and any: a policy denial stops at once
    if not stops:
        return goes[0]
    if policy == "any":
        return stops[0]
    return min(stops, key=lambda v: _PRIORITY[v["rule"]])  # min() keeps call order on ties


# ---------------------------------------------------------------------------------------
# The parts of a turn: what the question asked for, each answered once.


class _Part(TypedDict):
    call_id: str
    """The latest call of this part: a retry takes the place of the call it retries."""
    name: str
    args: object
    message: ToolMessage | None
    """The first result of ``call_id``; None when the call has no result."""
    verdict: _Verdict | None


def _parts(turn: Sequence[BaseMessage]) -> list[_Part]:
    """Group this turn's tool calls into parts, in the order the model first asked.

    A call of a later model call retries an unsettled part of the same tool and takes its
    place, its arguments changed or not (see :func:`_retry_pairs` for which part); any
    other call starts a new part, after the existing ones. Results for ids no AIMessage
    issued are parts of their own, last. A repeated ``tool_call_id`` counts once, its
    first result deciding.
    """
    results: dict[str, ToolMessage] = {}
    for message in turn:
        if isinstance(message, ToolMessage) and message.tool_call_id not in results:
            results[message.tool_call_id] = message
    parts: list[_Part] = []
    seen: set[str] = set()
    for message in turn:
        calls: list[_Part] = []
        for call in _tool_calls(message):
            call_id = str(call.get("id") or "")
            if call_id in seen:
                continue
            seen.add(call_id)
            result = results.get(call_id)
            calls.append(
                {
                    "call_id": call_id,
                    "name": str(call.get("name", "")),
                    "args": call.get("args"),
                    "message": result,
                    "verdict": _verdict(result, quiet=True) if result is not None else None,
                }
            )
        # Paired against the parts of earlier model calls only: calls of one AIMessage
        # are always parts of their own.
        retried = _retry_pairs(parts, calls)
        for index, fields in enumerate(calls):
            if index in retried:
                parts[retried[index]].update(fields)
            else:
                parts.append(fields)
    for call_id, result in results.items():
        if call_id not in seen:
            parts.append(
                {
                    "call_id": call_id,
                    "name": result.name or "",
                    "args": None,
                    "message": result,
                    "verdict": _verdict(result, quiet=True),
                }
            )
    return parts


def _retry_pairs(parts: Sequence[_Part], calls: Sequence[_Part]) -> dict[int, int]:
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
    for name in dict.fromkeys(call["name"] for call in calls):
        waiting = [i for i, part in enumerate(parts) if part["name"] == name and not _settled(part)]
        asked = [i for i, call in enumerate(calls) if call["name"] == name]
        for index in asked:
            same = next((i for i in waiting if parts[i]["args"] == calls[index]["args"]), None)
            if same is not None:
                pairs[index] = same
                waiting.remove(same)
        pairs.update(zip((i for i in asked if i not in pairs), waiting, strict=False))
    return pairs


def _settled(part: _Part) -> bool:
    return part["verdict"] is not None and part["verdict"]["stop"]


def decide(messages: Sequence[BaseMessage], context: SettingsLike) -> StopDecision:
    """Decide whether the latest tool step ends the run.

    Rules, in order:

    1. Judge each ToolMessage of the step: a valid artifact gives its reason; an error
       status gives ``tool_error`` (unless a valid fatal/policy_block artifact rides on
       it); a malformed artifact gives ``invalid_artifact``; none gives ``no_artifact``.
    2. Pick one by ``context.parallel_policy``. ``all`` (the default): stop only when
       every call of the step has a stopping reason, the first call deciding; a policy
       block stands but waits for a sibling that can still be retried, and once the
       turn is settled the turn's first refused part decides (rule ``policy_block``).
       ``priority`` (any stop wins; policy_block > fatal > completed) and ``any`` (the
       first stop in call order) stop at once, a policy block first.
    3. ``stop_mode="never"`` turns a completed/fatal stop into ``stop_mode_never``;
       a policy block stops in every mode.
    4. A continue stops on ``retry_budget`` once more than ``context.max_retries``
       transient outcomes happened since the last user message (read from the state,
       not from the artifact), and on ``model_call_limit`` once the model has been
       called ``context.max_model_calls`` times since then. Both stop in every mode.
    5. A hard stop (see :func:`is_hard_stop`) answers every part of the turn, in the
       order the model first asked for them: a settled part by its content (its id in
       ``answer_from``), an unsettled one by a line that says it was not done (its id
       in ``unsettled``, see :func:`not_done_text`). A call of a later model call
       retries an unsettled part of the same tool and takes its place, even with other
       arguments: equal arguments pair first, then the tool's other calls pair with its
       other unsettled parts in order; a call left over is a new part.

    Args:
        messages: The thread's messages, ending with the tool step.
        context: The run's settings: a :class:`~stop_on_artifact.settings.StopSettings`, or
            any object with the same four attributes (a run context, for example).

    Returns:
        The decision. It never raises on malformed messages or artifacts.
    """
    parts = _parts(messages[turn_start(messages) :])
    decision = _decide_rule(messages, context, parts)
    _note_approval(decision, messages)
    if is_hard_stop(decision, context):
        for part in parts:
            listed = decision["answer_from"] if _settled(part) else decision["unsettled"]
            listed.append(part["call_id"])
    return decision


def _note_approval(decision: StopDecision, messages: Sequence[BaseMessage]) -> None:
    """Copy ``approval`` and ``policy`` from this turn's artifacts, when one has them.

    The deciding call's artifact is read first, then this turn's others, latest first (a
    call asked about in an earlier step of the turn still counts); only a valid artifact
    with a string ``approval`` counts.
    """
    turn = [m for m in messages[turn_start(messages) :] if isinstance(m, ToolMessage)]
    turn.reverse()
    turn.sort(key=lambda m: m.tool_call_id != decision["tool_call_id"])  # stable
    for message in turn:
        artifact = message.artifact
        if isinstance(artifact, dict) and isinstance(artifact.get("approval"), str):
            try:
                parse_artifact(artifact)
            except InvalidArtifactError:
                continue
            decision["approval"] = artifact["approval"]
            if isinstance(artifact.get("policy"), str):
                decision["policy"] = artifact["policy"]
            return


def _decide_rule(
    messages: Sequence[BaseMessage], context: SettingsLike, parts: Sequence[_Part]
) -> StopDecision:
    step = latest_tool_step(messages[turn_start(messages) :])  # this turn's step only
    if not step:
        return _decision("continue", "no_tool_step", None)
    blocked = next(
        (
            part["verdict"]
            for part in parts
            if part["verdict"] is not None and part["verdict"]["rule"] == "policy_block"
        ),
        None,
    )
    chosen = _choose([_verdict(message) for message in step], context.parallel_policy, blocked)
    if chosen["stop"]:
        if context.stop_mode != "never" or chosen["rule"] == "policy_block":
            return _decision("stop", chosen["rule"], chosen)
        going_on = _decision("continue", "stop_mode_never", chosen)
    else:
        going_on = _decision("continue", chosen["rule"], chosen)
    # Bounds read from the state, not from any artifact: they hold in every mode.
    if transient_count(messages) > context.max_retries:
        transients = [v for v in map(_verdict, step) if v["rule"] == "transient"]
        return _decision("stop", "retry_budget", (transients or [chosen])[0], reason="transient")
    if model_call_count(messages) >= context.max_model_calls:
        return _decision("stop", "model_call_limit", chosen)
    return going_on


_WHY_NOT_DONE: dict[str | None, str] = {
    "transient": "it failed for a reason that may pass (a timeout or a busy service)",
    "tool_error": "the tool stopped with an error",
    "invalid_artifact": "its result could not be confirmed",
    "no_artifact": "its result could not be confirmed",
    None: "it returned no result",
}
"""Why a part was not done, by the rule its result would have."""

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def not_done_text(part_number: int, parts: int, message: ToolMessage | None, tool: str) -> str:
    """Return the line a hard stop answers an unsettled part with.

    The tool writes it: a valid artifact's ``not_done`` field (user-safe Markdown, see
    :func:`stop_on_artifact.artifact.transient`) is used as it is. Otherwise a generic line
    names the part by its position and its tool (never its arguments, which may hold
    caller text) and says why it was not done.

    Args:
        part_number: The part's 1-based position in the question.
        parts: How many parts the turn has.
        message: The part's latest result, or None when the call has no result.
        tool: The tool's name, as the model called it.

    Returns:
        The line.
    """
    if message is not None:
        written = _written_not_done(message)
        if written is not None:
            return written
    rule = _verdict(message, quiet=True)["rule"] if message is not None else None
    name = "".join(char for char in tool[:64] if char in _NAME_CHARS) or "tool"
    where = f"part {part_number} of {parts}" if parts > 1 else "this request"
    why = _WHY_NOT_DONE.get(rule, _WHY_NOT_DONE["tool_error"])
    return f"**Not done: {where} (`{name}`)**: {why}, so it was not completed. Ask again to retry."


def _written_not_done(message: ToolMessage) -> str | None:
    try:
        artifact = parse_artifact(message.artifact)
    except InvalidArtifactError:
        return None
    written = artifact.get(NOT_DONE_FIELD)
    return written if isinstance(written, str) and written.strip() else None


def final_text(decision: StopDecision, messages: Sequence[BaseMessage]) -> str:
    """Return the text a hard stop answers with.

    Every part in ``decision["answer_from"]`` (its content, verbatim) and in
    ``decision["unsettled"]`` (its :func:`not_done_text` line), in the question's order,
    a text repeated word for word said once, joined by :data:`ANSWER_SEPARATOR`; a spent
    retry budget or the model-call cap adds its user-safe message after the parts.

    Args:
        decision: A hard ``stop`` decision from :func:`decide`.
        messages: The thread's messages.

    Returns:
        The answer text.

    Raises:
        LookupError: If a listed call is not a call of this turn, a call in
            ``answer_from`` has no ToolMessage, or nothing makes up an answer.
    """
    parts = _parts(messages[turn_start(messages) :])
    position = {part["call_id"]: index for index, part in enumerate(parts)}
    answered = set(decision["answer_from"])
    listed = [*decision["answer_from"], *decision.get("unsettled", [])]
    if any(call_id not in position for call_id in listed):
        msg = "a call listed in the decision is not a call of this turn"
        raise LookupError(msg)
    texts: list[str] = []
    for call_id in sorted(dict.fromkeys(listed), key=position.__getitem__):
        part = parts[position[call_id]]
        if call_id in answered:
            if part["message"] is None:
                msg = "a call listed in answer_from has no ToolMessage this turn"
                raise LookupError(msg)
            text = message_text(part["message"])
        else:
            text = not_done_text(position[call_id] + 1, len(parts), part["message"], part["name"])
        if text not in texts:  # a part repeated word for word is said once
            texts.append(text)
    if decision["rule"] == "retry_budget":
        texts.append(RETRY_BUDGET_MESSAGE)
    elif decision["rule"] == "model_call_limit":
        texts.append(MODEL_CALL_LIMIT_MESSAGE)
    if not texts:
        msg = f"a stop on rule {decision['rule']!r} has nothing to answer with"
        raise LookupError(msg)
    return ANSWER_SEPARATOR.join(texts)


def is_hard_stop(decision: StopDecision, context: SettingsLike) -> bool:
    """Return True when a stop ends the run without another model call.

    ``polish`` rephrases completed and fatal answers with one more model call; a policy
    block, a spent retry budget and the model-call cap always end with their user-safe
    text.
    """
    if decision["action"] != "stop":
        return False
    return context.stop_mode != "polish" or decision["rule"] in ALWAYS_HARD
