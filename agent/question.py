"""Reading a user's question into the things it asks, for the offline model.

A question is read by what it names: the knowledge-base topics (by name or alias, in
English, Spanish, German or French: :mod:`agent.tools.topics`) and the items with a price.
Words are compared folded (lower case, no accents); the word lists are
:mod:`agent.vocabulary`'s. It is cut in two passes. ``;`` and line breaks always separate
parts. Inside what is left, a comma, a sentence end (``.``, ``?``, ``!``) or a joining word
(``and``, ``&``, ``plus``, ``also``, ``then``, ``as well as``, ``y``, ``und``, ``et``...)
separates two parts only where the text says a new part begins:

1. the left side is a purchase whose price ends it (``buy a laptop for 300, ...``,
   ``I'd like a laptop for $300, ...``);
2. the right side starts a new request: ``buy`` (``compra``, ``kaufe``, ``achète``), a
   question word (``what``, ``how``, ``cómo``, ``wie``, ``comment``, a ``¿``...), a request
   (``tell``, ``explain``, ``I``, ``dime``, ...) or a bound tool's ``<tool>:``, and, unless it
   is ``buy`` or a tool, it does not point back with ``it``, ``that``, ``eso``, ``er``,
   ``ça`` and the like and is more than two words or names a topic (``... and how does it
   work`` and ``... y cómo funciona`` stay one question);
3. ``also`` follows a comma, a sentence end or ``and`` (``..., and also ...``);
4. both sides name a knowledge-base topic and neither is a purchase
   (``checkpointer and interrupts``);
5. one side names a knowledge-base topic and the other, not pointing back, names something
   else (a word beyond :data:`~agent.vocabulary.NAMES_NOTHING` and the other word lists),
   and neither is a purchase: ``first sharding, then checkpointers``, ``sharding and then
   checkpointers``, ``after sharding, checkpointers``, ``before checkpointers, explain
   sharding``. Searched whole, the topic would answer and the other side vanish; apart, it
   is searched and named as not found. Not when the topic's side only tells (``I use a
   checkpointer, and my app is slow. Why?``): apart, it would not be searched.

Anywhere else the words stay inside one part, so an item (``buy salt and pepper for 5``) or
a topic (``what is a checkpointer and how does it work``, ``human-in-the-loop, explained``)
is read whole. So every clause that names something is searched (or bought) or named as
not found: none is answered only through another clause's topic. A part is then:

- ``<tool>: <text>`` for a bound tool (it runs to the end of its ``;`` part or line);
- a purchase, when it holds ``buy`` or its Spanish, German or French form (a question-word
  question that holds one but no price, ``what should I buy``, is a search), or a want
  (``like``, ``want``, ``need``, ``order``, ``quiero``, ``möchte``, ``voudrais``...) that a
  price ends: the item is the text between the last such word and the first price word
  (``for``, ``at``, ``por``, ``für``, ``pour``) before an amount, ``300``, ``$300``,
  ``300.00``, ``$1,200`` or ``4,50``, in dollars unless it names another currency
  (``45 euros``, ``€45``, ``45€``, ``EUR 45``, ``£45``: :data:`Part.currency`, which the
  checkout names and does not charge); a price ``each`` (``cada uno``, ``je``, ``chacun``)
  charges the item's count times it (``3 coffees for 4.50 each`` is 13.50), and with no
  count it asks;
- a purchase without a verb, when an earlier part was a purchase and it names its own
  price (``... and a mouse for 20``), or when it follows a purchase after a comma or a
  connecting word and has no price (``buy a laptop for 300 and a mouse``: the mouse has no
  price, which :data:`Part.problem` says);
- a search otherwise, its text as written; a search that names several topics is one
  search per topic, cut after each (``¿Cómo funcionan los checkpointers y las
  interrupciones?``, ``checkpointer or store?``).

A search that only tells (it starts with ``I``, ``we``, ``it``, ``my``, ``estoy``, ``ich``,
``je``..., holds no ``?`` and no word that asks, such as ``want``, ``need``, ``understand``)
sets the context: it is not searched when another part asks something. A ``;`` part or line
of more than :data:`MAX_SPLIT_WORDS` words (a pasted page, not a question a person types)
is read whole, and a question of more than :data:`MAX_PARTS` parts is not done: the answer
asks for fewer. Every scan here is linear in the question's length: words are read once,
and each lookup over a stretch of words is a bisection into positions found once.
"""

from __future__ import annotations

import dataclasses
import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate
from operator import methodcaller, ne
from typing import Any, Literal

from agent import vocabulary as words_of
from agent.tools.checkout import price_text
from agent.tools.markdown import escape_math, excerpt
from agent.tools.topics import Mention, TopicIndex, fold

MAX_PARTS = 32
"""Most parts one question may ask; a longer one is answered with a request to split it."""

MAX_SPLIT_WORDS = 1000
"""Longest ``;`` part or line, in words, that commas and connecting words may cut."""

Kind = Literal["purchase", "search", "tool"]
Problem = Literal["no_price", "no_item", "extra", "unclear", "no_tool", "no_count"]
"""Why a part cannot be done as written.

``no_price``: a purchase without a readable price. ``no_item``: a price with nothing to buy.
``extra``: words after a purchase's price. ``unclear``: a bare name after a purchase, with no
price (to buy or to look up?). ``no_tool``: no bound tool can do it. ``no_count``: a price
``each`` with no count of items before the item.
"""

_SPACES = re.compile(r"(\s+)")
_TOOL_NAME = re.compile(r"[A-Za-z_][\w-]*")
_MARKS = ",.?!"
_OPENING_MARKS = "\u00bf\u00a1"  # ¿ ¡
_VERBS = words_of.BUY_VERBS | words_of.WANT_VERBS
_TRAILING = words_of.FILLERS | words_of.JOINING
_AFTER_PRICE = _TRAILING | words_of.EACH | words_of.EACH_HELPERS
_FILLER_STEPS = 3
_MAX_COUNT_DIGITS = 6
_FRAGMENT_SKIP = words_of.JOINING | frozenset({"or", "o", "u", "oder", "ou", "vs", "versus"})
"""Words a topic's own search does not start with: ``checkpointer or store`` gives ``store``."""
_CREDENTIAL_WORDS = frozenset({"authorization", "bearer"})
_LONGEST_NAME = 40  # characters: longer, a word is pasted data, not a name
_NAME_NOTHING = (
    words_of.NAMES_NOTHING
    | words_of.QUESTION_WORDS
    | words_of.OPENERS
    | words_of.BACK_REFERENCES
    | words_of.FILLERS
    | words_of.GREETINGS
    | words_of.SUBJECTS
    | words_of.ASKING
    | words_of.WANT_VERBS
    | _FRAGMENT_SKIP
)
"""Words that name nothing a search could look up: what is left of a clause names something."""


@dataclass(frozen=True)
class Part:
    """One thing a question asks, as the offline model reads it."""

    kind: Kind
    text: str
    """The part as written, stripped."""
    item: str = ""
    """A purchase's item."""
    amount: float | None = None
    """A purchase's price, the total for all its items; None when none could be read."""
    tool: str = ""
    """The bound tool a ``<tool>: <text>`` part names."""
    argument: str = ""
    """The text a ``<tool>: <text>`` part passes."""
    rest: str = ""
    """Words after a purchase's price that were not read."""
    problem: Problem | None = None
    """Why the part cannot be done as written; None when it can."""
    quantity: int = 1
    """How many items a purchase at a unit price buys (``3 coffees for 4.50 each``)."""
    unit: float | None = None
    """The price of one item, when the price was written ``each``; None otherwise."""
    currency: str = "USD"
    """The price's currency, an ISO 4217 code: ``EUR`` for ``45 euros``, ``€45``, ``EUR 45``."""


@dataclass(frozen=True)
class Reading:
    """A question read into parts, in the question's order."""

    parts: tuple[Part, ...] = ()
    too_many: bool = False
    """The question asks more than :data:`MAX_PARTS` things; reading stopped there."""

    @property
    def clear(self) -> bool:
        """Whether every part can be done as written."""
        return not self.too_many and all(part.problem is None for part in self.parts)


def amount(word: str) -> float | None:
    """Read a price: ``300``, ``$300``, ``300.00``, ``$1,200``, ``4,50`` (a decimal comma).

    A dot before exactly three digits (``1.200``: a thousand, or one and a fifth?) and
    commas that do not group thousands are not read.

    Args:
        word: One word, without trailing punctuation.

    Returns:
        The amount, or None when the word is not a finite price.
    """
    digits = word[1:] if word.startswith("$") else word
    if not (digits[:1].isdigit() and digits.isascii()):
        return None
    whole, comma, tail = digits.rpartition(",")
    if comma and len(tail) in (1, 2) and whole.isdigit():
        return float(f"{whole}.{tail}")  # 4,50
    whole, dot, cents = digits.partition(".")
    groups = whole.split(",")
    if not all(group.isdigit() for group in groups):
        return None
    if len(groups) > 1 and (len(groups[0]) > 3 or any(len(g) != 3 for g in groups[1:])):
        return None
    if dot and not (cents.isdigit() and len(cents) != 3):
        return None
    bare = "".join(groups)
    value = float(f"{bare}.{cents}" if dot else bare)
    return value if math.isfinite(value) else None


_SYMBOLS = "".join(symbol for symbol in words_of.CURRENCIES if len(symbol) == 1)


def money(word: str) -> tuple[float, str] | None:
    """Read a price and the currency its symbol names: ``$300``, ``300``, ``€45``, ``45€``.

    Args:
        word: One word, folded, without trailing punctuation.

    Returns:
        ``(amount, code)`` (``USD`` without a symbol), or None when it is no price.
    """
    code = "USD"
    if word[:1] in _SYMBOLS or word[-1:] in _SYMBOLS:
        symbol = word[0] if word[:1] in _SYMBOLS else word[-1]
        code, word = words_of.CURRENCIES[symbol], word.strip(symbol)
    value = amount(word)
    return None if value is None else (value, code)


def _currency(word: str) -> str | None:
    """The ISO 4217 code a currency word or symbol names (``euros``: ``EUR``), or None."""
    code = words_of.CURRENCIES.get(word)
    return None if code is None else code or word.upper()


def _money_after(words: list[str], index: int) -> tuple[float, str, int] | None:
    """Read the price after the price word at ``index``: ``45``, ``€45``, ``EUR 45``, ``45 euros``.

    Returns:
        ``(amount, code, last)``, ``last`` the price's last word, or None when no price follows.
    """
    at = index + 1
    named = _currency(words[at]) if at + 1 < len(words) else None
    at += named is not None  # "for EUR 45"
    read = money(words[at]) if at < len(words) else None
    if read is None:
        return None
    value, code = read
    after = _currency(words[at + 1]) if at + 1 < len(words) else None
    if after is not None:  # "for 45 euros"
        return value, after, at + 1
    return value, named or code, at


_PRICE_STARTS = "$0123456789" + _SYMBOLS


def _count(word: str) -> int | None:
    """Read how many items a word counts: ``3``, ``three``, ``tres``, ``drei``, ``trois``."""
    if word.isascii() and word.isdigit() and len(word) <= _MAX_COUNT_DIGITS:
        return int(word) or None
    return words_of.COUNTS.get(word)


def _merge_marks(
    tokens: list[str], starts: list[int], stripped: list[str]
) -> tuple[list[str], list[int], list[str]]:
    """Drop the tokens that are only marks, adding each to the token before it."""
    kept: list[int] = []
    for i, word in enumerate(stripped):
        if word:
            kept.append(i)
        elif kept:  # the mark now ends the word before it
            tokens[kept[-1]] += ","
    return [tokens[i] for i in kept], [starts[i] for i in kept], [stripped[i] for i in kept]


class _Piece:
    """The words of one ``;`` part or line, with what each question about them needs."""

    def __init__(self, text: str, topics: TopicIndex) -> None:
        self.text = text
        # Whole-list operations, not a loop per word: a 1 MB line holds 500,000 words, and
        # what only cutting needs (marks, back references, topics) is found when asked.
        split = _SPACES.split(text)  # words at the even places, the spaces between them
        tokens = split[0::2]
        starts = list(accumulate(map(len, split), initial=0))[0::2]
        if tokens and not tokens[-1]:
            tokens.pop(), starts.pop()
        if tokens and not tokens[0]:
            del tokens[0], starts[0]
        stripped = list(map(methodcaller("rstrip", _MARKS), tokens))
        if "" in stripped:  # a lone mark: it ends the word before it
            tokens, starts, stripped = _merge_marks(tokens, starts, stripped)
        # Words are compared folded: lower case, no accents ("Cómo" is "como").
        folded = fold(text)
        if "\u2019" in text:  # a typographic apostrophe: "what’s" is "what's"
            folded = folded.replace("\u2019", "'")
        words = [folded[at : at + len(word)] for at, word in zip(starts, stripped, strict=True)]
        if "\u00bf" in text or "\u00a1" in text:  # "¿Cómo" is "como"
            words = list(map(methodcaller("lstrip", _OPENING_MARKS), words))
        self.tokens, self.starts, self.stripped, self.words = tokens, starts, stripped, words
        self.buys = [i for i, word in enumerate(words) if word in words_of.BUY_VERBS]
        self.verbs = [i for i, word in enumerate(words) if word in _VERBS]
        self.prices = [
            i
            for i, word in enumerate(words[:-1])
            if word in words_of.PRICE_WORDS and _money_after(words, i) is not None
        ]
        self._topics = topics

    def end(self, index: int) -> int:
        """Where word ``index`` ends in the text: a sentence end stays with it, a comma not."""
        return self.starts[index] + len(self.tokens[index].rstrip(","))

    @cached_property
    def marks(self) -> list[bool]:
        """Whether each word ends with a comma or a sentence end."""
        return list(map(ne, map(len, self.stripped), map(len, self.tokens)))

    @cached_property
    def joins(self) -> list[bool]:
        """Whether each word joins two parts: ``and``, ``y``, ``und``, ``as well as``..."""
        words = self.words
        joins = [word in words_of.JOINING for word in words]
        firsts = {phrase[0] for phrase in words_of.JOINING_PHRASES}
        for i, word in enumerate(words):
            if word in firsts:
                for phrase in words_of.JOINING_PHRASES:
                    if tuple(words[i : i + len(phrase)]) == phrase:
                        joins[i : i + len(phrase)] = [True] * len(phrase)
        return joins

    @cached_property
    def naming(self) -> list[int]:
        """The places of words that may name something (``sharding``, not ``first``).

        A pasted key, token or header (see :attr:`data`; ``authorization``, ``bearer``) names
        nothing to look up.
        """
        data = set(self.data)
        return [
            i
            for i, word in enumerate(self.words)
            if word not in _NAME_NOTHING
            and word not in _CREDENTIAL_WORDS
            and i not in data
            and any(map(str.isalnum, word))
        ]

    @cached_property
    def data(self) -> list[int]:
        """The places of words that look pasted: a digit or ``_`` in them, or a long run."""
        return [
            i
            for i, word in enumerate(self.words)
            if len(word) > _LONGEST_NAME or any(char.isdigit() or char == "_" for char in word)
        ]

    @cached_property
    def back(self) -> list[int]:
        """The places of ``it``, ``they``, ``that`` and the like."""
        return [i for i, word in enumerate(self.words) if word in words_of.BACK_REFERENCES]

    @cached_property
    def mentions(self) -> list[Mention]:
        """The knowledge-base topics the text names, in order."""
        return self._topics.mentions(self.text) if self._topics else []

    @cached_property
    def _mention_starts(self) -> list[int]:
        return [mention.start for mention in self.mentions]

    @staticmethod
    def _first(positions: list[int], low: int, high: int) -> int | None:
        """The first position in ``[low, high]``, or None."""
        at = bisect_left(positions, low)
        return positions[at] if at < len(positions) and positions[at] <= high else None

    def buy(self, low: int, high: int) -> int | None:
        """The first ``buy`` (or ``compra``, ``kaufe``, ``achète``) among words ``low..high``."""
        return self._first(self.buys, low, high)

    def verb(self, low: int, high: int) -> int | None:
        """The last purchase verb (``buy``, ``like``, ``want``...) among words ``low..high``."""
        at = bisect_right(self.verbs, high) - 1
        return self.verbs[at] if at >= 0 and self.verbs[at] >= low else None

    def price(self, low: int, high: int) -> int | None:
        """The first price word among ``low..high`` whose next word (also in) is a price."""
        return self._first(self.prices, low, high - 1)

    @cached_property
    def pronouns(self) -> list[int]:
        """The places of back references that are no article (not French ``le``)."""
        return [i for i in self.back if self.words[i] not in words_of.BACK_REFERENCES_ARTICLES]

    def points_back(self, low: int, high: int, *, articles: bool = True) -> bool:
        """Whether words ``low..high`` hold ``it``, ``they``, ``that`` or the like.

        With ``articles=False`` a back reference that is also an article (``le``) does not
        count.
        """
        if self.words[high] in words_of.BACK_REFERENCES_LAST:
            return True
        return self._first(self.back if articles else self.pronouns, low, high) is not None

    def names_something(self, low: int, high: int) -> bool:
        """Whether words ``low..high`` may name something to look up.

        They do when they hold a naming word and fewer words of pasted data (keys, card
        numbers, a connection string) than naming words: pasted data beside a question is
        no part of its own.
        """
        named = self._count(self.naming, low, high)
        return named > 0 and named > self._count(self.data, low, high)

    @staticmethod
    def _count(positions: list[int], low: int, high: int) -> int:
        """How many positions lie in ``[low, high]``."""
        return bisect_right(positions, high) - bisect_left(positions, low)

    @cached_property
    def _unlike_telling(self) -> tuple[list[int], list[int], list[int]]:
        """Where words are no greeting, where a word asks, where (in the text) a ``?`` or ``¿``."""
        words = self.words
        return (
            [i for i, word in enumerate(words) if word not in words_of.GREETINGS],
            [i for i, word in enumerate(words) if word in words_of.ASKING],
            [at for at, char in enumerate(self.text) if char in "?\u00bf"],
        )

    def tells(self, low: int, high: int) -> bool:
        """:func:`_tells` for words ``low..high``, by bisection: no scan of the words."""
        other, asking, marks = self._unlike_telling
        if self._first(other, low, high) is None:
            return True
        if self.words[low] not in words_of.SUBJECTS:
            return False
        mark = self._first(marks, self.starts[low], self.end(high) - 1)
        return mark is None and self._first(asking, low, high) is None

    def names_topic(self, low: int, high: int) -> bool:
        """Whether words ``low..high`` hold a whole knowledge-base topic name or alias."""
        return bool(self.mentions_in(low, high))

    def mentions_in(self, low: int, high: int) -> list[Mention]:
        """The topics named within words ``low..high``, in order."""
        mentions = self.mentions
        first = bisect_left(self._mention_starts, self.starts[low])
        end = self.end(high)
        found = []
        for mention in mentions[first:]:
            if mention.end > end:
                break
            found.append(mention)
        return found

    def word_at(self, position: int) -> int:
        """The word that holds character ``position``."""
        return bisect_right(self.starts, position) - 1

    def tool_at(self, index: int, tools: Collection[str]) -> tuple[str, str] | None:
        """``(tool, argument)`` when word ``index`` is a bound tool's ``<tool>:``."""
        start = self.starts[index]
        colon = self.text.find(":", start, self.end(index))
        if colon == -1:
            return None
        name = self.text[start:colon]
        if name not in tools or not _TOOL_NAME.fullmatch(name):
            return None
        return name, self.text[colon + 1 :].strip()

    def opens(self, index: int) -> bool:
        """Whether word ``index`` starts a new request or question (``how``, ``¿...``)."""
        return self.words[index] in words_of.OPENERS or self.tokens[index][:1] == "\u00bf"

    def slice(self, first: int, last: int) -> str:
        """The text of words ``first..last``, as written (a comma after the last one cut)."""
        return self.text[self.starts[first] : self.end(last)].strip()

    def tail(self, first: int) -> str:
        """The text from word ``first`` to the end, as written."""
        return self.text[self.starts[first] :].strip()


def _boundaries(piece: _Piece) -> list[tuple[int, int, bool]]:
    """``(left, right, strong)`` for each place a part may end: the words either side.

    ``strong`` is an ``also`` after a comma, a sentence end or another connecting word.
    """
    words, marks, joins = piece.words, piece.marks, piece.joins
    content = [i for i, join in enumerate(joins) if not join]
    found = []
    for left, right in zip(content, content[1:], strict=False):
        between = range(left + 1, right)
        marked = marks[left] or any(marks[i] for i in between)
        if between or marked:
            also = any(words[i] in words_of.ALSO for i in between)
            found.append((left, right, also and (marked or len(between) > 1)))
    return found


class _Reader:
    """Reads one question's pieces in order, keeping what the parts so far were."""

    def __init__(self, tools: Collection[str], topics: TopicIndex) -> None:
        self.tools = tools
        self.topics = topics
        self.parts: list[Part] = []
        self.telling: list[bool] = []
        """For each part: it only tells (``I am building a bot.``), it asks nothing."""

    @property
    def bought(self) -> bool:
        return any(part.kind == "purchase" for part in self.parts)

    def read(self, text: str) -> Reading:
        for line in text.splitlines():
            for chunk in line.split(";"):
                if chunk.strip():
                    self._piece(_Piece(chunk, self.topics))
                if len(self.parts) > MAX_PARTS:
                    return Reading(tuple(self._asked()[:MAX_PARTS]), too_many=True)
        return Reading(tuple(self._asked()))

    def _asked(self) -> list[Part]:
        """The parts that ask something; all of them when none does (a question is read)."""
        asked = [part for part, tells in zip(self.parts, self.telling, strict=True) if not tells]
        return asked or self.parts

    def _append(self, part: Part, tells: bool = False) -> None:
        self.parts.append(part)
        self.telling.append(tells)

    def _piece(self, piece: _Piece) -> None:
        if not piece.words:
            return
        last = len(piece.words) - 1
        first = next((i for i, w in enumerate(piece.words) if w not in words_of.JOINING), 0)
        direct = piece.tool_at(0, self.tools)
        if direct is not None:
            self._append(Part("tool", piece.text.strip(), tool=direct[0], argument=direct[1]))
            return
        # A part a person writes is short: a longer one (a pasted page) is read whole.
        short = last < MAX_SPLIT_WORDS
        bounds = _boundaries(piece) if short else []
        start, soft = 0, False  # the first part keeps the words before its first one
        for k, (left, right, strong) in enumerate(bounds):
            reach = bounds[k + 1][0] if k + 1 < len(bounds) else last
            if not (strong or self._splits(piece, first, left, right, reach)):
                continue
            self._add(piece, (start, first, left), soft, short, to_end=False)
            if len(self.parts) > MAX_PARTS:
                return
            first, start, soft = right, right, True
            direct = piece.tool_at(right, self.tools)
            if direct is not None:
                text = piece.tail(right)
                self._append(Part("tool", text, tool=direct[0], argument=direct[1]))
                return
        self._add(piece, (start, first, last), soft, short, to_end=True)

    def _add(
        self, piece: _Piece, span: tuple[int, int, int], soft: bool, short: bool, to_end: bool
    ) -> None:
        """Read words ``first..last`` (written from ``start``); one search per topic named."""
        start, first, last = span
        text = piece.tail(start) if to_end else piece.slice(start, last)
        part = self._part(piece, first, last, text, soft)
        if part.kind != "search" or not short:
            self._append(part)
            return
        tells = _tells(piece, first, last, text)
        texts = self._by_topic(piece, span, to_end)
        for each in texts or [part.text]:
            self._append(self._search(each) if texts else part, tells)

    def _by_topic(self, piece: _Piece, span: tuple[int, int, int], to_end: bool) -> list[str]:
        """The search's text cut after each topic it names; empty when it names one or none.

        A topic named again stays in the cut before it, so each cut names a new topic first.
        """
        start, first, last = span
        mentions = piece.mentions_in(first, last)
        if len({mention.topic for mention in mentions}) < 2:
            return []
        cuts: list[list[int]] = []
        seen: set[str] = set()
        begin = start
        for mention in mentions:
            word = piece.word_at(mention.end - 1)
            if word < begin:
                continue  # the same word as the cut before: it stays there
            if mention.topic in seen:
                cuts[-1][1] = word
            else:
                while begin < word and piece.words[begin] in _FRAGMENT_SKIP:
                    begin += 1
                cuts.append([begin, word])
                seen.add(mention.topic)
            begin = word + 1
        cuts[-1][1] = last
        texts = [piece.slice(low, high) for low, high in cuts[:-1]]
        low = cuts[-1][0]
        texts.append(piece.tail(low) if to_end else piece.slice(low, last))
        return texts if len(texts) > 1 else []

    def _splits(self, piece: _Piece, first: int, left: int, right: int, reach: int) -> bool:
        """Whether words ``first..left`` and ``right..reach`` are two parts (rules 1, 2, 4, 5)."""
        if self._ends_in_price(piece, first, left):
            return True
        if piece.words[right] in words_of.BUY_VERBS or piece.tool_at(right, self.tools):
            return True
        if piece.opens(right) and not piece.points_back(right, reach):
            # "... y cómo funciona": two words that name nothing new ask about the same thing
            if reach - right > 1 or piece.names_topic(right, reach):
                return True
        purchase = piece.buy(first, reach) is not None or piece.price(first, reach) is not None
        if not self.topics or purchase:
            return False
        named = piece.names_topic(first, left), piece.names_topic(right, reach)
        if all(named):
            return True
        if not any(named):
            return False  # searched whole: a miss quotes both sides
        # Rule 5: one side names a topic, the other names something of its own ("first
        # sharding, then checkpointers"): searched whole, the topic would answer alone and
        # the other side vanish. A side that names nothing ("..., explained"), or follows the
        # topic and points back to it ("... has a checkpointer. Why does it lose state?"),
        # asks about the topic: it stays. One before the topic has nothing to point back to.
        # A topic side that only tells is context for the other side: together they stay.
        low, high = (right, reach) if named[0] else (first, left)
        if not piece.names_something(low, high):
            return False
        topic = (first, left) if named[0] else (right, reach)
        if piece.tells(*topic):
            return False  # apart, "I use a checkpointer" would not be searched: keep its topic
        # A question after the topic reads "le" as "it" ("et comment le configurer"); a bare
        # clause reads it as "the" ("puis le sharding").
        return not named[0] or not piece.points_back(low, high, articles=piece.opens(low))

    def _ends_in_price(self, piece: _Piece, first: int, left: int) -> bool:
        """Whether words ``first..left`` are a purchase that ends with its price."""
        words = piece.words
        end = left
        for _ in range(_FILLER_STEPS):
            if end > first and words[end] in _AFTER_PRICE:
                end -= 1
        price = next(  # "for 45", "for 45 euros", "for EUR 45"
            (
                at
                for at in (end - 1, end - 2)
                if at >= first
                and words[at] in words_of.PRICE_WORDS
                and (read := _money_after(words, at)) is not None
                and read[2] == end
            ),
            None,
        )
        if price is None:
            return False
        if piece.verb(first, price - 1) is not None:
            return True
        return self.bought and words[first] not in words_of.OPENERS

    def _part(self, piece: _Piece, first: int, last: int, text: str, soft: bool) -> Part:
        """Read words ``first..last`` (written ``text``) as a purchase or a search."""
        words = piece.words
        asks = words[first] in words_of.WH_WORDS
        price = piece.price(first, last)
        if price is None:
            buy = piece.buy(first, last)
            if buy is not None:
                if asks:  # "what should I buy"
                    return self._search(text)
                return self._purchase(piece, buy + 1, None, last, text)
        else:
            verb = piece.verb(first, price - 1)
            if verb is not None and (words[verb] in words_of.BUY_VERBS or not asks):
                part = self._purchase(piece, verb + 1, price, last, text)
                # "I need a checkpointer for 2 graphs": a want that its price does not end
                # is no purchase.
                if words[verb] in words_of.BUY_VERBS or part.problem is None:
                    return part
            elif verb is None and piece.buy(price, last) is not None and not asks:
                return self._purchase(piece, first, price, last, text)  # "... für 300 kaufen"
        if words[first] in words_of.OPENERS:
            return self._search(text)
        if price is not None and self.bought:
            return self._purchase(piece, first, price, last, text)
        if price is None and soft and self.parts and self.parts[-1].kind == "purchase":
            item = piece.slice(first, last).rstrip(_MARKS)
            return self._checked(Part("purchase", text, item=item, problem="unclear"))
        return self._search(text)

    def _purchase(
        self, piece: _Piece, item_at: int, price: int | None, last: int, text: str
    ) -> Part:
        """A purchase: the item from word ``item_at`` to the price at ``price``, if any."""
        words = piece.words
        stop = last + 1 if price is None else price
        while item_at < stop and words[item_at] in words_of.BEFORE_ITEM:
            item_at += 1
        problem: Problem | None
        if price is None:
            # "buy a laptop for 1.200": the item ends where its unreadable price starts.
            end = next((i for i in range(item_at, last) if _unread_price(words, i)), last + 1)
            item = piece.slice(item_at, end - 1).rstrip(_MARKS) if item_at < end else ""
            problem = "no_price" if item else "no_item"
            return self._checked(Part("purchase", text, item=item, problem=problem))
        item = piece.text[piece.starts[item_at] : piece.starts[price]].strip()
        read = _money_after(words, price)
        assert read is not None  # a price word is only kept before a price
        value, currency, end = read  # another currency is kept: the checkout names it
        after = next((i for i in range(end + 1, last + 1) if words[i] not in _TRAILING), None)
        each = after is not None and all(words[i] in _AFTER_PRICE for i in range(after, last + 1))
        each = each and any(words[i] in words_of.EACH for i in range(end + 1, last + 1))
        rest = piece.slice(after, last) if after is not None and not each else ""
        if each:
            count = _count(words[item_at]) if item_at < price else None
            if count is None:
                part = Part(
                    "purchase", text, item=item, amount=value, currency=currency,
                    problem="no_count",
                )  # fmt: skip
                return self._checked(part)
            part = Part(
                "purchase", text, item=item, amount=count * value, quantity=count, unit=value,
                currency=currency,
            )  # fmt: skip
            return self._checked(part if item else dataclasses.replace(part, problem="no_item"))
        problem = "no_item" if not item else "extra" if rest else None
        return self._checked(
            Part(
                "purchase",
                text,
                item=item,
                amount=value,
                rest=rest,
                problem=problem,
                currency=currency,
            )  # fmt: skip
        )

    def _search(self, text: str) -> Part:
        return self._checked(Part("search", text))

    def _checked(self, part: Part) -> Part:
        """The part as the bound tools can do it: a purchase with no checkout is a search."""
        if part.kind == "purchase" and "checkout" not in self.tools:
            part = Part("search", part.text)
        if part.kind == "search" and "search" not in self.tools:
            return Part(part.kind, part.text, problem="no_tool")
        return part


def _unread_price(words: list[str], index: int) -> bool:
    """Whether word ``index`` is a price word before a number that is no price (``1.200``)."""
    return words[index] in words_of.PRICE_WORDS and words[index + 1][:1] in _PRICE_STARTS


def _tells(piece: _Piece, first: int, last: int, text: str) -> bool:
    """Whether words ``first..last`` (written ``text``) only tell, as ``It runs on a server``.

    It is a greeting (``Hola,``), or it starts with ``I``, ``we``, ``it``, ``my`` (or the
    same in Spanish, German, French) and holds no ``?`` or ``¿`` and no word that asks
    (``want``, ``need``, ``understand``...).
    """
    words = piece.words
    if all(words[i] in words_of.GREETINGS for i in range(first, last + 1)):
        return True
    if words[first] not in words_of.SUBJECTS or "?" in text or "\u00bf" in text:
        return False
    return not any(words[i] in words_of.ASKING for i in range(first, last + 1))


def read_question(
    text: str, tools: Collection[str], topics: TopicIndex | Mapping[str, Any] | Collection[str] = ()
) -> Reading:
    """Read a user's question into the parts it asks, in its order.

    The rule is this module's docstring. It runs in linear time on any input and stops
    reading after :data:`MAX_PARTS` parts.

    Args:
        text: The user's message.
        tools: The names of the bound tools: a ``<tool>:`` part must name one; a purchase
            needs ``checkout`` (without it, it is a search) and a search needs ``search``.
        topics: The knowledge base's topics: a :class:`~agent.tools.topics.TopicIndex`, the
            knowledge base (topic name -> page, its ``aliases`` read) or names alone. Empty:
            no search is cut by topic.

    Returns:
        The parts, each with the problem that keeps it from being done, if any.
    """
    index = topics if isinstance(topics, TopicIndex) else TopicIndex(topics)
    return _Reader(tools, index).read(text)


UNCLEAR_TITLE = "**I have not done anything yet: I could not tell what every part asks.**"
"""The first line of the answer to a question with a part that cannot be done as written."""
UNCLEAR_CLOSING = "Nothing was charged or looked up. Ask again with every part written out."
"""Its last line."""
TOO_MANY = (
    f"**I have not done anything yet: your message asks more than {MAX_PARTS} things.** "
    f"Ask at most {MAX_PARTS} at a time."
)
"""The answer to a question with more than :data:`MAX_PARTS` parts."""
_EXAMPLE_ITEM = "a mouse"


def _understood(part: Part) -> str:
    if part.kind == "purchase" and part.amount is not None:
        unit = escape_math(price_text(part.unit, part.currency)) if part.unit else ""
        each = f" ({part.quantity} × {unit})" if unit else ""
        price = escape_math(price_text(part.amount, part.currency))
        return f"Understood: buy “{excerpt(part.item)}” for {price}{each}."
    if part.kind == "tool":
        return f"Understood: `{part.tool}` with “{excerpt(part.argument)}”."
    return f"Understood: look up “{excerpt(part.text)}”."


def _example_item(item: str) -> str:
    """The item to show in an example: the caller's, unless it reads as several things."""
    words = item.lower().replace(",", " , ").split()
    several = not words or any(word in words_of.JOINING or word == "," for word in words)
    return _EXAMPLE_ITEM if several else excerpt(item)


def _example_price(part: Part) -> str:
    """The price to show in an example: the person's own (``45``, ``4.50``), else ``20``."""
    if part.amount is None:
        return "20"
    written = f"{part.unit or part.amount:,.2f}".removesuffix(".00")
    return written if part.currency == "USD" else f"{written} {part.currency}"


def _not_clear(part: Part) -> str:
    quoted = f"“{excerpt(part.text)}”"
    item = _example_item(part.item)
    price = _example_price(part)
    if part.problem == "no_price":
        return (
            f"Not clear: {quoted} has no price I can read. Write each thing to buy with its "
            f"own price, for example “buy {item} for 20”."
        )
    if part.problem == "no_item":
        return (
            f"Not clear: {quoted} does not say what to buy. Write the item before its price, "
            f"for example “buy {_EXAMPLE_ITEM} for 20”."
        )
    if part.problem == "extra":
        return (
            f"Not clear: I could not read “{excerpt(part.rest)}” after the price in {quoted}. "
            f"Write one purchase per part, for example “buy {item} for {price}”."
        )
    if part.problem == "no_count":
        return (
            f"Not clear: {quoted} gives a price for each item but no count I can read. Write "
            f"the count before the item, for example “buy 3 {item} for {price} each”."
        )
    if part.problem == "unclear":
        return (
            f"Not clear: {quoted} has no price, so I could not tell whether to buy it or look "
            f"it up. Write “buy {item} for 20” to buy it, or “what is {item}” to look it up."
        )
    return f"Not clear: {quoted}: none of the tools I have can do this."


def unclear_answer(reading: Reading) -> str:
    """Say, in Markdown, what was understood and which part could not be read.

    Every part is named in the question's order; caller text is quoted only through
    :func:`~agent.tools.markdown.excerpt`.

    Args:
        reading: A reading that is not :attr:`Reading.clear`.

    Returns:
        The answer: a bold first line, one numbered line per part, a closing line.
    """
    if reading.too_many:
        return TOO_MANY
    lines = [
        f"{n}. " + (_understood(part) if part.problem is None else _not_clear(part))
        for n, part in enumerate(reading.parts, 1)
    ]
    return "\n\n".join([UNCLEAR_TITLE, "\n".join(lines), UNCLEAR_CLOSING])
