"""The stand-in payment provider: one settled result per idempotency key, across processes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.tools import payments
from agent.tools.payments import Charge, IdempotencyKeyReusedError, LedgerRow, charge, ledger

ROOT = Path(__file__).resolve().parents[2]


def test_the_first_result_is_kept_and_a_repeat_is_a_replay(tmp_path: Path) -> None:
    db = tmp_path / "p.sqlite3"
    first = charge("k1", "a lamp", 40.0, outcome="completed", order_id="ORD-1", path=db)
    assert first == Charge(outcome="completed", order_id="ORD-1", replayed=False)
    # A repeat gets the first result whatever the bank would do with a fresh request.
    for outcome in ("completed", "declined", "timed_out"):
        again = charge("k1", "a lamp", 40.0, outcome=outcome, order_id="ORD-9", path=db)
        assert again == Charge(outcome="completed", order_id="ORD-1", replayed=True)
    assert ledger(db) == [LedgerRow("k1", "a lamp", 40.0, "completed", "ORD-1", 4)]


def test_a_decline_is_settled_too(tmp_path: Path) -> None:
    db = tmp_path / "p.sqlite3"
    assert not charge("k1", "a lamp", 40.0, outcome="declined", order_id="ORD-1", path=db).replayed
    again = charge("k1", "a lamp", 40.0, outcome="completed", order_id="ORD-1", path=db)
    assert again == Charge(outcome="declined", order_id="", replayed=True)
    assert [(r.status, r.requests) for r in ledger(db)] == [("declined", 2)]


def test_a_timeout_is_not_recorded_and_its_retry_charges(tmp_path: Path) -> None:
    db = tmp_path / "p.sqlite3"
    timed_out = charge("k1", "a lamp", 40.0, outcome="timed_out", order_id="ORD-1", path=db)
    assert timed_out == Charge(outcome="timed_out", order_id="", replayed=False)
    assert ledger(db) == []
    retried = charge("k1", "a lamp", 40.0, outcome="completed", order_id="ORD-1", path=db)
    assert retried == Charge(outcome="completed", order_id="ORD-1", replayed=False)
    assert [r.requests for r in ledger(db)] == [1]


@pytest.mark.parametrize(("item", "amount"), [("a desk", 40.0), ("a lamp", 41.0)])
def test_a_key_reused_with_other_parameters_is_refused(
    tmp_path: Path, item: str, amount: float
) -> None:
    db = tmp_path / "p.sqlite3"
    charge("k1", "a lamp", 40.0, outcome="completed", order_id="ORD-1", path=db)
    with pytest.raises(IdempotencyKeyReusedError) as refused:
        charge("k1", item, amount, outcome="completed", order_id="ORD-2", path=db)
    assert item not in str(refused.value) and "41" not in str(refused.value)
    assert ledger(db) == [LedgerRow("k1", "a lamp", 40.0, "completed", "ORD-1", 1)]


def test_the_file_comes_from_the_environment_or_the_server_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(payments.DB_ENV, str(tmp_path / "a" / "b.sqlite3"))
    charge("k1", "a lamp", 40.0, outcome="completed", order_id="ORD-1")
    assert (tmp_path / "a" / "b.sqlite3").is_file() and len(ledger()) == 1
    monkeypatch.delenv(payments.DB_ENV)
    monkeypatch.chdir(tmp_path)
    assert payments.db_path() == Path(".langgraph_api/payments.sqlite3")
    assert ledger() == []  # the folder is made on first use
    assert (tmp_path / ".langgraph_api" / "payments.sqlite3").is_file()


RACER = """
import importlib.util, json, sys, time
from pathlib import Path
# The module alone (the standard library only): the process is up in a few milliseconds.
spec = importlib.util.spec_from_file_location("payments", "agent/tools/payments.py")
module = sys.modules["payments"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
charge = module.charge
db, start, order = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
time.sleep(max(0.0, start - time.time()))
paid = charge("k1", "a lamp", 40.0, outcome="completed", order_id=order, path=db)
print(json.dumps([paid.order_id, paid.replayed]))
"""


def test_processes_racing_one_key_charge_once(tmp_path: Path) -> None:
    db = tmp_path / "p.sqlite3"
    ledger(db)  # the file and its table exist; the race is on the first charge
    start = time.time() + 1.0  # every process is up and waiting by then
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(db), str(start), f"ORD-{n}"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(4)
    ]
    answers = []
    for racer in racers:
        out, err = racer.communicate(timeout=60)
        assert racer.returncode == 0, err
        answers.append(json.loads(out))
    [(winner, _)] = [answer for answer in answers if not answer[1]]  # one charged
    assert [order for order, _ in answers] == [winner] * 4  # the others got its result
    [row] = ledger(db)
    assert (row.order_id, row.requests) == (winner, 4)
