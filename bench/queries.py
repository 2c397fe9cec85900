"""The benchmark's query set: a seeded generator, and the loader for the committed file.

Each query forces the outcome of its tool calls through the run context (``force_outcome``),
so every configuration sees the same tool results and the benchmark is deterministic:

- ``success``: every call succeeds;
- ``transient``: a first call fails with a retryable error (every part's, unless the query
  says which), the retries succeed;
- ``fatal``: every call fails for good.

Orthogonal to the outcome, a query is a single ``search``, a ``parallel`` search (two
``;``-separated parts: two tool calls in one model turn), a ``checkout`` ("buy <item> for
<amount>") or ``checkouts`` (two purchases in one question, the first above the cap); a
checkout above the spend cap is refused by the policy whatever is forced. Each query's
``part_outcomes`` says how each part's first call ends, in the question's order, and its
``policy`` the ``parallel_policy`` its context sets.

Besides the plain mix, the set holds the classes a hard stop once got wrong (see
:data:`SPECIAL`): a policy block beside a purchase that times out once, two searches under
``any`` and under ``priority`` with one of them timing out, and a first part that is retried
while the second fails for good or succeeds.

Regenerate the committed file with ``python -m bench.queries > bench/data/queries.jsonl``;
a test checks the file still equals the generator's output.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast, get_args

from agent.context import OFFLINE_MODEL, Context
from agent.models import parse_buy
from agent.tools.search import knowledge_base, lookup

ParallelPolicy = Literal["all", "priority", "any"]  # StopSettings.parallel_policy
PARALLEL_POLICIES: tuple[str, ...] = get_args(ParallelPolicy)

DEFAULT_PATH = Path(__file__).parent / "data" / "queries.jsonl"

OutcomeClass = Literal["success", "transient", "fatal"]
Kind = Literal["search", "parallel", "checkout", "checkouts"]
Expect = Literal["completed", "fatal", "policy_block"]
Special = Literal["block_transient", "any_transient", "priority_transient", "retried_first"]

OUTCOMES: tuple[OutcomeClass, ...] = ("success", "transient", "fatal")
KINDS: tuple[Kind, ...] = ("search", "parallel", "checkout", "checkouts")

SEED = 5
COUNT = 300
MIX: dict[OutcomeClass, float] = {"success": 0.60, "transient": 0.25, "fatal": 0.15}
"""Share of each outcome class in the whole generated set (the special classes included)."""
SPECIAL: dict[Special, int] = {
    "block_transient": 10,
    "any_transient": 10,
    "priority_transient": 10,
    "retried_first": 10,
}
"""Queries of each class a hard stop once answered wrong; all are ``transient`` queries.

- ``block_transient``: ``checkouts``, the first above the cap (refused), the second timing
  out once, then charged: the refusal waits for the retry and both parts answer.
- ``any_transient`` / ``priority_transient``: a ``parallel`` search under that
  ``parallel_policy``, one part (drawn) timing out: the stop comes at once and names the
  part that was not done.
- ``retried_first``: a ``parallel`` search whose first part times out once and whose second
  fails for good or succeeds (drawn): the retried part keeps its place, first.
"""
KIND_MIX: dict[Kind, float] = {"search": 0.65, "parallel": 0.15, "checkout": 0.20}
"""Share of each kind among the queries that are not special."""
OVER_CAP_SHARE = 1 / 3
"""Share of single-checkout queries priced above the default spend cap."""

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
    """Whether the first part is a checkout above the spend cap (refused, never run)."""
    parts: int
    """Tool calls the model issues in its first turn."""
    part_outcomes: tuple[OutcomeClass, ...]
    """How each part's first call ends if it runs, in the question's order; retries succeed."""
    policy: ParallelPolicy = "all"
    """The ``parallel_policy`` the run context sets (``all`` is the default, left unset)."""

    @property
    def expect(self) -> Expect:
        """How a correct run ends: with a completed result, a fatal one, or the policy."""
        if self.over_cap:
            return "policy_block"
        return "completed" if self.outcome != "fatal" else "fatal"

    @property
    def special(self) -> Special | None:
        """The class of :data:`SPECIAL` this query belongs to, if any."""
        if self.kind == "checkouts":
            return "block_transient"
        if self.policy == "any":
            return "any_transient"
        if self.policy == "priority":
            return "priority_transient"
        if (
            self.kind == "parallel"
            and self.part_outcomes[0] == "transient" != self.part_outcomes[1]
        ):
            return "retried_first"
        return None

    def runs(self, part: int) -> bool:
        """Whether part ``part`` (0-based) reaches its tool under the spend cap."""
        return not (self.over_cap and part == 0)

    @property
    def context(self) -> dict[str, Any]:
        """The run context; ``model`` is pinned so no key in the environment goes online."""
        context: dict[str, Any] = {"model": OFFLINE_MODEL, "force_outcome": self.force_outcome}
        if self.policy != "all":
            context["parallel_policy"] = self.policy
        return context

    def to_json(self) -> dict[str, Any]:
        """Return the JSON line, ``expect`` included for readers of the file."""
        return {
            "id": self.id,
            "text": self.text,
            "kind": self.kind,
            "outcome": self.outcome,
            "part_outcomes": list(self.part_outcomes),
            "policy": self.policy,
            "force_outcome": self.force_outcome,
            "over_cap": self.over_cap,
            "parts": self.parts,
            "expect": self.expect,
        }


class QuerySetError(ValueError):
    """A query file line that does not describe a valid query."""


def force_for(part_outcomes: Sequence[OutcomeClass]) -> str | list[str]:
    """Return the ``force_outcome`` that gives each part's first call its outcome.

    The list form indexes this turn's calls in the order the model issued them, the last
    element repeating: the first calls' outcomes (``retryable`` for a transient one), then
    ``success`` for every retry, with a repeated tail said once. Without a transient part,
    one outcome for every call is the plain string.
    """
    first = ["retryable" if outcome == "transient" else outcome for outcome in part_outcomes]
    if "retryable" not in first:
        return first[0] if len(set(first)) == 1 else first
    forced = [*first, "success"]
    while len(forced) > 1 and forced[-2] == forced[-1]:
        forced.pop()
    return forced


def outcome_of(part_outcomes: Sequence[OutcomeClass]) -> OutcomeClass:
    """Return a query's outcome class: ``transient`` when any part's first call is.

    Raises:
        QuerySetError: If the parts mix success and fatal with no transient part (no class).
    """
    if "transient" in part_outcomes:
        return "transient"
    if len(set(part_outcomes)) != 1:
        msg = "part_outcomes mixes success and fatal without a transient part: no class"
        raise QuerySetError(msg)
    return part_outcomes[0]


def _counts(total: int, shares: dict[Any, float]) -> dict[Any, int]:
    counts = {key: int(round(total * share)) for key, share in shares.items()}
    first = next(iter(counts))
    counts[first] += total - sum(counts.values())
    return counts


def _price(rng: random.Random, low: float, high: float) -> str:
    amount = rng.randrange(int(low), int(high))
    return f"${amount:,}" if rng.random() < 0.5 else str(amount)


def generate(count: int = COUNT, seed: int = SEED) -> list[Query]:
    """Build the query set: exact class, outcome and kind counts, shuffled with a fixed seed.

    The :data:`SPECIAL` queries (scaled to ``count``) take their share of the ``transient``
    slots of :data:`MIX`; the rest are split by :data:`KIND_MIX`.

    Args:
        count: Number of queries.
        seed: Seed for every random choice.

    Returns:
        The queries, ids ``q001``... in order.
    """
    rng = random.Random(seed)
    topics = sorted(knowledge_base())
    cap = Context().spend_cap
    outcome_counts = _counts(count, MIX)
    specials = {cls: round(n * count / COUNT) for cls, n in SPECIAL.items()}
    special_total = sum(specials.values())
    if special_total > outcome_counts["transient"]:
        msg = "count: the special classes need more transient slots than MIX leaves"
        raise QuerySetError(msg)
    outcome_counts["transient"] -= special_total
    plain = count - special_total
    outcomes: list[OutcomeClass | Special] = [
        o for o, n in outcome_counts.items() for _ in range(n)
    ]
    outcomes += [cls for cls, n in specials.items() for _ in range(n)]
    kinds = [k for k, n in _counts(plain, KIND_MIX).items() for _ in range(n)]
    rng.shuffle(outcomes)
    rng.shuffle(kinds)
    checkouts = sum(kind == "checkout" for kind in kinds)
    over = set(rng.sample(range(checkouts), round(checkouts * OVER_CAP_SHARE)))
    queries: list[Query] = []
    checkout_index = 0
    plain_kinds = iter(kinds)
    for index, drawn in enumerate(outcomes):
        over_cap = False
        policy: ParallelPolicy = "all"
        kind: Kind
        if drawn in SPECIAL:
            if drawn == "block_transient":
                kind, over_cap = "checkouts", True
                above, within = rng.sample(_ITEMS, 2)
                text = (
                    f"buy {above} for {_price(rng, cap + 20, cap * 5)}; "
                    f"buy {within} for {_price(rng, 5, cap - 20)}"
                )
                part_outcomes: tuple[OutcomeClass, ...] = ("success", "transient")
            else:
                kind = "parallel"
                first, second = rng.sample(topics, 2)
                text = rng.choice(_PARALLEL).format(first, second)
                if drawn == "retried_first":
                    part_outcomes = ("transient", rng.choice(("fatal", "success")))
                else:
                    policy = "any" if drawn == "any_transient" else "priority"
                    part_outcomes = rng.choice((("transient", "success"), ("success", "transient")))
        else:
            outcome = cast(OutcomeClass, drawn)
            kind = next(plain_kinds)
            if kind == "search":
                text = rng.choice(_SEARCH).format(rng.choice(topics))
                part_outcomes = (outcome,)
            elif kind == "parallel":
                first, second = rng.sample(topics, 2)
                text = rng.choice(_PARALLEL).format(first, second)
                part_outcomes = (outcome, outcome)
            else:
                over_cap = checkout_index in over
                checkout_index += 1
                low, high = (cap + 20, cap * 5) if over_cap else (5, cap - 20)
                text = f"buy {rng.choice(_ITEMS)} for {_price(rng, low, high)}"
                part_outcomes = (outcome,)
        queries.append(
            Query(
                id=f"q{index + 1:03d}",
                text=text,
                kind=kind,
                outcome=outcome_of(part_outcomes),
                force_outcome=force_for(part_outcomes),
                over_cap=over_cap,
                parts=len(part_outcomes),
                part_outcomes=part_outcomes,
                policy=policy,
            )
        )
    for query in queries:
        _check(query)
    return queries


def _check(query: Query) -> None:
    """Raise when a query would not do what its fields say; the message names the field."""
    where = f"query {query.id}"
    texts = [part.strip() for part in query.text.split(";")]
    shape = {"search": 1, "parallel": 2, "checkout": 1, "checkouts": 2}[query.kind]
    if not (query.parts == len(query.part_outcomes) == len(texts) == shape):
        msg = (
            f"{where}: parts, part_outcomes and the ';'-separated text must all count "
            f"{shape} part(s) for kind {query.kind!r}"
        )
        raise QuerySetError(msg)
    if query.outcome != outcome_of(query.part_outcomes):
        msg = f"{where}: outcome {query.outcome!r} does not follow from part_outcomes"
        raise QuerySetError(msg)
    if query.force_outcome != force_for(query.part_outcomes):
        msg = (
            f"{where}: force_outcome {query.force_outcome!r} does not produce part_outcomes "
            f"{list(query.part_outcomes)!r}"
        )
        raise QuerySetError(msg)
    if query.policy not in PARALLEL_POLICIES:
        msg = f"{where}: policy must be one of {PARALLEL_POLICIES}"
        raise QuerySetError(msg)
    if query.policy != "all" and (
        query.kind != "parallel" or query.part_outcomes.count("transient") != 1
    ):
        msg = f"{where}: policy {query.policy!r} is only set on two searches, one transient"
        raise QuerySetError(msg)
    if query.kind in ("search", "parallel"):
        if query.over_cap:
            msg = f"{where}: over_cap is only set on a checkout"
            raise QuerySetError(msg)
        for part in texts:
            if lookup(part) is None:
                msg = f"{where}: part {part!r} names no knowledge-base topic"
                raise QuerySetError(msg)
        return
    cap = Context().spend_cap
    amounts = []
    for part in texts:
        bought = parse_buy(part)
        if bought is None:
            msg = f"{where}: a part of a {query.kind!r} query is not 'buy <item> for <amount>'"
            raise QuerySetError(msg)
        amounts.append(bought[1])
    if query.over_cap != (amounts[0] > cap) or any(amount > cap for amount in amounts[1:]):
        msg = f"{where}: over_cap must say whether the first (and only the first) part is over"
        raise QuerySetError(msg)
    if query.kind == "checkouts" and not (
        query.over_cap and query.part_outcomes == ("success", "transient")
    ):
        msg = f"{where}: checkouts is an over-cap purchase beside one that times out once"
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
            part_outcomes=tuple(raw["part_outcomes"]),
            policy=raw["policy"],
        )
    except (ValueError, KeyError, TypeError) as exc:
        msg = f"line {number}: not a query ({exc!r})"
        raise QuerySetError(msg) from exc
    if query.kind not in KINDS:
        msg = f"line {number}: kind {query.kind!r} is not one of {KINDS}"
        raise QuerySetError(msg)
    for outcome in (query.outcome, *query.part_outcomes):
        if outcome not in OUTCOMES:
            msg = f"line {number}: outcome {outcome!r} is not one of {OUTCOMES}"
            raise QuerySetError(msg)
    try:
        _check(query)
    except QuerySetError as exc:
        msg = f"line {number}: {exc}"
        raise QuerySetError(msg) from None
    if "expect" in raw and raw["expect"] != query.expect:
        msg = f"line {number}: expect {raw['expect']!r} contradicts the fields ({query.expect!r})"
        raise QuerySetError(msg)
    Context.model_validate(query.context)
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
    """Summarize a query set: counts by outcome, kind, special class and expected ending."""
    items = list(queries)
    return {
        "count": len(items),
        "by_outcome": dict(Counter(q.outcome for q in items)),
        "by_kind": dict(Counter(q.kind for q in items)),
        "by_special": dict(Counter(q.special for q in items if q.special is not None)),
        "by_expect": dict(Counter(q.expect for q in items)),
        "over_cap": sum(q.over_cap for q in items),
    }


if __name__ == "__main__":
    sys.stdout.write(dumps(generate()))
