"""Run the production server: Aegra on PostgreSQL and Redis, every process on 127.0.0.1.

::

    python -m client.prodserver                 # what `make prod` runs
    python -m client.prodserver --port 8123 --postgres-port 55432

Aegra (``aegra-api``) serves the graphs of ``aegra.json`` over the same Agent Protocol API
as ``langgraph dev``, with threads, checkpoints, runs and store items in PostgreSQL and the
run queue and stream fan-out in Redis. It lives in its own Python 3.12 environment
(``.prod/venv``, from ``aegra/requirements.txt``; ``make prod`` builds it), so nothing here
imports it.

:func:`serve` starts, in order, a private PostgreSQL cluster (created on first use in
``<state>/postgres``), ``redis-server`` (append-only file in ``<state>/redis``) and
``uvicorn aegra_api.main:app --workers N`` (as :mod:`client.aegra_app`), waits for
``/health`` and stops all three when the block ends. Both stores listen on 127.0.0.1 only and
need the password kept in ``<state>/secret`` (created on first use, mode 600). The same state
folder serves the same threads after a restart.

Nothing outlives the launcher, and a stop is bounded. Each child runs in a session of its own
(a Ctrl-C in the terminal reaches the launcher only, which stops them in order: the workers,
then Redis, then PostgreSQL) and asks Linux for a signal when the launcher dies
(:func:`client.lifeline.dies_with_parent`, ``PR_SET_PDEATHSIG``): PostgreSQL, run as
``postgres`` in the foreground (no ``pg_ctl``, which would daemonize out of reach), gets
SIGINT, its fast shutdown; Redis SIGTERM; uvicorn's supervisor SIGKILL, and its workers ask for
SIGKILL when it dies. A SIGKILL of the launcher thus takes everything down without its help.
On SIGTERM or SIGINT the workers get :data:`SERVER_STOP` seconds (uvicorn cancels requests,
open streams included, after half of it), Redis and PostgreSQL :data:`STORE_STOP` each, then
SIGKILL: under the 10 s a supervisor waits. A start first stops what an earlier run of the same
state folder left (:func:`clear_leftovers`; proven by :data:`client.lifeline.STATE_ENV`
in their environment or their pid files, never by name), and names in one line what else
holds a port it needs.

Run as root, PostgreSQL runs as the ``postgres`` account, which must enter its data folder.
When it cannot reach ``<state>/postgres`` (a clone under ``/root``, or in a ``mktemp -d``
folder: mode 0700), the cluster lives in :func:`fallback_data_dir` instead, a folder in that
account's home (``/var/lib/postgresql``; ``/var/tmp`` when it has none) named after the state
folder (so the same checkout finds the same data again), owned by ``postgres`` and mode
0700; :func:`main` says where. ``make prod PROD_STATE=DIR``
(``--state DIR``) chooses another state folder.
"""

from __future__ import annotations

import argparse
import contextlib
import grp
import hashlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.frameworks.aegra import SETUP_SCRIPT
from client.dev import prod_url_file
from client.devserver import answers_200, free_port, port_is_free
from client.lifeline import (
    STATE_ENV,
    cmdline,
    dies_with_parent,
    leftovers,
    port_holder,
    stop_pids,
)

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "aegra.json"
PAYMENTS_ENV = "AGENT_PAYMENTS_DB"
"""``agent.tools.payments.DB_ENV`` (not imported: it loads every tool, seconds of a start)."""
PAYMENTS_FILE = "payments.sqlite3"
"""The payment stand-in's record, in the state folder unless the environment names one."""
"""Aegra's config: the graph ids, graphs and auth of ``langgraph.json``, as file paths."""
STATE = ROOT / ".prod"
"""Default state folder: the environment, the database, Redis's data and the logs."""
STATE_VARIABLE = "PROD_STATE"
"""The ``make prod`` variable that chooses the state folder (``--state`` here)."""
FALLBACK_ROOT = Path("/var/tmp")
"""Where the cluster goes when the ``postgres`` account cannot reach the state folder and
has no home folder of its own (Debian's is ``/var/lib/postgresql``, the system's state)."""
PG_ACCOUNT = "postgres"
PYTHON = STATE / "venv" / "bin" / "python"
PG_BIN_DIRS = (Path("/usr/lib/postgresql/15/bin"), Path("/usr/local/bin"))
DATABASE = "aegra"
DB_USER = "aegra"
START_TIMEOUT = 120.0
WORKER_GRACE = 20.0
SERVER_STOP = 4.0
"""Seconds the workers get to stop (uvicorn's graceful timeout is half) before SIGKILL."""
STORE_STOP = 2.0
"""Seconds Redis, then PostgreSQL, get to stop cleanly before SIGKILL (PostgreSQL: SIGQUIT)."""

MIGRATE = SETUP_SCRIPT
"""Run once before the workers start (:data:`agent.frameworks.aegra.SETUP_SCRIPT`)."""


class ProdServerError(RuntimeError):
    """A process of the stack died or never became ready; the message names it."""


class Stopping(BaseException):  # noqa: N818 (like KeyboardInterrupt, not an error)
    """Raised in the main thread by the first SIGTERM or SIGINT: unwind and stop the stack."""


def _stop_on_signal(signum: int, frame: object) -> None:
    # Later signals are ignored: they must not break the (bounded) stop under way.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    raise Stopping


@dataclass
class ProdServer:
    """A running stack: the API's URL and what it runs on."""

    url: str
    port: int
    state: Path
    database_url: str
    redis_url: str
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    postgres_data: Path | None = None
    """The cluster's folder: ``<state>/postgres``, or :func:`fallback_data_dir`'s."""

    def log(self, name: str = "server") -> str:
        """Return the whole log of ``server``, ``postgres`` or ``redis``."""
        return (self.state / "logs" / f"{name}.log").read_text("utf-8", errors="replace")

    def worker_pids(self) -> list[int]:
        """Return the pids of the uvicorn worker processes (the children of its supervisor)."""
        pid = self.processes["server"].pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return sorted(
            int(child)
            for child in children
            if b"resource_tracker" not in Path(f"/proc/{child}/cmdline").read_bytes()
        )


def postgres_tool(name: str) -> str:
    """Return the path of a PostgreSQL program (initdb, postgres, psql, ...)."""
    for folder in PG_BIN_DIRS:
        if (folder / name).exists():
            return str(folder / name)
    found = shutil.which(name)
    if found is None:
        msg = f"{name} not found (looked in {', '.join(map(str, PG_BIN_DIRS))} and PATH)"
        raise ProdServerError(msg)
    return found


def _run_as() -> dict[str, Any]:
    """PostgreSQL refuses to run as root: run it as the ``postgres`` account then."""
    return {"user": "postgres", "group": "postgres"} if os.geteuid() == 0 else {}


def closed_to(account: str, folder: Path) -> Path | None:
    """Return the first folder on the way to ``folder`` that ``account`` cannot enter.

    Reads owner, group and mode bits (no ACLs): a folder is open to the account when it
    owns it and may enter, is in its group and the group may enter, or others may.

    Args:
        account: A local account name.
        folder: The folder the account must reach (it need not exist yet).

    Returns:
        The first closed folder, from the root down, or None when every one is open.
    """
    user = pwd.getpwnam(account)
    groups = {user.pw_gid, *(g.gr_gid for g in grp.getgrall() if account in g.gr_mem)}
    path = folder.resolve()
    for step in [*reversed(path.parents), path]:
        if not step.exists():
            return None
        info = step.stat()
        if info.st_uid == user.pw_uid:
            bit = stat.S_IXUSR
        elif info.st_gid in groups:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not info.st_mode & bit:
            return step
    return None


def _fallback_base(account: str = PG_ACCOUNT) -> Path:
    """The account's home when it is a folder the account owns, else :data:`FALLBACK_ROOT`."""
    try:
        user = pwd.getpwnam(account)
    except KeyError:
        return FALLBACK_ROOT
    home = Path(user.pw_dir)
    if home.is_dir() and home.stat().st_uid == user.pw_uid and closed_to(account, home) is None:
        return home
    return FALLBACK_ROOT


def fallback_data_dir(state: Path, base: Path | None = None) -> Path:
    """Return where the cluster of ``state`` lives when ``postgres`` cannot reach ``state``.

    Args:
        state: The state folder.
        base: The folder to put it in; the ``postgres`` account's home (``/var/lib/postgresql``)
            when None, or :data:`FALLBACK_ROOT` when it has none.

    Returns:
        ``<base>/stop-on-artifact-<12 hex digits of the state folder's path>/data``: the
        same folder for the same state folder, another for another.
    """
    digest = hashlib.sha256(str(state.resolve()).encode()).hexdigest()[:12]
    return (base or _fallback_base()) / f"stop-on-artifact-{digest}" / "data"


def _claim(folder: Path, owner: Mapping[str, Any]) -> None:
    """Create ``folder`` (mode 0700, owned by ``owner``) or check an existing one is that."""
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    uid = pwd.getpwnam(owner["user"]).pw_uid
    if not stat.S_ISDIR(info.st_mode) or info.st_uid not in (uid, 0):
        msg = (
            f"{folder} exists and is not a folder of the {owner['user']} account: remove it, "
            f"or choose a state folder it can reach with `make prod {STATE_VARIABLE}=DIR`"
        )
        raise ProdServerError(msg)
    os.chown(folder, uid, pwd.getpwnam(owner["user"]).pw_gid)
    folder.chmod(0o700)


def postgres_data_dir(state: Path) -> Path:
    """Return the cluster's folder for ``state``, creating the fallback when it is needed.

    Args:
        state: The state folder.

    Returns:
        ``<state>/postgres`` when this process is not root or the ``postgres`` account can
        reach it; else :func:`fallback_data_dir`, created for that account.

    Raises:
        ProdServerError: If neither can be used; the message names ``PROD_STATE``.
    """
    owner = _run_as()
    data = state / "postgres"
    if not owner or closed_to(owner["user"], data) is None:
        return data
    fallback = fallback_data_dir(state)
    closed = closed_to(owner["user"], fallback.parent.parent)
    if closed is not None:
        msg = (
            f"the {owner['user']} account cannot enter {closed}, on the way to the state folder "
            f"or to {fallback}: choose a state folder it can reach with "
            f"`make prod {STATE_VARIABLE}=DIR` (or --state DIR)"
        )
        raise ProdServerError(msg)
    _claim(fallback.parent, owner)
    return fallback


def _secret(state: Path) -> str:
    path = state / "secret"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(24), "utf-8")
        path.chmod(0o600)
    return path.read_text("utf-8").strip()


def _wait(what: str, ready: Any, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while not ready():
        if process.poll() is not None:
            tail = "\n".join(log.read_text("utf-8", errors="replace").splitlines()[-40:])
            msg = f"{what} exited with {process.returncode}:\n{tail}"
            raise ProdServerError(msg)
        if time.monotonic() > deadline:
            msg = f"{what} was not ready in {START_TIMEOUT}s; see {log}"
            raise ProdServerError(msg)
        time.sleep(0.2)


def _spawn(command: list[str], log: Path, death: int, **kwargs: Any) -> subprocess.Popen[bytes]:
    """Start ``command`` in a session of its own, sent ``death`` when this thread dies."""
    with log.open("ab") as out:
        return subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=dies_with_parent(death),
            **kwargs,
        )


def _stop(
    process: subprocess.Popen[bytes],
    sig: int = signal.SIGTERM,
    grace: float = STORE_STOP,
    then: int = signal.SIGKILL,
) -> None:
    """Send ``sig`` to the process's group; ``then`` after ``grace`` s; SIGKILL 1 s later."""
    for step, wait in ((sig, grace), (then, 1.0), (signal.SIGKILL, 2.0)):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, step)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        return


def _marked(state: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a child of ``state``: :data:`STATE_ENV` marks it as ours."""
    return {**(os.environ if env is None else env), STATE_ENV: str(state.resolve())}


@contextmanager
def postgres(state: Path, port: int, password: str, data: Path | None = None) -> Iterator[str]:
    """Run the private cluster in ``data`` (``<state>/postgres``) until the block ends.

    Yields:
        The database URL.
    """
    data = postgres_data_dir(state) if data is None else data
    log = state / "logs" / "postgres.log"
    owner = _run_as()
    if not (data / "PG_VERSION").exists():
        data.mkdir(mode=0o700, parents=True, exist_ok=True)
        pwfile = data.parent / f".{data.name}-pgpass.tmp"  # where the account can read it
        pwfile.write_text(password, "utf-8")
        if owner:
            shutil.chown(data, owner["user"], owner["group"])
            shutil.chown(pwfile, owner["user"], owner["group"])
        initdb = [postgres_tool("initdb"), "-D", str(data), "-U", DB_USER, "--pwfile", str(pwfile)]
        initdb += ["--auth", "scram-sha-256", "-E", "UTF8", "--no-instructions"]
        try:
            done = subprocess.run(initdb, check=False, capture_output=True, text=True, **owner)
        finally:
            pwfile.unlink()
        if done.returncode != 0:
            msg = f"initdb failed ({done.returncode}):\n{done.stdout}{done.stderr}"
            raise ProdServerError(msg)
    server = [postgres_tool("postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(port)]
    server += ["-c", "unix_socket_directories=", "-c", "max_connections=200"]
    # SIGINT is PostgreSQL's fast shutdown: a clean checkpoint, no recovery next time.
    process = _spawn(server, log, signal.SIGINT, env=_marked(state), **owner)
    env = {**os.environ, "PGPASSWORD": password}
    where = ["-h", "127.0.0.1", "-p", str(port), "-U", DB_USER]
    try:

        def ready() -> bool:
            probe = [postgres_tool("pg_isready"), *where, "-d", "postgres", "-q"]
            return subprocess.run(probe, env=env, check=False).returncode == 0

        _wait("postgres", ready, process, log)
        exists = subprocess.run(
            [postgres_tool("psql"), *where, "-d", "postgres", "-tAc",
             f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'"],
            env=env, check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        if exists != "1":
            subprocess.run([postgres_tool("createdb"), *where, DATABASE], env=env, check=True)
        yield f"postgresql://{DB_USER}:{password}@127.0.0.1:{port}/{DATABASE}"
    finally:
        _stop(process, signal.SIGINT, then=signal.SIGQUIT)  # fast, then immediate


def _redis_ping(port: int, password: str) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(f"AUTH {password}\r\nPING\r\n".encode())
            reply = b""
            while b"PONG" not in reply and b"-" not in reply:
                chunk = sock.recv(256)
                if not chunk:
                    break
                reply += chunk
            return b"+PONG" in reply
    except OSError:
        return False


@contextmanager
def redis(state: Path, port: int, password: str) -> Iterator[str]:
    """Run ``redis-server`` with its append-only file in ``<state>/redis`` until the block ends.

    Yields:
        The Redis URL.
    """
    data, log = state / "redis", state / "logs" / "redis.log"
    data.mkdir(parents=True, exist_ok=True)
    binary = shutil.which("redis-server")
    if binary is None:
        msg = "redis-server not found: install it (Debian: apt-get install -y redis-server)"
        raise ProdServerError(msg)
    # The config comes on stdin, so the password is not in the process list.
    config = (
        f'bind 127.0.0.1\nport {port}\ndir {data}\nappendonly yes\nsave ""\n'
        f"requirepass {password}\ndaemonize no\nprotected-mode yes\n"
        f"pidfile {data / 'redis.pid'}\n"
    )
    with log.open("ab") as out:
        process = subprocess.Popen(
            [binary, "-"], stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=dies_with_parent(signal.SIGTERM),
            env=_marked(state),
        )  # fmt: skip
    assert process.stdin is not None
    process.stdin.write(config.encode())
    process.stdin.close()
    try:
        _wait("redis-server", lambda: _redis_ping(port, password), process, log)
        yield f"redis://:{password}@127.0.0.1:{port}/0"
    finally:
        _stop(process)


def clear_leftovers(state: Path, data: Path | None, ports: Mapping[str, int | None]) -> list[int]:
    """Stop what an earlier run of ``state`` left running; check the ports are free.

    Only processes that :func:`client.lifeline.leftovers` proves are of ``state`` are
    stopped (PostgreSQL with SIGINT, the others with SIGTERM; SIGKILL after 5 s).

    Args:
        state: The state folder.
        data: The cluster's folder.
        ports: The ports this start will listen on, by what listens (None: a free one).

    Returns:
        The pids that were stopped.

    Raises:
        ProdServerError: If one of ``ports`` is held by another process; the message is one
            line naming the port, the process and how to free it.
    """
    found = leftovers(state, data, state / "redis")
    if found:
        postmaster = {pid: signal.SIGINT for pid in found if "postgres" in cmdline(pid)}
        print(
            f"Stopping {len(found)} processes an earlier run of {state} left running "
            f"(pids {', '.join(map(str, found))}).",
            flush=True,
        )
        still = stop_pids(found, postmaster)
        if still:
            msg = f"processes of an earlier run of {state} did not stop: pids {still}"
            raise ProdServerError(msg)
    for what, port in ports.items():
        if port is None:
            continue
        deadline = time.monotonic() + 2.0  # a socket the stopped processes held may linger
        while not port_is_free("127.0.0.1", port) and time.monotonic() < deadline:
            time.sleep(0.1)
        if port_is_free("127.0.0.1", port):
            continue
        holder = port_holder(port)
        command = " ".join(cmdline(holder).split())[:80] if holder else ""  # one line
        who = f"pid {holder} ({command})" if holder else "another process"
        free = f"`kill {holder}`" if holder else f"`ss -ltnp 'sport = :{port}'` names it"
        msg = (
            f"the {what} port {port} is held by {who}, not by a run of this state folder: "
            f"stop it ({free}) or choose another port"
        )
        raise ProdServerError(msg)
    return found


def _python_path(config: Path, inherited: str | None) -> str:
    """The config's dependencies first: Aegra imports ``http.app`` before it reads them."""
    folders = json.loads(config.read_text("utf-8")).get("dependencies") or []
    paths = [str((config.parent / folder).resolve()) for folder in folders]
    return os.pathsep.join([*paths, *([inherited] if inherited else [])])


@contextmanager
def serve(
    env: Mapping[str, str] | None = None,
    *,
    state: Path = STATE,
    port: int | None = None,
    postgres_port: int | None = None,
    redis_port: int | None = None,
    workers: int = 2,
    config: Path = CONFIG,
    progress: Callable[[str], None] | None = None,
) -> Iterator[ProdServer]:
    """Run PostgreSQL, Redis and Aegra with ``workers`` processes until the block ends.

    Args:
        env: The server's base environment; this process's when None. The database,
            Redis, config, host and port settings are added to it.
        state: Folder for the database, Redis's data, the secret and the logs.
        port: The API's port; a free one when None.
        postgres_port: PostgreSQL's port; a free one when None.
        redis_port: Redis's port; a free one when None.
        workers: uvicorn worker processes.
        config: The Aegra config to serve.
        progress: Told each step of the start as it begins (a line of text), when given.

    Yields:
        The running stack.

    Raises:
        ProdServerError: If the environment is missing or a process does not start.
    """
    if not PYTHON.exists():
        msg = f"{PYTHON} is missing: run `make prod-env` (or `make prod`) first"
        raise ProdServerError(msg)
    state.mkdir(parents=True, exist_ok=True)
    (state / "logs").mkdir(exist_ok=True)
    password = _secret(state)
    api_port = port or free_port()
    url = f"http://127.0.0.1:{api_port}"
    data = postgres_data_dir(state)
    clear_leftovers(state, data, {"API": port, "PostgreSQL": postgres_port, "Redis": redis_port})
    say = progress or (lambda step: None)
    with ExitStack() as stack:
        say("starting PostgreSQL")
        database_url = stack.enter_context(
            postgres(state, postgres_port or free_port(), password, data)
        )
        say("starting Redis")
        redis_url = stack.enter_context(redis(state, redis_port or free_port(), password))
        server_env = _marked(state, env)
        server_env.update(
            {
                "PYTHONPATH": _python_path(config, server_env.get("PYTHONPATH")),
                "DATABASE_URL": database_url,
                "REDIS_URL": redis_url,
                "REDIS_BROKER_ENABLED": "true",
                "AEGRA_CONFIG": str(config),
                # One payment record per state folder, shared by the workers (and by a restart).
                PAYMENTS_ENV: server_env.get(PAYMENTS_ENV) or str(state.resolve() / PAYMENTS_FILE),
                "HOST": "127.0.0.1",
                "PORT": str(api_port),
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
            }
        )
        log = state / "logs" / "server.log"
        # Workers that set up a new database at the same time collide: set it up once here.
        say("setting up the database's tables and the graphs' assistants")
        with log.open("ab") as out:
            migrated = subprocess.run(
                [str(PYTHON), "-c", MIGRATE],
                cwd=config.parent,
                env=server_env,
                stdout=out,
                stderr=out,
                check=False,
                preexec_fn=dies_with_parent(signal.SIGKILL),
            )
        if migrated.returncode != 0:
            msg = f"the database migration failed ({migrated.returncode}); see {log}"
            raise ProdServerError(msg)
        server_env["RUN_MIGRATIONS_ON_STARTUP"] = "false"
        offset = log.stat().st_size
        # aegra_app is aegra_api.main:app in workers that die with the supervisor.
        command = [str(PYTHON), "-m", "uvicorn", "client.aegra_app:app"]
        command += ["--host", "127.0.0.1", "--port", str(api_port), "--workers", str(workers)]
        # An open stream holds a graceful stop: bound it, then cancel what is left.
        command += ["--timeout-graceful-shutdown", str(int(SERVER_STOP / 2))]
        say(f"starting {workers} server workers on {url}")
        process = _spawn(command, log, signal.SIGKILL, cwd=config.parent, env=server_env)
        stack.callback(_stop, process, signal.SIGTERM, SERVER_STOP)
        server = ProdServer(
            url, api_port, state, database_url, redis_url, {"server": process}, data
        )

        healthy_since: list[float] = []

        def ready() -> bool:
            # /health answers once one worker is up: wait for every worker's startup line
            # (for at most WORKER_GRACE s, in case LOG_LEVEL hides it).
            if not healthy_since:
                if not answers_200(f"{url}/health"):
                    return False
                healthy_since.append(time.monotonic())
            with log.open("rb") as text:
                text.seek(offset)
                started = text.read().count(b"Application startup complete")
            return started >= workers or time.monotonic() - healthy_since[0] > WORKER_GRACE

        _wait("uvicorn aegra_api.main:app", ready, process, log)
        yield server


def main(argv: list[str] | None = None) -> int:
    """Serve until Ctrl-C, with ``.env`` loaded over the environment (as ``langgraph dev``).

    Returns:
        0 after Ctrl-C, 1 when a process of the stack failed.
    """
    parser = argparse.ArgumentParser(prog="python -m client.prodserver", description=__doc__)
    parser.add_argument("--port", type=int, default=2026, help="API port (default 2026)")
    parser.add_argument("--postgres-port", type=int, default=None, help="default: a free one")
    parser.add_argument("--redis-port", type=int, default=None, help="default: a free one")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--url-file",
        type=Path,
        default=prod_url_file(ROOT),
        help="the URL, written while serving, for the client (default .langgraph_api/prod-url)",
    )
    parser.add_argument("--config", type=Path, default=CONFIG, help="default: aegra.json")
    parser.add_argument(
        "--state",
        type=Path,
        default=STATE,
        help=f"state folder (default .prod; `make prod {STATE_VARIABLE}=DIR` sets it)",
    )
    args = parser.parse_args(argv)
    env = dict(os.environ)
    if (ROOT / ".env").exists():
        from dotenv import dotenv_values

        env.update({k: v for k, v in dotenv_values(ROOT / ".env").items() if v is not None})
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stop_on_signal)
    try:
        with (
            ExitStack() as stack,
            serve(
                env,
                state=args.state,
                port=args.port,
                postgres_port=args.postgres_port,
                redis_port=args.redis_port,
                workers=args.workers,
                config=args.config,
                progress=_progress(),
            ) as server,
        ):
            if server.postgres_data is not None and not server.postgres_data.is_relative_to(
                server.state
            ):
                print(
                    f"The postgres account cannot enter {server.state}: PostgreSQL's data is in "
                    f"{server.postgres_data} (the same folder next time; choose another state "
                    f"folder with `make prod {STATE_VARIABLE}=DIR`)."
                )
            written: Path = args.url_file  # the client finds the server through it
            written.parent.mkdir(parents=True, exist_ok=True)
            written.write_text(server.url + "\n", "utf-8")
            stack.callback(_forget_url, written, server.url)
            print(f"API: {server.url}  ({args.workers} workers; logs in {server.state / 'logs'})")
            print("Ctrl-C stops the server, Redis and PostgreSQL.", flush=True)
            while True:
                time.sleep(1.0)
                if server.processes["server"].poll() is not None:
                    print(f"the server exited; see {server.state / 'logs' / 'server.log'}")
                    return 1
    except Stopping:
        pass
    except ProdServerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print("stopped.", flush=True)
    return 0


def _progress() -> Callable[[str], None]:
    """A printer of start steps, each with the seconds since the first."""
    began = time.monotonic()

    def say(step: str) -> None:
        print(f"{step} ({time.monotonic() - began:.0f} s)", flush=True)

    return say


def _forget_url(written: Path, url: str) -> None:
    """Remove the URL file, unless a later server wrote its own there."""
    with contextlib.suppress(OSError):
        if written.read_text("utf-8").strip() == url:
            written.unlink()


if __name__ == "__main__":
    raise SystemExit(main())
