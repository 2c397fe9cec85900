"""A loopback, deterministic stand-in for Groq's chat completions API, for tests.

`FakeGroq` is a `tests.support.loopback.LoopbackServer` (``127.0.0.1``, a free port, a
daemon thread) that answers ``POST /openai/v1/chat/completions`` the way
the ``groq`` SDK (0.37) and ``langchain-groq`` (1.1.3) expect, with and without
``stream: true``.

Pointing ``ChatGroq`` at it:

* ``ChatGroq(base_url=server.url, api_key="dummy", ...)``. ``base_url`` is the alias
  of the field ``groq_api_base``, whose default comes from the env var
  ``GROQ_API_BASE``. When that is unset, ``ChatGroq`` passes ``base_url=None`` and the
  ``groq`` SDK itself falls back to the env var ``GROQ_BASE_URL`` and then to
  ``https://api.groq.com``. Either env var works; ``GROQ_API_BASE`` wins.
* The base URL is the server *root* (``http://127.0.0.1:PORT``): the SDK appends
  ``/openai/v1/chat/completions`` itself, so do not add ``/openai/v1``.
  (`FakeGroq.openai_base_url` is the ``.../openai/v1`` form, for OpenAI-style clients.)
* The API key (``api_key=`` / ``GROQ_API_KEY``) is sent as ``Authorization: Bearer``.

Usage as ``langchain-groq`` reads it: non-streaming responses carry top-level ``usage``
(``_create_chat_result``); in streaming mode only ``x_groq.usage`` on a chunk that has
a choice is read (chunks with empty ``choices`` are skipped), so the final chunk (the
one with ``finish_reason``) carries ``x_groq.usage``. If the request asks for
``stream_options.include_usage`` an extra OpenAI-style chunk with empty ``choices`` and
top-level ``usage`` follows, as Groq does.

Behaviour is decided only from the request's messages (see `plan_reply`):

* Last message from the user: ``buy <item> for <amount>`` (read by
  `agent.models.parse_buy`, in linear time) with a ``checkout`` tool offered calls
  ``checkout(item, amount)``; otherwise, with a ``search`` tool offered, the text is
  split on ``;`` into one parallel ``search(query)`` call per non-empty part; with
  neither applicable (e.g. no tools), a prose answer.
* Trailing tool results: every result that looks transient (``timed out``,
  ``timeout``, ``503``, ``temporarily unavailable``, ``try again``) has its tool call
  re-issued with the same name and arguments and a new id; if none does, the answer
  is prose: ``"Here is what I found: "`` + the first 200 characters of the first
  result.
* Tool call ids are ``call_groq_<n>_<i>``, ``n`` counting chat completion requests
  served (from 1) and ``i`` the call's index in the reply.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from agent.models import parse_buy
from tests.support.loopback import LoopbackServer, Request, Response

__all__ = ["FakeGroq", "PlannedReply", "plan_reply", "CHAT_COMPLETIONS_PATH"]

CHAT_COMPLETIONS_PATH = "/openai/v1/chat/completions"

TRANSIENT_MARKERS = ("timed out", "timeout", "503", "temporarily unavailable", "try again")

_CREATED = 1_700_000_000


@dataclass
class PlannedReply:
    """What the fake model answers.

    Attributes:
        content: The assistant text ("" when only tool calls are returned).
        tool_calls: ``(name, arguments)`` pairs, in order.
    """

    content: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def _text_of(content: Any) -> str:
    """Return the text of an OpenAI message ``content`` (string or content blocks)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for block in content:
            if isinstance(block, str):
                texts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                texts.append(block["text"])
        return "".join(texts)
    return str(content)


def _offered_tools(body: dict[str, Any]) -> set[str]:
    names = set()
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            function = tool.get("function") or {}
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                names.add(function["name"])
    return names


def _is_transient(text: str) -> bool:
    lowered = text.lower()
    return any(marker in lowered for marker in TRANSIENT_MARKERS)


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.strip():
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def plan_reply(body: dict[str, Any]) -> PlannedReply:
    """Decide the fake model's reply from a chat completions request body.

    Args:
        body: The parsed request JSON (``messages``, optional ``tools``).

    Returns:
        The reply: prose and/or tool calls (ids are assigned by the server).
    """
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    if not messages:
        return PlannedReply(content="Hello! How can I help?")
    last = messages[-1]
    role = last.get("role")
    tools = _offered_tools(body)

    if role == "user":
        text = _text_of(last.get("content"))
        buy = parse_buy(text)
        if buy and "checkout" in tools:
            item, amount = buy
            return PlannedReply(tool_calls=[("checkout", {"item": item, "amount": amount})])
        if "search" in tools:
            queries = [part.strip() for part in text.split(";") if part.strip()]
            if queries:
                return PlannedReply(tool_calls=[("search", {"query": q}) for q in queries])
        return PlannedReply(content=f"You asked: {text[:200]}".rstrip())

    if role == "tool":
        start = len(messages)
        while start > 0 and messages[start - 1].get("role") == "tool":
            start -= 1
        results = messages[start:]
        calls_by_id: dict[str, tuple[str, dict[str, Any]]] = {}
        for message in messages[:start]:
            if message.get("role") != "assistant":
                continue
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                if isinstance(call.get("id"), str) and isinstance(function.get("name"), str):
                    calls_by_id[call["id"]] = (
                        function["name"],
                        _parse_arguments(function.get("arguments")),
                    )
        retries = []
        for result in results:
            original = calls_by_id.get(str(result.get("tool_call_id")))
            if original is not None and _is_transient(_text_of(result.get("content"))):
                retries.append(original)
        if retries:
            return PlannedReply(tool_calls=retries)
        first = _text_of(results[0].get("content"))
        return PlannedReply(content="Here is what I found: " + first[:200])

    return PlannedReply(content="I have nothing further to add.")


def _error(status: int, message: str, error_type: str, code: str) -> tuple[int, str, bytes]:
    payload = {"error": {"message": message, "type": error_type, "code": code}}
    return status, "application/json", json.dumps(payload).encode()


class FakeGroq(LoopbackServer):
    """Loopback fake of Groq's OpenAI-compatible chat completions endpoint.

    Use as a context manager; ``url`` is valid between enter and exit.

    Attributes:
        requests: Parsed JSON body of every chat completions request, in order.
        auth_headers: The ``Authorization`` header of each of those requests (``None``
            if absent), index-aligned with ``requests``.
        replies: The `PlannedReply` served for each of those requests.
        unknown_requests: ``(method, path)`` of requests answered with 404.
        served: Number of chat completions requests answered so far.
    """

    def __init__(self) -> None:
        """Create the fake; it starts serving on `start` or ``with``."""
        super().__init__()
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str | None] = []
        self.replies: list[PlannedReply] = []
        self.unknown_requests: list[tuple[str, str]] = []
        self.served = 0
        self._lock = threading.Lock()

    @property
    def openai_base_url(self) -> str:
        """The OpenAI-style base URL (``<url>/openai/v1``) for OpenAI-compatible clients."""
        return self.url + "/openai/v1"

    def clear(self) -> None:
        """Forget recorded requests (the request counter keeps counting)."""
        with self._lock:
            self.requests.clear()
            self.auth_headers.clear()
            self.replies.clear()
            self.unknown_requests.clear()

    # ------------------------------------------------------------------ protocol

    def handle(self, request: Request) -> Response:
        """Answer one request (see `_dispatch`).

        Args:
            request: The request as received.

        Returns:
            The chat completion, or an OpenAI-style error.
        """
        status, content_type, data = self._dispatch(
            request.method,
            request.path.rstrip("/"),
            request.headers.get("authorization"),
            request.body,
        )
        streamed = content_type.startswith("text/event-stream")
        headers = {"Cache-Control": "no-cache"} if streamed else {}
        return Response(status, content_type, data, headers)

    def _dispatch(
        self, method: str, path: str, authorization: str | None, body: bytes
    ) -> tuple[int, str, bytes]:
        if path != CHAT_COMPLETIONS_PATH or method != "POST":
            with self._lock:
                self.unknown_requests.append((method, path))
            return _error(
                404, f"Unknown request URL: {method} {path}", "invalid_request_error", "unknown_url"
            )
        try:
            request = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(400, f"invalid JSON body: {exc}", "invalid_request_error", "invalid_json")
        if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
            return _error(
                400, "'messages' must be a list", "invalid_request_error", "invalid_request"
            )
        reply = plan_reply(request)
        with self._lock:
            self.served += 1
            n = self.served
            self.requests.append(request)
            self.auth_headers.append(authorization)
            self.replies.append(reply)
        model = str(request.get("model") or "unknown-model")
        tool_calls = [
            {
                "id": f"call_groq_{n}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(reply.tool_calls)
        ]
        prompt_tokens = len(json.dumps(request["messages"])) // 4
        completion_tokens = max(1, len(reply.content + json.dumps(tool_calls)) // 4)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "queue_time": 0.001,
            "prompt_time": 0.001,
            "completion_time": 0.001,
            "total_time": 0.003,
        }
        finish_reason = "tool_calls" if tool_calls else "stop"
        base = {
            "id": f"chatcmpl-fake-{n}",
            "created": _CREATED + n,
            "model": model,
            "system_fingerprint": "fp_fakegroq",
        }
        if request.get("stream"):
            include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
            return (
                200,
                "text/event-stream",
                _sse_body(base, reply.content, tool_calls, finish_reason, usage, n, include_usage),
            )
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if tool_calls:
            message["tool_calls"] = tool_calls
        payload = {
            **base,
            "object": "chat.completion",
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
            ],
            "usage": usage,
            "x_groq": {"id": f"req_fake_{n}"},
        }
        return 200, "application/json", json.dumps(payload).encode()


def _sse_body(
    base: dict[str, Any],
    content: str,
    tool_calls: list[dict[str, Any]],
    finish_reason: str,
    usage: dict[str, Any],
    n: int,
    include_usage: bool,
) -> bytes:
    """Render a streamed completion as SSE ``data:`` events ending in ``[DONE]``."""

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        return {
            **base,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            **extra,
        }

    chunks = [chunk({"role": "assistant", "content": ""}, x_groq={"id": f"req_fake_{n}"})]
    for piece in re.findall(r"\S+\s*|\s+", content):
        chunks.append(chunk({"content": piece}))
    for index, call in enumerate(tool_calls):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        # First delta names the call; the second only continues its arguments, as
        # OpenAI-compatible servers do, so clients must merge deltas by index.
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {
                                "name": call["function"]["name"],
                                "arguments": arguments[:half],
                            },
                        }
                    ]
                }
            )
        )
        chunks.append(
            chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[half:]}}]})
        )
    chunks.append(chunk({}, finish_reason, x_groq={"id": f"req_fake_{n}", "usage": usage}))
    if include_usage:
        chunks.append({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage})
    events = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
    return "".join(events).encode()
