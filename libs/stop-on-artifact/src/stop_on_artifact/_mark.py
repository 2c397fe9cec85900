"""The shared mark: one small tool the model calls beside the calls whose results answer."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, tool

from stop_on_artifact._artifact import completed

MARK_TOOL = "mark_final"
MARKABLE = {"markable": True}  # a shared-mode tool's success: no contract, plain until marked


def mark_tool() -> BaseTool:
    """Return the shared mark, the tool the model calls beside the calls that answer.

    Add it to the agent's tools beside tools adopted with
    `adopt(tool, stops="when_marked", mark="shared")`: one small schema per model call
    instead of an argument in every tool's. Called in the same reply as such calls, it makes
    their successes `completed`; its own result is read only when nothing else of its step
    speaks the contract (a plain result telling the model so), never part of an answer.

    Example:
        It takes no argument:

            >>> from stop_on_artifact import mark_tool
            >>> mark_tool().name, mark_tool().args
            ('mark_final', {})
    """

    @tool(MARK_TOOL)
    def mark_final() -> str:
        """Call beside the calls whose results alone answer the user's whole request."""
        return "This mark ended nothing: no call beside it succeeded in a tool that can be marked."

    return mark_final


def read_marks(turn: Sequence[BaseMessage]) -> list[BaseMessage]:
    """Return `turn` with each markable result of a reply that calls the mark completed."""
    marked: set[str] = set()
    read: list[BaseMessage] = []
    for message in turn:
        if calls := getattr(message, "tool_calls", None):
            marked = {c["id"] for c in calls} if MARK_TOOL in {c["name"] for c in calls} else set()
        if isinstance(message, ToolMessage) and message.tool_call_id in marked:
            if message.artifact == MARKABLE and message.status != "error":
                message = message.model_copy(update={"artifact": completed()})
        read.append(message)
    return read
