"""The benchmark command on a tiny query set: structure and correctness flags, not numbers."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.context import Context
from agent.tools import search
from bench import queries as query_set
from bench.__main__ import TRACING_VARIABLES, main
from bench.benchmark import run
from bench.configs import STOP_MODES, configurations, return_direct_search
from bench.correctness import CHECKS, read_run
from bench.latency import Profile
from bench.queries import KIND_MIX, MIX, SPECIAL, Query, QuerySetError, dumps, generate, load
from bench.report import CLASSES, markdown, query_class, write
from bench.savings import TOLERANCE
from bench.stats import median_ci
from client.scenarios import by_name

# Model calls that take about a millisecond: the machinery runs, the figures mean nothing.
FAST = Profile(model="test", ttft_s=0.001, prefill_tps=1e9, decode_tps=1e9)

# The matrix scenario whose model-call count each query class must match, per stop mode:
# a name (``{mode}`` filled in), or per mode a (scenario, model calls added to it) pair where
# the matrix has a row for stop_mode=hard only.
SCENARIO_OF_CLASS: dict[str, str | dict[str, tuple[str, int]]] = {
    "success": "success-{mode}",
    "transient": "retry_then_success-{mode}",
    "fatal": "fatal-{mode}",
    "over_cap": "checkout_over_cap-{mode}",
    # A policy block ends the turn in every stop mode (after the sibling's retry): the
    # hard row holds for all three.
    "block_transient": "parallel-policy_block_waits_for_retry",
    # any and priority stop at once under hard; polish adds its one model call after the
    # stop; never is the stock loop: it retries the transient part, like the default
    # policy's retry row, and then the model answers.
    "any_transient": {
        "hard": ("parallel-any_names_the_transient", 0),
        "polish": ("parallel-any_names_the_transient", 1),
        "never": ("parallel-default_retry_one_part", 1),
    },
    "priority_transient": {
        "hard": ("parallel-priority_stop_beats_transient", 0),
        "polish": ("parallel-priority_stop_beats_transient", 1),
        "never": ("parallel-default_retry_one_part", 1),
    },
    # The retry settles the turn: polish adds its call, never lets the model answer.
    "retried_first": {
        mode: ("parallel-default_retried_first_part_first", int(mode != "hard"))
        for mode in STOP_MODES
    },
}
OURS = [f"{graph}/{mode}" for graph in ("legacy", "middleware") for mode in STOP_MODES]
OURS += [f"{graph}/hard+in_place" for graph in ("legacy", "middleware")]


def expected_model_calls(cls: str, mode: str) -> int:
    row = SCENARIO_OF_CLASS[cls]
    if isinstance(row, str):
        return by_name(row.format(mode=mode)).model_calls
    name, added = row[mode]
    return by_name(name).model_calls + added


def tiny_set() -> list[Query]:
    """One committed query per (class, kind, part outcomes, policy) combination."""
    picked: dict[tuple[str, str, tuple[str, ...], str], Query] = {}
    for query in load():
        key = (query_class(query), query.kind, query.part_outcomes, query.policy)
        picked.setdefault(key, query)
    return list(picked.values())


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[Query]]]:
    chosen = tiny_set()
    path = tmp_path_factory.mktemp("bench") / "tiny.jsonl"
    path.write_text(dumps(chosen), "utf-8")
    yield path, chosen


@pytest.fixture(scope="module")
async def result(tiny: tuple[Path, list[Query]]) -> dict[str, Any]:
    path, chosen = tiny
    return await run(
        chosen,
        query_path=path,
        reps=2,
        overhead_queries=4,
        profile=FAST,
        concurrency=8,
        progress=False,
        server_options={"levels": (1, 2), "repeats": 2, "window_s": 0.6, "warmup_s": 0.2},
    )


# --- the query set ---------------------------------------------------------------------


def test_committed_query_set_is_the_generators_output() -> None:
    assert query_set.DEFAULT_PATH.read_text("utf-8") == dumps(generate())


def test_committed_query_set_has_the_promised_mix() -> None:
    queries = load()
    assert len(queries) == 300
    # What bench/README.md's query-set paragraph says, exactly.
    assert {o: sum(q.outcome == o for q in queries) for o in MIX} == {
        "success": 180, "transient": 75, "fatal": 45
    }  # fmt: skip
    for outcome, share in MIX.items():
        assert sum(q.outcome == outcome for q in queries) == round(share * len(queries))
    assert Counter(q.special for q in queries if q.special) == SPECIAL
    assert Counter(q.kind for q in queries) == {
        "search": 169, "parallel": 69, "checkout": 52, "checkouts": 10
    }  # fmt: skip
    assert sum(q.over_cap for q in queries) == 27
    plain = [q for q in queries if q.special is None]
    for kind, share in KIND_MIX.items():
        assert sum(q.kind == kind for q in plain) == round(share * len(plain)), kind
    assert all(q.text.count(";") == q.parts - 1 for q in queries)
    # The special classes are what their names say.
    for query in queries:
        if query.special == "block_transient":
            assert query.over_cap and query.part_outcomes == ("success", "transient")
            assert query.force_outcome == ["success", "retryable", "success"]
        elif query.special in ("any_transient", "priority_transient"):
            assert query.context["parallel_policy"] == query.policy != "all"
            assert sorted(query.part_outcomes) == ["success", "transient"]
        elif query.special == "retried_first":
            assert query.part_outcomes[0] == "transient" != query.part_outcomes[1]
            assert "parallel_policy" not in query.context
    # Both places for the transient part under any and priority, and both second parts.
    assert {q.part_outcomes for q in queries if q.policy != "all"} == {
        ("transient", "success"), ("success", "transient")
    }  # fmt: skip
    assert {q.part_outcomes[1] for q in queries if q.special == "retried_first"} == {
        "fatal", "success"
    }  # fmt: skip
    cap = Context().spend_cap
    over = [q for q in queries if q.over_cap]
    assert over and all(q.kind in ("checkout", "checkouts") for q in over)
    assert all(q.expect == "policy_block" for q in over)
    for query in queries:
        if query.kind in ("checkout", "checkouts"):
            amounts = []
            for part in query.text.split(";"):
                match = re.search(r" for \$?([\d,]+)$", part)
                assert match, query.text
                amounts.append(float(match[1].replace(",", "")))
            assert (amounts[0] > cap) == query.over_cap, query.text
            assert all(amount <= cap for amount in amounts[1:]), query.text
    # Every query's context is one the server accepts.
    for query in queries:
        Context.model_validate(query.context)


def test_loader_names_the_bad_line(tmp_path: Path) -> None:
    good = dumps(generate(3)).splitlines()
    broken = json.loads(good[1])
    broken["force_outcome"] = "retryable"
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([good[0], json.dumps(broken), good[2]]) + "\n")
    with pytest.raises(QuerySetError, match="line 2: query q002: force_outcome 'retryable'"):
        load(path)
    # The policy is set only where the fields say the class needs it.
    single = next(q.to_json() for q in load() if q.kind == "search" and q.outcome == "success")
    path.write_text(json.dumps({**single, "policy": "any"}) + "\n")
    with pytest.raises(QuerySetError, match="line 1: .*policy 'any' is only set on two searches"):
        load(path)
    path.write_text(json.dumps({**single, "policy": "sometimes"}) + "\n")
    with pytest.raises(QuerySetError, match="line 1: .*policy must be one of"):
        load(path)
    # part_outcomes and outcome must agree, and their count must be the text's.
    path.write_text(json.dumps({**single, "part_outcomes": ["fatal"]}) + "\n")
    with pytest.raises(QuerySetError, match="line 1: .*outcome 'success' does not follow"):
        load(path)
    path.write_text(json.dumps({**single, "part_outcomes": ["success", "success"]}) + "\n")
    with pytest.raises(QuerySetError, match="line 1: .*must all count 1 part"):
        load(path)
    special = next(q for q in load() if q.special == "any_transient").to_json()
    path.write_text(json.dumps({**special, "force_outcome": "retryable"}) + "\n")
    with pytest.raises(QuerySetError, match="line 1: .*force_outcome 'retryable'"):
        load(path)
    path.write_text(good[0] + "\nnot json\n")
    with pytest.raises(QuerySetError, match="line 2: not a query"):
        load(path)
    path.write_text(good[0] + "\n" + good[0] + "\n")
    with pytest.raises(QuerySetError, match="duplicate query ids"):
        load(path)


# --- configurations ----------------------------------------------------------------------


def test_return_direct_is_set_on_a_copy_only() -> None:
    copy = return_direct_search()
    assert copy.return_direct is True
    assert search.return_direct is False
    names = [c.name for c in configurations()]
    assert names == [*OURS, "create_agent", "return_direct"]


# --- one run on the tiny set -------------------------------------------------------------


def test_result_structure(result: dict[str, Any], tiny: tuple[Path, list[Query]]) -> None:
    _, chosen = tiny
    assert set(result) == {
        "meta",
        "query_set",
        "configs",
        "overhead",
        "server",
        "prod_server",
        "savings",
        "targets",
    }
    assert result["query_set"]["count"] == len(chosen)
    assert result["meta"]["profile"]["model"] == "test"
    for name, figures in result["configs"].items():
        assert figures["queries"] == len(chosen), name
        for key in ("model_calls", "input_tokens", "output_tokens"):
            assert set(figures[key]) == {"mean", "total"}
            assert figures[key]["total"] > 0
        assert set(figures["wall_s"]) == {"p50", "p95", "mean"}
        assert figures["wall_s"]["p50"] > figures["model_s"]["p50"] > 0
        assert 0 < figures["orchestration_share"] < 1
        assert 0 < figures["unloaded_orchestration_share"] < 1
        assert figures["unloaded_orchestration_ms"]["p50"] > 0
        assert figures["usd_per_1000"] > 0
        assert set(figures["checks"]) <= set(CHECKS)
    assert [t["name"] for t in result["targets"]] == [
        "hard_one_model_call",
        "hard_input_tokens",
        "hard_cheaper",
        "hard_faster_p50",
        "orchestration_share",
        "stop_capable_correct",
        "saving_estimate",
        "server_no_errors",
        "prod_server_no_errors",
    ]
    for target in result["targets"]:
        assert isinstance(target["met"], bool), target


def test_the_estimated_saving_meets_the_measured_one_in_calls_and_input_tokens(
    result: dict[str, Any],
) -> None:
    # hard and never ran every query on both graphs; the output tokens miss on the offline
    # model (its answer after the tools is one line per part), and the results say so.
    assert set(result["savings"]) == {"legacy", "middleware"}
    for graph, figures in result["savings"].items():
        for key, row in [("total", figures["total"]), *figures["by_class"].items()]:
            for name in ("model_calls", "input_tokens"):
                error = row["error"][name]
                assert error is not None and abs(error) <= TOLERANCE, (graph, key, name, row)
        assert figures["total"]["measured"]["model_calls"] > 0
    [row] = [r for r in result["targets"] if r["name"] == "saving_estimate"]
    assert ("why: " in row["measured"]) == (row["met"] is False)
    assert "## What a hard stop saved" in markdown(result)


def test_dollars_follow_the_price_table(result: dict[str, Any]) -> None:
    for figures in result["configs"].values():
        per_query = (
            figures["input_tokens"]["mean"] * FAST.input_usd_per_m
            + figures["output_tokens"]["mean"] * FAST.output_usd_per_m
        ) / 1e6
        assert figures["usd_per_1000"] == pytest.approx(1000 * per_query, rel=1e-3)
    # Fewer, smaller model calls: a hard stop costs less than stock create_agent.
    assert (
        result["configs"]["legacy/hard"]["usd_per_1000"]
        < (result["configs"]["create_agent"]["usd_per_1000"])
    )


@pytest.mark.parametrize("name", OURS)
def test_project_graphs_are_correct_and_match_the_matrix(
    result: dict[str, Any], tiny: tuple[Path, list[Query]], name: str
) -> None:
    figures = result["configs"][name]
    mode = figures["stop_mode"]
    # Every configuration of the project answers every part, in the question's order, in
    # every stop_mode: a hard stop relays them, the offline model writes them in polish and
    # never (agent/models.py, OfflineChatModel._answer).
    for check, counts in figures["checks"].items():
        assert counts["passed"] == counts["applied"], (check, counts)
    assert not any(figures["verdicts"].values()), figures["verdicts"]
    classes = {query_class(q) for q in tiny[1]}
    assert classes == set(CLASSES)
    for cls in classes:
        expected = expected_model_calls(cls, mode)
        got = figures["by_class"][cls]
        if name.endswith("+in_place"):
            # Retried in place: never more model calls than hard, one for transient-then-success.
            assert got["model_calls_max"] <= expected, (cls, got)
            if cls == "transient":
                assert got["model_calls_mean"] == got["model_calls_max"] == 1, (cls, got)
            continue
        assert got["model_calls_mean"] == got["model_calls_max"] == expected, (cls, got)
    checks = figures["checks"]
    assert ("verbatim" in checks) == (mode == "hard")
    assert "complete" in checks and "charged_over_cap" in checks and "wrong_answer" in checks
    if mode == "hard":
        assert checks["readable"]["applied"] == len(tiny[1])  # every hard answer is relayed


def _failed(figures: dict[str, Any], check: str) -> set[str]:
    counts = figures["checks"][check]
    assert counts["applied"] - counts["passed"] == len(counts["failed_ids"])  # few: all listed
    return set(counts["failed_ids"])


def test_baselines_fail_where_a_static_loop_must(
    result: dict[str, Any], tiny: tuple[Path, list[Query]]
) -> None:
    _, chosen = tiny
    searches = [q for q in chosen if q.kind in ("search", "parallel")]
    over_cap = {q.id for q in chosen if q.over_cap}
    # Without a spend cap the over-cap part runs, and is charged unless it was forced fatal
    # (in a two-purchase question too: the first part is the one over the cap).
    charged = {q.id for q in chosen if q.over_cap and q.part_outcomes[0] != "fatal"}
    # Every part's answer names its part, failures included: each can be told apart.
    parallel = {q.id for q in chosen if q.kind == "parallel"}

    stock = result["configs"]["create_agent"]
    assert stock["checks"]["context"]["passed"] == stock["checks"]["context"]["applied"]
    assert _failed(stock, "policy") == over_cap  # no spend cap: no refusal...
    assert _failed(stock, "charged_over_cap") == charged  # ...and a charge unless it failed
    for check in ("content", "wrong_answer", "retried", "no_retry"):
        assert not _failed(stock, check), check
    # The stock loop ignores parallel_policy and retries every transient part, and the
    # offline model names every part in the question's order: complete, never wrong.
    assert not _failed(stock, "complete")
    assert stock["verdicts"]["wrong"] == stock["verdicts"]["partial"] == 0

    direct = result["configs"]["return_direct"]
    assert direct["checks"]["context"]["passed"] == direct["checks"]["context"]["applied"]
    # return_direct ends a search run on the first tool step, relaying the last call's
    # result whatever it was: where the last part timed out, the timeout is the answer (a
    # wrong answer), under any parallel_policy (it reads none)...
    timed_out_last = {q.id for q in searches if q.part_outcomes[-1] == "transient"}
    assert _failed(direct, "wrong_answer") == timed_out_last
    # ...and where the relayed result is not the ending the query expects (a fatal second
    # part beside a first that timed out), the content is wrong too...
    relayed = {"success": "completed", "fatal": "fatal", "transient": "transient"}
    off = {q.id for q in searches if relayed[q.part_outcomes[-1]] != q.expect}
    assert off >= timed_out_last and _failed(direct, "content") == off
    # ...no transient failure is retried where the policy asks for it...
    unretried = {q.id for q in searches if "transient" in q.part_outcomes and q.policy == "all"}
    assert _failed(direct, "retried") == unretried
    # ...and a two-part search answers with one part only, whatever its outcomes.
    assert parallel and _failed(direct, "complete") == parallel
    assert _failed(direct, "charged_over_cap") == charged


def test_overhead_compares_same_paths(result: dict[str, Any]) -> None:
    overhead = result["overhead"]
    assert overhead["reference"] == "create_agent"
    names = {"create_agent", "stop_routing", "middleware", "legacy", "noop_hook",
             "noop_model_wrap", "noop_tool_wrap"}  # fmt: skip
    assert set(overhead["modes"]) == {"sync", "async"}
    for mode, variants in overhead["modes"].items():
        assert set(variants) == names
        for name, figures in variants.items():
            if mode == "sync" and name == "legacy":
                assert "skipped" in figures  # async nodes: no invoke
                continue
            assert figures["same_path_as_reference"], (mode, name)
            for clock in ("wall", "cpu"):
                us = figures[f"{clock}_us_per_tool_step"]
                assert us["median"] > 0
                assert us["ci95"][0] <= us["median"] <= us["ci95"][1]
    assert overhead["decide"]["tool_steps"] > 0
    components = [row["component"] for row in overhead["decomposition"]]
    assert components[:3] == ["noop_hook", "noop_model_wrap", "noop_tool_wrap"]
    assert components[-1] == "decide"


def test_dev_server_runs_without_errors(result: dict[str, Any]) -> None:
    server = result["server"]
    assert server["graphs"] == ["legacy", "middleware", "create_agent"]
    assert set(server["modes"]) == {"threadless", "threaded"}
    served: set[str] = set()
    for levels in server["modes"].values():
        assert set(levels) == {"1", "2"}
        for figures in levels.values():
            assert figures["warmup_errors"] == 0
            assert len(figures["repeats"]) == 2
            for window in figures["repeats"]:
                assert window["runs"] >= 1
                assert window["errors"] == 0, window
                assert window["answer_mismatches"] == 0
                served |= {g for g, f in window["graphs"].items() if f["runs"]}
    assert served == {"legacy", "middleware", "create_agent"}


def test_prod_server_runs_without_errors(result: dict[str, Any]) -> None:
    prod = result["prod_server"]
    assert prod["server"].startswith("Aegra")
    assert prod["graphs"] == ["legacy", "middleware"]
    assert set(prod["modes"]) == {"threadless", "threaded"}
    served: set[str] = set()
    for levels in prod["modes"].values():
        assert set(levels) == {"1", "2"}
        for figures in levels.values():
            assert figures["warmup_errors"] == 0
            for window in figures["repeats"]:
                assert window["errors"] == 0, window
                assert window["answer_mismatches"] == 0
                served |= {g for g, f in window["graphs"].items() if f["runs"]}
    assert served == {"legacy", "middleware"}
    [row] = [r for r in result["targets"] if r["name"] == "prod_server_no_errors"]
    assert row["met"] is True


def test_files_are_written(result: dict[str, Any], tmp_path: Path) -> None:
    paths = write(result, tmp_path)
    assert json.loads(paths["json"].read_text()) == json.loads(json.dumps(result))
    table = paths["md"].read_text()
    for name in result["configs"]:
        assert f"`{name}`" in table
    assert "## Targets" in table and "## Through `langgraph dev`" in table
    assert "## Through `make prod`" in table
    assert "Where the cost comes from" in table
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_without_server(
    tiny: tuple[Path, list[Query]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = tiny
    for name in TRACING_VARIABLES:  # restored after the test: main() switches tracing off
        monkeypatch.setenv(name, "true")
    code = main(
        ["--queries", str(path), "--limit", "3", "--skip-server", "--out", str(tmp_path),
         "--reps", "1", "--overhead-queries", "2", "--ttft", "0.001", "--prefill-tps", "1e9",
         "--decode-tps", "1e9", "--input-price", "1", "--output-price", "2", "--no-progress"]
    )  # fmt: skip
    assert code == 0
    written = json.loads((tmp_path / "latest.json").read_text())
    assert written["query_set"]["count"] == 3
    assert written["server"] is None
    assert written["prod_server"] is None
    assert written["meta"]["profile"]["input_usd_per_m"] == 1.0
    assert written["meta"]["profile"]["output_usd_per_m"] == 2.0
    assert written["targets"][-1]["met"] is None
    assert (tmp_path / "latest.png").stat().st_size > 0
    assert all(os.environ[name] == "false" for name in TRACING_VARIABLES)


# --- tokens as billed --------------------------------------------------------------------


def test_offline_usage_counts_bound_tool_schemas_and_system_prompt() -> None:
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.messages.utils import count_tokens_approximately
    from langchain_core.tools import BaseTool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    from agent.models import OfflineChatModel
    from agent.tools import TOOLS

    model = OfflineChatModel()
    question = [HumanMessage("Tell me about checkpointers")]
    bound = model.bind_tools(TOOLS).invoke(question)
    bare = model.invoke(question)  # a polish call: no tools bound
    schemas: list[BaseTool | dict[str, Any]] = [convert_to_openai_tool(t) for t in TOOLS]
    assert bound.usage_metadata is not None and bare.usage_metadata is not None
    assert bound.usage_metadata["input_tokens"] == count_tokens_approximately(
        question, tools=schemas
    )
    assert bare.usage_metadata["input_tokens"] == count_tokens_approximately(question)
    assert bound.usage_metadata["input_tokens"] > bare.usage_metadata["input_tokens"]
    prompted = model.invoke([SystemMessage("You are a careful assistant."), *question])
    assert prompted.usage_metadata is not None
    assert prompted.usage_metadata["input_tokens"] > bare.usage_metadata["input_tokens"]


# --- checks that can fail ------------------------------------------------------------------


def _query(kind: str, outcome: str, over_cap: bool = False) -> Query:
    return next(
        q
        for q in load()
        if q.kind == kind and q.outcome == outcome and q.over_cap == over_cap and not q.special
    )


@pytest.fixture(scope="module")
def graphs() -> dict[str, Any]:
    return {c.name: c for c in configurations()}


async def _messages(graphs: dict[str, Any], name: str, query: Query) -> list[Any]:
    config = graphs[name]
    state = await config.graph.ainvoke(
        {"messages": [{"role": "user", "content": query.text}]},
        context=config.context(query.context),
    )
    return list(state["messages"])


def _with_answer(messages: list[Any], answer: str) -> list[Any]:
    from langchain_core.messages import AIMessage

    return [*messages[:-1], AIMessage(content=answer)]


async def test_each_check_fails_on_a_bad_answer(graphs: dict[str, Any]) -> None:
    import json as json_module

    from langchain_core.messages import ToolMessage

    parallel = _query("parallel", "success")
    good = await _messages(graphs, "legacy/hard", parallel)
    assert read_run(parallel, "legacy/hard", True, good).correct

    # complete: a two-part question answered with one part.
    first_part = next(m for m in good if isinstance(m, ToolMessage)).text
    partial = read_run(parallel, "legacy/hard", True, _with_answer(good, first_part))
    assert partial.checks["complete"] is False and partial.verdict == "partial"

    # readable: the same content, relayed as JSON.
    as_json = json_module.dumps({"pages": good[-1].text.split("\n\n")})
    unreadable = read_run(parallel, "legacy/hard", True, _with_answer(good, as_json))
    assert unreadable.checks["readable"] is False
    as_html = read_run(parallel, "legacy/hard", True, _with_answer(good, "<p>hi</p>"))
    assert as_html.checks["readable"] is False

    # wrong_answer: a transient error's text relayed as the answer.
    transient = _query("search", "transient")
    retried = await _messages(graphs, "legacy/hard", transient)
    assert read_run(transient, "legacy/hard", True, retried).correct
    error = next(m for m in retried if isinstance(m, ToolMessage)).text
    wrong = read_run(transient, "legacy/hard", True, _with_answer(retried, error))
    assert wrong.checks["wrong_answer"] is False and wrong.verdict == "wrong"
    assert wrong.checks["content"] is False and wrong.checks["verbatim"] is False

    # charged_over_cap: stock create_agent has no spend cap and charges.
    over = _query("checkout", "success", over_cap=True)
    charged = read_run(over, "create_agent", False, await _messages(graphs, "create_agent", over))
    assert charged.checks["charged_over_cap"] is False and charged.checks["policy"] is False
    assert charged.verdict == "charged"
    refused = read_run(over, "legacy/hard", True, await _messages(graphs, "legacy/hard", over))
    assert refused.correct


def _special(cls: str, **fields: Any) -> Query:
    return next(
        q
        for q in load()
        if q.special == cls and all(getattr(q, key) == value for key, value in fields.items())
    )


@pytest.mark.parametrize(
    ("cls", "fields"),
    [
        ("block_transient", {}),
        ("any_transient", {"part_outcomes": ("success", "transient")}),
        ("any_transient", {"part_outcomes": ("transient", "success")}),
        ("priority_transient", {"part_outcomes": ("transient", "success")}),
        ("retried_first", {"part_outcomes": ("transient", "fatal")}),
        ("retried_first", {"part_outcomes": ("transient", "success")}),
    ],
)
@pytest.mark.parametrize("graph", ["legacy", "middleware"])
async def test_complete_needs_every_part_named_in_the_questions_order(
    graphs: dict[str, Any], graph: str, cls: str, fields: dict[str, Any]
) -> None:
    from langchain_core.messages import ToolMessage
    from stop_on_artifact.testing import ANSWER_SEPARATOR

    query = _special(cls, **fields)
    name = f"{graph}/hard"
    good = await _messages(graphs, name, query)
    run = read_run(query, name, True, good)
    assert run.correct, run.checks  # the project's own hard stop answers every part, in order
    first, second = good[-1].text.split(ANSWER_SEPARATOR)
    if query.policy != "all":  # the part any/priority stopped before retrying: named not done
        unsettled = next(
            m for m in good if isinstance(m, ToolMessage) and m.artifact["reason"] == "transient"
        )
        assert unsettled.artifact["not_done"] in (first, second)

    # A part silently dropped, either one.
    for kept in (first, second):
        dropped = read_run(query, name, True, _with_answer(good, kept))
        assert dropped.checks["complete"] is False
        # Partial; wrong when what is left is only a not-done line (no result at all).
        assert dropped.verdict == ("partial" if dropped.checks.get("content", True) else "wrong")
    # Both parts, swapped: every part is there (verbatim, which reads pieces, still passes),
    # but not in the question's order.
    swapped = read_run(query, name, True, _with_answer(good, second + ANSWER_SEPARATOR + first))
    assert swapped.checks["verbatim"] is True
    assert swapped.checks["complete"] is False and swapped.verdict == "partial"
    # A model-written answer is judged the same way: it names each part in its own words
    # around the result's identifying text, in the question's order, or fails.
    prose = f"First: {first}\n\nThen: {second}"
    assert read_run(query, name, False, _with_answer(good, prose)).checks["complete"] is True
    prose = f"First: {second}\n\nThen: {first}"
    assert read_run(query, name, False, _with_answer(good, prose)).checks["complete"] is False


async def test_complete_reads_the_baselines_runs(graphs: dict[str, Any]) -> None:
    # Stock create_agent retries the first part; the offline model then names every part
    # in the question's order, the retried one first.
    query = _special("retried_first", part_outcomes=("transient", "success"))
    messages = await _messages(graphs, "create_agent", query)
    stock = read_run(query, "create_agent", False, messages)
    assert stock.checks["complete"] is True and stock.checks["content"] is True
    # The same answer with its parts swapped is not.
    head, parts = messages[-1].text.split(". ", 1)
    swapped = f"{head}. " + " | ".join(reversed(parts.split(" | ")))
    assert not read_run(query, "create_agent", False, _with_answer(messages, swapped)).checks[
        "complete"
    ]
    # In the question's order, the same run is complete.
    both = _special("retried_first", part_outcomes=("transient", "fatal"))
    plain = next(q for q in load() if q.kind == "parallel" and q.outcome == "success")
    run = read_run(plain, "create_agent", False, await _messages(graphs, "create_agent", plain))
    assert run.checks["complete"] is True
    # return_direct relays one part: the second, while the first is never named.
    direct = read_run(both, "return_direct", False, await _messages(graphs, "return_direct", both))
    assert direct.checks["complete"] is False


# --- the latency profile and the statistics -------------------------------------------


def test_profile_times_and_prices_a_call() -> None:
    profile = Profile(ttft_s=0.2, prefill_tps=1000, decode_tps=100, input_usd_per_m=0.5,
                      output_usd_per_m=1.0)  # fmt: skip
    assert profile.seconds(500, 50) == pytest.approx(0.2 + 0.5 + 0.5)
    assert profile.dollars(2_000_000, 1_000_000) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="positive"):
        Profile(decode_tps=0)
    default = Profile()
    assert (default.input_usd_per_m, default.output_usd_per_m) == (0.59, 0.79)


async def test_timed_model_sleeps_and_reports_the_simulated_time() -> None:
    import time

    from bench.latency import TimedOfflineModel, simulated_seconds

    model = TimedOfflineModel(latency=Profile(ttft_s=0.05))
    started = time.perf_counter()
    reply = await model.ainvoke("Tell me about checkpointers")
    elapsed = time.perf_counter() - started
    simulated = simulated_seconds([reply])
    assert simulated > 0.05 and elapsed >= simulated
    assert reply.usage_metadata is not None


def test_median_ci_brackets_the_median() -> None:
    summary = median_ci([1.0, 2.0, 3.0, 4.0, 100.0])
    assert summary["median"] == 3.0
    low, high = summary["ci95"]
    assert low <= 3.0 <= high
    assert median_ci([5.0] * 20)["ci95"] == [5.0, 5.0]
