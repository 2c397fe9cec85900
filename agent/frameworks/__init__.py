"""The fences: every use of a framework's private name, one small module per framework.

The app relies on a few things its frameworks do not document as public. Each lives in one
module here, whose docstring lists what it relies on and why, and each has a unit test
(``tests/unit_tests/test_frameworks.py``) that fails the day the framework changes it:

- :mod:`agent.frameworks.langsmith`: ``langsmith.Client._hide_run_error``.
- :mod:`agent.frameworks.langchain_core`: ``LangChainTracer.run_map``.
- :mod:`agent.frameworks.langgraph`: rebuilding a ``CompiledStateGraph`` from its ``__dict__``.
- :mod:`agent.frameworks.langgraph_api`: the access log's ``scope["error_detail"]``.
- :mod:`agent.frameworks.langgraph_runtime_inmem`: the dev runtime's ``Runs.next`` pause.
- :mod:`agent.frameworks.aegra`: ``aegra_api``'s database, migrations and graph service, and
  its run-completion wait.

``tests/unit_tests/test_fences.py`` walks ``agent/`` and ``bench/`` and fails if a private
name of these frameworks is used anywhere else.
"""
