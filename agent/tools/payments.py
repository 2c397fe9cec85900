"""A stand-in for a payment provider that honours idempotency keys, as Stripe's API does.

``checkout`` charges through :func:`charge` the way it would call a real provider with an
``Idempotency-Key`` header. The first *settled* result for a key (a completed charge, or a
decline) is recorded; any later request with that key gets the same result back, marked as a
replay, and moves no money. A key sent again with different parameters is refused
(:class:`IdempotencyKeyReusedError`, Stripe's ``idempotency_error``). A timeout settles
nothing: it is not recorded, and a retry with the same key charges afresh.

The record is a SQLite file, so two server worker processes on one machine share it: its path
is ``AGENT_PAYMENTS_DB``, by default ``.langgraph_api/payments.sqlite3`` under the current
directory. A request runs in one ``BEGIN IMMEDIATE`` transaction (``INSERT OR IGNORE``, then
read), so two first requests with one key, from any two processes, charge once. Per key it
counts the requests, so "charged once, replayed N times" can be read back with :func:`ledger`.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

DB_ENV = "AGENT_PAYMENTS_DB"
"""The environment variable naming the record's SQLite file."""
DEFAULT_DB = Path(".langgraph_api") / "payments.sqlite3"
"""The record's file when ``AGENT_PAYMENTS_DB`` is unset, under the current directory."""
BUSY_TIMEOUT_S = 30.0
"""How long a request waits for another process's transaction on the file."""

Settled = Literal["completed", "declined"]
"""A result the provider records: the money moved, or the bank refused."""
Outcome = Literal["completed", "declined", "timed_out"]
"""What the provider answers one request."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS charges (
    key TEXT PRIMARY KEY,
    item TEXT NOT NULL,
    amount REAL NOT NULL,
    status TEXT NOT NULL,
    order_id TEXT NOT NULL,
    requests INTEGER NOT NULL
)
"""


class IdempotencyKeyReusedError(Exception):
    """A key that settled one purchase came back with another item or amount.

    The provider refuses it and moves no money; a new purchase needs a new key.
    """


@dataclass(frozen=True)
class Charge:
    """The provider's answer to one request."""

    outcome: Outcome
    """``completed`` (charged), ``declined`` (the bank refused) or ``timed_out`` (nothing)."""
    order_id: str
    """The settled charge's order id; empty for a timeout."""
    replayed: bool = False
    """True when the key had settled before: the first result, returned again."""


@dataclass(frozen=True)
class LedgerRow:
    """One key's record."""

    key: str
    item: str
    amount: float
    status: Settled
    order_id: str
    requests: int
    """Requests with this key since it settled, the first included: replays are one fewer."""


def db_path() -> Path:
    """Return the record's file: ``AGENT_PAYMENTS_DB``, else ``.langgraph_api/payments.sqlite3``."""
    return Path(os.environ.get(DB_ENV, "").strip() or DEFAULT_DB)


_PREPARED: set[Path] = set()
"""Record files this process has made (folder and table), so a charge opens, not creates."""


def _connect(path: Path) -> sqlite3.Connection:
    prepared = path in _PREPARED and path.exists()  # a file removed since is made again
    if not prepared:
        path.parent.mkdir(parents=True, exist_ok=True)
    # Autocommit mode: each transaction below is begun and ended explicitly.
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    if not prepared:
        connection.execute(_SCHEMA)
        _PREPARED.add(path)
    return connection


def charge(
    key: str,
    item: str,
    amount: float,
    *,
    outcome: Outcome,
    order_id: str,
    path: Path | None = None,
) -> Charge:
    """Charge ``amount`` for ``item`` once per ``key``.

    Args:
        key: The idempotency key (one per tool call: :func:`stop_on_artifact.idempotency_key`).
        item: What is bought.
        amount: The price, in dollars.
        outcome: What the bank does with a fresh request (the stand-in's draw): it is
            ignored when the key has settled before, whose result is returned instead.
        order_id: The order id a completed charge gets.
        path: The record's file; by default :func:`db_path`.

    Returns:
        The result: this request's, or the key's first settled one, marked ``replayed``.

    Raises:
        IdempotencyKeyReusedError: If the key settled a purchase of another item or amount.
    """
    with closing(_connect(path or db_path())) as connection:
        connection.execute("BEGIN IMMEDIATE")  # one writer per file: the check and the write
        try:
            fresh = 0
            if outcome != "timed_out":  # a timeout moved no money: nothing to remember
                fresh = connection.execute(
                    "INSERT OR IGNORE INTO charges VALUES (?, ?, ?, ?, ?, 0)",
                    (key, item, amount, outcome, order_id if outcome == "completed" else ""),
                ).rowcount
            row = connection.execute(
                "SELECT item, amount, status, order_id FROM charges WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                connection.execute("COMMIT")
                return Charge(outcome="timed_out", order_id="")
            if (row[0], row[1]) != (item, amount):
                raise IdempotencyKeyReusedError(
                    "idempotency key reused with a different item or amount: a new purchase "
                    "needs a new key"
                )
            connection.execute("UPDATE charges SET requests = requests + 1 WHERE key = ?", (key,))
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    return Charge(outcome=row[2], order_id=row[3], replayed=not fresh)


def ledger(path: Path | None = None) -> list[LedgerRow]:
    """Return every key's record, oldest first.

    Args:
        path: The record's file; by default :func:`db_path`.

    Returns:
        One row per settled key; none when nothing has settled.
    """
    with closing(_connect(path or db_path())) as connection:
        rows = connection.execute(
            "SELECT key, item, amount, status, order_id, requests FROM charges ORDER BY rowid"
        ).fetchall()
    return [LedgerRow(*row) for row in rows]
