"""Caller text inside tool content: escaped so it renders as plain Markdown text."""

from __future__ import annotations

_SPECIAL = frozenset("\\`*_[]<>|~#")
"""Characters escaped so caller text cannot add markup, links, HTML or table cells."""

QUOTE_CHARS = 80
"""Longest caller text quoted in a label (a label names the part, it does not repeat it)."""


def plain(text: str) -> str:
    """Return ``text`` on one line with Markdown's special characters escaped.

    Args:
        text: Text that came from a caller (an item name, a query).

    Returns:
        The text, whitespace runs collapsed to one space, safe inside a line or a table cell.
    """
    flat = " ".join(text.split())
    return "".join(f"\\{char}" if char in _SPECIAL else char for char in flat)


def label(text: str) -> str:
    """Return a short bold first line naming the part of the question a text answers.

    Args:
        text: The label, possibly holding caller text (quoted up to :data:`QUOTE_CHARS`).

    Returns:
        ``**<text>**`` with the text escaped by :func:`plain`, cut with an ellipsis.
    """
    flat = " ".join(text.split())
    if len(flat) > QUOTE_CHARS:
        flat = flat[: QUOTE_CHARS - 1].rstrip() + "…"
    return f"**{plain(flat)}**"
