"""The one function that decides, after a tool step, whether the run stops.

:func:`decide` reads the turn once (:mod:`stop_on_artifact._parts`), applies the rules
(:mod:`stop_on_artifact._rules`) and returns a :class:`StopDecision`, built whole;
:func:`~stop_on_artifact.final_text` (:mod:`stop_on_artifact._answer`) composes a hard
stop's answer. The router, the middleware and any other agent import them from
:mod:`stop_on_artifact` and never re-implement a rule. Nothing here needs more than
``langchain-core``: it runs on langchain-core 0.3 and 1.x alike.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal, NotRequired, cast, get_args

from langchain_core.messages import BaseMessage
from typing_extensions import TypedDict

from stop_on_artifact._answer import ANSWER_SEPARATOR, final_text, not_done_text
from stop_on_artifact._artifact import Reason
from stop_on_artifact._parts import scan_turn
from stop_on_artifact._rules import ALWAYS_HARD, ends_without_model, rule_for
from stop_on_artifact._settings import SettingsLike
from stop_on_artifact._texts import MODEL_CALL_LIMIT_MESSAGE, RETRY_BUDGET_MESSAGE

__all__ = [
    "ALWAYS_HARD",
    "ANSWER_SEPARATOR",
    "MODEL_CALL_LIMIT_MESSAGE",
    "RETRY_BUDGET_MESSAGE",
    "RULES",
    "Rule",
    "StopDecision",
    "decide",
    "final_text",
    "is_hard_stop",
    "not_done_text",
]

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
    in_place_retries: NotRequired[int]
    """Present when calls of this turn were retried in place (``retry_in_place``): how
    many extra attempts ran; each counts against ``max_retries``."""


def decide(messages: Sequence[BaseMessage], context: SettingsLike) -> StopDecision:
    """Decide whether the latest tool step ends the run.

    Rules, in order:

    1. Judge each ToolMessage of the step: a valid artifact gives its reason; an error
       status gives ``tool_error`` (unless a valid fatal/policy_block artifact rides on
       it); a malformed artifact gives ``invalid_artifact`` (one warning per message,
       naming the tool and the problem, never the content); none gives ``no_artifact``.
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
       in ``unsettled``, see :func:`~stop_on_artifact._answer.not_done_text`). A call of a
       later model call retries an unsettled part of the same tool and takes its place,
       even with other arguments: equal arguments pair first, then the tool's other
       calls pair with its other unsettled parts in order; a call left over is a new part.

    Args:
        messages: The thread's messages, ending with the tool step.
        context: The run's settings: a :class:`~stop_on_artifact._settings.StopSettings`, or
            any object with the same four attributes (a run context, for example).

    Returns:
        The decision. It never raises on malformed messages or artifacts.
    """
    turn = scan_turn(messages)
    for verdict in turn.step:
        if verdict.problem is not None:
            # Names the tool, the call and the type problem; never the tool's content.
            logger.warning(
                "invalid artifact from tool %r (tool_call_id=%s): %s; continuing to the model",
                verdict.message.name,
                verdict.message.tool_call_id,
                verdict.problem,
            )
    ruling = rule_for(turn, context)
    hard = ends_without_model(ruling.action, ruling.rule, context.stop_mode)
    by = ruling.by.message if ruling.by is not None else None
    approval = turn.approval_for(by.tool_call_id if by is not None else None)
    asked = {"approval": approval.approval} if approval is not None else {}
    if approval is not None and approval.policy is not None:
        asked["policy"] = approval.policy
    return cast(
        StopDecision,
        {
            "action": ruling.action,
            "rule": ruling.rule,
            "reason": ruling.reason,
            "tool": by.name if by is not None else None,
            "tool_call_id": by.tool_call_id if by is not None else None,
            "answer_from": [p.call_id for p in turn.parts if hard and p.settled],
            "unsettled": [p.call_id for p in turn.parts if hard and not p.settled],
            **asked,
            **({"in_place_retries": turn.in_place} if turn.in_place else {}),
        },
    )


def is_hard_stop(decision: StopDecision, context: SettingsLike) -> bool:
    """Return True when a stop ends the run without another model call.

    ``polish`` rephrases completed and fatal answers with one more model call; a policy
    block, a spent retry budget and the model-call cap always end with their user-safe
    text.

    Args:
        decision: A decision from :func:`decide`.
        context: The run's settings.

    Returns:
        Whether the run ends with :func:`~stop_on_artifact.final_text`, no model call.
    """
    return ends_without_model(decision["action"], decision["rule"], context.stop_mode)
