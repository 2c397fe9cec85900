"""The AgentDojo harness stays honest: the replay on stock create_agent scores what AgentDojo's
own pipeline scores, faults are re-tried as a perfect model would, and the README's block is
the committed run's.

Importing ``agentdojo`` makes ``yaml.dump`` quote every string for the whole process (its
``yaml_loader`` registers a representer on the default dumper), which changes what other tests
render (the Mermaid diagrams' front matter). So everything that runs AgentDojo runs once, in a
fresh interpreter (:data:`PROBE`), and this module imports only what does not load it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.agentdojo.mappings import is_write, team_mapping
from bench.agentdojo.parallel import appears, cut
from bench.agentdojo.report import README, update_readme
from tests.support.probe import run_probe

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "agentdojo.json"
# A few tasks of each suite: the first, the longest ground truths, and tasks judged from the
# calls made (utility_from_traces: workspace 23 and 36, slack 11 and 19).
CHOSEN = {
    "workspace": ["user_task_0", "user_task_23", "user_task_36"],
    "travel": ["user_task_0", "user_task_3", "user_task_19"],
    "banking": ["user_task_0", "user_task_15"],
    "slack": ["user_task_0", "user_task_11", "user_task_19"],
}
PROBE = """
import json, sys
from dataclasses import asdict
from bench.agentdojo.configs import STOCK, Config
from bench.agentdojo.harness import ground_truth_utility, run_task
from bench.agentdojo.mappings import ToolMapping
from bench.agentdojo.suites import tasks
from bench.agentdojo.tools import Faults
from bench.latency import Profile

chosen = json.loads(sys.argv[1])
profile = Profile()
found = {t.key: t for s, ids in chosen.items() for t in tasks((s,)) if t.id in ids}
out = {"stock": {}, "plans": {}}
for key, task in found.items():
    outcome = run_task(STOCK, task, Faults(), profile)
    out["stock"][key] = {
        "agentdojo": ground_truth_utility(task), "calls": len(task.calls), **asdict(outcome)
    }
    out["plans"][key] = [Faults(rate=0.2, seed=41).plan(key, len(task.calls)) for _ in range(2)]
out["faulty_stock"] = asdict(run_task(STOCK, found["banking/user_task_15"], Faults(1.0), profile))
mapping = ToolMapping(name="t", rule="", stops={"banking": frozenset({"send_money"})})
config = Config(
    name="t", description="", mapping=mapping, stopping="stops", middleware=True,
    retry_in_place=True,
)
task = found["banking/user_task_0"]
out["stop_clean"] = asdict(run_task(config, task, Faults(), profile))
out["stop_faulty"] = asdict(run_task(config, task, Faults(1.0), profile))
from bench.agentdojo.configs import configurations
from bench.agentdojo.harness import oracle_step_marks
from bench.agentdojo.parallel import steps
configs = {c.name: c for c in configurations(mapping, mapping, mapping)}
marking, retrying = configs["stop/when_marked+parallel"], configs["stop/when_marked+parallel+retry"]
out["parallel"] = {}
for key, task in found.items():
    marks = oracle_step_marks([task], marking, profile)[key]
    out["parallel"][key] = {
        "steps": [list(step) for step in steps(task)],
        "marks": marks,
        "stock": asdict(run_task(configs["stock+parallel"], task, Faults(), profile)),
        "stock_faulty": asdict(run_task(configs["stock+parallel"], task, Faults(1.0), profile)),
        "clean": asdict(run_task(retrying, task, Faults(), profile, mark=marks)),
        "faulty": asdict(run_task(retrying, task, Faults(1.0), profile, mark=marks)),
    }
from bench.agentdojo.harness import oracle_marks
argument, shared = configs["stop/when_marked+retry"], configs["stop/when_marked/shared+retry"]
out["shared"] = {}
for key, task in found.items():
    mark = oracle_marks([task], argument, profile)[key]
    out["shared"][key] = {
        "mark": mark,
        "argument": asdict(run_task(argument, task, Faults(), profile, mark=mark)),
        "clean": asdict(run_task(shared, task, Faults(), profile, mark=mark)),
        "faulty": asdict(run_task(shared, task, Faults(1.0), profile, mark=mark)),
    }
from langchain_core.messages import AIMessage, ToolMessage
from bench.agentdojo.harness import model_mark
def reply(*calls):
    return AIMessage("", tool_calls=[
        {"name": n, "args": a, "id": f"c{i}", "type": "tool_call"} for n, a, i in calls
    ])
def result(i, name):
    return ToolMessage("ok", tool_call_id=f"c{i}", name=name)
read = [reply(("get_balance", {}, 0)), result(0, "get_balance")]
shared_mark = [*read, reply(("send_money", {}, 1), ("mark_final", {}, 2)),
               result(1, "send_money"), result(2, "mark_final")]
argument_mark = [*read, reply(("send_money", {"final": True}, 1)), result(1, "send_money")]
out["model_marks"] = [model_mark(shared_mark), model_mark(argument_mark), model_mark(read)]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def probed() -> dict[str, Any]:
    done = run_probe(sys.executable, PROBE, json.dumps(CHOSEN))
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_stock_with_the_replay_scores_what_agentdojo_scores(probed: dict[str, Any]) -> None:
    stock = probed["stock"]
    assert sorted(stock) == sorted(f"{s}/{t}" for s, ids in CHOSEN.items() for t in ids)
    for key, run in stock.items():
        assert run["agentdojo"] is True, key
        assert run["utility"] == run["agentdojo"], key
        assert run["calls"] == run["ground_truth"], key
        assert run["model_calls"] == run["ground_truth"] + 1, key  # each call, then the answer


def test_a_timed_out_call_is_made_again_as_a_perfect_model_would(probed: dict[str, Any]) -> None:
    run = probed["faulty_stock"]  # every call times out once
    assert run["timeouts"] == run["ground_truth"] == 5
    assert run["model_calls"] == 2 * run["ground_truth"] + 1
    assert run["utility"]


def test_fault_draws_depend_only_on_seed_task_and_call(probed: dict[str, Any]) -> None:
    plans = probed["plans"]
    assert all(first == again for first, again in plans.values())
    assert any(first for first, _ in plans.values()), "some call of these tasks is drawn"


def test_a_stopping_write_ends_the_run_with_its_content_and_retries_in_place(
    probed: dict[str, Any],
) -> None:
    clean, faulty = probed["stop_clean"], probed["stop_faulty"]  # read_file, then send_money
    assert (clean["utility"], clean["rule"], clean["model_calls"]) == (True, "completed", 2)
    assert faulty["utility"] and faulty["in_place_retries"] == 1  # send_money's, in place
    assert faulty["model_calls"] == 3  # read_file's timeout went back to the model


def test_calls_issued_together_keep_utility_and_save_steps(probed: dict[str, Any]) -> None:
    parallel = probed["parallel"]
    assert any(len(step) > 1 for run in parallel.values() for step in run["steps"])
    for key, run in parallel.items():
        n = len(run["steps"])
        assert [i for step in run["steps"] for i in step] == list(range(run["stock"]["calls"]))
        stock, faulty = run["stock"], run["stock_faulty"]
        assert stock["utility"] and stock["model_calls"] == n + 1, key
        assert faulty["utility"] and faulty["model_calls"] == 2 * n + 1, key  # each step again
        answer = 0 if run["marks"] is not None else 1  # a marked last step is the answer
        if run["marks"] is not None:
            assert run["marks"] == run["steps"][-1], key
        for name in ("clean", "faulty"):  # every timeout is retried in place
            assert run[name]["utility"] and run[name]["model_calls"] == n + answer, (key, name)
            assert run[name]["calls"] == run[name]["ground_truth"], (key, name)


def test_the_shared_mark_stops_where_the_argument_does_and_sends_fewer_tokens(
    probed: dict[str, Any],
) -> None:
    for key, run in probed["shared"].items():  # the replay calls the mark beside the marked call
        argument, clean, faulty = run["argument"], run["clean"], run["faulty"]
        assert clean["utility"] and faulty["utility"], key  # AgentDojo ignores the mark's call
        assert clean["model_calls"] == argument["model_calls"], key
        assert clean["rule"] == argument["rule"] and clean["invalid_artifacts"] == 0, key
        assert clean["input_tokens"] < argument["input_tokens"], key
        assert (clean["rule"] == "completed") == (run["mark"] is not None), key


def test_a_models_mark_is_read_from_the_argument_or_the_shared_mark(
    probed: dict[str, Any],
) -> None:
    # after one successful read, send_money is marked either way; the mark's own result and
    # an unmarked run count for nothing
    assert probed["model_marks"] == [[1, "send_money"], [1, "send_money"], None]


def test_a_call_waits_only_for_a_value_it_learned_in_the_step_before_it() -> None:
    prompt = "Find the hotel in Paris and send its address to Bob, 3 nights."
    calls: list[tuple[str, dict[str, Any]]] = [
        ("get_all_hotels_in_city", {"city": "Paris"}),
        ("get_hotels_address", {"hotel_name": "Le Marais"}),  # learned from call 0
        ("get_rating_reviews_for_hotels", {"hotel_names": ["Le Marais"]}),  # known by then
        ("get_hotels_prices", {"hotel_names": ["Paris"], "nights": 3}),  # in the prompt
        ("send_email", {"recipients": ["bob@x.com"]}),  # a write is alone
        ("get_received_emails", {}),
    ]
    outputs = ["- Le Marais\n- 42", "Le Marais: 1 Rue", "Le Marais: 4.2", "3: 120", "sent", "-"]
    assert cut(prompt, calls, outputs) == ((0,), (1, 2, 3), (4,), (5,))
    assert appears(42, "rating: 42\n") and not appears(4, "rating: 42")
    assert appears("le marais", "LE MARAIS") and appears(3.0, "3 nights")


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


def test_this_process_never_loaded_agentdojo() -> None:
    assert "agentdojo" not in sys.modules, "import it only in the probe (see the docstring)"
