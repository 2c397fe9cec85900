"""``make dev``'s launcher: the real ``langgraph dev`` with reload on, quiet about its own files."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import httpx

from client.devserver import answers_200
from tests.support.dev_server import MAKE_DEV, ROOT, dev_server

PERSISTENCE_PERIOD_S = 10.0
"""The in-memory server rewrites ``.langgraph_api/`` about this often."""


def copy_of_the_project(target: Path) -> Path:
    """The files a server needs, so a test can change code without touching the checkout."""
    skip = shutil.ignore_patterns(
        ".git", ".venv", ".tools", ".prod", ".langgraph_api", "__pycache__", ".*_cache",
        ".hypothesis", "tests", "bench", "docs",
    )  # fmt: skip
    shutil.copytree(ROOT, target, ignore=skip)
    return target


def test_make_dev_reloads_on_code_and_never_logs_its_own_persistence_writes(
    tmp_path: Path,
) -> None:
    project = copy_of_the_project(tmp_path / "project")
    with dev_server(
        workdir=project, config=project / "langgraph.json", launcher=MAKE_DEV, reload=True
    ) as server:
        question = {"messages": [{"role": "user", "content": "checkpointer"}]}
        body = {
            "assistant_id": "legacy",
            "input": question,
            "context": {"force_outcome": "success"},
        }
        answer = httpx.post(f"{server.url}/runs/wait", json=body, timeout=60)
        assert answer.status_code == 200
        time.sleep(PERSISTENCE_PERIOD_S + 3)  # at least one rewrite of the server's own files
        assert (project / ".langgraph_api").is_dir(), "the server persisted under the project"
        assert "changes detected" not in server.log()

        code = project / "agent" / "tools" / "markdown.py"
        code.write_text(code.read_text("utf-8") + "\n# changed\n", "utf-8")
        deadline = time.monotonic() + 60
        while "Reloading" not in server.log() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert "detected changes in 'agent/tools/markdown.py'. Reloading" in server.log()
        while not answers_200(f"{server.url}/ok") and time.monotonic() < deadline:
            time.sleep(0.5)
        assert answers_200(f"{server.url}/ok"), server.tail()
