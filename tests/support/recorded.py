"""The what-if's mapping for an agent that already runs the library: each result's own artifact."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage


def recorded(message: ToolMessage) -> Any:
    """Return the artifact the tool wrote (the demo app's tools already speak the contract)."""
    return message.artifact
