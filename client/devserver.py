"""Run the project's own ``langgraph.json`` under the real ``langgraph dev``, on loopback.

The server's working directory is a folder outside the project, so its log and its
``.langgraph_api/`` persistence never touch the project (no reload loops) and two servers
never share state. Handing the same folder to a second start serves the same threads.
``make e2e`` and the tests start their servers through :func:`serve`.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "langgraph.json"
START_TIMEOUT = 90.0
LANGGRAPH_DEV: tuple[str, ...] = ("-m", "langgraph_cli", "dev")
"""The dev server's own CLI."""
MAKE_DEV: tuple[str, ...] = ("-m", "client.dev")
"""``make dev``'s launcher: the same CLI, its file watcher quiet (:mod:`client.dev`)."""


def _socket(host: str) -> socket.socket:
    return socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that is free on ``host`` right now."""
    with _socket(host) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could bind ``port`` on ``host`` right now.

    Binds with ``SO_REUSEADDR``, as uvicorn does, so a port left in ``TIME_WAIT`` by a
    stopped server counts as free.

    Args:
        host: The address the server will bind.
        port: The TCP port.

    Returns:
        False if something holds the port there.

    Raises:
        OSError: If binding fails for another reason (an address this machine lacks).
    """
    with _socket(host) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            raise
    return True


def pick_port(
    host: str, asked: int | None, preferred: int, how_to_choose: str
) -> tuple[int, int | None] | None:
    """The port a server started by a ``make`` target binds, and the one it moved from.

    Args:
        host: The address the server will bind.
        asked: The port the person asked for, or None for ``preferred`` or else a free one.
        preferred: The port used when none was asked for and it is free.
        how_to_choose: The command that chooses another port, for the taken-port error.

    Returns:
        ``(port, moved_from)``, ``moved_from`` being ``preferred`` when it was taken; None
        (after one error line on stderr) when the port asked for is taken.
    """
    if asked is not None:
        if port_is_free(host, asked):
            return asked, None
        print(
            f"error: port {asked} on {host} is taken; stop what holds it, or choose "
            f"another with {how_to_choose}",
            file=sys.stderr,
        )
        return None
    if port_is_free(host, preferred):
        return preferred, None
    return free_port(host), preferred


class DevServerError(RuntimeError):
    """The dev server died or never answered ``/ok``; the message holds its log tail."""


@dataclass
class DevServer:
    """A running ``langgraph dev``."""

    url: str
    port: int
    workdir: Path
    log_path: Path
    process: subprocess.Popen[bytes]

    def log(self) -> str:
        """Return the server's whole log so far."""
        return self.log_path.read_text("utf-8", errors="replace")

    def tail(self, lines: int = 60) -> str:
        """Return the last lines of the log."""
        return "\n".join(self.log().splitlines()[-lines:])


def answers_200(url: str) -> bool:
    """Whether a GET of ``url`` (a loopback health route) answers 200 within 2 seconds."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def stop_process(
    process: subprocess.Popen[bytes], sig: int = signal.SIGTERM, grace: float = 15.0
) -> None:
    """Stop a process started in its own session, and its children, with ``sig``.

    Waits ``grace`` seconds, then sends SIGKILL to the group. A process that already
    ended, or whose group is gone, is left alone.
    """
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, sig)
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)
    except ProcessLookupError:
        pass


@contextmanager
def serve(
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
    workdir: Path | None = None,
    config: Path = CONFIG,
    keep_workdir: bool = False,
    launcher: Sequence[str] = LANGGRAPH_DEV,
    reload: bool = False,
) -> Iterator[DevServer]:
    """Run ``python -m langgraph_cli dev`` on a free loopback port until the block ends.

    Args:
        env: The server's whole environment; this process's when None.
        args: Extra CLI flags, for example ``["--n-jobs-per-worker", "8"]``.
        workdir: Working directory (log and persistence); a new temporary one by default,
            removed at the end unless ``keep_workdir``.
        config: The ``langgraph.json`` to serve; the project's own by default.
        keep_workdir: Keep a temporary working directory after the server stops.
        launcher: What ``python`` runs, before the flags: ``langgraph dev`` by default,
            or :data:`MAKE_DEV` (``make dev``'s launcher).
        reload: Reload on code changes under the working directory (off: tests change no
            code, and the persistence writes would only make noise).

    Yields:
        The running server.

    Raises:
        DevServerError: If the process dies or ``/ok`` does not answer in time.
    """
    own_dir = workdir is None
    folder = Path(tempfile.mkdtemp(prefix="soa-dev-")) if workdir is None else workdir
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = folder / f"server-{port}.log"
    command = [
        sys.executable, *launcher,
        "--config", str(config),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--no-browser",
        *([] if reload else ["--no-reload"]),
        *args,
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=folder,
            env=dict(env) if env is not None else None,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    server = DevServer(url=url, port=port, workdir=folder, log_path=log_path, process=process)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not answers_200(f"{url}/ok"):
            if process.poll() is not None:
                msg = f"langgraph dev exited with {process.returncode}:\n{server.tail()}"
                raise DevServerError(msg)
            if time.monotonic() > deadline:
                msg = f"langgraph dev did not answer {url}/ok in {START_TIMEOUT}s:\n{server.tail()}"
                raise DevServerError(msg)
            time.sleep(0.2)
        yield server
    finally:
        stop_process(process)
        if own_dir and not keep_workdir:
            shutil.rmtree(folder, ignore_errors=True)
