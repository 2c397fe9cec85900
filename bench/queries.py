"""The benchmark's query set: a seeded generator, and the loader for the committed file.

Each query forces the outcome of its tool calls through the run context (``force_outcome``),
so every configuration sees the same tool results and the benchmark is deterministic:

- ``success``: every call succeeds;
- ``transient``: every first call fails with a retryable error, the retries succeed;
- ``fatal``: every call fails for good.

Orthogonal to the outcome, a query is a single ``search``, a ``parallel`` search (two
``;``-separated parts: two tool calls in one model turn) or a ``checkout`` ("buy <item> for
<amount>"); a checkout above the spend cap is refused by the policy whatever is forced.

Regenerate the committed file with ``python -m bench.queries > bench/data/queries.jsonl``;
a test checks the file still equals the generator's output.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agent.context import OFFLINE_MODEL, Context
from agent.tools.search import knowledge_base, lookup

DEFAULT_PATH = Path(__file__).parent / "data" / "queries.jsonl"

OutcomeClass = Literal["success", "transient", "fatal"]
Kind = Literal["search", "parallel", "checkout"]
Expect = Literal["completed", "fatal", "policy_block"]

OUTCOMES: tuple[OutcomeClass, ...] = ("success", "transient", "fatal")
KINDS: tuple[Kind, ...] = ("search", "parallel", "checkout")

SEED = 5
COUNT = 300
MIX: dict[OutcomeClass, float] = {"success": 0.60, "transient": 0.25, "fatal": 0.15}
"""Share of each outcome class in the generated set."""
KIND_MIX: dict[Kind, float] = {"search": 0.65, "parallel": 0.15, "checkout": 0.20}
OVER_CAP_SHARE = 1 / 3
"""Share of checkout queries priced above the default spend cap."""

_SEARCH = (
    "Tell me about {}",
    "What is {} in LangGraph?",
    "How do I use {}?",
    "When should I use {}?",
    "Give me an overview of {}",
    "{}: what do I need to know?",
)
_PARALLEL = (
    "what is {}; how do I use {}",
    "{}; {}",
    "explain {}; and also {}",
)
_ITEMS = (
    "a desk lamp",
    "a standing desk",
    "an ergonomic chair",
    "a monitor arm",
    "a mechanical keyboard",
    "noise-cancelling headphones",
    "a laptop stand",
    "a 4K monitor",
    "a conference phone",
    "a whiteboard",
    "an espresso machine",
    "a server rack shelf",
)


@dataclass(frozen=True)
class Query:
    """One benchmark query and what a correct run ends with."""

    id: str
    text: str
    kind: Kind
    outcome: OutcomeClass
    force_outcome: str | list[str]
    over_cap: bool
    parts: int
    """Tool calls the model issues in its first turn."""

    @property
    def expect(self) -> Expect:
        """How a correct run ends: with a completed result, a fatal one, or the policy."""
        if self.over_cap:
            return "policy_block"
        return "completed" if self.outcome != "fatal" else "fatal"

    @property
    def context(self) -> dict[str, Any]:
        """The run context; ``model`` is pinned so no key in the environment goes online."""
        return {"model": OFFLINE_MODEL, "force_outcome": self.force_outcome}

    def to_json(self) -> dict[str, Any]:
        """Return the JSON line, ``expect`` included for readers of the file."""
        return {
            "id": self.id,
            "text": self.text,
            "kind": self.kind,
            "outcome": self.outcome,
            "force_outcome": self.force_outcome,
            "over_cap": self.over_cap,
            "parts": self.parts,
            "expect": self.expect,
        }


class QuerySetError(ValueError):
    """A query file line that does not describe a valid query."""


def force_for(outcome: OutcomeClass, parts: int) -> str | list[str]:
    """Return the ``force_outcome`` that produces ``outcome`` for ``parts`` first calls.

    The list form indexes this turn's calls in the order the model issued them, the last
    element repeating: ``transient`` fails every first call and lets every retry succeed.
    """
    if outcome == "transient":
        return ["retryable"] * parts + ["success"]
    return "success" if outcome == "success" else "fatal"


def _counts(total: int, shares: dict[Any, float]) -> dict[Any, int]:
    counts = {key: int(round(total * share)) for key, share in shares.items()}
    first = next(iter(counts))
    counts[first] += total - sum(counts.values())
    return counts


def generate(count: int = COUNT, seed: int = SEED) -> list[Query]:
    """Build the query set: exact outcome and kind counts, shuffled with a fixed seed.

    Args:
        count: Number of queries.
        seed: Seed for every random choice.

    Returns:
        The queries, ids ``q001``... in order.
    """
    rng = random.Random(seed)
    topics = sorted(knowledge_base())
    cap = Context().spend_cap
    outcomes = [o for o, n in _counts(count, MIX).items() for _ in range(n)]
    kinds = [k for k, n in _counts(count, KIND_MIX).items() for _ in range(n)]
    rng.shuffle(outcomes)
    rng.shuffle(kinds)
    checkouts = sum(kind == "checkout" for kind in kinds)
    over = set(rng.sample(range(checkouts), round(checkouts * OVER_CAP_SHARE)))
    queries: list[Query] = []
    checkout_index = 0
    for index, (outcome, kind) in enumerate(zip(outcomes, kinds, strict=True)):
        over_cap = False
        if kind == "search":
            topic = rng.choice(topics)
            text = rng.choice(_SEARCH).format(topic)
            parts = 1
        elif kind == "parallel":
            first, second = rng.sample(topics, 2)
            text = rng.choice(_PARALLEL).format(first, second)
            parts = 2
        else:
            over_cap = checkout_index in over
            checkout_index += 1
            low, high = (cap + 20, cap * 5) if over_cap else (5, cap - 20)
            amount = rng.randrange(int(low), int(high))
            price = f"${amount:,}" if rng.random() < 0.5 else str(amount)
            text = f"buy {rng.choice(_ITEMS)} for {price}"
            parts = 1
        queries.append(
            Query(
                id=f"q{index + 1:03d}",
                text=text,
                kind=kind,
                outcome=outcome,
                force_outcome=force_for(outcome, parts),
                over_cap=over_cap,
                parts=parts,
            )
        )
    for query in queries:
        _check(query)
    return queries


def _check(query: Query) -> None:
    """Raise when a query would not do what its fields say."""
    if query.kind == "checkout":
        return
    for part in query.text.split(";"):
        if lookup(part) is None:
            msg = f"query {query.id} part {part!r} names no knowledge-base topic"
            raise QuerySetError(msg)


def _parse(line: str, number: int) -> Query:
    try:
        raw = json.loads(line)
        query = Query(
            id=str(raw["id"]),
            text=str(raw["text"]),
            kind=raw["kind"],
            outcome=raw["outcome"],
            force_outcome=raw["force_outcome"],
            over_cap=bool(raw["over_cap"]),
            parts=int(raw["parts"]),
        )
    except (ValueError, KeyError, TypeError) as exc:
        msg = f"line {number}: not a query ({exc!r})"
        raise QuerySetError(msg) from exc
    if query.kind not in KINDS:
        msg = f"line {number}: kind {query.kind!r} is not one of {KINDS}"
        raise QuerySetError(msg)
    if query.outcome not in OUTCOMES:
        msg = f"line {number}: outcome {query.outcome!r} is not one of {OUTCOMES}"
        raise QuerySetError(msg)
    if query.force_outcome != force_for(query.outcome, query.parts):
        msg = (
            f"line {number}: force_outcome {query.force_outcome!r} does not produce "
            f"outcome {query.outcome!r} for {query.parts} call(s)"
        )
        raise QuerySetError(msg)
    if "expect" in raw and raw["expect"] != query.expect:
        msg = f"line {number}: expect {raw['expect']!r} contradicts the fields ({query.expect!r})"
        raise QuerySetError(msg)
    Context.model_validate(query.context)
    _check(query)
    return query


def load(path: Path = DEFAULT_PATH, limit: int | None = None) -> list[Query]:
    """Read a query file (JSON lines), validating every line.

    Args:
        path: The file.
        limit: Keep only the first ``limit`` queries.

    Returns:
        The queries.

    Raises:
        QuerySetError: If a line is malformed or contradicts itself; the message names it.
    """
    lines = [line for line in path.read_text("utf-8").splitlines() if line.strip()]
    queries = [_parse(line, number) for number, line in enumerate(lines, start=1)]
    ids = Counter(query.id for query in queries)
    duplicates = sorted(query_id for query_id, n in ids.items() if n > 1)
    if duplicates:
        msg = f"{path}: duplicate query ids {duplicates}"
        raise QuerySetError(msg)
    if not queries:
        msg = f"{path}: no queries"
        raise QuerySetError(msg)
    return queries[:limit] if limit is not None else queries


def dumps(queries: Iterable[Query]) -> str:
    """Serialize queries as JSON lines."""
    return "".join(json.dumps(query.to_json()) + "\n" for query in queries)


def describe(queries: Iterable[Query]) -> dict[str, Any]:
    """Summarize a query set: counts by outcome, kind and expected ending."""
    items = list(queries)
    return {
        "count": len(items),
        "by_outcome": dict(Counter(q.outcome for q in items)),
        "by_kind": dict(Counter(q.kind for q in items)),
        "by_expect": dict(Counter(q.expect for q in items)),
        "over_cap": sum(q.over_cap for q in items),
    }


if __name__ == "__main__":
    sys.stdout.write(dumps(generate()))
