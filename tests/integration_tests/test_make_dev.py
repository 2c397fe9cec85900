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

from client.dev import dev_pid_file, dev_url_file
from client.devserver import answers_200, stop_process
from tests.support.dev_server import (
    MAKE_DEV,
    check_env_file,
    copy_of_the_project,
    dev_server,
)

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


def ask_the_readme_question(project: Path) -> subprocess.Popen[str]:
    """The README's first command, as printed: no --url, no LANGGRAPH_URL."""
    return subprocess.Popen(
        [sys.executable, "-m", "client", "How does a checkpointer work?"]
        + ["--force-outcome", "success"],
        cwd=project,
        env=plain_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def test_make_dev_says_where_it_serves_once_it_answers_and_a_client_run_while_it_starts_waits(
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
        asked: subprocess.Popen[str] | None = None
        try:
            deadline = time.monotonic() + 90
            while not dev_pid_file(project).exists() and time.monotonic() < deadline:
                assert launcher.poll() is None, log_path.read_text("utf-8")
                time.sleep(0.05)
            url = dev_url_file(project).read_text("utf-8").strip()
            assert dev_pid_file(project).read_text("utf-8") == f"{launcher.pid}\n"
            # A client run before the server answers: it waits for the server, not fails.
            started_before = not answers_200(f"{url}/ok")
            asked = ask_the_readme_question(project)

            served = None
            while served is None and time.monotonic() < deadline:
                assert launcher.poll() is None, log_path.read_text("utf-8")[-3000:]
                served = SERVING.search(log_path.read_text("utf-8"))
                time.sleep(0.05)
            assert served is not None, log_path.read_text("utf-8")[-3000:]
            assert answers_200(f"{url}/ok"), "said only once the server answers"
            assert served[1] == url and int(served[3]) == taken and int(served[2]) != taken
            assert dev_url_file(project).read_text("utf-8") == f"{url}\n"
            assert log_path.read_text("utf-8").count("serving both graphs at") == 1  # said once
            served_line = SERVING.search(log_path.read_text("utf-8"))
            assert served_line is not None
            [line] = [x for x in log_path.read_text("utf-8").splitlines() if served_line[0] in x]
            assert line == served_line[0]  # a line of its own

            out, err = asked.communicate(timeout=300)
            assert asked.returncode == 0, err
            assert out.startswith("stop decision: stop     rule=completed")
            # It says which server answered: the one make dev moved to, not 2024.
            waited = f"waiting for the server make dev is starting at {url}\n"
            said = f"server: {url} (make dev)\n"
            assert err in (said, waited + said)
            assert err == waited + said or not started_before, "it waited for the start"
            again = subprocess.run(
                [sys.executable, "-m", "client", "checkpointer", "--force-outcome", "success"],
                cwd=project,
                env=plain_env(),
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert again.returncode == 0 and again.stderr == said, again.stderr
        finally:
            if asked is not None and asked.poll() is None:
                asked.kill()
                asked.wait()
            stop_process(launcher)
    assert launcher.returncode is not None
    assert not dev_url_file(project).exists(), "the launcher removes its URL file on exit"
    assert not dev_pid_file(project).exists(), "and its pid file"


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
