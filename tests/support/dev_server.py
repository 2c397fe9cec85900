"""Test servers: :func:`client.devserver.serve`, with provider and tracing keys scrubbed.

A test server never inherits a Groq key, LangSmith tracing or ``AGENT_API_KEYS`` from
the machine: a test passes what it needs in ``env``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from client.devserver import (
    CONFIG,
    LANGGRAPH_DEV,
    MAKE_DEV,
    ROOT,
    DevServer,
    DevServerError,
    free_port,
    serve,
)

__all__ = [
    "CONFIG",
    "ROOT",
    "DevServer",
    "DevServerError",
    "MAKE_DEV",
    "check_env_file",
    "dev_server",
    "free_port",
]

# Variables that would make a test server reach the network or a real provider, or share
# another test's files (the in-process tests' payment record: a server keeps its own).
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
    "AGENT_PAYMENTS_DB",
)


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


@contextmanager
def dev_server(
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
    workdir: Path | None = None,
    config: Path = CONFIG,
    launcher: Sequence[str] = LANGGRAPH_DEV,
    reload: bool = False,
) -> Iterator[DevServer]:
    """Serve ``config`` with the machine's provider and tracing variables scrubbed.

    Args:
        env: Extra environment for the server, applied after scrubbing.
        args: Extra CLI flags, for example ``["--n-jobs-per-worker", "8"]``.
        workdir: Working directory (log and persistence); a new temporary one by default.
        config: The ``langgraph.json`` to serve; the project's own by default.
        launcher: What ``python`` runs before the flags (``langgraph dev`` by default).
        reload: Reload on code changes under the working directory.

    Yields:
        The running server.

    Raises:
        DevServerError: If the ``.env`` would undo the scrubbing, or the server does not
            start.
    """
    check_env_file(config)
    server_env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    server_env.update({"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    server_env.update(env or {})
    keep = os.environ.get("KEEP_DEV_SERVER_LOGS") == "1"
    with serve(
        server_env, args, workdir, config, keep_workdir=keep, launcher=launcher, reload=reload
    ) as server:
        yield server


def copy_of_the_project(target: Path) -> Path:
    """The files a server needs, so a test can change code without touching the checkout."""
    skip = shutil.ignore_patterns(
        ".git", ".venv", ".tools", ".prod", ".langgraph_api", "__pycache__", ".*_cache",
        ".hypothesis", "tests", "bench", "docs",
    )  # fmt: skip
    shutil.copytree(ROOT, target, ignore=skip)
    return target
