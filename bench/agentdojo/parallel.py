"""Which ground-truth calls a perfect model issues together, in one step: :func:`steps`.

The rule (stated in ``bench/README.md``): the calls of a task's ground truth are cut, in
order, into steps. A call joins the step of the calls before it when

1. it reads and every call of that step reads (a write is alone in its step: it never joins a
   call before it, and no call joins it, since a read after a write may read what it wrote and
   the calls of a step run concurrently); and
2. none of its argument values was learned in that step: a value is learned when it appears in
   the result of a call of the step (as text, case-insensitively, for strings of 3 or more
   characters; as a whole number, for numbers) but neither in the user's prompt nor in the
   result of a call of an earlier step. Such a value the model could not have known before
   that result came back.

Otherwise it opens the next step. The results are the ground truth's own, replayed once on the
task's starting environment (:func:`results`). The rule sees only literal values: an argument
derived from a result without quoting it (a sum, a reformatted date) is not caught, which is
one reason the figures that rest on it are an upper bound.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bench.agentdojo.mappings import is_write

if TYPE_CHECKING:  # importing agentdojo changes yaml.dump for the whole process
    from bench.agentdojo.suites import Task

MIN_CHARS = 3
"""Shorter strings (``"a"``, ``"no"``) appear in every result: they are never learned."""

Steps = tuple[tuple[int, ...], ...]
"""Ground-truth call indices, step by step."""


def values(value: Any) -> list[str | int | float]:
    """Return the argument values the rule compares: strings of 3+ characters and numbers."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        return [value]
    if isinstance(value, str):
        return [value] if len(value) >= MIN_CHARS else []
    if isinstance(value, dict):
        return [v for item in value.values() for v in values(item)]
    if isinstance(value, list | tuple | set | frozenset):
        return [v for item in value for v in values(item)]
    text = str(value)
    return [text] if len(text) >= MIN_CHARS else []


def appears(value: str | int | float, text: str) -> bool:
    """Return whether ``value`` appears in ``text``: a string case-insensitively, a number whole."""
    if isinstance(value, str):
        return value.lower() in text.lower()
    forms = {str(value)}
    if isinstance(value, float) and value.is_integer():
        forms.add(str(int(value)))
    return any(re.search(rf"(?<![\d.]){re.escape(f)}(?!\d)", text) for f in forms)


def results(task: Task) -> tuple[str, ...]:
    """Return each ground-truth call's result, as the tools format it, replayed in order."""
    from agentdojo.agent_pipeline.tool_execution import tool_result_to_str  # noqa: PLC0415
    from agentdojo.functions_runtime import FunctionsRuntime  # noqa: PLC0415

    from bench.agentdojo.suites import environment, suite, user_task  # noqa: PLC0415

    env = user_task(task).init_environment(environment(task.suite))
    runtime = FunctionsRuntime(suite(task.suite).tools)
    out = []
    for call in task.calls:
        result, error = runtime.run_function(env, call.function, dict(call.args))
        out.append(str(tool_result_to_str(result)) if error is None else str(error))
    return tuple(out)


def cut(prompt: str, calls: Sequence[tuple[str, dict[str, Any]]], outputs: Sequence[str]) -> Steps:
    """Return the steps of ``calls`` (``(name, args)``) with results ``outputs`` by the rule."""
    steps: list[list[int]] = []
    for index, (name, args) in enumerate(calls):
        if steps and _joins(prompt, calls, outputs, steps, name, args):
            steps[-1].append(index)
        else:
            steps.append([index])
    return tuple(tuple(step) for step in steps)


def _joins(
    prompt: str,
    calls: Sequence[tuple[str, dict[str, Any]]],
    outputs: Sequence[str],
    steps: list[list[int]],
    name: str,
    args: dict[str, Any],
) -> bool:
    step = steps[-1]
    if is_write(name) or any(is_write(calls[i][0]) for i in step):
        return False
    known = "\n".join([prompt, *(outputs[i] for earlier in steps[:-1] for i in earlier)])
    fresh = "\n".join(outputs[i] for i in step)
    return not any(appears(v, fresh) and not appears(v, known) for v in values(args))


_STEPS: dict[str, Steps] = {}


def steps(task: Task) -> Steps:
    """Return the steps a perfect model issues ``task``'s ground truth in (cached per task)."""
    if task.key not in _STEPS:
        calls = [(call.function, dict(call.args)) for call in task.calls]
        _STEPS[task.key] = cut(task.prompt, calls, results(task))
    return _STEPS[task.key]
