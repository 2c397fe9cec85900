"""A ``send`` that holds an error response and sends what a rewrite makes of it.

Both of the project's ASGI middleware (:mod:`agent.http`, :mod:`agent.resume_door`) change
what a server answers on its way out: the body of certain error responses, never a stream.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from starlette.datastructures import MutableHeaders
from starlette.types import Message, Send

Rewrite = Callable[[Message, bytes], tuple[Message, bytes]]
"""Given the held ``http.response.start`` message and the whole body, what to send instead."""


class RewrittenResponse:
    """A ``send`` that holds a response with one of ``statuses`` and sends it rewritten.

    Any other response passes through as it comes, chunk by chunk.
    """

    def __init__(self, send: Send, statuses: Collection[int], rewrite: Rewrite) -> None:
        """Wrap ``send``.

        Args:
            send: The server's ``send``.
            statuses: The response statuses to hold.
            rewrite: What to make of a held response (its start message and its body).
        """
        self.send = send
        self.statuses = statuses
        self.rewrite = rewrite
        self.start: Message | None = None
        self.chunks: list[bytes] = []

    async def __call__(self, message: Message) -> None:
        """Pass ``message`` on, or hold it until the held response's body is whole."""
        if message["type"] == "http.response.start" and message.get("status") in self.statuses:
            self.start = message
            return
        if self.start is None or message["type"] != "http.response.body":
            await self.send(message)
            return
        self.chunks.append(message.get("body", b""))
        if message.get("more_body", False):
            return
        start, body = self.rewrite(self.start, b"".join(self.chunks))
        headers = MutableHeaders(raw=list(start.get("headers", [])))
        headers["content-length"] = str(len(body))
        await self.send({**start, "headers": headers.raw})
        await self.send({"type": "http.response.body", "body": body, "more_body": False})
