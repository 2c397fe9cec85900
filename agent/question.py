"""Reading a user's question into the things it asks, for the offline model.

A question is cut in two passes. ``;`` and line breaks always separate parts. Inside what is
left, a comma, a sentence end (``.``, ``?``, ``!``), or the words ``and``, ``&``, ``also``
and ``then`` separate two parts only where the text says a new part begins:

1. the left side is a purchase whose price ends it (``buy a laptop for 300, ...``);
2. the right side starts a new request: ``buy``, a question word (``what``, ``how``, ...),
   a request (``tell``, ``explain``, ``search``, ``I``, ...) or a bound tool's
   ``<tool>:``, and, unless it is ``buy`` or a tool, it does not point back with ``it``,
   ``they``, ``that`` and the like (``... and how does it work`` stays one question);
3. ``also`` follows a comma, a sentence end or ``and`` (``..., and also ...``);
4. both sides name a knowledge-base topic and neither is a purchase
   (``checkpointer and interrupts``).

Anywhere else the words stay inside one part, so an item (``buy salt and pepper for 5``) or
a topic (``what is a checkpointer and how does it work``) is read whole. A part is then:

- ``<tool>: <text>`` for a bound tool (it runs to the end of its ``;`` part or line);
- a purchase, when it holds the word ``buy`` (a ``what``/``how``/... question that holds
  ``buy`` but no price, ``what should I buy``, is a search): the item is the text between
  ``buy`` and the first ``for <amount>``, the amount ``300``, ``$300``, ``300.00`` or
  ``$1,200``;
- a purchase without a verb, when an earlier part was a purchase and it names its own
  price (``... and a mouse for 20``), or when it follows a purchase after a comma or a
  connecting word and has no price (``buy a laptop for 300 and a mouse``: the mouse has no
  price, which :data:`Part.problem` says);
- a search otherwise, its text as written.

A ``;`` part or line of more than :data:`MAX_SPLIT_WORDS` words (a pasted page, not a
question a person types) is read whole, and a question of more than :data:`MAX_PARTS`
parts is not done: the answer asks for fewer. Every scan here is linear in the question's
length: words are read once, and each lookup over a stretch of words is a bisection into
positions found once.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Collection
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate
from operator import methodcaller, ne
from typing import Literal

from agent.tools.markdown import excerpt

MAX_PARTS = 32
"""Most parts one question may ask; a longer one is answered with a request to split it."""

MAX_SPLIT_WORDS = 1000
"""Longest ``;`` part or line, in words, that commas and connecting words may cut."""

Kind = Literal["purchase", "search", "tool"]
Problem = Literal["no_price", "no_item", "extra", "unclear", "no_tool"]
"""Why a part cannot be done as written.

``no_price``: a purchase without a readable price. ``no_item``: a price with nothing to buy.
``extra``: words after a purchase's price. ``unclear``: a bare name after a purchase, with no
price (to buy or to look up?). ``no_tool``: no bound tool can do it.
"""

_SPACES = re.compile(r"(\s+)")
_TOOL_NAME = re.compile(r"[A-Za-z_][\w-]*")
_MARKS = ",.?!"
_CONNECTIVES = frozenset({"and", "&", "also", "then"})
_WH_WORDS = frozenset(
    {"what", "what's", "whats", "how", "how's", "why", "when", "where", "who", "which", "whose"}
)
"""A part that starts with one of these and holds ``buy`` but no price asks, not buys."""
_QUESTION_WORDS = _WH_WORDS | frozenset(
    {"is", "are", "can", "could", "do", "does", "did", "should", "would", "will"}
)
_OPENERS = _QUESTION_WORDS | frozenset(
    {"tell", "explain", "show", "give", "describe", "define", "compare", "search", "find"}
    | {"look", "please", "help", "i", "i'd", "i'm", "i'll", "we", "we'd", "let's", "lets"}
)
_BACK_REFERENCES = frozenset(
    {"it", "its", "it's", "they", "them", "their", "theirs", "this", "that", "these", "those"}
)
_FILLERS = frozenset({"dollars", "dollar", "usd", "bucks", "please", "thanks", "thank", "you"})
"""Words a purchase may end with after its price."""
_TRAILING = _FILLERS | _CONNECTIVES
_FILLER_STEPS = 3


@dataclass(frozen=True)
class Part:
    """One thing a question asks, as the offline model reads it."""

    kind: Kind
    text: str
    """The part as written, stripped."""
    item: str = ""
    """A purchase's item."""
    amount: float | None = None
    """A purchase's price; None when none could be read."""
    tool: str = ""
    """The bound tool a ``<tool>: <text>`` part names."""
    argument: str = ""
    """The text a ``<tool>: <text>`` part passes."""
    rest: str = ""
    """Words after a purchase's price that were not read."""
    problem: Problem | None = None
    """Why the part cannot be done as written; None when it can."""


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
    """Read a price: ``300``, ``$300``, ``300.00``, ``$1,200``.

    Args:
        word: One word, without trailing punctuation.

    Returns:
        The amount, or None when the word is not a finite price.
    """
    digits = word[1:] if word.startswith("$") else word
    whole, dot, cents = digits.partition(".")
    bare = whole.replace(",", "")
    if not (whole[:1].isdigit() and bare.isascii() and bare.isdigit()):
        return None
    if dot and not (cents.isascii() and cents.isdigit()):
        return None
    value = float(f"{bare}.{cents}" if dot else bare)
    return value if math.isfinite(value) else None


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

    def __init__(self, text: str, topics: Collection[str]) -> None:
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
        words = list(map(str.lower, stripped))
        if "\u2019" in text:  # a typographic apostrophe: "what’s" is "what's"
            words = list(map(methodcaller("replace", "\u2019", "'"), words))
        self.tokens, self.starts, self.stripped, self.words = tokens, starts, stripped, words
        lowered = text.lower()
        self.buys = [i for i, word in enumerate(words) if word == "buy"] if "buy" in lowered else []
        self.prices = (
            [
                i
                for i, word in enumerate(words[:-1])
                if word == "for" and amount(words[i + 1]) is not None
            ]
            if "for" in lowered
            else []
        )
        self._topics = topics
        self._spans: tuple[list[int], list[int]] | None = None

    def end(self, index: int) -> int:
        """Where word ``index`` ends in the text: a sentence end stays with it, a comma not."""
        return self.starts[index] + len(self.tokens[index].rstrip(","))

    @cached_property
    def marks(self) -> list[bool]:
        """Whether each word ends with a comma or a sentence end."""
        return list(map(ne, map(len, self.stripped), map(len, self.tokens)))

    @cached_property
    def back(self) -> list[int]:
        """The places of ``it``, ``they``, ``that`` and the like."""
        return [i for i, word in enumerate(self.words) if word in _BACK_REFERENCES]

    @staticmethod
    def _first(positions: list[int], low: int, high: int) -> int | None:
        """The first position in ``[low, high]``, or None."""
        at = bisect_left(positions, low)
        return positions[at] if at < len(positions) and positions[at] <= high else None

    def buy(self, low: int, high: int) -> int | None:
        """The first ``buy`` among words ``low..high``."""
        return self._first(self.buys, low, high)

    def price(self, low: int, high: int) -> int | None:
        """The first ``for`` among words ``low..high`` whose next word (also in) is a price."""
        return self._first(self.prices, low, high - 1)

    def points_back(self, low: int, high: int) -> bool:
        """Whether words ``low..high`` hold ``it``, ``they``, ``that`` or the like."""
        return self._first(self.back, low, high) is not None

    def names_topic(self, low: int, high: int) -> bool:
        """Whether words ``low..high`` hold a whole knowledge-base topic name."""
        if self._spans is None:
            self._spans = self._topic_spans()
        starts, ends = self._spans
        at = bisect_left(starts, self.starts[low])
        return at < len(starts) and ends[at] <= self.end(high)

    def _topic_spans(self) -> tuple[list[int], list[int]]:
        """Topic occurrences by start, each with the earliest end from there on."""
        lowered = self.text.lower()
        if len(lowered) != len(self.text):  # positions would shift: no topic is read
            return [], []
        found = []
        for topic in self._topics:
            at = lowered.find(topic)
            while topic and at != -1:
                found.append((at, at + len(topic)))
                at = lowered.find(topic, at + 1)
        found.sort()
        earliest = [end for _, end in found]
        for i in range(len(earliest) - 2, -1, -1):
            earliest[i] = min(earliest[i], earliest[i + 1])
        return [start for start, _ in found], earliest

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
    words, marks = piece.words, piece.marks
    content = [i for i, word in enumerate(words) if word not in _CONNECTIVES]
    found = []
    for left, right in zip(content, content[1:], strict=False):
        between = range(left + 1, right)
        marked = marks[left] or any(marks[i] for i in between)
        if between or marked:
            also = any(words[i] == "also" for i in between)
            found.append((left, right, also and (marked or len(between) > 1)))
    return found


class _Reader:
    """Reads one question's pieces in order, keeping what the parts so far were."""

    def __init__(self, tools: Collection[str], topics: Collection[str]) -> None:
        self.tools = tools
        self.topics = topics
        self.parts: list[Part] = []

    @property
    def bought(self) -> bool:
        return any(part.kind == "purchase" for part in self.parts)

    def read(self, text: str) -> Reading:
        for line in text.splitlines():
            for chunk in line.split(";"):
                if chunk.strip():
                    self._piece(_Piece(chunk, self.topics))
                if len(self.parts) > MAX_PARTS:
                    return Reading(tuple(self.parts[:MAX_PARTS]), too_many=True)
        return Reading(tuple(self.parts))

    def _piece(self, piece: _Piece) -> None:
        if not piece.words:
            return
        last = len(piece.words) - 1
        first = next((i for i, w in enumerate(piece.words) if w not in _CONNECTIVES), 0)
        direct = piece.tool_at(0, self.tools)
        if direct is not None:
            self.parts.append(Part("tool", piece.text.strip(), tool=direct[0], argument=direct[1]))
            return
        # A part a person writes is short: a longer one (a pasted page) is read whole.
        bounds = _boundaries(piece) if last < MAX_SPLIT_WORDS else []
        start, soft = 0, False  # the first part keeps the words before its first one
        for k, (left, right, strong) in enumerate(bounds):
            reach = bounds[k + 1][0] if k + 1 < len(bounds) else last
            if not (strong or self._splits(piece, first, left, right, reach)):
                continue
            self.parts.append(self._part(piece, first, left, piece.slice(start, left), soft))
            if len(self.parts) > MAX_PARTS:
                return
            first, start, soft = right, right, True
            direct = piece.tool_at(right, self.tools)
            if direct is not None:
                text = piece.tail(right)
                self.parts.append(Part("tool", text, tool=direct[0], argument=direct[1]))
                return
        self.parts.append(self._part(piece, first, last, piece.tail(start), soft))

    def _splits(self, piece: _Piece, first: int, left: int, right: int, reach: int) -> bool:
        """Whether words ``first..left`` and ``right..reach`` are two parts (rules 1, 2, 4)."""
        if self._ends_in_price(piece, first, left):
            return True
        opener = piece.words[right]
        if opener == "buy" or piece.tool_at(right, self.tools) is not None:
            return True
        if opener in _OPENERS and not piece.points_back(right, reach):
            return True
        purchase = piece.buy(first, reach) is not None or piece.price(first, reach) is not None
        return (
            bool(self.topics)
            and not purchase
            and piece.names_topic(first, left)
            and piece.names_topic(right, reach)
        )

    def _ends_in_price(self, piece: _Piece, first: int, left: int) -> bool:
        """Whether words ``first..left`` are a purchase that ends with its price."""
        words = piece.words
        end = left
        for _ in range(_FILLER_STEPS):
            if end > first and words[end] in _FILLERS:
                end -= 1
        if end - 1 < first or words[end - 1] != "for" or amount(words[end]) is None:
            return False
        buy = piece.buy(first, left)
        if buy is not None:
            return buy < end - 1
        return self.bought and words[first] not in _OPENERS

    def _part(self, piece: _Piece, first: int, last: int, text: str, soft: bool) -> Part:
        """Read words ``first..last`` (written ``text``) as a purchase or a search."""
        words = piece.words
        buy = piece.buy(first, last)
        if buy is not None:
            price = piece.price(buy + 1, last)
            if words[first] not in _WH_WORDS or price is not None:
                return self._purchase(piece, buy + 1, price, last, text)
            return self._search(text)
        if words[first] in _OPENERS:
            return self._search(text)
        price = piece.price(first, last)
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
        problem: Problem | None
        if price is None:
            item = piece.slice(item_at, last).rstrip(_MARKS) if item_at <= last else ""
            problem = "no_price" if item else "no_item"
            return self._checked(Part("purchase", text, item=item, problem=problem))
        item = piece.text[piece.starts[item_at] : piece.starts[price]].strip()
        value = amount(piece.words[price + 1])
        words = piece.words
        extra = next((i for i in range(price + 2, last + 1) if words[i] not in _TRAILING), None)
        rest = piece.slice(extra, last) if extra is not None else ""
        problem = "no_item" if not item else "extra" if rest else None
        return self._checked(
            Part("purchase", text, item=item, amount=value, rest=rest, problem=problem)
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


def read_question(text: str, tools: Collection[str], topics: Collection[str] = ()) -> Reading:
    """Read a user's question into the parts it asks, in its order.

    The rule is this module's docstring. It runs in linear time on any input and stops
    reading after :data:`MAX_PARTS` parts.

    Args:
        text: The user's message.
        tools: The names of the bound tools: a ``<tool>:`` part must name one; a purchase
            needs ``checkout`` (without it, it is a search) and a search needs ``search``.
        topics: Knowledge-base topic names, lower case; two sides that each name one are
            two searches (rule 4). Empty: that rule is off.

    Returns:
        The parts, each with the problem that keeps it from being done, if any.
    """
    return _Reader(tools, topics).read(text)


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
        # "\$": the chat front end reads text between two "$" as math.
        return f"Understood: buy “{excerpt(part.item)}” for \\${part.amount:,.2f}."
    if part.kind == "tool":
        return f"Understood: `{part.tool}` with “{excerpt(part.argument)}”."
    return f"Understood: look up “{excerpt(part.text)}”."


def _example_item(item: str) -> str:
    """The item to show in an example: the caller's, unless it reads as several things."""
    words = item.lower().replace(",", " , ").split()
    several = not words or any(word in _CONNECTIVES or word == "," for word in words)
    return _EXAMPLE_ITEM if several else excerpt(item)


def _not_clear(part: Part) -> str:
    quoted = f"“{excerpt(part.text)}”"
    item = _example_item(part.item)
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
            f"Write one purchase per part, for example “buy {item} for 20”."
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
