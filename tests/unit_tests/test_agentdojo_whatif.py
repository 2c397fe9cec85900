"""The what-if on the AgentDojo stock trajectories gives what the bench's replay measures.

``python -m bench.agentdojo.export`` runs every task once under ``stock`` (the replay, no
faults) and writes the trajectories as JSONL; ``python -m stop_on_artifact.whatif`` with the
bench's ``team`` mapping and the middleware's bounds must give exactly the model calls that
``stop/team`` saved and the tasks it ended early, as committed in
``bench/results/agentdojo.json``. Both run in fresh interpreters: importing agentdojo changes
``yaml.dump`` for the whole process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.probe import ROOT

RESULTS = ROOT / "bench" / "results" / "agentdojo.json"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    paths = [str(ROOT / "libs" / "stop-on-artifact" / "src"), str(ROOT)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def test_the_whatif_with_the_team_mapping_is_the_bench_stop_team(tmp_path: Path) -> None:
    stock = tmp_path / "stock.jsonl"
    exported = run("bench.agentdojo.export", str(stock))
    assert exported.returncode == 0, exported.stderr
    assert len(stock.read_text("utf-8").splitlines()) == 97
    done = run(
        "stop_on_artifact.whatif", str(stock), "--json",
        "--mapping", "bench.agentdojo.export:team",
        "--max-model-calls", "50", "--max-retries", "10",  # configs.MAX_MODEL_CALLS, MAX_RETRIES
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    whatif = json.loads(done.stdout)
    bench = json.loads(RESULTS.read_text("utf-8"))
    rows = {(r["config"], r["faults"], r["suite"]): r for r in bench["rows"]}
    stock_calls = rows["stock", False, "total"]["model_calls"]
    team_calls = rows["stop/team", False, "total"]["model_calls"]
    assert (whatif["traces"], whatif["turns"], whatif["model_calls"]) == (97, 97, stock_calls)
    assert whatif["model_calls_saved"] == stock_calls - team_calls  # 436 - 342
    ended = {e["task"] for e in bench["ended_early"]
             if e["config"] == "stop/team" and not e["faults"]}  # fmt: skip
    assert len(ended) == rows["stop/team", False, "total"]["ended_early"] > 0
    assert set(whatif["cut"]) == ended
    per_task = {t["task"]: t["model_calls"] for t in bench["tasks"]
                if t["config"] == "stop/team" and not t["faults"]}  # fmt: skip
    assert {t["trace"]: t["model_calls"] - t["model_calls_saved"] for t in whatif["per_turn"]} == (
        per_task
    )
