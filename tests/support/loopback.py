"""A loopback HTTP server base for the fakes tests point real clients at.

`LoopbackServer` binds ``127.0.0.1`` on a free port and serves each connection in its
own daemon thread (``ThreadingHTTPServer``, HTTP/1.1 keep-alive). A subclass answers
in `LoopbackServer.handle`, which receives every request as a `Request` (body read,
chunked transfer encoding undone, header names lower-cased) and returns a `Response`;
``handle`` is also where a subclass records what it received::

    class Echo(LoopbackServer):
        def handle(self, request: Request) -> Response:
            return Response(200, "text/plain", request.body)

    with Echo() as server:
        urllib.request.urlopen(server.url, data=b"hi")

`LoopbackServer.stop` shuts the server down, drops idle keep-alive connections (a
client's pool would otherwise hold a handler thread) and releases the port.
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

__all__ = ["LoopbackServer", "Request", "Response"]


@dataclass(frozen=True)
class Request:
    """One HTTP request as a loopback server received it.

    Attributes:
        method: The HTTP method, e.g. ``"POST"``.
        path: The request path without the query string.
        headers: The request headers with lower-cased names (last value wins for
            repeated names).
        body: The request body (a chunked body is joined).
        query: The query string, without the ``?`` (empty when there is none).
    """

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    query: str = ""


@dataclass(frozen=True)
class Response:
    """What a loopback server sends back.

    Attributes:
        status: The HTTP status code.
        content_type: The ``Content-Type`` header.
        body: The response body.
        headers: Further response headers.
    """

    status: int
    content_type: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, owner: LoopbackServer) -> None:
        self.owner = owner
        self.open_sockets: set[socket.socket] = set()
        self.sockets_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    # Idle keep-alive connections are dropped after this many seconds.
    timeout = 30

    def setup(self) -> None:
        super().setup()
        with self.server.sockets_lock:
            self.server.open_sockets.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.sockets_lock:
                self.server.open_sockets.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        """Silence the default stderr access log."""

    def do_GET(self) -> None:  # noqa: N802
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._handle("PUT")

    def do_PATCH(self) -> None:  # noqa: N802
        self._handle("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802
        self._handle("DELETE")

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()  # CRLF after each chunk
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _handle(self, method: str) -> None:
        request = Request(
            method=method,
            path=urlsplit(self.path).path,
            headers={key.lower(): value for key, value in self.headers.items()},
            body=self._read_body(),
            query=urlsplit(self.path).query,
        )
        response = self.server.owner.handle(request)
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        self.wfile.write(response.body)


class LoopbackServer:
    """Base of the loopback fakes: lifecycle, port and threads; subclasses answer.

    Use as a context manager; `url` is valid between enter and exit.
    """

    def __init__(self) -> None:
        """Create the server; it starts serving on `start` or ``with``."""
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def handle(self, request: Request) -> Response:
        """Answer one request; called on the request's handler thread.

        Args:
            request: The request as received.

        Returns:
            The response to send.
        """
        raise NotImplementedError

    @property
    def url(self) -> str:
        """The base URL, e.g. ``"http://127.0.0.1:54321"`` (no trailing slash).

        Raises:
            RuntimeError: If the server is not running.
        """
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        """Bind 127.0.0.1 on a free port and serve in a daemon thread.

        Returns:
            This server.

        Raises:
            RuntimeError: If it is already running.
        """
        if self._server is not None:
            raise RuntimeError(f"{type(self).__name__} is already running")
        server = _Server(self)
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{type(self).__name__}:{server.server_address[1]}",
            daemon=True,
        )
        thread.start()
        self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        """Stop serving, drop open connections and release the port. Idempotent."""
        server, thread = self._server, self._thread
        if server is None:
            return
        server.shutdown()
        with server.sockets_lock:
            open_sockets = list(server.open_sockets)
        for sock in open_sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> Self:
        """Start the server.

        Returns:
            This server.
        """
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the server."""
        self.stop()
