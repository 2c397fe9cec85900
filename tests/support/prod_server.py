"""Test stacks: :func:`client.prodserver.serve` with provider and tracing keys scrubbed.

A test stack never reads ``.env`` and never inherits a Groq key, LangSmith tracing or
``AGENT_API_KEYS`` from the machine: a test passes what it needs in ``env``. Its state
(database, Redis data, logs) lives in a folder the test gives, outside the project.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from client.prodserver import CONFIG, ProdServer, ProdServerError, postgres_tool, serve
from tests.support.dev_server import _SCRUBBED, ROOT

__all__ = [
    "CONFIG",
    "SHORT_LEASE",
    "ProdServer",
    "ProdServerError",
    "prod_server",
    "sql",
    "state_folder",
    "write_config",
]

SHORT_LEASE = {
    "LEASE_DURATION_SECONDS": "5",
    "HEARTBEAT_INTERVAL_SECONDS": "1",
    "REAPER_INTERVAL_SECONDS": "1",
    "STUCK_PENDING_THRESHOLD_SECONDS": "3",
}
"""Crash-recovery settings short enough for a test: a dead worker's run is back in ~6 s, and a
run it held while the run before it on the thread ran is queued again 3 s after its creation."""


def write_config(
    folder: Path, extra_graphs: Mapping[str, str] | None = None, http_app: str | None = None
) -> Path:
    """Write the project's ``aegra.json`` into ``folder``, with absolute paths and extras.

    Args:
        folder: Where to write it.
        extra_graphs: More graph ids and ``/absolute/file.py:variable`` entries.
        http_app: Another ``http.app`` entry (``/absolute/file.py:variable``).

    Returns:
        The config's path.
    """
    config = json.loads(CONFIG.read_text("utf-8"))
    # Aegra puts each dependency folder on sys.path (it installs nothing): absolute paths.
    config["dependencies"] = [str((ROOT / dep).resolve()) for dep in config["dependencies"]]
    config["graphs"] = {
        graph: str(ROOT / entry.removeprefix("./")) for graph, entry in config["graphs"].items()
    }
    config["graphs"].update(extra_graphs or {})
    if http_app is not None:
        config["http"] = {**config.get("http", {}), "app": http_app}
    path = folder / "aegra.json"
    path.write_text(json.dumps(config, indent=2), "utf-8")
    return path


@contextmanager
def state_folder() -> Iterator[Path]:
    """A new state folder in the temp dir, that PostgreSQL's own account can enter, removed after.

    pytest's ``tmp_path`` sits under a folder only its owner may enter; run as root, the
    stack runs PostgreSQL as ``postgres``, which must reach its data folder.
    """
    folder = Path(tempfile.mkdtemp(prefix="soa-prod-"))
    folder.chmod(0o711)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def prod_server(
    state: Path,
    env: Mapping[str, str] | None = None,
    *,
    config: Path = CONFIG,
) -> Iterator[ProdServer]:
    """Run a stack in ``state`` with the machine's provider and tracing variables scrubbed.

    Args:
        state: The stack's folder; the same folder serves the same data again.
        env: Extra environment for the server, applied after scrubbing.
        config: The Aegra config to serve.

    Yields:
        The running stack.
    """
    server_env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    server_env.update(env or {})
    with serve(server_env, state=state, config=config) as server:
        yield server


def sql(server: ProdServer, query: str) -> str:
    """Run one query on the stack's database with ``psql`` and return its bare output."""
    done = subprocess.run(
        [postgres_tool("psql"), server.database_url, "-tAc", query],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip()
