"""A spent retry budget's closing lines, as the tests read them: the library's template."""

from __future__ import annotations

import re

from stop_on_artifact.testing import ANSWER_SEPARATOR, RETRY_BUDGET_MESSAGE

_PIECES = re.split(r"\{(\w+)\}", RETRY_BUDGET_MESSAGE)
RETRY_CLOSING = re.compile(
    "".join(
        re.escape(piece) if index % 2 == 0 else r"\d+" if piece == "tries" else r".+?"
        for index, piece in enumerate(_PIECES)
    )
)
"""Any closing line of a spent retry budget in the default text: its place, tool, tries."""


def retry_closing(tool: str, tries: int, where: str = "this request") -> str:
    """The default closing line for one part the retry budget stopped retrying."""
    return RETRY_BUDGET_MESSAGE.format(where=where, tool=tool, tries=tries)


def split_closing(answer: str) -> tuple[str, list[str]]:
    """Split an answer into what precedes its retry-budget closing lines, and those lines."""
    pieces = answer.split(ANSWER_SEPARATOR)
    closing: list[str] = []
    while pieces and RETRY_CLOSING.fullmatch(pieces[-1]):
        closing.insert(0, pieces.pop())
    return ANSWER_SEPARATOR.join(pieces), closing
