"""``python -m bench approval``: the figures it computes, and the committed copy of them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from bench.__main__ import main
from bench.approval import OUT, measure, render
from bench.queries import load

README = Path(__file__).resolve().parents[2] / "bench" / "README.md"


def rows(result: dict[str, Any], **match: str) -> list[dict[str, Any]]:
    return [row for row in result["rows"] if all(row[k] == v for k, v in match.items())]


def test_an_approved_one_part_purchase_costs_one_model_call() -> None:
    queries = load()
    result = asyncio.run(measure(queries))
    over = [q for q in queries if q.over_cap and q.kind in ("checkout", "checkouts")]
    assert result["queries"] == len(over) > 0
    for graph in ("legacy", "middleware"):
        [approve] = rows(result, graph=graph, way="approve", outcome="checkout/success")
        assert approve["model_calls"] == 1.0 and approve["one_call"] == approve["runs"]
        assert approve["pauses"] == 1.0
        assert approve["ended"] == {"completed": approve["runs"]}
        assert approve["approval"] == {"approved": approve["runs"]}
        # A timed-out approved purchase is retried once, and not asked about again.
        [retried] = rows(result, graph=graph, way="approve", outcome="checkout/transient")
        assert (retried["model_calls"], retried["pauses"]) == (2.0, 1.0)
        for way, pauses in (("reject", 1.0), ("refuse", 0.0)):
            [row] = rows(result, graph=graph, way=way, outcome="checkout/success")
            assert row["ended"] == {"policy_block": row["runs"]}
            assert (row["model_calls"], row["pauses"]) == (1.0, pauses)
        # Asking costs no tokens of its own: an approve is billed like the refusal.
        [refused] = rows(result, graph=graph, way="refuse", outcome="checkout/success")
        assert approve["input_tokens"] == refused["input_tokens"]


def test_the_committed_results_and_the_readme_are_the_commands_output(tmp_path: Path) -> None:
    assert main(["approval", "--out", str(tmp_path)]) == 0
    written = json.loads((tmp_path / "approval.json").read_text("utf-8"))
    table = (tmp_path / "approval.md").read_text("utf-8")
    assert table == render(written)
    assert (OUT / "approval.md").read_text("utf-8") == table, "run `python -m bench approval`"
    assert table in README.read_text("utf-8"), "paste bench/results/approval.md in bench/README"
