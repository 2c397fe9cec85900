"""The decision after a tool step (`decide`) and a hard stop's answer (`final_text`).

Both read the turn once (`scan_turn`); the router and the middleware never re-implement a rule.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, cast

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from typing_extensions import TypedDict

from stop_on_artifact import _turn
from stop_on_artifact._artifact import NOT_DONE_FIELD, Reason
from stop_on_artifact._saving import Saving
from stop_on_artifact._settings import StopSettings
from stop_on_artifact._turn import Part, Turn, Verdict, message_text, scan_turn, turn_start

logger = logging.getLogger("stop_on_artifact")

Rule = Literal[
    "completed", "fatal", "policy_block", "retry_budget", "transient", "invalid_artifact",
    "tool_error", "no_artifact", "stop_mode_never", "model_call_limit", "step_limit",
    "no_tool_step",
]  # fmt: skip
"""The rule that decided: metadata, stream events and tests name it."""

ALWAYS_HARD = frozenset({"policy_block", "retry_budget", "model_call_limit", "step_limit"})
"""Rules that end the run with their own text in every `stop_mode`."""
_PRIORITY = {"policy_block": 0, "fatal": 1, "completed": 2}

ANSWER_SEPARATOR = "\n\n---\n\n"
"""Between the parts of a hard stop's answer: a Markdown horizontal rule."""
RETRY_BUDGET_MESSAGE = (
    "**Stopped retrying {where} (`{tool}`)**: tried {tries}×, the service is still "
    "unavailable. Please try again in a few minutes."
)
"""A spent retry budget's closing line per part still timing out: `{where}` (`part 1 of 2`,
`this request`), `{tool}` and `{tries}`, named as the not-done line names it (no arguments)."""
MODEL_CALL_LIMIT_MESSAGE = (
    "I could not finish this request within the allowed number of steps, so I stopped "
    "here. Please narrow the question and try again."
)
NOT_DONE_MESSAGE = (
    "**Not done: {where} (`{tool}`)**: {why}, so it was not completed. Ask again to retry."
)
"""A part left undone whose tool wrote no `not_done` line; `{where}`, `{tool}`, `{why}`."""
_WHY = {
    "transient": "it failed for a reason that may pass (a timeout or a busy service)",
    "invalid_artifact": "its result could not be confirmed",
    "no_artifact": "its result could not be confirmed",
    None: "it returned no result",
}
_MALFORMED = "the call was malformed and never ran"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


class StopDecision(TypedDict):
    """What one tool step decided; checkpointed under `stop_decision` and streamed.

    Example:
        A completed call's step stops, its content the answer:

            >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
            >>> from stop_on_artifact import StopSettings, completed, decide
            >>> ask = AIMessage("", tool_calls=[{"name": "kb", "args": {}, "id": "c1"}])
            >>> done = ToolMessage("Within 30 days.", tool_call_id="c1", artifact=completed())
            >>> messages = [HumanMessage("Refunds?"), ask, done]
            >>> decision = decide(messages, StopSettings())
            >>> decision["action"], decision["rule"], decision["answer_from"]
            ('stop', 'completed', ['c1'])
    """

    action: Literal["stop", "continue"]
    """`stop` ends the loop with a tool's content; `continue` goes back to the model."""
    rule: Rule
    reason: Reason | None
    """The deciding artifact's reason; None when no valid artifact decided."""
    tool: str | None
    tool_call_id: str | None
    answer_from: list[str]
    """On a hard stop, the settled calls whose content is the answer, in the question's order."""
    unsettled: list[str]
    """On a hard stop, the calls answered as not done, in the question's order."""
    approval: NotRequired[str]
    """`approved` / `rejected` when a person was asked about a call of this turn."""
    policy: NotRequired[str]
    """Beside `approval`: the policy that asked."""
    in_place_retries: NotRequired[int]
    """Extra attempts run in place this turn (`retry_in_place`)."""
    saved: NotRequired[Saving]
    """On a hard stop, the model call it skipped (see `stop_on_artifact._saving`)."""
    answer_chars: NotRequired[int]
    """On a hard stop, its answer's text length, right-stripped (a parent checks the text)."""
    structured: NotRequired[Literal["missing"]]
    """`missing` when a declared schema got no answer: `structured_response` is None."""


def decide(
    messages: Sequence[BaseMessage],
    context: StopSettings,
    record: Mapping[str, object] | None = None,
) -> StopDecision:
    """Decide whether the latest tool step ends the run.

    1. Each ToolMessage of the step gives its valid artifact's reason; an error status gives
       `tool_error` (unless a valid fatal/policy_block artifact rides on it), a malformed artifact
       `invalid_artifact` (one warning naming tool and problem, never content), none `no_artifact`.
    2. A plain result in the step (no artifact: the model has not read it yet) goes back to
       the model. `parallel_policy="all"` stops only when every call of the step stops, the first
       deciding; a policy block waits for a sibling that can still be retried, then the
       turn's first refused part decides. `priority` (policy_block > fatal > completed)
       and `any` (call order) stop on any stop, a policy block first.
    3. `stop_mode="never"` turns a completed/fatal stop into `stop_mode_never`.
    4. A continue stops on `retry_budget` past `max_retries` transient outcomes this
       turn, on `model_call_limit` at `max_model_calls` model calls, and on
       `step_limit` when the run's `recursion_limit` leaves no room for another round;
       the bounds hold on every decision, a step another middleware emptied included.
    5. A hard stop answers every part of the turn in the question's order: settled parts
       by their content (`answer_from`), the others as not done (`unsettled`). A later
       call of the same tool retries an unsettled part and takes its place. A plain result
       (an input the model read) is no part.

    It never raises on malformed messages or artifacts.

    Args:
        messages: The thread, ending with the tool step.
        context: The turn's settings.
        record: The state's `stop_turn`: what earlier steps counted toward the bounds.

    Example:
        Under `stop_mode="never"` a completed step goes back to the model:

            >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
            >>> from stop_on_artifact import StopSettings, completed, decide
            >>> ask = AIMessage("", tool_calls=[{"name": "kb", "args": {}, "id": "c1"}])
            >>> done = ToolMessage("Within 30 days.", tool_call_id="c1", artifact=completed())
            >>> messages = [HumanMessage("Refunds?"), ask, done]
            >>> decide(messages, StopSettings(stop_mode="never"))["rule"]
            'stop_mode_never'
    """
    return decide_turn(scan_turn(messages, record), context)


def decide_turn(turn: Turn, context: StopSettings, room: bool = True) -> StopDecision:
    """Decide a turn already scanned (`decide`); `room`: a round fits the step limit."""
    for verdict in turn.step:
        if verdict.problem is not None:
            logger.warning(
                "invalid artifact from tool %r (tool_call_id=%s): %s; continuing to the model",
                verdict.message.name,
                verdict.message.tool_call_id,
                verdict.problem,
            )
    action, rule, reason, by = _rule(turn, context, room)
    hard = action == "stop" and (context.stop_mode != "polish" or rule in ALWAYS_HARD)
    message = by.message if by is not None else None
    call_id = message.tool_call_id if message is not None else None
    approval = next((a for a in turn.approvals if a[0] == call_id), None) or next(
        iter(turn.approvals), None
    )
    decision: dict[str, object] = {
        "action": action,
        "rule": rule,
        "reason": reason,
        "tool": message.name if message is not None else None,
        "tool_call_id": call_id,
        "answer_from": [p.call_id for p in turn.parts if hard and p.settled],
        "unsettled": [p.call_id for p in turn.parts if hard and not p.settled],
    }
    if approval is not None:
        decision["approval"] = approval[1]
        if approval[2] is not None:
            decision["policy"] = approval[2]
    if turn.in_place:
        decision["in_place_retries"] = turn.in_place
    return cast(StopDecision, decision)


def _rule(
    turn: Turn, settings: StopSettings, room: bool
) -> tuple[str, str, str | None, Verdict | None]:
    blocked = next(
        (p.verdict for p in turn.parts if p.verdict and p.verdict.rule == "policy_block"), None
    )
    chosen = _choose(turn.step, settings.parallel_policy, blocked) if turn.step else None
    reason = chosen.reason if chosen is not None else None
    if chosen and chosen.stop and (settings.stop_mode != "never" or chosen.rule == "policy_block"):
        return "stop", chosen.rule, reason, chosen
    if turn.transients > settings.max_retries:  # bounds read from the state, in every mode
        spent = next((v for v in turn.step if v.rule == "transient"), chosen)
        return "stop", "retry_budget", "transient", spent
    if turn.model_calls >= settings.max_model_calls:
        return "stop", "model_call_limit", reason, chosen
    if not room:
        return "stop", "step_limit", reason, chosen
    if chosen is None:
        return "continue", "no_tool_step", None, None
    return "continue", chosen.rule if not chosen.stop else "stop_mode_never", reason, chosen


def _choose(step: Sequence[Verdict], policy: str, blocked: Verdict | None) -> Verdict:
    if plain := next((v for v in step if v.plain), None):
        return plain  # nobody has read it yet: back to the model, whatever the policy
    stops = [v for v in step if v.stop]
    goes = [v for v in step if not v.stop]
    if policy == "all":  # a refusal stands, but waits for a sibling that can be retried
        return goes[0] if goes else blocked or stops[0]
    blocks = [v for v in stops if v.rule == "policy_block"]
    if blocks or not stops:
        return blocks[0] if blocks else goes[0]
    return stops[0] if policy == "any" else min(stops, key=lambda v: _PRIORITY[v.rule])


def is_hard_stop(decision: StopDecision, context: StopSettings) -> bool:
    """Return True when a stop ends the run with its [final_text][stop_on_artifact.final_text].

    `polish` phrases completed and fatal answers with one more model call (when
    `max_model_calls` leaves none, the doors stop hard: their decision has `answer_chars`); a
    policy block, a spent retry budget, the model-call cap and the step limit end with their
    own text.

    Args:
        decision: The step's decision.
        context: The turn's settings.

    Example:
        Under `polish` a completed stop gets one more model call:

            >>> from stop_on_artifact import StopSettings
            >>> from stop_on_artifact._decision import is_hard_stop
            >>> decision = {"action": "stop", "rule": "completed"}
            >>> is_hard_stop(decision, StopSettings(stop_mode="polish"))
            False
    """
    return decision["action"] == "stop" and (
        context.stop_mode != "polish" or decision["rule"] in ALWAYS_HARD
    )


def final_text(
    decision: Mapping[str, object],
    messages: Sequence[BaseMessage],
    *,
    retry_budget_message: str = RETRY_BUDGET_MESSAGE,
    model_call_limit_message: str = MODEL_CALL_LIMIT_MESSAGE,
    not_done_message: str = NOT_DONE_MESSAGE,
) -> str:
    """Return a hard stop's answer: each part in the question's order, joined by a rule.

    A settled part is its content verbatim; an unsettled one the tool's `not_done` line,
    else `not_done_message`; a malformed call of the turn's last reply is not done, after
    that reply's calls; a text said twice is said once; then any closing line.

    Raises:
        LookupError: If a listed call is not a call of this turn, a call in
            `answer_from` has no result, or nothing makes up an answer.

    Args:
        decision: A hard stop's decision.
        messages: The thread the decision read.
        retry_budget_message: The closing line when the retry budget is spent, once per
            part still timing out (`{where}`, `{tool}`, `{tries}`).
        model_call_limit_message: The closing line when the model-call cap ends the run.
        not_done_message: The line of a part left undone unless its tool wrote `not_done`.

    Example:
        A completed call's content answers verbatim:

            >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
            >>> from stop_on_artifact import StopSettings, completed, decide, final_text
            >>> ask = AIMessage("", tool_calls=[{"name": "kb", "args": {}, "id": "c1"}])
            >>> done = ToolMessage("Within 30 days.", tool_call_id="c1", artifact=completed())
            >>> messages = [HumanMessage("Refunds?"), ask, done]
            >>> final_text(decide(messages, StopSettings()), messages)
            'Within 30 days.'
    """
    texts = (retry_budget_message, model_call_limit_message, not_done_message)
    answer = final_content(decision, messages, *texts)
    return answer if isinstance(answer, str) else message_text(AIMessage(content=answer))


def final_content(
    decision: Mapping[str, object],
    messages: Sequence[BaseMessage],
    retry_budget_message: str = RETRY_BUDGET_MESSAGE,
    model_call_limit_message: str = MODEL_CALL_LIMIT_MESSAGE,
    not_done_message: str = NOT_DONE_MESSAGE,
    turn: Turn | None = None,
) -> str | list[str | dict[str, Any]]:
    """Return `final_text`'s answer, keeping the blocks of a settled part that are not text.

    They (images, files) follow their part's text as the tool gave them, the text in text
    blocks; with none, the answer is `final_text`'s `str`. Raises as it does.
    `turn`: the decision's own scan of `messages` (else scanned here, with no record).
    """
    asked_here = messages[turn_start(messages) :]  # the last reply's malformed calls never ran
    reply = next((m for m in reversed(asked_here) if isinstance(m, AIMessage)), None)
    calls = getattr(reply, "invalid_tool_calls", [])
    bad = [Part(f"\0{n}", str(c.get("name") or ""), None, None, None) for n, c in enumerate(calls)]
    parts = (*(turn or scan_turn(messages)).parts, *bad)
    position = {part.call_id: index for index, part in enumerate(parts)}
    answer_from = _ids(decision.get("answer_from"))
    listed = [*answer_from, *_ids(decision.get("unsettled"))]
    if any(call_id not in position for call_id in listed):
        msg = "a call listed in the decision is not a call of this turn"
        raise LookupError(msg)
    lines: list[str] = []
    content: list[dict[str, Any]] = []
    asked = dict.fromkeys([*listed, *(part.call_id for part in bad)])
    order = sorted(asked, key=position.__getitem__)
    where = dict.fromkeys(order, "this request")
    where.update((i, f"part {position[i] + 1} of {len(parts)}") for i in order if len(parts) > 1)
    for call_id in order:
        part = parts[position[call_id]]
        if call_id in answer_from and part.message is None:
            msg = "a call listed in answer_from has no ToolMessage this turn"
            raise LookupError(msg)
        if call_id in answer_from and part.message is not None:
            line, blocks = message_text(part.message), part.message.content
        else:
            line, blocks = _not_done(where[call_id], part, not_done_message), []
        if line not in lines:
            _say(content, lines, line)
        blocks = blocks if isinstance(blocks, list) else []
        content += [b for b in blocks if isinstance(b, dict) and b.get("type") != "text"]
    if decision["rule"] == "retry_budget":
        for line in _spent(decision, parts, where, asked_here, retry_budget_message):
            _say(content, lines, line)
    elif decision["rule"] in ("model_call_limit", "step_limit"):
        _say(content, lines, model_call_limit_message)
    if not lines:
        msg = f"a stop on rule {decision['rule']!r} has nothing to answer with"
        raise LookupError(msg)
    if all(block.get("type") == "text" for block in content):
        return "".join(str(block["text"]) for block in content)
    return list(content)


def _say(content: list[dict[str, Any]], lines: list[str], line: str) -> None:
    text = (ANSWER_SEPARATOR if lines else "") + line
    lines.append(line)
    if content and content[-1].get("type") == "text":  # a tool's text blocks are never kept
        content[-1]["text"] += text
    elif text:
        content.append({"type": "text", "text": text})


def _spent(
    decision: Mapping[str, object],
    parts: Sequence[Part],
    where: Mapping[str, str],
    turn: Sequence[BaseMessage],
    template: str,
) -> list[str]:
    """A spent retry budget's closing lines: one per part left timing out, named."""
    listed = [p for p in parts if p.call_id in where]
    spent = [p for p in listed if not p.settled and p.verdict and p.verdict.rule == "transient"]
    args = {str(c.get("id")): c.get("args") for m in turn for c in _turn.tool_calls(m)}
    lines: list[str] = []
    for part in spent or [p for p in listed if p.call_id == decision.get("tool_call_id")]:
        alone = sum(p.name == part.name for p in parts) == 1  # else: its calls, its arguments
        mine = [m for m in turn if isinstance(m, ToolMessage) and m.name == part.name]
        mine = [m for m in mine if alone or args.get(m.tool_call_id) == part.args]
        n = sum(1 + _turn.in_place_retries(m) for m in mine if _turn.judge(m).rule == "transient")
        line = template.format(where=where[part.call_id], tool=_name(part.name), tries=max(n, 1))
        if line not in lines:
            lines.append(line)
    name = _name(str(decision.get("tool") or ""))  # else the call is gone: its tool
    return lines or [template.format(where="this request", tool=name, tries=1)]


def _name(name: str) -> str:
    return "".join(char for char in name[:64] if char in _NAME_CHARS) or "tool"


def _not_done(where: str, part: Part, template: str) -> str:
    verdict = part.verdict
    written = verdict.artifact.get(NOT_DONE_FIELD) if verdict and verdict.artifact else None
    if isinstance(written, str) and written.strip():
        return written
    why = _MALFORMED if part.call_id[:1] == "\0" else _WHY.get(verdict.rule if verdict else None)
    if why is None:  # an error, maybe another middleware's refusal: the call is named in full
        args = part.args if isinstance(part.args, dict) else {}
        named = ", ".join(f"{key}={value!r}" for key, value in args.items()).replace("`", "'")
        named = named if len(named) <= 80 else f"{named[:79]}…"
        why = f"the call{f' `{named}`' if named else ''} ended with an error"
    return template.format(where=where, tool=_name(part.name), why=why)


def _ids(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []
