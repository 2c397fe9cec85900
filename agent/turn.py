"""A turn runs under the settings it started with, whichever run carries it on.

A turn starts with a user message and may span several runs: a run that pauses for a
person's approval is carried on by a resume, which the server runs as a run of its own,
with the assistant's context and whatever context the resume sends, or none (Agent Chat
UI and ``python -m client answer`` send none). If the resume ran under that context,
a per-run cap, ``on_policy_block="ask"`` or a forced outcome of the turn would be gone,
and a call a person rejected could be screened again, found within the defaults, and run.

So the context a turn started with is kept in the thread state under
:data:`TURN_CONTEXT_KEY` (written by the node or hook that makes the turn's first model
call: :func:`turn_context_update`), checkpointed like the rest of the thread, so it
survives a restart of either server. A run that continues a paused turn (a ``resume``,
``update`` or ``goto`` command, or no input at all, on a thread with a pending step) runs
under it: :func:`context_to_continue`, called by :mod:`agent.graphs.commands` before the
run's first step, replaces that run's context. Whatever context such a run sends changes
nothing in the paused turn (the field names that differ are logged, never their values);
it applies from the thread's next user message.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, cast

from langchain_core.messages import BaseMessage, HumanMessage

from agent.context import Context, resolve

TURN_CONTEXT_KEY = "turn_context"
"""State key of the context the current turn started with (only the fields it set)."""

RECORDS = (TURN_CONTEXT_KEY, "stop_turn", "spend_cap_verdict", "spend_cap_approved")
"""State keys only the graph writes: the turn's context and the policy's verdict and answers
(``agent.policy.VERDICT_KEY``, ``agent.policy.APPROVED_KEY``). A run's ``input`` or
``command.update`` that sets one is refused (:func:`record_problem`), so no request can
replace what a person was asked, or the settings it was asked under."""

logger = logging.getLogger(__name__)


def record_problem(update: object, field: str) -> str | None:
    """Return why ``update`` may not be written, or None.

    Args:
        update: A run's ``input`` or ``command.update`` (a mapping, or a list of pairs).
        field: Where it came from (``input``, ``command.update``), for the message.

    Returns:
        A message naming the field and the record (the graph's own key names, never what
        the caller sent), or None when it sets none of :data:`RECORDS`.
    """
    if isinstance(update, Mapping):
        keys = set(update)
    elif isinstance(update, list | tuple):
        keys = {pair[0] for pair in update if isinstance(pair, list | tuple) and pair}
    else:
        return None
    named = [key for key in RECORDS if key in keys]
    if not named:
        return None
    return (
        f"{field} sets {', '.join(named)}: the graph records these itself (the turn's "
        "settings and what a person was asked); send messages, or answer with command.resume"
    )


def starts_turn(messages: Sequence[BaseMessage]) -> bool:
    """Return True when ``messages`` end with the user message of a new turn."""
    return bool(messages) and isinstance(messages[-1], HumanMessage)


def turn_settings(context: Context) -> dict[str, Any]:
    """Return what a turn keeps of its context: the fields the run set, and the model.

    Only the fields the run set are kept (a field's default is not a choice, and the stop
    settings read only what a run set); the model is kept resolved, since its default
    depends on the environment.

    Args:
        context: The validated context of the run that starts the turn.

    Returns:
        A JSON-ready mapping that :func:`agent.context.resolve` reads back to the same
        context.
    """
    kept = context.model_dump(mode="json", exclude_unset=True)
    kept["model"] = context.model
    return kept


def turn_context_update(
    messages: Sequence[BaseMessage], context: Context | Mapping[str, Any] | None
) -> dict[str, Any]:
    """Return the state update that records a new turn's context, or ``{}`` mid-turn.

    Args:
        messages: The messages the turn's model call reads.
        context: The run's context (``runtime.context``).

    Returns:
        ``{TURN_CONTEXT_KEY: ...}`` when ``messages`` start a new turn, else ``{}``.
    """
    if not starts_turn(messages):
        return {}
    given = dict(context) if isinstance(context, Mapping) else context
    return {TURN_CONTEXT_KEY: turn_settings(resolve(given))}


def _sent_fields(context: object) -> set[str]:
    if isinstance(context, Context):
        return set(context.model_fields_set)
    if isinstance(context, Mapping):
        return {str(key) for key in context}
    return set()


def context_to_continue(values: Mapping[str, Any], sent: object) -> dict[str, Any] | None:
    """Return the context a run continuing a paused turn runs under.

    Args:
        values: The thread's state values (the latest checkpoint).
        sent: The context the continuing run was given (the assistant's and the request's,
            as the server merged them), or None.

    Returns:
        The turn's recorded context; None when the thread holds none (a thread paused
        before turns kept their context), and the run keeps its own.
    """
    kept = values.get(TURN_CONTEXT_KEY)
    if not isinstance(kept, Mapping):
        return None
    given = _sent_fields(sent) & set(Context.model_fields)
    if given:
        own = resolve(dict(kept))
        try:
            other = resolve(
                sent if isinstance(sent, Context) else dict(cast(Mapping[str, Any], sent))
            )
        except ValueError:  # a bad value changes nothing either: the turn's settings hold
            changed = sorted(given)
        else:
            changed = sorted(f for f in given if getattr(other, f, None) != getattr(own, f, None))
        if changed:
            logger.warning(
                "A run continuing a paused turn sent context fields that differ from the "
                "turn's (%s); the turn keeps the settings it started with",
                ", ".join(changed),
            )
    return dict(kept)
