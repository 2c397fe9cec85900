r"""Text written for a person, as Markdown: caller text escaped, math kept from opening.

Chat front ends render Markdown with a math extension (Agent Chat UI uses remark-math),
where the text between two ``$`` is a formula: "for $900.00; the limit is $500.00" loses
both amounts. :func:`escape_math` writes each ``$`` as ``\$``, a CommonMark backslash
escape that every renderer shows as a plain dollar sign.
"""

from __future__ import annotations

_SPECIAL = frozenset("\\`*_[]<>|~#")
"""Characters escaped so caller text cannot add markup, links, HTML or table cells."""

QUOTE_CHARS = 80
"""Longest caller text quoted in a label (a label names the part, it does not repeat it)."""


def escape_math(text: str) -> str:
    r"""Return ``text`` with every ``$`` that is not already escaped written ``\$``.

    A ``$`` after an odd number of backslashes is escaped already and stays as it is, so
    escaping twice changes nothing. Apply it to a text as a person reads it, never inside a
    code span or block (there ``\$`` is shown as it is). Linear time on any text.

    Args:
        text: Markdown written for a person (a receipt, a refusal, a description).

    Returns:
        The text, rendering every dollar sign as a plain ``$`` where Markdown has math.
    """
    pieces = text.split("$")
    out = [pieces[0]]
    for before, after in zip(pieces, pieces[1:], strict=False):
        backslashes = len(before) - len(before.rstrip("\\"))
        out.append("$" if backslashes % 2 else "\\$")
        out.append(after)
    return "".join(out)


def plain(text: str) -> str:
    """Return ``text`` on one line with Markdown's special characters escaped.

    Args:
        text: Text that came from a caller (an item name, a query).

    Returns:
        The text, whitespace runs collapsed to one space, safe inside a line or a table cell;
        a ``$`` in it opens no math (see :func:`escape_math`).
    """
    flat = " ".join(text.split())
    return escape_math("".join(f"\\{char}" if char in _SPECIAL else char for char in flat))


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
