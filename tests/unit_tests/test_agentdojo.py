"""The AgentDojo harness stays honest: the replay on stock create_agent scores what AgentDojo's
own pipeline scores, faults are re-tried as a perfect model would, and the README's block is
the committed run's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.agentdojo.configs import STOCK, Config
from bench.agentdojo.harness import ground_truth_utility, run_task
from bench.agentdojo.mappings import ToolMapping, is_write, team_mapping
from bench.agentdojo.report import README, update_readme
from bench.agentdojo.suites import Task, tasks
from bench.agentdojo.tools import Faults
from bench.latency import Profile

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "agentdojo.json"
# A few tasks of each suite: the first, the longest ground truths, and tasks judged from the
# calls made (utility_from_traces: workspace 23 and 36, slack 11 and 19).
CHOSEN = {
    "workspace": ("user_task_0", "user_task_23", "user_task_36"),
    "travel": ("user_task_0", "user_task_3", "user_task_19"),
    "banking": ("user_task_0", "user_task_15"),
    "slack": ("user_task_0", "user_task_11", "user_task_19"),
}
PROFILE = Profile()


def _chosen() -> list[Task]:
    return [task for suite, ids in CHOSEN.items() for task in tasks((suite,)) if task.id in ids]


TASKS = {task.key: task for task in _chosen()}


@pytest.mark.parametrize("key", sorted(TASKS))
def test_stock_with_the_replay_scores_what_agentdojo_scores(key: str) -> None:
    task = TASKS[key]
    outcome = run_task(STOCK, task, Faults(), PROFILE)
    assert ground_truth_utility(task) is True
    assert outcome.utility == ground_truth_utility(task)
    assert outcome.calls == len(task.calls)
    assert outcome.model_calls == len(task.calls) + 1  # one per call, then the answer


def test_a_timed_out_call_is_made_again_as_a_perfect_model_would() -> None:
    task = TASKS["banking/user_task_15"]
    outcome = run_task(STOCK, task, Faults(rate=1.0), PROFILE)  # every call times out once
    assert outcome.timeouts == len(task.calls)
    assert outcome.model_calls == 2 * len(task.calls) + 1
    assert outcome.utility


def test_fault_draws_depend_only_on_seed_task_and_call() -> None:
    faults = Faults(rate=0.2, seed=41)
    plans = [faults.plan(task.key, len(task.calls)) for task in TASKS.values()]
    assert plans == [Faults(rate=0.2, seed=41).plan(t.key, len(t.calls)) for t in TASKS.values()]
    assert any(plans), "some call of these tasks is drawn"
    assert Faults(rate=0.0).plan("any/task", 10) == ()


def test_a_stopping_write_ends_the_run_with_its_content_and_retries_in_place() -> None:
    task = TASKS["banking/user_task_0"]  # read_file, then send_money
    mapping = ToolMapping(name="t", rule="", stops={"banking": frozenset({"send_money"})})
    config = Config(
        name="t", description="", mapping=mapping, stopping="stops", middleware=True,
        retry_in_place=True,
    )  # fmt: skip
    clean = run_task(config, task, Faults(), PROFILE)
    assert (clean.utility, clean.rule, clean.model_calls) == (True, "completed", len(task.calls))
    faulty = run_task(config, task, Faults(rate=1.0), PROFILE)
    assert faulty.utility and faulty.in_place_retries == 1  # send_money's timeout, in place
    assert faulty.model_calls == len(task.calls) + 1  # read_file's timeout went to the model


def test_the_team_rule_reads_the_verb_and_refuses_an_unknown_one() -> None:
    assert is_write("send_money") and not is_write("get_balance")
    with pytest.raises(ValueError, match="verb"):
        is_write("frobnicate_account")
    mapping = team_mapping({"banking": ["send_money", "get_balance"]})
    assert mapping.kinds("banking", "stops") == {"send_money": "stops"}


def test_the_readme_block_is_the_committed_run() -> None:
    result = json.loads(RESULTS.read_text("utf-8"))
    text = README.read_text("utf-8")
    assert update_readme(text, result) == text, "run make bench-agentdojo and commit its output"
    assert result["harness_check"]["equal"] == result["harness_check"]["tasks"] == 97
