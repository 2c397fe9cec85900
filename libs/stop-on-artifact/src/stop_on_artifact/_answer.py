"""Internal: the text a hard stop answers with (may change in any release).

:func:`final_text` and :func:`not_done_text` are public through :mod:`stop_on_artifact`;
the texts they write come from :class:`~stop_on_artifact.StopTexts`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from langchain_core.messages import BaseMessage, ToolMessage

from stop_on_artifact._artifact import NOT_DONE_FIELD
from stop_on_artifact.messages import message_text
from stop_on_artifact._parts import Verdict, judge, scan_turn
from stop_on_artifact._texts import StopTexts

ANSWER_SEPARATOR = "\n\n---\n\n"
"""Between the parts of a hard stop's answer: a Markdown horizontal rule."""

_DEFAULT_TEXTS = StopTexts()
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def final_text(
    decision: Mapping[str, object],
    messages: Sequence[BaseMessage],
    texts: StopTexts | None = None,
) -> str:
    """Return the text a hard stop answers with.

    Every part in ``decision["answer_from"]`` (its content, verbatim) and in
    ``decision["unsettled"]`` (its :func:`not_done_text` line), in the question's order,
    a text repeated word for word said once, joined by :data:`ANSWER_SEPARATOR`; a spent
    retry budget or the model-call cap adds its closing line after the parts.

    Args:
        decision: A hard ``stop`` decision from :func:`stop_on_artifact.decide`.
        messages: The thread's messages.
        texts: The texts to write (the run's ``StopSettings.texts``); English by default.

    Returns:
        The answer text.

    Raises:
        LookupError: If a listed call is not a call of this turn, a call in
            ``answer_from`` has no ToolMessage, or nothing makes up an answer.
    """
    texts = texts or _DEFAULT_TEXTS
    parts = scan_turn(messages).parts
    position = {part.call_id: index for index, part in enumerate(parts)}
    answer_from = _ids(decision.get("answer_from"))
    listed = [*answer_from, *_ids(decision.get("unsettled"))]
    if any(call_id not in position for call_id in listed):
        msg = "a call listed in the decision is not a call of this turn"
        raise LookupError(msg)
    lines: list[str] = []
    for call_id in sorted(dict.fromkeys(listed), key=position.__getitem__):
        part = parts[position[call_id]]
        if call_id in answer_from:
            if part.message is None:
                msg = "a call listed in answer_from has no ToolMessage this turn"
                raise LookupError(msg)
            line = message_text(part.message)
        else:
            line = _not_done(position[call_id] + 1, len(parts), part.verdict, part.name, texts)
        if line not in lines:  # a part repeated word for word is said once
            lines.append(line)
    if decision["rule"] == "retry_budget":
        lines.append(texts.retry_budget)
    elif decision["rule"] == "model_call_limit":
        lines.append(texts.model_call_limit)
    if not lines:
        msg = f"a stop on rule {decision['rule']!r} has nothing to answer with"
        raise LookupError(msg)
    return ANSWER_SEPARATOR.join(lines)


def not_done_text(
    part_number: int,
    parts: int,
    message: ToolMessage | None,
    tool: str,
    texts: StopTexts | None = None,
) -> str:
    """Return the line a hard stop answers an unsettled part with.

    The tool writes it: a valid artifact's ``not_done`` field (user-safe Markdown, see
    :func:`stop_on_artifact.transient`) is used as it is. Otherwise ``texts.not_done``
    names the part by its position and its tool (never its arguments, which may hold
    caller text) and says why it was not done.

    Args:
        part_number: The part's 1-based position in the question.
        parts: How many parts the turn has.
        message: The part's latest result, or None when the call has no result.
        tool: The tool's name, as the model called it.
        texts: The texts to write; English by default.

    Returns:
        The line.
    """
    verdict = judge(message) if message is not None else None
    return _not_done(part_number, parts, verdict, tool, texts or _DEFAULT_TEXTS)


def _not_done(number: int, count: int, verdict: Verdict | None, tool: str, texts: StopTexts) -> str:
    written = verdict.artifact.get(NOT_DONE_FIELD) if verdict and verdict.artifact else None
    if isinstance(written, str) and written.strip():
        return written
    why = {
        "transient": texts.why_transient,
        "invalid_artifact": texts.why_unconfirmed,
        "no_artifact": texts.why_unconfirmed,
        None: texts.why_missing,
    }.get(verdict.rule if verdict else None, texts.why_tool_error)
    name = "".join(char for char in tool[:64] if char in _NAME_CHARS) or "tool"
    where = (
        texts.not_done_part.format(number=number, count=count)
        if count > 1
        else texts.not_done_whole
    )
    return texts.not_done.format(where=where, tool=name, why=why)


def _ids(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []
