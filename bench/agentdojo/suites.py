"""AgentDojo's suites as the benchmark reads them: tasks, their ground truth, environments.

Everything comes from the ``agentdojo`` wheel (benchmark version :data:`VERSION`): no key,
no network. A task's ground truth is ``task.ground_truth(environment)`` on the task's own
starting environment, as AgentDojo's ``GroundTruthPipeline`` computes it: a ground truth
reads its arguments (ids, dates, amounts) from the environment it is given.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

from agentdojo.base_tasks import BaseUserTask
from agentdojo.functions_runtime import FunctionCall, TaskEnvironment
from agentdojo.task_suite.load_suites import get_suites
from agentdojo.task_suite.task_suite import TaskSuite

VERSION = "v1.2.2"
"""The AgentDojo benchmark version every figure is for."""
SUITES = ("workspace", "travel", "banking", "slack")


@dataclass(frozen=True)
class Task:
    """One user task of a suite, with what the perfect model replays."""

    suite: str
    id: str
    prompt: str
    calls: tuple[FunctionCall, ...]
    """The ground truth: one tool call per model step, in order."""
    output: str
    """``GROUND_TRUTH_OUTPUT``: the answer the perfect model writes after the calls."""

    @property
    def key(self) -> str:
        """``<suite>/<task id>``: how results name a task."""
        return f"{self.suite}/{self.id}"


@cache
def suite(name: str) -> TaskSuite[Any]:
    """Return AgentDojo's suite ``name`` at :data:`VERSION`."""
    return get_suites(VERSION)[name]


@cache
def _default_environment(name: str) -> TaskEnvironment:
    return suite(name).load_and_inject_default_environment({})


def environment(name: str) -> TaskEnvironment:
    """Return a fresh copy of suite ``name``'s default environment (no injections)."""
    return _default_environment(name).model_copy(deep=True)


def user_task(task: Task) -> BaseUserTask[Any]:
    """Return AgentDojo's own task object for ``task``."""
    return suite(task.suite).user_tasks[task.id]


def _number(task_id: str) -> int:
    return int(task_id.rsplit("_", 1)[-1])


def tasks(names: tuple[str, ...] = SUITES) -> Iterator[Task]:
    """Yield every user task of the suites ``names``, in suite order and task number."""
    for name in names:
        found = suite(name).user_tasks
        for task_id in sorted(found, key=_number):
            task = found[task_id]
            start = task.init_environment(environment(name))
            yield Task(
                suite=name,
                id=task_id,
                prompt=task.PROMPT,
                calls=tuple(task.ground_truth(start)),
                output=task.GROUND_TRUTH_OUTPUT,
            )
