"""The forced-outcome matrix: scenarios with the decision, path and model calls they expect.

One table serves the unit tests (in-process), the integration tests (through
``langgraph dev``) and ``python -m agent.client check`` (against any server), so "the
same scenario gives the same decision in both graphs" is checked the same way everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

GRAPHS: tuple[str, ...] = ("legacy", "middleware")
MODEL_NODES: frozenset[str] = frozenset({"agent", "model"})
"""Nodes that call the model, in either graph: count their updates to count model calls."""
STOP_NODE = "stop_on_artifact.before_model"

Ending = Literal["finalize", "model"]


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
    """Position, in the last step's call order, of the ToolMessage that decided."""
    calls: tuple[int, ...] = ()
    """Tool calls per tool step; empty means one call in every step."""
    tags: tuple[str, ...] = field(default=())

    @property
    def model_calls(self) -> int:
        """Model calls the run makes: one per tool step, plus a final answer if any."""
        return self.tool_steps + (1 if self.ending == "model" else 0)

    @property
    def verbatim(self) -> bool:
        """Whether the final answer is the chosen tool's content, verbatim."""
        return self.ending == "finalize" and self.rule not in ("retry_budget", "model_call_limit")

    def path(self, graph: str) -> list[str]:
        """Return the node path ``stream_mode="updates"`` shows for ``graph``."""
        if graph == "legacy":
            path = ["agent", "tools"] * self.tool_steps
            return [*path, "finalize" if self.ending == "finalize" else "agent"]
        if graph == "middleware":
            # create_agent runs each tool call of a turn as its own ``tools`` task.
            calls = self.calls or (1,) * self.tool_steps
            path = [node for n in calls for node in (STOP_NODE, "model", *["tools"] * n)]
            path.append(STOP_NODE)
            return [*path, "model"] if self.ending == "model" else path
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
            ("retry_then_success", ["retryable", "success"], 2, "completed"),
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
                tags=("policy",),
            )
        )
    parallel: list[tuple[str, str, list[str], str, tuple[int, ...], int]] = [
        # name, policy, forced outcomes, rule, tool calls per step, chosen position
        ("priority_fatal_last", "priority", ["success", "fatal"], "fatal", (2,), 1),
        ("priority_fatal_first", "priority", ["fatal", "success"], "fatal", (2,), 0),
        ("priority_stop_beats_transient", "priority", ["retryable", "success"], "completed",
         (2,), 1),
        ("any_first_stop", "any", ["success", "fatal"], "completed", (2,), 0),
        ("all_agree", "all", ["success", "success"], "completed", (2,), 0),
        # The first step continues (one call is transient); only that call is retried.
        ("all_wait_for_retry", "all", ["success", "retryable", "success"], "completed",
         (2, 1), 0),
    ]  # fmt: skip
    for name, policy, forced, rule, calls, chosen in parallel:
        rows.append(
            Scenario(
                name=f"parallel-{name}",
                query="checkpointer; streaming",
                context={"force_outcome": forced, "parallel_policy": policy},
                action="stop",
                rule=rule,
                tool_steps=len(calls),
                ending="finalize",
                chosen=chosen,
                calls=calls,
                tags=("parallel",),
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
"""Every scenario, in a stable order."""


def by_name(name: str) -> Scenario:
    """Return the scenario called ``name``.

    Raises:
        KeyError: If there is none; the message lists the known names.
    """
    for scenario in SCENARIOS:
        if scenario.name == name:
            return scenario
    msg = f"unknown scenario {name!r}; known: {[s.name for s in SCENARIOS]}"
    raise KeyError(msg)
