"""What the app relies on in ``langgraph`` beyond its public API.

- A ``CompiledStateGraph``'s instance ``__dict__`` holds exactly its constructor's keyword
  arguments (plus ``__orig_class__`` when it was built from a subscripted class), which is
  how langgraph's own ``Pregel.copy`` rebuilds a graph. :func:`rebuild` does the same to
  turn a compiled graph into an instance of a subclass with the same parts, so the server's
  copies (with its checkpointer and store) keep the subclass.

``tests/unit_tests/test_frameworks.py`` fails if the ``__dict__`` stops matching the
constructor, or a rebuilt graph or its server copy loses a part or the subclass.
"""

from __future__ import annotations

from typing import Any, TypeVar

from langgraph.graph.state import CompiledStateGraph

GraphT = TypeVar("GraphT", bound=CompiledStateGraph[Any, Any, Any, Any])

NOT_CONSTRUCTOR_ARGUMENTS = frozenset({"__orig_class__"})
"""Keys of a compiled graph's ``__dict__`` that its constructor does not take."""


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
