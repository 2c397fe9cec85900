"""A stable key per tool call, for a side effect that must happen once."""

from __future__ import annotations

import hashlib

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolArg
from langgraph.config import get_config


class InjectedIdempotencyKey(InjectedToolArg):
    """Mark the argument [adopt][stop_on_artifact.adopt] fills with the call's idempotency key.

    Example:
        >>> from typing import Annotated
        >>> from stop_on_artifact import InjectedIdempotencyKey, adopt
        >>> def pay(order: str, key: Annotated[str, InjectedIdempotencyKey]) -> str:
        ...     "Pay for an order; the model never sees `key`."
        ...     return f"paid {order}"
        >>> list(adopt(pay).tool_call_schema.model_json_schema()["properties"])
        ['order']
    """


def idempotency_key(tool_call_id: str, config: RunnableConfig | None = None) -> str:
    """Return the key a tool call's side effect sends its provider (an `Idempotency-Key`).

    One thread, one checkpoint namespace (its task ids left out) and one call id give one key:
    an in-place retry, a resume, a step re-run from its checkpoint and a fork send the same.
    A run with no thread cannot run a step again: its key keeps the task ids, so it is this
    run's alone (an in-place retry keeps it). Outside a run the call id alone names it.

    Args:
        tool_call_id: The tool call's id.
        config: The run's config; by default the running graph's (none outside a run).

    Returns:
        A SHA-256 hex digest: neither the thread id nor the call id shows through it.

    Example:
        >>> from stop_on_artifact import idempotency_key
        >>> run = {"configurable": {"thread_id": "t1", "checkpoint_ns": "tools:7f3a"}}
        >>> fork = {"configurable": {"thread_id": "t1", "checkpoint_ns": "tools:c05e"}}
        >>> idempotency_key("c1", run) == idempotency_key("c1", fork)
        True
    """
    try:
        config = get_config() if config is None else config
    except RuntimeError:  # outside a run
        config = {}
    configurable = config.get("configurable") or {}
    thread, path = (str(configurable.get(k) or "") for k in ("thread_id", "checkpoint_ns"))
    where = "|".join(part.split(":")[0] for part in path.split("|")) if thread else path
    return hashlib.sha256(f"{thread}\0{where}\0{tool_call_id}".encode()).hexdigest()
