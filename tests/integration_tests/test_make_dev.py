"""``make dev``'s launcher: the real ``langgraph dev`` with reload on, quiet about its own files."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from client.dev import dev_url_file
from client.devserver import answers_200, stop_process
from tests.support.dev_server import MAKE_DEV, check_env_file, copy_of_the_project, dev_server

SERVING = re.compile(
    r"serving both graphs at (http://127\.0\.0\.1:(\d+)) "
    r"\(port (\d+) is taken; Studio: https://smith\.langchain\.com/studio/\?baseUrl=\1\)"
)

PERSISTENCE_PERIOD_S = 10.0
"""The in-memory server rewrites ``.langgraph_api/`` about this often."""


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


@contextmanager
def held_port() -> Iterator[int]:
    """A loopback port this test holds (listening, never answering), as another program would."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def plain_env() -> dict[str, str]:
    """No server URL, no provider or tracing keys: what a newcomer's shell has."""
    drop = ("LANGGRAPH_", "LANGSMITH_", "LANGCHAIN_", "GROQ_", "AGENT_")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)} | {
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }


def test_make_dev_says_where_it_serves_when_its_port_is_taken_and_the_client_finds_it(
    tmp_path: Path,
) -> None:
    project = copy_of_the_project(tmp_path / "project")
    check_env_file(project / "langgraph.json")
    log_path = tmp_path / "make-dev.log"
    with held_port() as taken, log_path.open("wb") as log:
        # `make dev`'s command line, its preferred port one this test holds (not 2024: the
        # test must not depend on what holds 2024 on this machine).
        flags = ["--host", "127.0.0.1", "--no-browser", "--no-reload"]
        launcher = subprocess.Popen(
            [sys.executable, *MAKE_DEV, *flags, "--preferred-port", str(taken)],
            cwd=project,
            env=plain_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 90
            while not log_path.read_text("utf-8").endswith("\n") and time.monotonic() < deadline:
                assert launcher.poll() is None, log_path.read_text("utf-8")
                time.sleep(0.1)
            first = log_path.read_text("utf-8").splitlines()[0]
            served = SERVING.fullmatch(first)
            assert served is not None, first
            url, port = served[1], int(served[2])
            assert int(served[3]) == taken and port != taken
            assert dev_url_file(project).read_text("utf-8") == f"{url}\n"
            while not answers_200(f"{url}/ok") and time.monotonic() < deadline:
                assert launcher.poll() is None, log_path.read_text("utf-8")[-3000:]
                time.sleep(0.2)
            assert first not in log_path.read_text("utf-8").split("\n", 1)[1]  # said once

            # The README's first command, as printed: no --url, no LANGGRAPH_URL.
            asked = subprocess.run(
                [sys.executable, "-m", "client", "How does a checkpointer work?"]
                + ["--force-outcome", "success"],
                cwd=project,
                env=plain_env(),
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert asked.returncode == 0, asked.stderr
            assert asked.stdout.startswith("stop decision: stop     rule=completed")
            # It says which server answered: the one make dev moved to, not 2024.
            assert asked.stderr == f"server: {url} (make dev)\n"
        finally:
            stop_process(launcher)
    assert launcher.returncode is not None
    assert not dev_url_file(project).exists(), "the launcher removes its URL file on exit"


def test_make_dev_refuses_a_taken_port_that_was_asked_for_in_one_line(tmp_path: Path) -> None:
    with held_port() as taken:
        refused = subprocess.run(
            [sys.executable, *MAKE_DEV, "--host", "127.0.0.1", "--port", str(taken)],
            cwd=tmp_path,
            env=plain_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert refused.returncode == 1
    assert refused.stdout == ""
    [line] = refused.stderr.splitlines()
    assert f"port {taken} on 127.0.0.1 is taken" in line and "make dev PORT=<port>" in line
    assert not dev_url_file(tmp_path).exists()
