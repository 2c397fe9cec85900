r"""Internal: caller text written into Markdown a person reads, escaped and cut short.

Chat front ends render Markdown with a math extension, where the text between two ``$`` is
a formula, so every ``$`` is written ``\$`` (a CommonMark escape every renderer shows as a
plain dollar sign). Linear time on any text.
"""

from __future__ import annotations

_SPECIAL = frozenset("\\`*_[]<>|~#")
"""Characters escaped so caller text cannot add markup, links, HTML or table cells."""


def escape_math(text: str) -> str:
    r"""Return ``text`` with every ``$`` that is not already escaped written ``\$``."""
    pieces = text.split("$")
    out = [pieces[0]]
    for before, after in zip(pieces, pieces[1:], strict=False):
        backslashes = len(before) - len(before.rstrip("\\"))
        out.append("$" if backslashes % 2 else "\\$")
        out.append(after)
    return "".join(out)


def excerpt(text: str, limit: int) -> str:
    """Return caller text on one line, cut to ``limit`` characters, its markup escaped."""
    flat = " ".join(text.split())
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return escape_math("".join(f"\\{char}" if char in _SPECIAL else char for char in flat))
