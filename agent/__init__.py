"""Per-call tool stopping for LangGraph agents, decided from the tool's artifact."""

from agent.legacy import graph as legacy
from agent.middleware import graph as middleware

__all__ = ["legacy", "middleware"]
