"""Which knowledge-base topics a text names, by name or alias, in the order it names them.

A topic is named by its name (``checkpointer``) or one of its page's ``aliases``: other
forms and the words Spanish, German and French speakers use (``interrupciones``,
``Unterbrechungen``, ``points de contrôle``). A name matches at the start of a word, or of a
camel-case part (``InMemoryStore`` names ``store``), and may run on (``checkpointers``);
case and accents do not matter (``interrupcion`` is ``interrupción``). Where two names
overlap, the one that starts first wins, then the longer (``vector store`` is one topic, not
``store``). The scan is linear in the text's length: one ``str.find`` pass per name.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Mapping
from typing import Any, NamedTuple


def _fold_table() -> dict[int, str]:
    """Each accented Latin letter mapped to its base letter: ``é`` to ``e``, one for one."""
    table = {}
    for code in range(0xC0, 0x250):
        decomposed = unicodedata.normalize("NFD", chr(code))
        if len(decomposed) > 1 and all(unicodedata.combining(c) for c in decomposed[1:]):
            table[code] = decomposed[0]
    return table


_FOLD = _fold_table()


def fold(text: str) -> str:
    """Lower-case ``text`` and drop accents, keeping its length (positions stay valid).

    Args:
        text: Any text.

    Returns:
        The folded text, as long as ``text``; a character whose lower case is longer
        (``İ``) is kept as it is.
    """
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    return lowered if lowered.isascii() else lowered.translate(_FOLD)


class Mention(NamedTuple):
    """One place a text names a topic."""

    start: int
    """Where the name starts in the text."""
    end: int
    """Where it ends (the name's own end, not the word's)."""
    topic: str
    """The topic's name in the knowledge base."""


class TopicIndex:
    """The names and aliases of a knowledge base's topics, ready to find in a text."""

    def __init__(self, topics: Mapping[str, Any] | Collection[str]) -> None:
        """Index topic names and, for a knowledge base, each page's ``aliases``.

        Args:
            topics: The knowledge base (topic name -> page), or topic names alone.
        """
        names: dict[str, str] = {}
        for topic in topics:
            page = topics[topic] if isinstance(topics, Mapping) else None
            aliases = page.get("aliases", []) if isinstance(page, Mapping) else []
            for name in (topic, *aliases):
                folded = fold(str(name)).strip()
                if folded:
                    names.setdefault(folded, topic)
        self._names = names

    def __bool__(self) -> bool:
        """Whether the index names any topic."""
        return bool(self._names)

    def mentions(self, text: str) -> list[Mention]:
        """Every topic ``text`` names, in order, overlapping names resolved as above.

        Args:
            text: Any text; it is folded here.

        Returns:
            The mentions, by start.
        """
        folded = fold(text)
        found = []
        for name, topic in self._names.items():
            at = folded.find(name)
            while at != -1:
                if _word_start(text, folded, at):
                    found.append((at, -len(name), topic))
                at = folded.find(name, at + 1)
        found.sort()
        mentions: list[Mention] = []
        for start, length, topic in found:
            if not mentions or start >= mentions[-1].end:
                mentions.append(Mention(start, start - length, topic))
        return mentions


def _word_start(text: str, folded: str, at: int) -> bool:
    """Whether position ``at`` starts a word or a camel-case part of one."""
    if at == 0 or not folded[at - 1].isalnum():
        return True
    return text[at].isupper() and text[at - 1].islower()
