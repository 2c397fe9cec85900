"""A loopback OpenAI-compatible chat completions server with a scripted policy, for tests.

`ScriptedOpenAI` is a `tests.support.loopback.LoopbackServer` (``127.0.0.1``, a free
port) that answers ``POST /v1/chat/completions`` (and Groq's
``/openai/v1/chat/completions``) without streaming, as ``ChatOpenAI`` and ``ChatGroq`` read
it. It stands in for a local vLLM or Ollama server under the AgentDojo benchmark's
``--model URL#name``; it imports nothing of AgentDojo.

Its policy, decided from the request alone:

* The first ``rate_limited`` requests are answered ``429`` with ``Retry-After: 0.01``.
* A request whose first user message contains ``failing`` is answered ``400`` (a provider
  error no client retries).
* A request whose first user message contains ``malformed`` (a substring, case-insensitive)
  answers a call to the first offered tool whose arguments are not JSON.
* Otherwise, when the last message is the user's and tools are offered: one call to
  ``first_tool`` (or the first offered tool) with no arguments, marked
  (``{"final": true}``) when the tool declares that argument.
* Otherwise (after a tool result, or with no tools): the answer ``"Done."``.

Usage is reported as a provider does (``usage.prompt_tokens`` and ``completion_tokens``).
"""

from __future__ import annotations

import json
import threading
from typing import Any

from tests.support.loopback import LoopbackServer, Request, Response

__all__ = ["ScriptedOpenAI"]

PATHS = ("/v1/chat/completions", "/openai/v1/chat/completions")
MARK = "final"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def _prompt(payload: dict[str, Any]) -> str:
    messages = [m for m in payload.get("messages") or [] if isinstance(m, dict)]
    return next((_text(m.get("content")) for m in messages if m.get("role") == "user"), "")


class ScriptedOpenAI(LoopbackServer):
    """Loopback OpenAI-compatible chat completions with the policy above.

    Attributes:
        requests: Parsed JSON body of every chat completions request answered ``200``.
        limited: How many requests were answered ``429``.
        failed: The first user message of every request answered ``400``.
    """

    def __init__(
        self,
        *,
        rate_limited: int = 0,
        first_tool: str | None = None,
        malformed: str = "",
        failing: str = "",
        key: str | None = None,
    ) -> None:
        """Create the server; it starts serving on ``with``.

        Args:
            rate_limited: How many of the first requests get ``429``.
            first_tool: The tool the first call names (the first offered tool if absent).
            malformed: Prompts containing this text get a call whose arguments are not JSON
                (none when empty).
            failing: Prompts containing this text get ``400`` (none when empty).
            key: The only API key accepted (``Authorization: Bearer <key>``); any other
                gets ``401``, as a provider answers a wrong key. Any key when None.
        """
        super().__init__()
        self.rate_limited = rate_limited
        self.first_tool = first_tool
        self.malformed = malformed.lower()
        self.failing = failing.lower()
        self.key = key
        self.refused = 0
        self.failed: list[str] = []
        self.requests: list[dict[str, Any]] = []
        self.limited = 0
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (``<url>/v1``)."""
        return self.url + "/v1"

    def handle(self, request: Request) -> Response:
        """Answer one request.

        Args:
            request: The request as received.

        Returns:
            A chat completion, a 429, or a 404 for any other path.
        """
        if request.method != "POST" or request.path.rstrip("/") not in PATHS:
            return Response(404, "application/json", b'{"error": {"message": "not found"}}')
        with self._lock:
            if (
                self.key is not None
                and request.headers.get("authorization") != f"Bearer {self.key}"
            ):
                self.refused += 1
                body = b'{"error": {"message": "invalid api key", "type": "invalid_request_error"}}'
                return Response(401, "application/json", body)
            if self.limited < self.rate_limited:
                self.limited += 1
                body = b'{"error": {"message": "rate limited", "type": "rate_limit"}}'
                return Response(429, "application/json", body, {"Retry-After": "0.01"})
            payload = json.loads(request.body)
            prompt = _prompt(payload)
            if self.failing and self.failing in prompt.lower():
                self.failed.append(prompt)
                body = b'{"error": {"message": "bad request", "type": "invalid_request_error"}}'
                return Response(400, "application/json", body)
            self.requests.append(payload)
            n = len(self.requests)
        message = self._reply(payload, n)
        completion = {
            "id": f"chatcmpl-scripted-{n}",
            "object": "chat.completion",
            "created": 1_700_000_000 + n,
            "model": str(payload.get("model") or "scripted"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": len(json.dumps(payload)) // 4,
                "completion_tokens": 10,
                "total_tokens": len(json.dumps(payload)) // 4 + 10,
            },
        }
        return Response(200, "application/json", json.dumps(completion).encode())

    def _reply(self, payload: dict[str, Any], n: int) -> dict[str, Any]:
        messages = [m for m in payload.get("messages") or [] if isinstance(m, dict)]
        tools = {
            t["function"]["name"]: t["function"]
            for t in payload.get("tools") or []
            if isinstance(t, dict) and "function" in t
        }
        prompt = _prompt(payload)
        last = messages[-1].get("role") if messages else None
        if not tools or last != "user":
            return {"role": "assistant", "content": "Done."}
        name = self.first_tool if self.first_tool in tools else next(iter(tools))
        if self.malformed and self.malformed in prompt.lower():
            arguments = "{not json"
        else:
            properties = (tools[name].get("parameters") or {}).get("properties") or {}
            arguments = json.dumps({MARK: True} if MARK in properties else {})
        call = {
            "id": f"call_scripted_{n}",
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
