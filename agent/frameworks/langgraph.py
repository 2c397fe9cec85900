"""What the app relies on in ``langgraph`` beyond its public API.

- A ``CompiledStateGraph``'s instance ``__dict__`` holds exactly its constructor's keyword
  arguments (plus ``__orig_class__`` when it was built from a subscripted class), which is
  how langgraph's own ``Pregel.copy`` rebuilds a graph. :func:`rebuild` does the same to
  turn a compiled graph into an instance of a subclass with the same parts, so the server's
  copies (with its checkpointer and store) keep the subclass.

Known loss, shared with ``Pregel.copy``: ``compile`` sets ``_output_mapper`` and
``_state_mapper`` after construction, and the constructor drops them (they fall back to None);
they matter only for pydantic or dataclass state schemas streamed with ``version="v2"``, which
the app's graphs do not use (:data:`DROPPED_BY_REBUILD`).

``tests/unit_tests/test_frameworks.py`` fails if the ``__dict__`` stops rebuilding the same
graph (beyond :data:`DROPPED_BY_REBUILD`), or a rebuilt graph or its server copy loses a part
or the subclass.
"""

from __future__ import annotations

from typing import Any, TypeVar

from langgraph.graph.state import CompiledStateGraph

GraphT = TypeVar("GraphT", bound=CompiledStateGraph[Any, Any, Any, Any])

NOT_CONSTRUCTOR_ARGUMENTS = frozenset({"__orig_class__"})
"""Keys of a compiled graph's ``__dict__`` that its constructor does not take."""

DROPPED_BY_REBUILD = frozenset({"_output_mapper", "_state_mapper"})
"""Keys ``compile`` sets after construction that a rebuild (like ``Pregel.copy``) drops."""


def rebuild(graph: CompiledStateGraph[Any, Any, Any, Any], cls: type[GraphT]) -> GraphT:
    """Return ``graph`` rebuilt as a ``cls`` with the same parts.

    Args:
        graph: A compiled graph.
        cls: A subclass of ``CompiledStateGraph``.

    Returns:
        A new ``cls`` built from ``graph``'s attributes.
    """
    attrs = {k: v for k, v in graph.__dict__.items() if k not in NOT_CONSTRUCTOR_ARGUMENTS}
    return cls(**attrs)
