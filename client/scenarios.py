"""The forced-outcome matrix: scenarios with the decision, path and model calls they expect.

One table serves the unit tests (in-process), the integration tests (through
``langgraph dev``) and ``python -m client check`` (against any server), so "the
same scenario gives the same decision in both graphs" is checked the same way everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

GRAPHS: tuple[str, ...] = ("legacy", "middleware")
MODEL_NODES: frozenset[str] = frozenset({"agent", "model"})


def model_calls(path: Sequence[str], decision: Mapping[str, Any] | None) -> int:
    """Count a run's model calls from its node path and its last decision.

    Every ``agent`` or ``model`` node calls the model once, but the ``model`` node that
    answers a hard stop in ``middleware`` calls none (a ``step_limit`` stop there first
    called the model and dropped its reply, whose calls had no room to run).
    """
    nodes = sum(node in MODEL_NODES for node in path)
    if "model" in path and decision and "answer_chars" in decision:
        return nodes - (decision.get("rule") != "step_limit")
    return nodes


"""Nodes that call the model, in either graph: count their updates to count model calls."""
STOP_LAYERS = ("stop_on_artifact.wrap_model_call", "stop_on_artifact.awrap_model_call")
"""The traced runs that decide a tool step in ``middleware``: the stop's model-call layer."""
POLICY_NODE = "spend_cap.after_model"
"""The ``middleware`` node after every model call: where an approval request pauses the step."""
INTERRUPT = "__interrupt__"
"""What ``stream_mode="updates"`` shows where a run pauses."""
CALL_TASK = "tool_call"
"""The task each call the ``legacy`` graph runs is (``agent.graphs.legacy.CALL_TASK``)."""

Ending = Literal["finalize", "model"]
_Parts = tuple[tuple[int, int], ...]

LIMIT_RULES: frozenset[str] = frozenset({"retry_budget", "model_call_limit", "step_limit"})
"""Rules whose answer ends with their own user-safe message."""


@dataclass(frozen=True)
class Scenario:
    """One forced-outcome case and what both graphs must do with it."""

    name: str
    query: str
    context: dict[str, Any]
    action: Literal["stop", "continue"]
    rule: str
    tool_steps: int
    ending: Ending
    """``finalize``: the run ends with a tool's content; ``model``: a model call ends it."""
    chosen: int = 0
    """Position, in its step's call order, of the ToolMessage that decided."""
    chosen_step: int = -1
    """The tool step that ToolMessage is in (a policy block of an earlier step can decide)."""
    calls: tuple[int, ...] = ()
    """Tool calls per tool step; empty means one call in every step."""
    answer: tuple[tuple[int, int], ...] | None = None
    """``(step, position)`` of each call a hard stop answers, in the question's order: a
    settled call by its content (``answer_from``), one in :attr:`unsettled` by its "not
    done" line. None means the chosen call alone on a hard stop that a tool settled, and
    nothing otherwise."""
    unsettled: tuple[tuple[int, int], ...] = ()
    """The calls of :attr:`answer` answered as not done (``unsettled``)."""
    tags: tuple[str, ...] = field(default=())
    resume: tuple[dict[str, Any], ...] = ()
    """The decisions answering the run's one approval request (``on_policy_block="ask"``),
    in action order; empty when the run does not pause."""
    refused: tuple[int, ...] = ()
    """Calls per tool step the spend cap refuses in place (``on_policy_block="refuse"``);
    the ``legacy`` graph runs no task for them. Empty means none."""

    @property
    def rejected(self) -> int:
        """Calls of the first step a person rejected: they get a refusal, never a task."""
        return sum(decision["type"] == "reject" for decision in self.resume)

    @property
    def model_calls(self) -> int:
        """Model calls the run makes: one per tool step, plus a final answer if any."""
        return self.tool_steps + (1 if self.ending == "model" else 0)

    @property
    def parts(self) -> tuple[tuple[int, int], ...]:
        """``(step, position)`` of every call a hard stop answers, in the question's order."""
        if self.answer is not None:
            return self.answer
        if self.ending == "finalize" and self.rule not in LIMIT_RULES:
            return ((self.tool_steps - 1, self.chosen),)
        return ()

    @property
    def answer_parts(self) -> tuple[tuple[int, int], ...]:
        """``(step, position)`` of the calls in ``answer_from``, in order."""
        return tuple(part for part in self.parts if part not in self.unsettled)

    @property
    def closing(self) -> str | None:
        """The rule whose user-safe message ends the answer, if one does."""
        return self.rule if self.rule in LIMIT_RULES else None

    def path(self, graph: str) -> list[str]:
        """Return the node path ``stream_mode="updates"`` shows for ``graph``."""
        calls = list(self.calls or (1,) * self.tool_steps)
        calls[0] -= self.rejected
        if graph == "legacy":
            # Each call that runs is a task of the tools step, reported before the step; a
            # call refused or rejected runs none.
            refused = [*self.refused, *[0] * len(calls)]
            path = [
                node
                for n, no in zip(calls, refused, strict=False)
                for node in ("agent", *[CALL_TASK] * (n - no), "tools")
            ]
            if self.resume:
                path.insert(1, INTERRUPT)  # the first tools step pauses, then runs again
            return [*path, "finalize" if self.ending == "finalize" else "agent"]
        if graph == "middleware":
            # create_agent runs each tool call of a turn as its own ``tools`` task; a call
            # a person rejected gets its refusal in the policy node and no task. The stop
            # decides in the model node (no node of its own): a hard stop's answer, or the
            # model's last reply, comes from the last ``model``.
            path = [node for n in calls for node in ("model", POLICY_NODE, *["tools"] * n)]
            if self.resume:
                path.insert(1, INTERRUPT)  # the policy node pauses, then runs again
            return [*path, "model", POLICY_NODE]
        msg = f"unknown graph {graph!r}; expected one of {GRAPHS}"
        raise ValueError(msg)


def _matrix() -> list[Scenario]:
    search = "How does a checkpointer work?"
    rows: list[Scenario] = []
    for mode in ("hard", "polish", "never"):
        stops = mode != "never"
        ending: Ending = "finalize" if mode == "hard" else "model"
        for name, forced, steps, rule in (
            ("success", "success", 1, "completed"),
            ("retry_then_success", ["transient", "success"], 2, "completed"),
            ("fatal", "fatal", 1, "fatal"),
        ):
            rows.append(
                Scenario(
                    name=f"{name}-{mode}",
                    query=search,
                    context={"force_outcome": forced, "stop_mode": mode},
                    action="stop" if stops else "continue",
                    rule=rule if stops else "stop_mode_never",
                    tool_steps=steps,
                    ending=ending,
                    tags=("outcome",),
                )
            )
        rows.append(
            Scenario(
                name=f"retries_exhausted-{mode}",
                query=search,
                context={"force_outcome": "retryable", "stop_mode": mode, "max_retries": 2},
                action="stop",
                rule="retry_budget",
                tool_steps=3,
                ending="finalize",
                answer=((2, 0),),
                unsettled=((2, 0),),
                tags=("outcome",),
            )
        )
        rows.append(
            Scenario(
                name=f"checkout_over_cap-{mode}",
                query="buy a standing desk for 900",
                context={"stop_mode": mode, "spend_cap": 500, "force_outcome": "success"},
                action="stop",
                rule="policy_block",
                tool_steps=1,
                ending="finalize",
                refused=(1,),
                tags=("policy",),
            )
        )
    both = ((0, 0), (0, 1))
    parallel: list[tuple[str, str | None, list[str], str, tuple[int, ...], int, _Parts, _Parts]] = [
        # name, policy (None: the default), forced outcomes, rule, tool calls per step,
        # chosen position (in the last step), answer parts, of them the ones not done
        ("priority_fatal_last", "priority", ["success", "fatal"], "fatal", (2,), 1, both, ()),
        ("priority_fatal_first", "priority", ["fatal", "success"], "fatal", (2,), 0, both, ()),
        # The transient part is not dropped: it is named as not done, in its place.
        ("priority_stop_beats_transient", "priority", ["retryable", "success"], "completed",
         (2,), 1, both, ((0, 0),)),
        ("any_first_stop", "any", ["success", "fatal"], "completed", (2,), 0, both, ()),
        ("any_names_the_transient", "any", ["success", "transient"], "completed",
         (2,), 0, both, ((0, 1),)),
        ("all_agree", "all", ["success", "success"], "completed", (2,), 0, both, ()),
        # The first step continues (one call is transient); only that call is retried,
        # and the answer holds both parts, the first from the earlier step.
        ("all_wait_for_retry", "all", ["success", "retryable", "success"], "completed",
         (2, 1), 0, ((0, 0), (1, 0)), ()),
        ("default_both_parts", None, ["success", "success"], "completed", (2,), 0, both, ()),
        ("default_retry_one_part", None, ["success", "transient", "success"], "completed",
         (2, 1), 0, ((0, 0), (1, 0)), ()),
        # The retried first part keeps its place: first, before the part that failed for good.
        ("default_retried_first_part_first", None, ["transient", "fatal", "success"],
         "completed", (2, 1), 0, ((1, 0), (0, 1)), ()),
        # Retries run out on the second part: the first part still answers, the second is
        # named as not done.
        ("default_retries_exhausted_one_part", None, ["success", "transient"], "retry_budget",
         (2, 1, 1), 0, ((0, 0), (2, 0)), ((2, 0),)),
    ]  # fmt: skip
    for name, policy, forced, rule, calls, chosen, answer, unsettled in parallel:
        context: dict[str, Any] = {"force_outcome": forced}
        if policy is not None:
            context["parallel_policy"] = policy
        rows.append(
            Scenario(
                name=f"parallel-{name}",
                query="checkpointer and interrupts",
                context=context,
                action="stop",
                rule=rule,
                tool_steps=len(calls),
                ending="finalize",
                chosen=chosen,
                calls=calls,
                answer=answer,
                unsettled=unsettled,
                tags=("parallel",),
            )
        )
    rows.append(
        Scenario(
            name="parallel-policy_block_and_receipt",
            query="buy a laptop for 900 and a mouse for 20",
            context={"spend_cap": 500, "force_outcome": "success"},
            action="stop",
            rule="policy_block",
            tool_steps=1,
            ending="finalize",
            calls=(2,),
            answer=both,
            refused=(1,),
            tags=("parallel", "policy"),
        )
    )
    # A refusal waits for its sibling's retry under the default policy, then decides.
    rows.append(
        Scenario(
            name="parallel-policy_block_waits_for_retry",
            query="buy a laptop for 900 and a mouse for 20",
            context={"spend_cap": 500, "force_outcome": ["success", "transient", "success"]},
            action="stop",
            rule="policy_block",
            tool_steps=2,
            ending="finalize",
            chosen_step=0,
            calls=(2, 1),
            answer=((0, 0), (1, 0)),
            refused=(1,),
            tags=("parallel", "policy"),
        )
    )
    rows.append(
        Scenario(
            name="parallel-policy_block_retries_exhausted",
            query="buy a laptop for 900 and a mouse for 20",
            context={"spend_cap": 500, "force_outcome": ["success", "transient"]},
            action="stop",
            rule="retry_budget",
            tool_steps=3,
            ending="finalize",
            calls=(2, 1, 1),
            answer=((0, 0), (2, 0)),
            unsettled=((2, 0),),
            refused=(1,),
            tags=("parallel", "policy"),
        )
    )
    rows.append(
        Scenario(
            name="model_call_cap-never",
            query="How does a checkpointer work?",
            context={
                "force_outcome": "retryable",
                "stop_mode": "never",
                "max_retries": 50,
                "max_model_calls": 4,
            },
            action="stop",
            rule="model_call_limit",
            tool_steps=4,
            ending="finalize",
            answer=((3, 0),),
            unsettled=((3, 0),),
            tags=("outcome",),
        )
    )
    rows.append(
        Scenario(
            name="checkout_within_cap-hard",
            query="buy a desk lamp for 40",
            context={"spend_cap": 500, "force_outcome": "success"},
            action="stop",
            rule="completed",
            tool_steps=1,
            ending="finalize",
            tags=("policy",),
        )
    )
    return rows


SCENARIOS: tuple[Scenario, ...] = tuple(_matrix())
"""Every scenario that runs to its end in one run, in a stable order."""

ASK = {"spend_cap": 500, "force_outcome": "success", "on_policy_block": "ask"}
APPROVE: dict[str, Any] = {"type": "approve"}
REJECT: dict[str, Any] = {"type": "reject", "message": "Over this quarter's budget"}


def _approvals() -> list[Scenario]:
    both = ((0, 0), (0, 1))
    return [
        Scenario(
            name="approval-approve",
            query="buy a standing desk for 900",
            context=ASK,
            action="stop",
            rule="completed",
            tool_steps=1,
            ending="finalize",
            resume=(APPROVE,),
            tags=("policy", "approval"),
        ),
        Scenario(
            name="approval-reject",
            query="buy a standing desk for 900",
            context=ASK,
            action="stop",
            rule="policy_block",
            tool_steps=1,
            ending="finalize",
            resume=(REJECT,),
            tags=("policy", "approval"),
        ),
        Scenario(
            name="approval-approve_polish",
            query="buy a standing desk for 900",
            context={**ASK, "stop_mode": "polish"},
            action="stop",
            rule="completed",
            tool_steps=1,
            ending="model",
            resume=(APPROVE,),
            tags=("policy", "approval"),
        ),
        Scenario(
            # The approved call times out; its retry is approved without asking again.
            name="approval-approve_retry_after_timeout",
            query="buy a standing desk for 900",
            context={**ASK, "force_outcome": ["transient", "success"]},
            action="stop",
            rule="completed",
            tool_steps=2,
            ending="finalize",
            resume=(APPROVE,),
            tags=("policy", "approval"),
        ),
        Scenario(
            name="approval-parallel_approve_and_receipt",
            query="buy a laptop for 900 and a mouse for 20",
            context=ASK,
            action="stop",
            rule="completed",
            tool_steps=1,
            ending="finalize",
            calls=(2,),
            answer=both,
            resume=(APPROVE,),
            tags=("policy", "approval", "parallel"),
        ),
        Scenario(
            name="approval-parallel_reject_and_receipt",
            query="buy a laptop for 900 and a mouse for 20",
            context=ASK,
            action="stop",
            rule="policy_block",
            tool_steps=1,
            ending="finalize",
            calls=(2,),
            answer=both,
            resume=(REJECT,),
            tags=("policy", "approval", "parallel"),
        ),
        Scenario(
            name="approval-two_blocked_approve_one",
            query="buy a laptop for 900 and a standing desk for 700",
            context=ASK,
            action="stop",
            rule="policy_block",
            tool_steps=1,
            ending="finalize",
            chosen=1,
            calls=(2,),
            answer=both,
            resume=(APPROVE, REJECT),
            tags=("policy", "approval", "parallel"),
        ),
    ]


APPROVAL_SCENARIOS: tuple[Scenario, ...] = tuple(_approvals())
"""Runs that pause for approval (``on_policy_block="ask"``) and resume with ``resume``."""


def by_name(name: str) -> Scenario:
    """Return the scenario called ``name``.

    Raises:
        KeyError: If there is none; the message lists the known names.
    """
    for scenario in (*SCENARIOS, *APPROVAL_SCENARIOS):
        if scenario.name == name:
            return scenario
    msg = f"unknown scenario {name!r}; known: {[s.name for s in SCENARIOS]}"
    raise KeyError(msg)
