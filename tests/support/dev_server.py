"""Start the project's own ``langgraph.json`` under the real ``langgraph dev``, on loopback.

Each server runs with its working directory in a temporary folder outside the project, so
its log and its ``.langgraph_api/`` persistence never touch the project (no reload loops)
and two servers never share state. The same folder can be handed to a second start to
prove that threads survive a restart.
"""

from __future__ import annotations

import json
import os
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

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "langgraph.json"
START_TIMEOUT = 90.0

# Variables that would make a test server reach the network or a real provider.
_SCRUBBED = (
    "GROQ_API_KEY",
    "GROQ_API_BASE",
    "GROQ_BASE_URL",
    "LANGSMITH_TRACING",
    "LANGSMITH_API_KEY",
    "LANGSMITH_ENDPOINT",
    "LANGCHAIN_TRACING_V2",
    "LANGCHAIN_API_KEY",
    "LANGCHAIN_ENDPOINT",
    "LANGSMITH_PROJECT",
    "AGENT_API_KEYS",
    "AGENT_REDACT_TRACES",
)


def free_port() -> int:
    """Return a TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DevServerError(RuntimeError):
    """The dev server died or never answered ``/ok``; the message holds its log tail."""


def check_env_file(config: Path) -> None:
    """Refuse to start when the config's ``.env`` would undo the scrubbing below.

    ``langgraph dev`` loads the file named by ``env`` in ``langgraph.json`` over the
    process environment, so a developer's ``.env`` with a Groq key or LangSmith tracing
    would send test traffic to real services. Names only, never values, in the error.

    Raises:
        DevServerError: If the file sets any scrubbed variable to a non-empty value.
    """
    from dotenv import dotenv_values

    env = json.loads(config.read_text("utf-8")).get("env")
    if not isinstance(env, str) or not (config.parent / env).exists():
        return
    values = dotenv_values(config.parent / env)
    harmless = {"LANGSMITH_PROJECT", "AGENT_REDACT_TRACES"}
    risky = sorted(
        name
        for name in _SCRUBBED
        if name not in harmless
        and (values.get(name) or "").strip().lower() not in ("", "false", "0", "no", "off")
    )
    if risky:
        msg = (
            f"{config.parent / env} sets {', '.join(risky)}: langgraph dev would load them over "
            "the test environment and reach real services or change auth. Move the file "
            "aside (or empty those variables) while the tests run."
        )
        raise DevServerError(msg)


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


def _ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:  # noqa: S310
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=15)
    except ProcessLookupError:
        pass


@contextmanager
def dev_server(
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
    workdir: Path | None = None,
    config: Path = CONFIG,
) -> Iterator[DevServer]:
    """Run ``python -m langgraph_cli dev`` on a free loopback port until the block ends.

    Args:
        env: Extra environment for the server (after scrubbing provider and tracing keys).
        args: Extra CLI flags, for example ``["--n-jobs-per-worker", "8"]``.
        workdir: Working directory (log and persistence); a new temporary one by default.
        config: The ``langgraph.json`` to serve; the project's own by default.

    Yields:
        The running server.

    Raises:
        DevServerError: If the process dies or ``/ok`` does not answer in time.
    """
    check_env_file(config)
    own_dir = workdir is None
    folder = Path(tempfile.mkdtemp(prefix="soa-dev-")) if workdir is None else workdir
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server_env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    server_env.update({"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    server_env.update(env or {})
    log_path = folder / f"server-{port}.log"
    command = [
        sys.executable, "-m", "langgraph_cli", "dev",
        "--config", str(config),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--no-browser",
        "--no-reload",
        *args,
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=folder,
            env=server_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    server = DevServer(url=url, port=port, workdir=folder, log_path=log_path, process=process)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _ok(url):
            if process.poll() is not None:
                msg = f"langgraph dev exited with {process.returncode}:\n{server.tail()}"
                raise DevServerError(msg)
            if time.monotonic() > deadline:
                msg = f"langgraph dev did not answer {url}/ok in {START_TIMEOUT}s:\n{server.tail()}"
                raise DevServerError(msg)
            time.sleep(0.2)
        yield server
    finally:
        _stop(process)
        if own_dir and os.environ.get("KEEP_DEV_SERVER_LOGS") != "1":
            # Keep nothing behind: the folder holds only this server's log and persistence.
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
