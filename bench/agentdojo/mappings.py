"""Which tools stop: one mapping per rule, the same for every task of a suite.

A mapping names the tools of each suite that stop (by ``return_direct`` or by ``adopt()``);
every other tool is plain. Two rules:

- :func:`team_mapping`, chosen without looking at a task: every tool that writes stops. A
  tool writes when the first word of its name is a verb that changes the environment
  (:data:`WRITE_VERBS`); the others begin with a verb that only reads (:data:`READ_VERBS`).
  A name that begins with neither fails loudly, so a new suite cannot slip through.
- :func:`ground_truth_candidates`, then :func:`bench.agentdojo.harness.no_loss_mapping`,
  derived from the ground truth: a tool stops when some task ends with it and no task calls
  it before another call; then every task is replayed with those tools stopping, and a tool
  that ended a task that lost is dropped, until nothing is lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importing agentdojo changes yaml.dump for the whole process
    from bench.agentdojo.suites import Task
    from bench.agentdojo.tools import Kind

WRITE_VERBS = frozenset(
    {
        "add", "append", "cancel", "create", "delete", "invite", "post", "remove",
        "reschedule", "reserve", "schedule", "send", "share", "update",
    }
)  # fmt: skip
READ_VERBS = frozenset({"check", "get", "list", "read", "search"})


@dataclass(frozen=True)
class ToolMapping:
    """The tools that stop, per suite, and the rule that chose them."""

    name: str
    rule: str
    stops: Mapping[str, frozenset[str]]
    """Suite name to the names of its tools that stop."""

    def kinds(self, suite: str, kind: Kind) -> dict[str, Kind]:
        """Return ``{tool: kind}`` for the stopping tools of ``suite``."""
        return dict.fromkeys(sorted(self.stops.get(suite, frozenset())), kind)

    def as_dict(self) -> dict[str, object]:
        """Return the mapping for the result document."""
        stops = {suite: sorted(names) for suite, names in self.stops.items()}
        return {"name": self.name, "rule": self.rule, "stops": stops}


def is_write(tool: str) -> bool:
    """Return whether ``tool`` writes, by the first word of its name.

    Raises:
        ValueError: If the first word is neither a write verb nor a read verb.
    """
    verb = tool.split("_", 1)[0]
    if verb in WRITE_VERBS:
        return True
    if verb in READ_VERBS:
        return False
    msg = f"tool {tool!r} begins with a verb neither WRITE_VERBS nor READ_VERBS lists"
    raise ValueError(msg)


def team_mapping(tools: Mapping[str, Iterable[str]]) -> ToolMapping:
    """Return the mapping a team picks without the tasks: every write tool stops."""
    stops = {suite: frozenset(t for t in names if is_write(t)) for suite, names in tools.items()}
    verbs = ", ".join(sorted(WRITE_VERBS))
    return ToolMapping(
        name="team",
        rule=f"every tool that writes stops: its name begins with one of {verbs}",
        stops=stops,
    )


def ground_truth_ends(tasks: Iterable[Task]) -> ToolMapping:
    """Return the tools some ground truth of their suite ends with (they may stop when marked)."""
    ends: dict[str, set[str]] = {}
    for task in tasks:
        if task.calls:
            ends.setdefault(task.suite, set()).add(task.calls[-1].function)
    return ToolMapping(
        name="ends",
        rule="a tool may stop when the model marks a call of it if some task of its suite "
        "ends with it",
        stops={suite: frozenset(names) for suite, names in sorted(ends.items())},
    )


def ground_truth_candidates(tasks: Iterable[Task]) -> dict[str, frozenset[str]]:
    """Return, per suite, the tools some ground truth ends with and none calls mid-way."""
    last: dict[str, set[str]] = {}
    middle: dict[str, set[str]] = {}
    for task in tasks:
        names = [call.function for call in task.calls]
        if names:
            last.setdefault(task.suite, set()).add(names[-1])
        middle.setdefault(task.suite, set()).update(names[:-1])
    return {
        suite: frozenset(ends - middle.get(suite, set())) for suite, ends in sorted(last.items())
    }
