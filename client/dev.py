"""``make dev``: the real ``langgraph dev`` on a port it says, without the reloader's noise.

``langgraph dev`` moves to another port when its own is taken, and says so only deep in its
log; a client then knocks on the wrong door. This launcher picks the port before it starts
the server: the one asked for with ``--port`` (``make dev PORT=...``), refused in one line
when it is taken; else :data:`PREFERRED_PORT` if it is free, else a free one. Once the server
answers (its ``/ok`` route; the server's own start-up log comes first), one line says where it
serves::

    serving both graphs at http://127.0.0.1:2024 (Studio: https://smith.langchain.com/...)

so a command run on that line finds it up. Before the server starts, the launcher writes that
URL to ``.langgraph_api/dev-url`` beside the served ``langgraph.json``, and its own pid to
``.langgraph_api/dev-pid`` (ignored by git; both go when the launcher ends), where
``python -m client`` finds it, and waits for a server still starting while that pid lives.
The files are written before the server's reloader starts watching and removed after it
stops, so they never cause a reload.

``langgraph dev`` reloads when a file under the project changes. The in-memory server also
rewrites its own persistence (``.langgraph_api/`` in the working directory) about every 10 s,
and the reloader's file watcher (``watchfiles``) logs every raw change it sees, before the
server's reload filter drops the ones that are not code: "3 changes detected" every 10 s, for
as long as the server runs. The CLI offers no way to keep the watcher off that folder, so this
launcher runs the same CLI command in this process with that one logger (``watchfiles.main``)
raised to WARNING. Everything else is ``langgraph dev`` as it is: a ``.py`` change still
reloads the server, and uvicorn still says so ("WatchFiles detected changes in ...
Reloading...").

Usage: ``python -m client.dev [--preferred-port N] [langgraph dev flags]``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from client.devserver import pick_port

WATCHER_LOGGER = "watchfiles.main"
"""The logger that reports every raw file change the reloader sees."""
PREFERRED_PORT = 2024
"""``langgraph dev``'s own default, used when it is free and no ``--port`` is given."""
STUDIO = "https://smith.langchain.com/studio/?baseUrl="
"""LangGraph Studio's address for a local server, the server's URL appended."""
EXIT_PORT_TAKEN = 1
POLL_S = 0.2
"""How often the launcher asks the starting server's ``/ok`` whether it answers."""


def dev_url_file(project: Path) -> Path:
    """Return where the dev server serving ``project``'s ``langgraph.json`` writes its URL.

    Args:
        project: The folder holding the served ``langgraph.json``.

    Returns:
        ``project/.langgraph_api/dev-url`` (the server's own persistence folder, ignored by git).
    """
    return project / ".langgraph_api" / "dev-url"


def prod_url_file(project: Path) -> Path:
    """Return where ``make prod`` (:mod:`client.prodserver`) writes its URL while it serves.

    Args:
        project: The project's folder.

    Returns:
        ``project/.langgraph_api/prod-url``, beside the dev server's file (ignored by git).
    """
    return project / ".langgraph_api" / "prod-url"


def client_url(host: str, port: int) -> str:
    """Return the URL a client on this machine uses for a server bound to ``host:port``."""
    reach = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host  # noqa: S104 - a reading
    return f"http://[{reach}]:{port}" if ":" in reach else f"http://{reach}:{port}"


def serving_line(url: str, moved_from: int | None = None) -> str:
    """Return the one line that says where the dev server serves.

    Args:
        url: The server's URL.
        moved_from: The preferred port, when it was taken and another was picked.

    Returns:
        ``serving both graphs at URL (Studio: ...)``, naming a taken preferred port.
    """
    moved = f"port {moved_from} is taken; " if moved_from is not None else ""
    return f"serving both graphs at {url} ({moved}Studio: {STUDIO}{url})"


def dev_pid_file(project: Path) -> Path:
    """Return where the dev server's launcher writes its pid, beside :func:`dev_url_file`.

    Args:
        project: The folder holding the served ``langgraph.json``.

    Returns:
        ``project/.langgraph_api/dev-pid``: while that process lives, the URL's server is
        up or starting.
    """
    return project / ".langgraph_api" / "dev-pid"


def answers(url: str) -> bool:
    """Whether the server at ``url`` answers its ``/ok`` route, asked directly (no proxy)."""
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with direct.open(f"{url}/ok", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _say_once_serving(url: str, line: str) -> None:
    """Print ``line`` once the server at ``url`` answers (a daemon thread: it ends with us)."""
    while not answers(url):
        time.sleep(POLL_S)
    print(line, flush=True)


def _own_flags() -> argparse.ArgumentParser:
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument("--host", default="127.0.0.1")
    flags.add_argument("--port", type=int, default=None)
    flags.add_argument("--preferred-port", type=int, default=PREFERRED_PORT)
    flags.add_argument("--config", default="langgraph.json")
    return flags


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``langgraph dev`` with ``argv`` as its flags, on a port this says first.

    Args:
        argv: Flags for ``langgraph dev`` (and ``--preferred-port``); ``sys.argv[1:]`` when
            None.

    Returns:
        The exit status: ``langgraph dev``'s, or 1 when the ``--port`` asked for is taken.
    """
    own, rest = _own_flags().parse_known_args(list(sys.argv[1:] if argv is None else argv))
    host: str = own.host
    picked = pick_port(
        host,
        own.port,
        own.preferred_port,
        "`make dev PORT=<port>` (or leave PORT unset to get a free one)",
    )
    if picked is None:
        return EXIT_PORT_TAKEN
    port, moved_from = picked
    url = client_url(host, port)
    from langgraph_cli.cli import cli  # the dev tools' CLI: a dev dependency only

    # uvicorn's reloader runs in this process; its logging config leaves this logger alone.
    logging.getLogger(WATCHER_LOGGER).setLevel(logging.WARNING)
    state = dev_url_file(Path(own.config).resolve().parent)
    state.parent.mkdir(exist_ok=True)
    # Before the server starts: a client run while it starts finds it, and waits for it.
    state.write_text(f"{url}\n", "utf-8")
    launcher = dev_pid_file(state.parent.parent)
    launcher.write_text(f"{os.getpid()}\n", "utf-8")
    line = serving_line(url, moved_from)
    threading.Thread(target=_say_once_serving, args=(url, line), daemon=True).start()
    # uvicorn re-raises a SIGTERM it caught once it has shut down: end here, file removed.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    args = ["dev", "--config", own.config, "--host", host, "--port", str(port), *rest]
    try:
        cli.main(args=args, prog_name="langgraph dev")
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except KeyboardInterrupt:
        return 130
    finally:
        with contextlib.suppress(OSError):
            if state.read_text("utf-8").strip() == url:  # not a later launcher's file
                state.unlink()
        with contextlib.suppress(OSError):
            if launcher.read_text("utf-8").strip() == str(os.getpid()):
                launcher.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
