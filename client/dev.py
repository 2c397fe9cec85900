"""``make dev``: the real ``langgraph dev``, without the reloader's "N changes detected" noise.

``langgraph dev`` reloads when a file under the project changes. The in-memory server also
rewrites its own persistence (``.langgraph_api/`` in the working directory) about every 10 s,
and the reloader's file watcher (``watchfiles``) logs every raw change it sees, before the
server's reload filter drops the ones that are not code: "3 changes detected" every 10 s, for
as long as the server runs. The CLI offers no way to keep the watcher off that folder, so this
launcher runs the same CLI command in this process with that one logger (``watchfiles.main``)
raised to WARNING. Everything else is ``langgraph dev`` as it is: a ``.py`` change still
reloads the server, and uvicorn still says so ("WatchFiles detected changes in ...
Reloading...").

Usage: ``python -m client.dev [langgraph dev flags]``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

WATCHER_LOGGER = "watchfiles.main"
"""The logger that reports every raw file change the reloader sees."""


def main(argv: Sequence[str] | None = None) -> None:
    """Run ``langgraph dev`` with ``argv`` as its flags, the watcher's change count quiet.

    Args:
        argv: Flags for ``langgraph dev``; ``sys.argv[1:]`` when None.
    """
    from langgraph_cli.cli import cli  # the dev tools' CLI: a dev dependency only

    # uvicorn's reloader runs in this process; its logging config leaves this logger alone.
    logging.getLogger(WATCHER_LOGGER).setLevel(logging.WARNING)
    args = list(sys.argv[1:] if argv is None else argv)
    cli.main(args=["dev", *args], prog_name="langgraph dev")


if __name__ == "__main__":
    main()
