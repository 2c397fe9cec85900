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


def excerpt(text: str, limit: int = QUOTE_CHARS) -> str:
    """Return caller text on one line, cut to ``limit`` characters, escaped by :func:`plain`.

    Args:
        text: Text that came from a caller.
        limit: Most characters kept before escaping; a longer text ends with an ellipsis.

    Returns:
        The escaped excerpt.
    """
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return plain(flat)


def label(text: str) -> str:
    """Return a short bold first line naming the part of the question a text answers.

    Args:
        text: The label, possibly holding caller text (quoted up to :data:`QUOTE_CHARS`).

    Returns:
        ``**<text>**`` with the text escaped by :func:`plain`, cut with an ellipsis.
    """
    return f"**{excerpt(text)}**"
