"""What the app relies on in ``langgraph_api`` (the ``langgraph dev`` server) beyond its API.

- ``scope["error_detail"]``: langgraph-api's validation error handler stores the JSON-schema
  message (which quotes the caller's value) under this key of the ASGI scope, and its access
  log middleware writes it to the server log after the response. :func:`replace_log_detail`
  replaces it with a text that names the field only, on a scope that already holds it.

``tests/unit_tests/test_frameworks.py`` fails if the handler stops setting the key or the
access log stops writing it.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

ERROR_DETAIL_KEY = "error_detail"
"""The ASGI scope key langgraph-api's access log reads the error text from."""


def replace_log_detail(scope: MutableMapping[str, Any], detail: str) -> None:
    """Make the access log write ``detail`` for this request, if it writes one at all.

    Args:
        scope: The request's ASGI scope (the same object the server's middleware holds).
        detail: The text to log; it must not quote what the caller sent.
    """
    if ERROR_DETAIL_KEY in scope:
        scope[ERROR_DETAIL_KEY] = detail
