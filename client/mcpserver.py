"""``make kb-mcp``: the knowledge base's MCP server, over streamable HTTP on loopback.

It serves :func:`agent.tools.kb_server.build_server` on the port asked for with ``--port``
(``make kb-mcp KB_PORT=...``), refused in one line when it is taken; else on
:data:`PREFERRED_PORT` if it is free, else on a free one. Its first lines say where, and
how to point the graphs at it::

    serving the knowledge base's MCP server at http://127.0.0.1:2027/mcp
    use it: AGENT_KB_MCP_URL=http://127.0.0.1:2027/mcp make dev

Ctrl-C (or SIGTERM) stops it at once: a client's open stream does not hold it.

Usage: ``python -m client.mcpserver [--host HOST] [--port N]``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from client.dev import client_url
from client.devserver import pick_port

PREFERRED_PORT = 2027
"""Used when it is free and no ``--port`` is given (``make dev`` prefers 2024, prod 2026)."""
EXIT_PORT_TAKEN = 1


def serving_lines(url: str, moved_from: int | None = None) -> list[str]:
    """Return the lines that say where the server serves and how to use it.

    Args:
        url: The server's streamable HTTP endpoint.
        moved_from: The preferred port, when it was taken and another was picked.

    Returns:
        Where it serves (naming a taken preferred port), then the ``make dev`` line using it.
    """
    moved = f" (port {moved_from} is taken)" if moved_from is not None else ""
    return [
        f"serving the knowledge base's MCP server at {url}{moved}",
        f"use it: AGENT_KB_MCP_URL={url} make dev",
    ]


def _flags() -> argparse.ArgumentParser:
    flags = argparse.ArgumentParser(
        prog="python -m client.mcpserver", description="Serve the knowledge base over MCP."
    )
    flags.add_argument("--host", default="127.0.0.1", help="the address to bind (loopback)")
    flags.add_argument("--port", type=int, default=None, help=f"default {PREFERRED_PORT} or free")
    return flags


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the knowledge base's MCP server until interrupted.

    Args:
        argv: The flags; ``sys.argv[1:]`` when None.

    Returns:
        0 when stopped, 1 when the ``--port`` asked for is taken.
    """
    args = _flags().parse_args(argv)
    host: str = args.host
    picked = pick_port(
        host, args.port, PREFERRED_PORT, "`make kb-mcp KB_PORT=<port>` (or leave KB_PORT unset)"
    )
    if picked is None:
        return EXIT_PORT_TAKEN
    port, moved_from = picked
    import uvicorn

    from agent.tools.kb_server import build_server

    app = build_server(host, port).streamable_http_app()
    for line in serving_lines(f"{client_url(host, port)}/mcp", moved_from):
        print(line, flush=True)
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=1
    )
    try:
        uvicorn.Server(config).run()
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
