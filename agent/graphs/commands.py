"""Refuse a run's ``command`` the graph cannot honour, with an error naming ``command``.

A run may start from a ``command`` instead of input. LangGraph does not check it:
``resume`` or ``update`` on a thread with nothing pending does nothing, or fails deep
inside LangGraph (``TypeError: 'NoneType' object is not iterable`` on a new thread
through the server), and ``goto`` to a node the graph lacks is dropped with a warning, so
the run fails later for an unrelated reason. :func:`checked` returns the compiled graph
as a :class:`CommandCheckedGraph`, which looks at the command before the first step.

A run that continues a paused turn (a command, or no input, on a thread with a pending
step) runs under the context the turn started with, not its own (:mod:`agent.turn`): a
resume needs no context, and the context it sends changes nothing in that turn. A thread
paused before turns kept their context answers an approval request under the resume's
context with ``on_policy_block="ask"`` (:func:`agent.approval.context_for_answer`). The
check never fails the run on a paused thread, since the production server refuses to
resume a thread whose last run failed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.constants import END, START
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, Send, StateSnapshot

from agent.approval import context_for_answer
from agent.frameworks.langgraph import rebuild
from agent.turn import context_to_continue, record_problem


class CommandError(ValueError):
    """A run's ``command`` asks for something this graph or thread cannot do."""


def _targets(goto: Any) -> list[Any]:
    if isinstance(goto, Send | str):
        return [goto]
    return list(goto or ())


def command_problem(
    command: Command[Any], nodes: Sequence[str], snapshot: StateSnapshot | None
) -> str | None:
    """Return what is wrong with a command, or None when the graph can run it.

    Args:
        command: The run's command.
        nodes: The graph's node names (``__start__`` excluded).
        snapshot: The thread's latest state; None when the graph has no checkpointer or
            the run has no thread, and then only ``goto`` is checked.

    Returns:
        A message naming ``command`` and the expected form. It never quotes what the
        caller sent, only the graph's own node names.
    """
    known = [*sorted(nodes), END]
    for target in _targets(command.goto):
        node = target.node if isinstance(target, Send) else target
        if node not in known:
            return (
                "command.goto names a node this graph does not have; "
                f"expected one of: {', '.join(known)}"
            )
    record = record_problem(command.update, "command.update")
    if record is not None:
        return record
    wants_pending = command.resume is not None or command.update is not None
    pending = snapshot is not None and _pending(snapshot)
    if wants_pending and snapshot is not None and not pending:
        return (
            "command.resume and command.update continue an interrupted thread, and this "
            "thread is not interrupted (no step is pending): start a run with input instead"
        )
    return None


def _pending(snapshot: StateSnapshot) -> bool:
    # langgraph 0.6 leaves ``next`` empty after a node paused a second time in one run,
    # its task still holding the interrupt: that thread is interrupted too.
    return bool(snapshot.next) or any(task.interrupts for task in snapshot.tasks)


def answers_approval(command: Command[Any], snapshot: StateSnapshot | None) -> bool:
    """Return True when ``command`` resumes a thread paused on an approval request."""
    if command.resume is None or snapshot is None:
        return False
    return any(_is_approval_request(i.value) for task in snapshot.tasks for i in task.interrupts)


def _is_approval_request(value: object) -> bool:
    """Return True when an interrupt's value is a human-in-the-loop request."""
    return isinstance(value, Mapping) and all(
        isinstance(value.get(key), list) for key in ("action_requests", "review_configs")
    )


class CommandCheckedGraph(CompiledStateGraph[Any, Any, Any, Any]):
    """A compiled graph that checks a ``command`` input before it runs.

    ``invoke``, ``ainvoke``, ``astream_events`` and the server all go through
    :meth:`stream` or :meth:`astream`.
    """

    def _nodes(self) -> list[str]:
        return [name for name in self.nodes if name != START]

    def _has_thread(self, config: RunnableConfig | None) -> bool:
        configurable = (config or {}).get("configurable") or {}
        return bool(self.checkpointer) and "thread_id" in configurable

    def _continues(self, input: Any, config: RunnableConfig | None) -> bool:
        return (input is None or isinstance(input, Command)) and self._has_thread(config)

    def _prepare(self, input: Any, snapshot: StateSnapshot | None, kwargs: dict[str, Any]) -> None:
        """Check a command, and run a continued turn under the turn's own context."""
        if isinstance(input, Command):
            problem = command_problem(input, self._nodes(), snapshot)
            if problem:
                raise CommandError(problem)
        if snapshot is None or not _pending(snapshot):
            return
        kept = context_to_continue(snapshot.values, kwargs.get("context"))
        if kept is not None:
            kwargs["context"] = kept
        elif isinstance(input, Command) and answers_approval(input, snapshot):
            kwargs["context"] = context_for_answer(kwargs.get("context"))

    async def astream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        """Check a command input, then stream as LangGraph does.

        A run that continues a paused turn runs under the context the turn started with
        (:func:`agent.turn.context_to_continue`).

        Raises:
            CommandError: If the input is a command the graph or thread cannot honour.
        """
        if self._continues(input, config):
            self._prepare(input, await self.aget_state(config or {}), kwargs)
        elif isinstance(input, Command):
            self._prepare(input, None, kwargs)
        async for chunk in super().astream(input, config, **kwargs):
            yield chunk

    def stream(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[Any]:
        """Check a command input, then stream as LangGraph does.

        A run that continues a paused turn runs under the context the turn started with
        (:func:`agent.turn.context_to_continue`).

        Raises:
            CommandError: If the input is a command the graph or thread cannot honour.
        """
        if self._continues(input, config):
            self._prepare(input, self.get_state(config or {}), kwargs)
        elif isinstance(input, Command):
            self._prepare(input, None, kwargs)
        yield from super().stream(input, config, **kwargs)


def checked(graph: CompiledStateGraph[Any, Any, Any, Any]) -> CommandCheckedGraph:
    """Return ``graph`` as a :class:`CommandCheckedGraph` with the same parts.

    Rebuilt from the graph's parts (:func:`agent.frameworks.langgraph.rebuild`), so the
    server's copies (with its checkpointer and store) keep the check.

    Args:
        graph: A compiled graph.

    Returns:
        The same graph, checking commands.
    """
    return rebuild(graph, CommandCheckedGraph)
