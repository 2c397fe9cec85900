"""Internal: the rule table of the stop decision (may change in any release).

:func:`rule_for` reads a scanned :class:`~stop_on_artifact._parts.Turn` and the run's
settings and returns the :class:`Ruling`; :func:`stop_on_artifact.decide` documents the
rules and builds the public :class:`~stop_on_artifact.StopDecision` from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from stop_on_artifact._parts import Turn, Verdict
from stop_on_artifact._settings import SettingsLike

ALWAYS_HARD: frozenset[str] = frozenset({"policy_block", "retry_budget", "model_call_limit"})
"""Rules that end the run with their own text in every ``stop_mode``."""

_PRIORITY: dict[str, int] = {"policy_block": 0, "fatal": 1, "completed": 2}
"""Among stops under ``parallel_policy="priority"``: lower wins."""


@dataclass(frozen=True)
class Ruling:
    """What the rules decided, and the result that decided it."""

    action: Literal["stop", "continue"]
    rule: str
    reason: str | None
    by: Verdict | None


def rule_for(turn: Turn, settings: SettingsLike) -> Ruling:
    """Apply rules 2 to 4 of :func:`stop_on_artifact.decide` to a scanned turn."""
    if not turn.step:
        return Ruling("continue", "no_tool_step", None, None)
    blocked = next((p.verdict for p in turn.parts if _rule(p.verdict) == "policy_block"), None)
    chosen = _choose(turn.step, settings.parallel_policy, blocked)
    if not chosen.stop:
        going_on = Ruling("continue", chosen.rule, chosen.reason, chosen)
    elif settings.stop_mode != "never" or chosen.rule == "policy_block":
        return Ruling("stop", chosen.rule, chosen.reason, chosen)
    else:
        going_on = Ruling("continue", "stop_mode_never", chosen.reason, chosen)
    # Bounds read from the state, not from any artifact: they hold in every mode.
    if turn.transients > settings.max_retries:
        spent = next((v for v in turn.step if v.rule == "transient"), chosen)
        return Ruling("stop", "retry_budget", "transient", spent)
    if turn.model_calls >= settings.max_model_calls:
        return Ruling("stop", "model_call_limit", chosen.reason, chosen)
    return going_on


def ends_without_model(action: str, rule: str, stop_mode: str) -> bool:
    """Return whether a ruling is a hard stop: no further model call (rule 5)."""
    return action == "stop" and (stop_mode != "polish" or rule in ALWAYS_HARD)


def _choose(step: Sequence[Verdict], policy: str, blocked: Verdict | None) -> Verdict:
    """Pick the verdict that decides a step; ``blocked`` is the turn's first refused part."""
    stops = [v for v in step if v.stop]
    goes = [v for v in step if not v.stop]
    if policy == "all":
        # A refusal stands, but it waits for a sibling that can still be retried: the turn
        # stops once every part is settled (or a bound is reached), the refusal deciding.
        return goes[0] if goes else blocked or stops[0]
    blocks = [v for v in stops if v.rule == "policy_block"]
    if blocks:
        return blocks[0]  # priority and any: a policy denial stops at once
    if not stops:
        return goes[0]
    if policy == "any":
        return stops[0]
    return min(stops, key=lambda v: _PRIORITY[v.rule])  # min() keeps call order on ties


def _rule(verdict: Verdict | None) -> str | None:
    return verdict.rule if verdict is not None else None
