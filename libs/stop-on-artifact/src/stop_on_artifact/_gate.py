"""`PolicyGate`: the policies in a hand-built `StateGraph` (langgraph 0.6.6 too)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from langchain_core.messages import AIMessage, BaseMessage, ToolCall

from stop_on_artifact._artifact import carried
from stop_on_artifact._policies import (
    AskHook,
    Merge,
    Messages,
    PolicyVerdict,
    Result,
    RunCalls,
    RunCallsSync,
    ToolPolicy,
    _call_id,
    _identifier,
    _require,
    answers,
    mark_approved,
    refusal_for,
    screen,
)
from stop_on_artifact._record import StateSchemaError


class PolicyGate:
    """The policies in a hand-built `StateGraph` (langgraph 0.6.6 too).

    The model node returns `record`'s update with the reply (the state declares
    `<name>_verdict`); `run` or `arun` is the tools node's body.

    Args:
        policies: [tool_policy][stop_on_artifact.tool_policy]'s, distinct names, checked in order.
        name: Names the state's keys (`<name>_verdict`), an identifier.
        on_ask: A function of the policy's name run when a policy asks, or None.

    Example:
        The state's key is named after the gate:

            >>> from stop_on_artifact import PolicyGate, tool_policy
            >>> PolicyGate(policies=[tool_policy("audit")(lambda call, context: None)]).verdict_key
            'policies_verdict'
    """

    def __init__(
        self, *, policies: Sequence[ToolPolicy], name: str = "policies", on_ask: AskHook = None
    ) -> None:
        """Check and keep the policies."""
        ok = isinstance(policies, Sequence) and not isinstance(policies, ToolPolicy)
        ok = ok and all(isinstance(policy, ToolPolicy) for policy in policies)
        _require(ok, "policies must be a list of ToolPolicy")
        ok = len({policy.name for policy in policies}) == len(policies)
        _require(ok, "policies must have distinct names")
        ok = on_ask is None or callable(on_ask)
        _require(ok, "on_ask must be a function of the policy's name, or None")
        self.policies: tuple[ToolPolicy, ...] = tuple(policies)
        self.name = _identifier(name, "name")
        self.on_ask = on_ask
        self.verdict_key = f"{self.name}_verdict"  # the latest model turn's PolicyVerdict
        self.approved_key = f"{self.name}_approved"  # the ids approved this step (create_agent)

    def record(self, reply: BaseMessage, messages: Messages, context: Any) -> dict[str, Any]:
        """Return `{verdict_key: verdict}` on `reply`'s calls (`messages`: before it)."""
        calls = reply.tool_calls if isinstance(reply, AIMessage) else []
        return {self.verdict_key: screen(calls, self.policies, context, messages)}

    def verdict(self, state: Mapping[str, Any], calls: Sequence[ToolCall]) -> PolicyVerdict | None:
        """Return the verdict recorded with `calls` (by call id), or raise `StateSchemaError`."""
        if not calls:
            return None
        key, recorded = self.verdict_key, state.get(self.verdict_key)
        ids = {_call_id(call) for call in calls}
        if isinstance(recorded, Mapping) and ids <= set(recorded.get("screened") or ()):
            return cast("PolicyVerdict", recorded)
        msg = (
            f"no policy verdict recorded for these tool calls under '{key}': declare "
            f"'{key}: dict | None' in the graph's state and return PolicyGate.record(...) with "
            "the model's reply (PolicyMiddleware declares it itself)"
        )
        raise StateSchemaError(msg)

    def _step(self, state: Mapping[str, Any]) -> tuple[list[ToolCall], Merge]:
        """Ask and refuse; return the calls to run and what merges their results."""
        messages = state.get("messages") or []
        issued = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if issued is None:
            msg = "No AIMessage found in input"  # ToolNode's own error for this state
            raise ValueError(msg)
        calls = list(issued.tool_calls)
        verdict = self.verdict(state, calls)
        decisions = answers(verdict, self.on_ask)
        refusals = [refusal_for(call, verdict, decisions) for call in calls]
        policy_of = verdict["blocked_by"] if verdict is not None else {}

        def merge(ran: Sequence[Result]) -> list[Result]:
            found = [(carried(r), r) for r in ran]  # a Command is paired by its ToolMessage
            by_id = {m.tool_call_id: mark_approved(r, decisions, policy_of) for m, r in found if m}
            pairs = zip(calls, refusals, strict=True)
            merged = [by_id.get(_call_id(c)) if r is None else r for c, r in pairs]
            ok = all(m is not None for m in merged)
            _require(ok, "run_calls must return one ToolMessage (or a Command carrying one) per "
                     "call, paired by tool_call_id")  # fmt: skip
            return merged

        return [c for c, r in zip(calls, refusals, strict=True) if r is None], merge

    async def arun(self, state: Mapping[str, Any], run_calls: RunCalls) -> list[Result]:
        """Ask, refuse, run the rest; return a result per call in order, approved marked.

        A result is a ToolMessage, or a `Command` carrying one (marked in place).

        The verdict recorded with the model's reply decides, whatever the run's context.
        """
        allowed, merge = self._step(state)
        return merge(list(await run_calls(allowed)) if allowed else [])

    def run(self, state: Mapping[str, Any], run_calls: RunCallsSync) -> list[Result]:
        """Sync twin of `arun`."""
        allowed, merge = self._step(state)
        return merge(list(run_calls(allowed)) if allowed else [])
