"""Which knowledge-base topics a text names, by name or alias, in the order it names them.

A topic is named by its name (``checkpointer``) or one of its page's ``aliases``: other
forms and the words Spanish, German and French speakers use (``interrupciones``,
``Unterbrechungen``, ``points de contrôle``). A name matches at the start of a word, or of a
camel-case part (``InMemoryStore`` names ``store``), and may run on (``checkpointers``);
case and accents do not matter (``interrupcion`` is ``interrupción``). A name is also found
by its words' common forms: :func:`stem` reads ``stream``, ``streams``, ``streamed`` and
``streaming`` alike, so ``stream tokens`` names ``streaming`` and ``a traced run`` names
``tracing``. Where two names overlap, the one that starts first wins, then the longer
(``vector store`` is one topic, not ``store``). The scan is linear in the text's length: one
``str.find`` pass per name, then one pass over the text's words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Mapping
from typing import Any, NamedTuple

_WORD = re.compile(r"[^\W_]+")
"""A run of letters and digits: one word of a name or of a text."""
_JOINS_WORDS = frozenset(" -_'\t\u2019")
"""What may stand between two words of one name: ``human in the loop``, ``stream-mode``."""
_MIN_STEM = 3
"""Shortest stem a suffix is cut down to: ``uses`` is ``us``, ``is`` stays ``is``."""
_NO_UNDOUBLE = frozenset("lsz")
"""Doubled letters a cut keeps: ``call`` from ``called``, ``pass`` from ``passing``."""


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


def stem(word: str) -> str:
    """Return a word's stem: its common English forms cut to one (a small, general stemmer).

    Plural and third-person ``-s`` / ``-es`` / ``-ies``, ``-ing`` and ``-ed`` are cut, then a
    doubled final consonant undoubled and a final ``e`` dropped, so ``stream``, ``streams``,
    ``streamed`` and ``streaming`` are all ``stream``; ``trace``, ``traced`` and ``tracing``
    are ``trac``; ``embeds``, ``embedded`` and ``embeddings`` are ``embed``; ``queries`` is
    ``query``. A cut never leaves fewer than three letters (``is``, ``uses`` and ``thing`` keep
    their form), nor ``-ed`` fewer than four (``embed``, ``need`` and ``red`` keep theirs).
    Each step looks at the word's end once: linear in the word's length.

    Args:
        word: One folded word (lower case, no accents).

    Returns:
        The stem; the word itself when no rule applies.
    """
    if word.endswith("'s"):
        word = word[:-2]
    plural = True
    if word.endswith("ies") and len(word) > _MIN_STEM + 2:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "shes", "ches", "xes", "zes")) and len(word) > _MIN_STEM + 2:
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > _MIN_STEM + 1:
        word = word[:-1]
    else:
        plural = False
    # "-ings" is a form ("embeddings"), "-eds" is not: after a plural, only "-ing" is cut.
    for suffix, shortest in (("ing", _MIN_STEM), ("ed", _MIN_STEM + 1)):
        if plural and suffix == "ed":
            break
        if word.endswith(suffix) and len(word) - len(suffix) >= shortest:
            word = word[: -len(suffix)]
            last = word[-1]
            if last == word[-2] and last not in _NO_UNDOUBLE and last not in "aeiou":
                word = word[:-1]  # "embedd" from "embedded" is "embed"
            break
    if word.endswith("e") and len(word) > _MIN_STEM:
        word = word[:-1]
    return word


def _stems(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, stem)`` for each word of a folded text, in order."""
    return [(found.start(), found.end(), stem(found.group())) for found in _WORD.finditer(text)]


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
        # Each name's word stems, found by its first stem: "stream mode" under "stream".
        by_stem: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        for name, topic in names.items():
            stems = tuple(found[2] for found in _stems(name))
            if stems and (stems, topic) not in by_stem.get(stems[0], []):
                by_stem.setdefault(stems[0], []).append((stems, topic))
        self._by_stem = by_stem

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
        found.extend(self._by_form(folded))
        found.sort()
        mentions: list[Mention] = []
        for start, length, topic in found:
            if not mentions or start >= mentions[-1].end:
                mentions.append(Mention(start, start - length, topic))
        return mentions

    def _by_form(self, folded: str) -> list[tuple[int, int, str]]:
        """``(start, -length, topic)`` where the text's words are a name's words, by stem.

        The words of a name of several words must follow one another with only spaces,
        hyphens, underscores or apostrophes between them. Each word is compared with the few
        names that start with its stem: one pass over the text's words.
        """
        words = _stems(folded)
        found = []
        for i, (start, _, first) in enumerate(words):
            for stems, topic in self._by_stem.get(first, ()):
                last = i + len(stems) - 1
                if last >= len(words) or any(
                    words[i + k][2] != stems[k]
                    or not _JOINS_WORDS.issuperset(folded[words[i + k - 1][1] : words[i + k][0]])
                    for k in range(1, len(stems))
                ):
                    continue
                found.append((start, start - words[last][1], topic))
        return found


def _word_start(text: str, folded: str, at: int) -> bool:
    """Whether position ``at`` starts a word or a camel-case part of one."""
    if at == 0 or not folded[at - 1].isalnum():
        return True
    return text[at].isupper() and text[at - 1].islower()
