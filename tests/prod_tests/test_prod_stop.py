"""A stop leaves nothing behind: ``make prod`` and ``make dev`` stopped as a supervisor does.

A supervisor (``docker stop``) sends SIGTERM to the launcher's process group and SIGKILL 10 s
later. Each test starts the real launcher (``python -m client.prodserver`` or
``python -m client.dev``) in a session of its own, holds a streaming run open on a
graph whose tool sleeps for minutes, stops the group, and checks that every process the
launcher started (found by walking ``/proc`` from its pid before the stop) is gone and the
port is free; then a second start on the same state folder serves ``/health``.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from client.cli import user_input
from client.devserver import answers_200, free_port, port_is_free
from client.lifeline import STATE_ENV, alive, leftovers
from client.prodserver import ProdServerError, clear_leftovers
from tests.support.dev_server import _SCRUBBED, ROOT
from tests.support.prod_server import state_folder, write_config

SUPERVISOR_GRACE = 10.0
"""``docker stop``'s wait between SIGTERM and SIGKILL."""
GONE_WITHIN = 10.0
"""Seconds the launcher's children may take to go after the launcher died."""

SLEEPY_GRAPH = '''
"""A legacy graph whose tool sleeps for minutes: a stream on it stays open."""

import asyncio

from langchain_core.tools import tool

from agent.graphs.legacy import build_legacy
from agent.tools import TOOLS


@tool
async def slow(query: str) -> str:
    """Take minutes, then answer."""
    await asyncio.sleep(600)
    return f"slow result for {query}"


graph = build_legacy([*TOOLS, slow])
'''


def descendants(root: int) -> set[int]:
    """Every live process below ``root``, read from ``/proc``."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return {pid for pid in found if alive(pid)}


def until(predicate: object, timeout: float) -> float | None:
    """Seconds until ``predicate()`` holds, or None when it did not within ``timeout``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if predicate():  # type: ignore[operator]
            return time.monotonic() - start
        time.sleep(0.1)
    return None


def scrubbed_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    env.update({"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    return env


def launch(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, *command],
            cwd=log.parent,
            env=scrubbed_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def wait_ready(process: subprocess.Popen[bytes], url: str, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not answers_200(url):
        tail = log.read_text("utf-8", errors="replace")[-3000:]
        assert process.poll() is None, f"the launcher exited:\n{tail}"
        assert time.monotonic() < deadline, f"{url} did not answer in {timeout}s:\n{tail}"
        time.sleep(0.3)


class OpenStream:
    """A streaming run held open by a client that never reads to the end."""

    def __init__(self, port: int, assistant: str) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        body = {"assistant_id": assistant, "input": user_input("slow: nap")}
        body["stream_mode"] = ["updates"]
        self.connection.request(
            "POST", "/runs/stream", json.dumps(body), {"Content-Type": "application/json"}
        )
        self.response = self.connection.getresponse()
        assert self.response.status == 200, self.response.read()[:500]
        self.first = self.response.read1(256)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        try:
            while self.response.read1(4096):
                pass
        except (OSError, http.client.HTTPException):
            pass  # the server went away: what the test expects

    def close(self) -> None:
        self.connection.close()


def supervisor_stop(process: subprocess.Popen[bytes]) -> float | None:
    """SIGTERM to the group, SIGKILL after 10 s; the seconds the launcher took, None if killed."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        started = time.monotonic()
        process.wait(timeout=SUPERVISOR_GRACE)
        return time.monotonic() - started
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)
        return None


@pytest.fixture(scope="module")
def sleepy_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("stop-config")
    (folder / "sleepy_graph.py").write_text(SLEEPY_GRAPH, "utf-8")
    return write_config(folder, {"sleepy": f"{folder / 'sleepy_graph.py'}:graph"})


@contextmanager
def prod_launcher(state: Path, port: int, config: Path) -> Iterator[subprocess.Popen[bytes]]:
    command = ["-m", "client.prodserver", "--port", str(port), "--state", str(state)]
    command += ["--url-file", str(state / "prod-url")]  # not the clone's own file
    log = state / "launcher.log"
    process = launch([*command, "--config", str(config)], log)
    try:
        wait_ready(process, f"http://127.0.0.1:{port}/health", log, 180)
        until(lambda: b"Ctrl-C stops" in log.read_bytes(), 60)  # every worker is up
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def assert_all_gone(state: Path, children: set[int], port: int) -> float:
    gone = until(lambda: not any(alive(pid) for pid in children), GONE_WITHIN)
    left = sorted(pid for pid in children if alive(pid))
    assert gone is not None, f"still running {GONE_WITHIN}s after the launcher: {left}"
    assert leftovers(state, state / "postgres", state / "redis") == []
    assert until(lambda: port_is_free("127.0.0.1", port), 3) is not None, (
        f"port {port} is still held"
    )
    return gone


def assert_restarts(state: Path, port: int, config: Path) -> None:
    with prod_launcher(state, port, config) as again:
        assert answers_200(f"http://127.0.0.1:{port}/health")
        children = descendants(again.pid)
        assert supervisor_stop(again) is not None
    assert_all_gone(state, children, port)


def test_prod_sigterm_with_a_stream_open_stops_everything_in_bounded_time(
    sleepy_config: Path,
) -> None:
    with state_folder() as state:
        port = free_port()
        with prod_launcher(state, port, sleepy_config) as launcher:
            children = descendants(launcher.pid)
            assert len(children) >= 5, "postgres, redis, the supervisor and 2 workers"
            written = (state / "prod-url").read_text("utf-8").strip()
            assert written == f"http://127.0.0.1:{port}"  # where the client looks for it
            stream = OpenStream(port, "sleepy")
            time.sleep(1.0)  # the run is inside the sleeping tool
            took = supervisor_stop(launcher)
            stream.close()
        assert took is not None, (state / "launcher.log").read_text("utf-8", errors="replace")[
            -3000:
        ]
        assert took < SUPERVISOR_GRACE
        gone = assert_all_gone(state, children, port)
        print(f"\nlauncher stopped in {took:.1f}s; children gone {gone:.1f}s after")
        assert b"stopped." in (state / "launcher.log").read_bytes()
        assert not (state / "prod-url").exists()  # a stopped server is not found
        assert_restarts(state, port, sleepy_config)


def test_prod_sigkill_of_the_launcher_alone_takes_its_children_down(
    sleepy_config: Path,
) -> None:
    with state_folder() as state:
        port = free_port()
        with prod_launcher(state, port, sleepy_config) as launcher:
            children = descendants(launcher.pid)
            stream = OpenStream(port, "sleepy")
            time.sleep(1.0)
            os.kill(launcher.pid, signal.SIGKILL)  # the launcher only, not its group
            launcher.wait(timeout=5)
            gone = assert_all_gone(state, children, port)
            stream.close()
        print(f"\nchildren gone {gone:.1f}s after the launcher's SIGKILL")
        assert_restarts(state, port, sleepy_config)


@contextmanager
def holder(port: int, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """A process listening on ``port`` with environment ``env``."""
    code = (
        "import socket, time\n"
        "s = socket.socket()\n"
        f"s.bind(('127.0.0.1', {port}))\n"
        "s.listen()\n"
        "print('listening', flush=True)\n"
        "time.sleep(600)\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == b"listening\n"
        yield process
    finally:
        process.kill()
        process.wait()


def test_a_leftover_of_the_same_state_folder_is_stopped() -> None:
    with state_folder() as state:
        port = free_port()
        env = {**os.environ, STATE_ENV: str(state.resolve())}
        with holder(port, env) as leftover:
            assert leftovers(state) == [leftover.pid]
            assert clear_leftovers(state, None, {"API": port}) == [leftover.pid]
            assert leftover.wait(timeout=5) == -signal.SIGTERM
        assert port_is_free("127.0.0.1", port)


def test_a_foreign_port_holder_is_named_in_one_line_and_left_alone() -> None:
    with state_folder() as state, state_folder() as other:
        port = free_port()
        env = {**os.environ, STATE_ENV: str(other.resolve())}  # another state folder's
        with holder(port, env) as foreign:
            assert leftovers(state) == []
            with pytest.raises(ProdServerError) as raised:
                clear_leftovers(state, None, {"API": port})
            message = str(raised.value)
            assert "\n" not in message
            assert f"port {port}" in message and f"pid {foreign.pid}" in message
            assert f"kill {foreign.pid}" in message
            assert foreign.poll() is None, "an unrelated process must not be stopped"


def test_make_dev_sigterm_with_a_stream_open_stops_everything_in_bounded_time(
    tmp_path: Path,
) -> None:
    config = json.loads((ROOT / "langgraph.json").read_text("utf-8"))
    config["dependencies"] = [str((ROOT / dep).resolve()) for dep in config["dependencies"]]
    config.pop("env", None)
    (tmp_path / "sleepy_graph.py").write_text(SLEEPY_GRAPH, "utf-8")
    config["graphs"]["sleepy"] = f"{tmp_path / 'sleepy_graph.py'}:graph"
    (tmp_path / "langgraph.json").write_text(json.dumps(config), "utf-8")
    port = free_port()
    command = ["-m", "client.dev", "--config", str(tmp_path / "langgraph.json")]
    command += ["--host", "127.0.0.1", "--port", str(port), "--no-browser"]  # reload on
    log = tmp_path / "dev.log"
    launcher = launch(command, log)
    try:
        wait_ready(launcher, f"http://127.0.0.1:{port}/ok", log, 120)
        children = descendants(launcher.pid)
        stream = OpenStream(port, "sleepy")
        time.sleep(1.0)
        took = supervisor_stop(launcher)
        stream.close()
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
    tail = log.read_text("utf-8", errors="replace")[-2000:]
    assert took is not None, f"make dev needed the SIGKILL:\n{tail}"
    gone = until(lambda: not any(alive(pid) for pid in children), GONE_WITHIN)
    assert gone is not None, f"left running: {sorted(p for p in children if alive(p))}"
    assert until(lambda: port_is_free("127.0.0.1", port), 3) is not None
    print(f"\nmake dev stopped in {took:.1f}s")
