"""What the app relies on in ``langchain_core`` beyond its public API.

- ``LangChainTracer.run_map``: a dict from run id (``str``) to every open run of the
  tracer, the trace's root under the trace id. LangChain runs have no ``parent_run`` link, so
  it is the only way to reach the root run from inside a node and update its metadata
  before it ends (:func:`agent.tracing.metadata.root_run`).

``tests/unit_tests/test_frameworks.py`` fails if the attribute goes, stops being a dict, or
stops holding the root run under the trace id while a traced run is open.
"""

from __future__ import annotations

from collections.abc import Iterable

from langchain_core.tracers.langchain import LangChainTracer
from langsmith.run_trees import RunTree

OPEN_RUNS_ATTRIBUTE = "run_map"
"""The ``LangChainTracer`` attribute that maps run ids to open runs."""


def open_run(handlers: Iterable[object], run_id: str) -> RunTree | None:
    """Return the open run ``run_id`` from the first ``LangChainTracer`` that holds it.

    Args:
        handlers: A config's callback handlers.
        run_id: The run's id, as a string.

    Returns:
        The run, or None when no tracer among ``handlers`` holds it.
    """
    for handler in handlers:
        if isinstance(handler, LangChainTracer):
            run = handler.run_map.get(run_id)
            if run is not None:
                return run
    return None
