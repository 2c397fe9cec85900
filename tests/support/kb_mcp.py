"""Start ``make kb-mcp``'s launcher (:mod:`client.mcpserver`) on a free loopback port, for tests."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from client.devserver import ROOT, free_port, stop_process

START_TIMEOUT_S = 60.0


@dataclass
class KnowledgeBaseServer:
    url: str
    """The streamable HTTP endpoint, as the launcher printed it."""
    lines: list[str]
    """The launcher's first two lines, as a person sees them."""
    process: subprocess.Popen[bytes]


@contextmanager
def kb_mcp_server(*flags: str) -> Iterator[KnowledgeBaseServer]:
    """Run the launcher (on a free port unless ``flags`` say otherwise) until the block ends.

    Yields:
        The server, once its first two lines are printed (the socket is bound by then).
    """
    given = list(flags) or ["--port", str(free_port())]
    process = subprocess.Popen(
        [sys.executable, "-m", "client.mcpserver", *given],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline().decode().rstrip("\n") for _ in range(2)]
        assert lines[0].startswith("serving the knowledge base's MCP server at "), lines
        url = lines[0].split(" at ", 1)[1].split(" ", 1)[0]
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(url):
            assert process.poll() is None, "the MCP server ended"
            assert time.monotonic() < deadline, "the MCP server did not start"
            time.sleep(0.05)
        yield KnowledgeBaseServer(url=url, lines=lines, process=process)
    finally:
        stop_process(process, grace=5)


def _answers(url: str) -> bool:
    import httpx

    try:
        httpx.get(url, timeout=1)  # any HTTP answer: the server is up
    except httpx.HTTPError:
        return False
    return True
