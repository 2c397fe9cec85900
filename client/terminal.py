r"""How ``python -m client`` shows an answer: rendered on a terminal, plain text in a pipe.

An answer is Markdown written for a chat page: headings, tables, bold labels, and caller
text escaped so it adds no markup (``a \*\*gaming chair\*\*``, ``\|``, ``\$``; see
:mod:`agent.tools.markdown`). On a terminal (standard output a TTY) :func:`show` renders it
with ``rich``'s Markdown: a heading, a table with its cells, bold text, no backslashes.

Anywhere else (a pipe, a file) it prints :func:`plain_text`: the Markdown source as the
server wrote it, each backslash escape written as the character it escapes (``\*`` as
``*``, ``\$`` as ``$``), except inside code spans and fenced code blocks, where a backslash
is text. Nothing else changes: ``**bold**``, ``#`` and ``|`` table rows stay as written, so
a script reads the answer's words and structure, and ``rich`` is not even imported.
"""

from __future__ import annotations

import re
import string
from typing import TextIO

_ESCAPABLE = frozenset(string.punctuation)
"""What a CommonMark backslash escapes: any ASCII punctuation character."""
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
"""How a fenced code block's opening or closing line starts: 3 or more backticks or tildes."""


def plain_text(markdown: str) -> str:
    r"""Return Markdown as plain text: backslash escapes undone outside code.

    A backtick run opens a code span that the next run of the same length on that line
    closes (an unclosed one runs to the line's end); a fenced block runs from its opening
    fence to a closing one of the same character, at least as long. Linear time.

    Args:
        markdown: An answer, a refusal or an approval description.

    Returns:
        The text with ``\X`` written ``X`` for each ASCII punctuation ``X`` outside code.
    """
    lines = markdown.split("\n")
    fence = ""
    for index, line in enumerate(lines):
        marker = _FENCE.match(line)
        if fence:
            run = marker.group(1) if marker else ""
            rest = line[marker.end() :] if marker else ""
            if run[:1] == fence[0] and len(run) >= len(fence) and not rest.strip():
                fence = ""  # the closing fence
            continue
        if marker and not (marker.group(1)[0] == "`" and "`" in line[marker.end() :]):
            fence = marker.group(1)  # a backtick fence's info string holds no backtick
            continue
        if "\\" in line:
            lines[index] = _unescape(line)
    return "\n".join(lines)


def _unescape(line: str) -> str:
    out: list[str] = []
    start = index = 0
    span = 0  # length of the backtick run that opened the code span we are in; 0: none
    end = len(line)
    while index < end:
        char = line[index]
        if char == "\\" and not span and index + 1 < end and line[index + 1] in _ESCAPABLE:
            out.append(line[start:index])
            start = index + 1  # keep the escaped character, drop the backslash
            index += 2
        elif char == "`":
            run = index
            while index < end and line[index] == "`":
                index += 1
            length = index - run
            span = length if not span else (0 if length == span else span)
        else:
            index += 1
    out.append(line[start:])
    return "".join(out)


def show(markdown: str, out: TextIO) -> None:
    """Print an answer: rendered Markdown on a terminal, :func:`plain_text` elsewhere.

    Args:
        markdown: The answer as the server wrote it.
        out: Where to print; rendered when it is a TTY.
    """
    if not _is_terminal(out):
        print(plain_text(markdown), file=out)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    Console(file=out).print(Markdown(markdown))


def _is_terminal(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False  # no isatty, or a closed file
