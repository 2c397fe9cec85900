"""A suite's own functions as LangChain tools, bound to one task's environment.

Each AgentDojo ``Function`` of a suite becomes one ``StructuredTool`` with the function's
name, description and parameters model (its ``args_schema``); a call runs through AgentDojo's
``FunctionsRuntime.run_function`` on the task's environment, and its result is formatted as
AgentDojo's own tool executor formats it (``tool_result_to_str``, YAML). A function's error
(``run_function``'s ``"ErrorType: message"``) is a ``ToolException``: the tool answers it as
an error ``ToolMessage``, as AgentDojo answers it to its model.

How a tool may stop is its :data:`Kind`, from a mapping (:mod:`bench.agentdojo.mappings`):
``plain`` (the tool as it is), ``return_direct`` (the static flag), ``stops`` (the library's
``adopt()``: success is ``completed``, a timeout ``transient``), ``reads``
(``adopt(stops=False)``: success is a plain result, a timeout still ``transient``) and
``when_marked`` (``adopt(stops="when_marked")``: success is ``completed`` when the model set
the argument ``stop_on_artifact.MARK_ARGUMENT`` on the call, else a plain result) and
``shared_mark`` (``adopt(stops="when_marked", mark="shared")``: no argument; success is
``completed`` when the same reply calls ``stop_on_artifact.mark_tool()``, else a plain result).

Seeded faults (:class:`Faults`): a drawn call times out once, before it reaches the
environment (so a retry never writes twice), with :class:`ToolTimeout`, which is both a
``TimeoutError`` (``adopt``'s transient type) and a ``ToolException`` (a plain tool answers it
as an error ``ToolMessage``, so stock ``create_agent`` runs on).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
from agentdojo.functions_runtime import Function, FunctionsRuntime, TaskEnvironment
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from stop_on_artifact import adopt

Kind = Literal["plain", "return_direct", "stops", "reads", "when_marked", "shared_mark"]
"""How one tool may end a run; see the module's docstring."""
TIMEOUT_TEXT = "TimeoutError: the service did not answer in time. Trying again may work."


class ToolTimeout(TimeoutError, ToolException):
    """A seeded fault: the call timed out before it reached the environment."""


@dataclass(frozen=True)
class Faults:
    """Which calls time out once: drawn per ``(task, call index)`` with a fixed seed.

    The draw for a call depends only on the seed, the task and the call's index in the
    ground truth, so every configuration meets the same faults where it makes that call.
    """

    rate: float = 0.0
    seed: int = 41

    def drawn(self, task: str, index: int) -> bool:
        """Return whether call ``index`` of ``task`` (``suite/user_task_n``) times out once."""
        if self.rate <= 0:
            return False
        return random.Random(f"{self.seed}/{task}/{index}").random() < self.rate

    def plan(self, task: str, calls: int) -> tuple[int, ...]:
        """Return the indices among ``calls`` ground-truth calls that time out once."""
        return tuple(index for index in range(calls) if self.drawn(task, index))


@dataclass
class CallLog:
    """What one run's tools did: the calls that reached the environment, faults raised."""

    task: str
    faults: Faults
    done: list[str] = field(default_factory=list)
    """Names of the calls that ran to success, in order."""
    timed_out: list[int] = field(default_factory=list)
    """Ground-truth indices of the calls that timed out (each at most once)."""
    attempts: int = 0
    calls: Sequence[tuple[str, Mapping[str, Any]]] | None = None
    """The ground truth's ``(name, args)``, when a step may carry several calls (see below)."""
    steps: Sequence[Sequence[int]] = ()
    """The ground truth's steps (:func:`bench.agentdojo.parallel.steps`) with ``calls``."""
    outside: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    """With ``calls``: the calls a model made that match no ground-truth call, in order; the
    ``k``-th has the index ``len(calls) + k``."""
    _claimed: set[int] = field(default_factory=set)
    _finished: list[int] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def before_call(self, name: str = "", arguments: Mapping[str, Any] | None = None) -> int:
        """Return the call's ground-truth index; raise :class:`ToolTimeout` on a drawn one.

        One call per step (``calls`` None): the index is how many calls have succeeded so far,
        since the perfect model makes the ground truth's calls in order and repeats a failed
        one. Several calls per step run concurrently, in any order: the index is the first
        ground-truth call of that name and those arguments (else of that name) not yet running
        or done, so each call meets its own draw whatever the order (:meth:`_match`). A call
        that matches none (a real model's own call) is a call like any other, with an index
        past the ground truth's (:attr:`outside`): it runs, meets its own draw, and counts.
        """
        with self._lock:
            self.attempts += 1
            index = len(self.done) if self.calls is None else self._match(name, arguments or {})
            if index not in self.timed_out and self.faults.drawn(self.task, index):
                self.timed_out.append(index)
                raise ToolTimeout(TIMEOUT_TEXT)
            self._claimed.add(index)
            return index

    def after_call(self, index: int, name: str, ok: bool) -> None:
        """Record a call's end: ``done`` keeps the ground truth's order; a failure is released."""
        with self._lock:
            if not ok:
                self._claimed.discard(index)
            elif self.calls is None:
                self.done.append(name)
            else:
                self._finished.append(index)
                self.done[:] = [self._name(i) for i in sorted(self._finished)]

    def _name(self, index: int) -> str:
        calls = self.calls or ()
        return calls[index][0] if index < len(calls) else self.outside[index - len(calls)][0]

    def _match(self, name: str, arguments: Mapping[str, Any]) -> int:
        calls = self.calls or ()
        free = [i for i, c in enumerate(calls) if c[0] == name and i not in self._claimed]
        # the tool receives the parameters model's defaults too: the ground truth's are a subset
        same = [i for i in free if all(arguments.get(k) == v for k, v in calls[i][1].items())]
        # Twin calls (same name and arguments): the unfinished step's first, and in it one not
        # yet timed out, so twins in one step meet their own draws in either order.
        step = next((s for s in self.steps if not set(s) <= set(self._finished)), ())
        if same or free:
            return min(same or free, key=lambda i: (i not in step, i in self.timed_out, i))
        # Outside the ground truth: the same call again (after a failure) keeps its index,
        # so a retry meets no second draw; any other call gets the next index.
        again = [
            len(calls) + k
            for k, (other, args) in enumerate(self.outside)
            if (other, args) == (name, arguments) and len(calls) + k not in self._claimed
        ]
        if again:
            return again[0]
        self.outside.append((name, dict(arguments)))
        return len(calls) + len(self.outside) - 1


def _tool(
    function: Function[Any, Any],
    runtime: FunctionsRuntime,
    environment: TaskEnvironment,
    log: CallLog,
) -> StructuredTool:
    name = function.name

    def run(**arguments: Any) -> str:
        index = log.before_call(name, arguments)
        result, error = runtime.run_function(environment, name, arguments)
        log.after_call(index, name, error is None)
        if error is not None:
            raise ToolException(error)
        return str(tool_result_to_str(result))

    return StructuredTool.from_function(
        run,
        name=name,
        description=function.description,
        args_schema=function.parameters,
        handle_tool_error=True,
    )


def suite_tools(
    runtime: FunctionsRuntime,
    environment: TaskEnvironment,
    kinds: Mapping[str, Kind],
    log: CallLog,
    *,
    default: Kind = "plain",
) -> list[BaseTool]:
    """Return every function of ``runtime`` as a tool on ``environment``, shaped by ``kinds``.

    A function missing from ``kinds`` is ``default``.
    """
    tools: list[BaseTool] = []
    for function in runtime.functions.values():
        tool: BaseTool = _tool(function, runtime, environment, log)
        kind = kinds.get(function.name, default)
        if kind == "return_direct":
            tool = tool.model_copy(update={"return_direct": True})
        elif kind == "stops":
            tool = adopt(tool, transient=TimeoutError)
        elif kind == "reads":
            tool = adopt(tool, transient=TimeoutError, stops=False)
        elif kind == "when_marked":
            tool = adopt(tool, transient=TimeoutError, stops="when_marked")
        elif kind == "shared_mark":
            tool = adopt(tool, transient=TimeoutError, stops="when_marked", mark="shared")
        tools.append(tool)
    return tools
