"""The langsmith client every trace of this project goes through.

:func:`trace_client` builds a ``langsmith.Client`` whose ``hide_inputs`` /
``hide_outputs`` serialize a run's payload to JSON and redact its content (with
``AGENT_REDACT_TRACES=secrets``, keep it and mask its secrets; with ``false``, only sanitize
artifacts), and whose ``hide_metadata`` drops anything that looks like a credential.
:func:`configure_tracing` makes it the process-wide default when tracing is on, so runs
served by ``langgraph dev`` use it; both graph modules call it when they are imported.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import langsmith
from langchain_core.tracers.langchain import get_client

from agent.frameworks.langsmith import ErrorHidingClient
from agent.tracing.allowlist import scrub_metadata
from agent.tracing.redaction import (
    RedactionMode,
    mask_error,
    mask_payload_secrets,
    redact,
    redact_error,
    redaction_mode,
    sanitize_artifacts,
)

TRACING_VARS = ("LANGSMITH_TRACING", "LANGSMITH_TRACING_V2", "LANGCHAIN_TRACING_V2")
"""Any of these set to ``true`` turns tracing on (as in langsmith itself)."""


class RedactingClient(ErrorHidingClient):
    """A ``langsmith.Client`` that also redacts run errors down to the exception type.

    A tool's exception text can quote content or a key (an HTTP error echoing a URL); no
    public hook of langsmith 0.15 sees run errors alone, so this goes through
    :class:`agent.frameworks.langsmith.ErrorHidingClient`.
    """

    def hide_error(self, error: Any) -> Any:
        """Return the error redacted down to the exception type."""
        return redact_error(error)


class SecretMaskingClient(ErrorHidingClient):
    """A ``langsmith.Client`` that masks the secrets in run errors and keeps the rest.

    The ``secrets`` mode's twin of :class:`RedactingClient`.
    """

    def hide_error(self, error: Any) -> Any:
        """Return the error with its secrets masked."""
        return mask_error(error)


def tracing_requested(environ: Mapping[str, str] | None = None) -> bool:
    """Return True when the environment turns LangSmith tracing on.

    Args:
        environ: Where to read; ``os.environ`` by default (read directly: langsmith
            caches what it reads).

    Returns:
        Whether any of :data:`TRACING_VARS` is ``true``.
    """
    env = os.environ if environ is None else environ
    return any(env.get(name, "").strip().lower() == "true" for name in TRACING_VARS)


_CLIENTS: dict[RedactionMode, tuple[type[langsmith.Client], Any]] = {
    "full": (RedactingClient, redact),
    "secrets": (SecretMaskingClient, mask_payload_secrets),
    "off": (langsmith.Client, sanitize_artifacts),
}


def trace_client(
    *,
    redact_content: bool | None = None,
    mode: RedactionMode | None = None,
    **kwargs: Any,
) -> langsmith.Client:
    """Build the client traces should go through.

    Args:
        redact_content: True for ``mode="full"``, False for ``mode="off"``.
        mode: ``"full"`` (structure only), ``"secrets"`` (content with secrets masked) or
            ``"off"`` (content); None, with ``redact_content`` None too, reads
            ``AGENT_REDACT_TRACES`` (default ``full``).
        **kwargs: Passed to ``langsmith.Client`` (for example ``api_url``, ``api_key``).

    Returns:
        A :class:`RedactingClient` (full), a :class:`SecretMaskingClient` (secrets), or a
        plain ``langsmith.Client`` (off); all three sanitize artifacts and metadata.

    Raises:
        ValueError: If ``AGENT_REDACT_TRACES`` holds an unknown value.
    """
    if mode is None:
        if redact_content is None:
            mode = redaction_mode()
        else:
            mode = "full" if redact_content else "off"
    client_class, hide = _CLIENTS[mode]
    return client_class(
        hide_inputs=hide,
        hide_outputs=hide,
        hide_metadata=scrub_metadata,
        **kwargs,
    )


_configured: tuple[tuple[str | None, RedactionMode], langsmith.Client] | None = None


def configure_tracing() -> langsmith.Client | None:
    """Make :func:`trace_client` the process-wide langsmith client, if tracing is on.

    Call it before any run starts (the graph modules do, at import). Runs that bring their
    own client through ``langsmith.tracing_context(client=...)`` keep theirs. Calling it
    again with the same settings keeps the installed client.

    Returns:
        The installed client, or None when tracing is off (nothing is changed).

    Raises:
        ValueError: If ``AGENT_REDACT_TRACES`` holds an unknown value.
    """
    global _configured
    if not tracing_requested():
        return None
    settings = (os.environ.get("LANGSMITH_ENDPOINT"), redaction_mode())
    if _configured is not None and _configured[0] == settings and get_client() is _configured[1]:
        return _configured[1]
    client = trace_client(mode=settings[1])
    langsmith.configure(client=client)
    _configured = (settings, client)
    return client
