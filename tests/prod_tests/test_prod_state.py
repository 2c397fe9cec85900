"""``make prod`` as root from a folder the ``postgres`` account cannot enter.

A clone under ``/root`` or in a ``mktemp -d`` folder sits under a mode-0700 parent: the
cluster, which runs as ``postgres``, cannot live there. ``make prod PROD_STATE=<that
folder>/state`` (run from that folder, with ``make -C``) must still start, put PostgreSQL's
data in the fallback folder (in the account's home, ``/var/lib/postgresql/...``; owned by
``postgres``, mode 0700, the same folder for the same state folder), say where, serve, and
stop on Ctrl-C.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from client.devserver import free_port, stop_process
from client.prodserver import (
    STATE_VARIABLE,
    ProdServerError,
    closed_to,
    fallback_data_dir,
    postgres_data_dir,
)
from tests.support.dev_server import _SCRUBBED, CONFIG, ROOT, check_env_file

AS_ROOT = os.geteuid() == 0


@pytest.fixture
def closed_parent() -> Iterator[Path]:
    parent = Path(tempfile.mkdtemp(prefix="soa-closed-"))  # mode 0700, like /root
    try:
        yield parent
    finally:
        shutil.rmtree(fallback_data_dir(parent / "state").parent, ignore_errors=True)
        shutil.rmtree(parent, ignore_errors=True)


def test_the_fallback_is_stable_per_state_folder_and_refuses_a_foreign_one(
    closed_parent: Path,
) -> None:
    state = closed_parent / "state"
    assert fallback_data_dir(state) == fallback_data_dir(closed_parent / "." / "state")
    assert fallback_data_dir(state) != fallback_data_dir(closed_parent / "other")
    assert stat.S_IMODE(closed_parent.stat().st_mode) == 0o700
    if not AS_ROOT:  # PostgreSQL then runs as this account: the state folder itself
        assert postgres_data_dir(state) == state / "postgres"
        return
    assert closed_to("postgres", state / "postgres") == closed_parent
    # A fallback folder someone else made first is never used: the error says what to set.
    planted = fallback_data_dir(state).parent
    planted.mkdir(mode=0o700)
    nobody = pwd.getpwnam("nobody")
    os.chown(planted, nobody.pw_uid, nobody.pw_gid)
    with pytest.raises(ProdServerError, match=f"make prod {STATE_VARIABLE}=DIR"):
        postgres_data_dir(state)
    planted.rmdir()


def test_make_prod_starts_from_a_0700_folder_and_says_where_the_data_is(
    closed_parent: Path,
) -> None:
    check_env_file(CONFIG)  # `make prod` loads .env: it must not carry keys into the test
    state, port = closed_parent / "state", free_port()
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED and k != "MAKEFLAGS"}
    command = ["make", "-s", "-C", str(ROOT), "prod"]
    command += [f"{STATE_VARIABLE}={state}", f"PROD_PORT={port}"]
    process = subprocess.Popen(
        command,
        cwd=closed_parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert process.stdout is not None
    printed: list[str] = []
    try:
        deadline = time.monotonic() + 240
        while not any(line.startswith("API: ") for line in printed):
            line = process.stdout.readline().decode("utf-8", errors="replace")
            if not line and process.poll() is not None:
                pytest.fail("make prod exited:\n" + "".join(printed))
            printed.append(line)
            assert time.monotonic() < deadline, "".join(printed)
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).status_code == 200
    finally:
        stop_process(process, signal.SIGINT, grace=60)
    out = "".join(printed) + process.stdout.read().decode("utf-8", errors="replace")
    steps = ["starting PostgreSQL (", "starting Redis (", "setting up the database's tables"]
    steps += [f"starting 2 server workers on http://127.0.0.1:{port} (", "API: "]
    at = [out.find(step) for step in steps]
    assert -1 not in at and at == sorted(at), out  # progress while it starts, then the API
    data = fallback_data_dir(state)
    if AS_ROOT:
        assert f"PostgreSQL's data is in {data}" in out, out
        assert f"make prod {STATE_VARIABLE}=DIR" in out
        assert (data / "PG_VERSION").exists()
        info = data.parent.stat()
        assert info.st_uid == pwd.getpwnam("postgres").pw_uid
        assert stat.S_IMODE(info.st_mode) == 0o700
        assert not (state / "postgres").exists()
    else:
        assert (state / "postgres" / "PG_VERSION").exists()
    assert (state / "logs" / "server.log").exists()
    assert "stopped." in out, out
