"""Export the stock runs' trajectories as JSONL, for ``python -m stop_on_artifact.whatif``.

Each task runs once under :data:`bench.agentdojo.configs.STOCK` with the replay and no faults
(the runs the benchmark's ``stock`` rows measure); one line per task,
``{"id": "<suite>/<task>", "suite": ..., "messages": [...]}``, the messages as LangChain's
message dicts with each reply's ``usage_metadata``. :func:`team` is the bench's ``team``
mapping as the what-if takes it: a write tool's success is ``completed``, every other result
plain (what ``adopt(tool)`` gives the team's tools; their names decide, in every suite).

Usage::

    python -m bench.agentdojo.export stock.jsonl [--suites workspace,banking] [--limit N]
    python -m stop_on_artifact.whatif stock.jsonl --mapping bench.agentdojo.export:team \\
        --max-model-calls 50 --max-retries 10

The middleware's bounds of :mod:`bench.agentdojo.configs` (``MAX_MODEL_CALLS``,
``MAX_RETRIES``) make the what-if's decisions the ``stop/team`` configuration's.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage
from stop_on_artifact import MARK_ARGUMENT, completed

from bench.agentdojo.mappings import is_write

FIELDS = ("type", "content", "tool_calls", "tool_call_id", "name", "status", "usage_metadata")
"""The fields of a message the export keeps."""


def team(message: ToolMessage) -> dict[str, Any] | None:
    """Return the artifact the ``team`` tools give ``message``: a write's success stops."""
    return completed() if message.status != "error" and is_write(str(message.name)) else None


def message_dict(message: BaseMessage) -> dict[str, Any]:
    """Return ``message`` as a LangChain message dict with only :data:`FIELDS` that are set."""
    dumped = message.model_dump(mode="json")
    return {key: dumped[key] for key in FIELDS if dumped.get(key) not in (None, [], "")} | {
        "content": dumped.get("content", "")
    }


def trajectories(
    suites: Sequence[str] | None = None, limit: int | None = None
) -> list[dict[str, Any]]:
    """Run the stock configuration on each task and return one JSON-ready line per task."""
    from bench.agentdojo.configs import STOCK  # importing agentdojo changes yaml.dump
    from bench.agentdojo.pipeline import AgentPipeline
    from bench.agentdojo.suites import SUITES, environment, suite, tasks, user_task
    from bench.agentdojo.tools import Faults

    lines = []
    for task in list(tasks(tuple(suites or SUITES)))[:limit]:
        pipeline = AgentPipeline(STOCK, task, Faults(), mark_argument=MARK_ARGUMENT)
        suite(task.suite).run_task_with_pipeline(
            pipeline, user_task(task), None, {}, environment=environment(task.suite)
        )
        if pipeline.run is None:
            msg = f"{task.key}: the pipeline did not run"
            raise RuntimeError(msg)
        messages = [message_dict(m) for m in pipeline.run.messages]
        lines.append({"id": task.key, "suite": task.suite, "messages": messages})
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Write the stock trajectories to the given path."""
    parser = argparse.ArgumentParser(prog="python -m bench.agentdojo.export")
    parser.add_argument("path")
    parser.add_argument("--suites", help="comma-separated suites (default: all four)")
    parser.add_argument("--limit", type=int, help="the first N tasks only")
    args = parser.parse_args(argv)
    suites = args.suites.split(",") if args.suites else None
    with open(args.path, "w", encoding="utf-8") as out:
        for line in trajectories(suites, args.limit):
            out.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
