"""Graphs served only by the benchmark, beside the project's: stock ``create_agent``.

Not in ``langgraph.json``: :func:`bench.server.bench_config` writes a temporary config
that serves the project's graphs and these.
"""

from __future__ import annotations

from bench.configs import build_create_agent

graph = build_create_agent()
