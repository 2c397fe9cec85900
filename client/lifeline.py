"""Tie a launcher's children to it, and find what an earlier launcher left running.

A child started with :func:`dies_with_parent` as its ``preexec_fn`` asks Linux
(``prctl(PR_SET_PDEATHSIG)``) for a signal when the thread that started it dies: a launcher
killed with SIGKILL still takes its children down. The signal survives ``exec`` and is set
after ``Popen``'s ``user=``/``group=`` switch (a change of credentials clears it). It follows
one generation only: a child that forks (uvicorn's supervisor) sets it again in its own
children (:mod:`client.aegra_app`). Elsewhere than Linux it does nothing.

Every process a launcher starts for a state folder carries :data:`STATE_ENV` (the folder's
path) in its environment, which nothing else has: :func:`leftovers` finds them by it (and a
PostgreSQL by its ``postmaster.pid``), and :func:`port_holder` names what holds a port.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

STATE_ENV = "AGENT_PROD_STATE"
"""Set in the environment of every process started for a state folder: its resolved path."""
PR_SET_PDEATHSIG = 1
PROC = Path("/proc")

_prctl: Callable[..., int] | None = None
if sys.platform.startswith("linux"):
    with contextlib.suppress(OSError, AttributeError):
        # Loaded here, not in the child: between fork and exec only the call may run.
        _prctl = ctypes.CDLL(None, use_errno=True).prctl


def set_parent_death_signal(sig: int) -> None:
    """Ask for ``sig`` when this process's parent (the thread that forked it) dies.

    When the parent is already gone, sends ``sig`` to this process at once.

    Args:
        sig: The signal to receive, e.g. ``signal.SIGKILL``.
    """
    if _prctl is None:
        return
    parent = os.getppid()
    _prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if os.getppid() != parent or parent == 1:
        os.kill(os.getpid(), sig)  # the parent died before the request was in place


def dies_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """Return a ``preexec_fn`` that makes the child receive ``sig`` when this thread dies.

    Args:
        sig: The child's signal: SIGKILL, or the signal of its own clean fast stop.

    Returns:
        A callable for :class:`subprocess.Popen`'s ``preexec_fn``.
    """
    launcher = os.getpid()

    def preexec() -> None:
        if _prctl is None:
            return
        _prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != launcher:
            os.kill(os.getpid(), sig)

    return preexec


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def cmdline(pid: int) -> str:
    """Return a process's command line, its arguments joined by spaces ("" if unreadable)."""
    return _read(PROC / str(pid) / "cmdline").replace(b"\0", b" ").decode(errors="replace").strip()


def _pids() -> Iterable[int]:
    with contextlib.suppress(OSError):
        for entry in PROC.iterdir():
            if entry.name.isdigit():
                yield int(entry.name)


def _postmaster(data: Path) -> int | None:
    """The pid in ``data/postmaster.pid`` when that process is a postgres serving ``data``."""
    try:
        lines = (data / "postmaster.pid").read_text("utf-8", errors="replace").splitlines()
        pid = int(lines[0])
    except (OSError, ValueError, IndexError):
        return None
    words = cmdline(pid).split()
    if words and Path(words[0]).name == "postgres" and str(data) in words:
        return pid
    return None


def _redis(data: Path) -> int | None:
    """The pid in ``data/redis.pid`` when that process is a redis-server working in ``data``."""
    try:
        pid = int((data / "redis.pid").read_text("utf-8").split()[0])
        if os.readlink(PROC / str(pid) / "cwd") != str(data):
            return None
    except (OSError, ValueError, IndexError):
        return None
    words = cmdline(pid).split()
    return pid if words and Path(words[0]).name == "redis-server" else None


def leftovers(
    state: Path, postgres_data: Path | None = None, redis_data: Path | None = None
) -> list[int]:
    """Return the pids of processes still running for ``state``, never this process's.

    A process counts when its environment holds ``STATE_ENV=<state>`` (every process a
    launcher started for ``state``, and the uvicorn workers those started), or when it is
    the postgres named in ``<postgres_data>/postmaster.pid`` and its command line serves that
    folder, or the redis-server named in ``<redis_data>/redis.pid`` working in that folder
    (both rewrite their process title over their environment).

    Args:
        state: The state folder.
        postgres_data: The cluster's folder, when there is one.
        redis_data: Redis's folder, when there is one.

    Returns:
        The pids, sorted.
    """
    mark = f"{STATE_ENV}={state.resolve()}".encode()
    own = {os.getpid(), os.getppid()}
    found = {
        pid
        for pid in _pids()
        if pid not in own and mark in _read(PROC / str(pid) / "environ").split(b"\0")
    }
    if postgres_data is not None and (pid := _postmaster(postgres_data.resolve())) is not None:
        found.add(pid)
    if redis_data is not None and (pid := _redis(redis_data.resolve())) is not None:
        found.add(pid)
    return sorted(found)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    status = _read(PROC / str(pid) / "stat")
    if not status:
        return False
    return status.rsplit(b")", 1)[-1].split()[0] != b"Z"


def stop_pids(pids: Iterable[int], signals: Mapping[int, int], grace: float = 5.0) -> list[int]:
    """Send each pid its signal (SIGTERM by default), then SIGKILL what runs after ``grace`` s.

    Args:
        pids: The processes.
        signals: A signal per pid, for those that stop cleanly on another (postgres: SIGINT).
        grace: Seconds to wait before SIGKILL.

    Returns:
        The pids still running after the SIGKILL (an empty list when all are gone).
    """
    pending = list(pids)
    for pid in pending:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signals.get(pid, signal.SIGTERM))
    deadline = time.monotonic() + grace
    while (pending := [pid for pid in pending if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pending:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 2.0
    while (pending := [pid for pid in pending if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return pending


def _listening_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("tcp", "tcp6"):
        for line in _read(PROC / "net" / table).decode(errors="replace").splitlines()[1:]:
            fields = line.split()
            listening = len(fields) > 9 and fields[3] == "0A"
            if listening and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def port_holder(port: int) -> int | None:
    """Return the pid of a process listening on TCP ``port``, when this process may see it."""
    sockets = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    if not sockets:
        return None
    for pid in _pids():
        with contextlib.suppress(OSError):
            for fd in (PROC / str(pid) / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in sockets:
                        return pid
    return None
