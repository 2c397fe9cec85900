"""`python -m client`: one run, and the `check` matrix, against the session server."""

from __future__ import annotations

import dataclasses
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient

from agent.context import Context
from client.cli import (
    EXIT_FAILED,
    EXIT_PAUSED,
    EXIT_UNREACHABLE,
    check,
    context_from,
    main,
    parser,
    render,
)
from client.context_flags import NO_FLAG
from client.scenarios import GRAPHS, SCENARIOS, by_name
from tests.support.api import current_turn, text, tool_steps, values_of
from tests.support.dev_server import DevServer, free_port

ROOT = Path(__file__).resolve().parents[2]


def command(*args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGGRAPH_", "LANGSMITH_"))}
    if url is not None:
        env["LANGGRAPH_URL"] = url
    return subprocess.run(
        [sys.executable, "-m", "client", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


async def test_one_query_prints_each_decision_then_the_answer(
    server: DevServer, client: LangGraphClient
) -> None:
    scenario = by_name("retry_then_success-hard")
    graph = "middleware"
    forced = scenario.context["force_outcome"]
    # The URL comes from LANGGRAPH_URL; outcomes as a repeated flag.
    flags = [arg for outcome in forced for arg in ("--force-outcome", outcome)]
    done = command(scenario.query, "--graph", graph, *flags, url=server.url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()

    decisions = [line for line in lines if line.startswith("stop decision:")]
    assert len(decisions) == scenario.tool_steps
    assert "rule=transient" in decisions[0]
    assert f"rule={scenario.rule}" in decisions[-1] and scenario.action in decisions[-1]
    assert f"path: {' -> '.join(scenario.path(graph))}" in lines
    assert f"model calls: {scenario.model_calls}" in lines
    [where] = [line for line in lines if line.startswith("graph: ")]
    thread_id = where.split("thread: ")[1]

    # What it printed is what the thread holds.
    state = await client.threads.get_state(thread_id)
    values = state["values"]
    turn = current_turn(values["messages"])  # type: ignore[call-overload]
    answer = text(turn[-1])
    assert answer == text(tool_steps(turn)[-1][scenario.chosen])  # verbatim: hard stop
    printed = done.stdout.split("answer:\n", 1)[1].split("\npath: ", 1)[0]
    assert printed == answer
    stop = values["stop_decision"]  # type: ignore[call-overload]
    assert f"call={stop['tool_call_id']}" in decisions[-1]


def test_every_context_field_has_a_flag() -> None:
    args = parser().parse_args(
        [
            "ask",
            "q",
            "--model", "offline",
            "--stop-mode", "polish",
            "--force-outcome", "retryable,success",
            "--force-outcome", "fatal",
            "--parallel-policy", "all",
            "--max-retries", "3",
            "--spend-cap", "12.5",
            "--max-model-calls", "4",
            "--seed", "7",
            "--on-policy-block", "ask",
            "--retry-in-place",
            "--initial-delay", "0.5",
            "--backoff-factor", "3",
            "--max-delay", "2",
        ]
    )  # fmt: skip
    context = context_from(args)
    assert set(context) == set(Context.model_fields) - NO_FLAG
    assert context["force_outcome"] == ["retryable", "success", "fatal"]
    assert Context.model_validate(context).spend_cap == 12.5
    assert (context["retry_in_place"], context["initial_delay"]) == (True, 0.5)
    one = context_from(parser().parse_args(["ask", "q", "--force-outcome", "fatal"]))
    assert one == {"force_outcome": "fatal"}
    assert context_from(parser().parse_args(["ask", "q"])) == {}  # the server's defaults


def test_a_bad_flag_is_refused_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as excinfo:
        main(["q", "--force-outcome", "success,maybe"])
    assert excinfo.value.code == 2
    err = capsys.readouterr().err
    assert "argument --force-outcome: outcome 2 is not one of" in err
    assert "maybe" not in err  # named by position, never quoted


def test_no_server_exits_non_zero_naming_the_url(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["checkpointer", "--url", url]) == EXIT_UNREACHABLE
    err = capsys.readouterr().err
    assert url in err and "make dev" in err
    assert main(["check", "--url", url]) == EXIT_UNREACHABLE


def test_no_server_names_each_url_it_tried_and_where_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from client import cli

    dev, prod, default = (f"http://127.0.0.1:{free_port()}" for _ in range(3))
    state = tmp_path / ".langgraph_api"
    state.mkdir()
    (state / "dev-url").write_text(f"{dev}\n", "utf-8")  # left by a make dev that was killed
    gone = subprocess.Popen([sys.executable, "-c", ""])
    gone.wait()
    (state / "dev-pid").write_text(f"{gone.pid}\n", "utf-8")  # so it is not waited for
    (state / "prod-url").write_text(f"{prod}\n", "utf-8")  # and by a make prod
    monkeypatch.setattr(cli, "PROJECT", tmp_path)
    monkeypatch.setattr(cli, "DEV_URL_FILE", state / "dev-url")
    monkeypatch.setattr(cli, "DEV_PID_FILE", state / "dev-pid")
    monkeypatch.setattr(cli, "PROD_URL_FILE", state / "prod-url")
    monkeypatch.setattr(cli, "DEFAULT_URL", default)  # not 2024: whatever holds it here
    monkeypatch.delenv("LANGGRAPH_URL", raising=False)
    assert main(["checkpointer"]) == EXIT_UNREACHABLE
    [line] = capsys.readouterr().err.splitlines()
    assert line == (
        f"error: no LangGraph server answered; tried {dev} (written by make dev to "
        f".langgraph_api/dev-url: ConnectError), then {prod} (written by make prod to "
        f".langgraph_api/prod-url: ConnectError), then {default} (the default: ConnectError). "
        "Start one with `make dev` or `make prod` (each prints where it serves), or pass --url "
        "/ set LANGGRAPH_URL."
    )
    monkeypatch.setenv("LANGGRAPH_URL", dev)
    assert main(["check"]) == EXIT_UNREACHABLE
    assert f"tried {dev} (LANGGRAPH_URL: ConnectError). " in capsys.readouterr().err


def test_the_client_finds_the_server_make_prod_wrote_and_says_so(
    server: DevServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from client import cli

    state = tmp_path / ".langgraph_api"
    state.mkdir()
    (state / "prod-url").write_text(f"{server.url}\n", "utf-8")  # as make prod writes it
    monkeypatch.setattr(cli, "PROJECT", tmp_path)
    monkeypatch.setattr(cli, "DEV_URL_FILE", state / "dev-url")  # no make dev running
    monkeypatch.setattr(cli, "DEV_PID_FILE", state / "dev-pid")
    monkeypatch.setattr(cli, "PROD_URL_FILE", state / "prod-url")
    monkeypatch.setattr(cli, "DEFAULT_URL", f"http://127.0.0.1:{free_port()}")
    monkeypatch.delenv("LANGGRAPH_URL", raising=False)
    out = io.StringIO()
    assert main(["check", "--scenario", "success-hard"], out) == 0
    assert out.getvalue().splitlines()[0] == f"server: {server.url} (make prod)"


def test_a_failed_run_exits_non_zero_naming_the_field(
    server: DevServer, capsys: pytest.CaptureFixture[str]
) -> None:
    out = io.StringIO()
    assert main(["checkpointer", "--url", server.url, "--max-retries", "-1"], out) == EXIT_FAILED
    server_line, err = capsys.readouterr().err.split("\n", 1)
    assert server_line == f"server: {server.url} (--url)"  # which server refused it
    # Refused before the run is queued (agent/auth.py), naming the field.
    assert "(422)" in err and "context.max_retries" in err
    assert err.count("\n") == 1 and "{" not in err  # a sentence, not the JSON body


@pytest.mark.parametrize(
    ("model", "said"),
    [
        ("nosuchprovider:some-model", "run failed (ModelLoadError): model could not be loaded"),
        # The session server runs with GROQ_API_KEY scrubbed (tests/support/dev_server.py).
        ("groq:llama-3.3-70b-versatile", "GROQ_API_KEY is not set on the server"),
    ],
)
def test_a_model_that_cannot_load_is_one_line_without_a_traceback(
    server: DevServer, model: str, said: str
) -> None:
    done = command("checkpointer", "--model", model, url=server.url)
    assert done.returncode == EXIT_FAILED
    server_line, error = done.stderr.split("\n", 1)
    assert server_line == f"server: {server.url} (LANGGRAPH_URL)"
    assert "Traceback" not in error and "athrow" not in error
    assert error.count("\n") == 1 and error.startswith("error: "), done.stderr
    assert said in error
    assert model.split(":", 1)[1] not in done.stderr  # the string is never quoted


@pytest.mark.parametrize("graph", GRAPHS)
def test_two_purchases_joined_by_and_are_both_answered_in_order(
    server: DevServer, graph: str
) -> None:
    question = "buy a laptop for 300 and a mouse for 20"
    done = command(question, "--graph", graph, "--force-outcome", "success", url=server.url)
    assert done.returncode == 0, done.stderr
    answer = done.stdout.split("answer:\n", 1)[1].split("\npath: ", 1)[0]
    assert answer.count("# Thank you for your order") == 2
    laptop, mouse = answer.find("| a laptop | $300.00 |"), answer.find("| a mouse | $20.00 |")
    assert -1 < laptop < mouse, answer


def decision_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("stop decision:")]


def named_call(line: str) -> str:
    return line.split(" call=", 1)[1].split()[0]


@pytest.mark.parametrize("graph", GRAPHS)
async def test_each_call_of_a_step_has_a_line_with_its_own_outcome(
    server: DevServer, client: LangGraphClient, graph: str
) -> None:
    # Seed 0: both calls of the first step time out; the second step buys the mouse only.
    done = command("buy a keyboard for 30 and a mouse for 20", "--graph", graph, url=server.url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    shown = decision_lines(done.stdout)
    thread_id = lines[-1].split("thread: ")[1]
    turn = current_turn(
        values_of((await client.threads.get_state(thread_id))["values"])["messages"]
    )
    steps = tool_steps(turn)
    assert len(steps) == 2
    calls = [message for step in steps for message in step]
    assert [named_call(line) for line in shown] == [m["tool_call_id"] for m in calls]
    for line, message in zip(shown, calls, strict=True):
        assert f" reason={message['artifact']['reason']} tool=checkout " in line
        # Each call's line is followed by its own outcome line.
        assert lines[lines.index(line) + 1].startswith("  outcome: ")
    assert [line.split(" reason=")[0] for line in shown] == [
        "stop decision: continue rule=transient",
        "stop decision: continue rule=transient",
        "stop decision: stop     rule=retry_budget",
        "stop decision: stop     rule=retry_budget",
    ]
    assert [line.split(" reason=")[1].split()[0] for line in shown] == [
        "transient", "transient", "transient", "completed",
    ]  # fmt: skip


def test_check_runs_the_whole_matrix(server: DevServer) -> None:
    done = command("check", "--url", server.url, "--concurrency", "16")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = len(SCENARIOS) * len(GRAPHS)
    assert f"{rows}/{rows} rows match" in done.stdout
    assert "compared: decision action/rule, node path, model calls" in done.stdout
    for graph in GRAPHS:
        assert f"{len(SCENARIOS)}/{len(SCENARIOS)} scenarios match on {graph}" in done.stdout
    for scenario in SCENARIOS:
        row = re.compile(
            rf"^  {re.escape(scenario.name)} +{scenario.action}/{scenario.rule} +"
            rf"{scenario.action}/{scenario.rule} +{scenario.model_calls}/{scenario.model_calls}"
            r" +same +ok$",
            re.M,
        )
        assert len(row.findall(done.stdout)) == len(GRAPHS), scenario.name


async def test_check_reports_mismatches(client: LangGraphClient) -> None:
    real = by_name("fatal-hard")
    wrong = dataclasses.replace(real, name="fatal-hard-expected-wrongly", rule="completed")
    rows = await check(client, ["legacy"], [real, wrong])
    assert [row.ok for row in rows] == [True, False]
    assert rows[1].decision_ok is False and rows[1].path_ok and rows[1].calls_ok
    table = render(rows)
    assert "MISMATCH legacy fatal-hard-expected-wrongly" in table
    assert "1/2 rows match" in table

    # A run that fails is a mismatch that keeps the server's error.
    [failed] = await check(client, ["middleware"], [real], model="nosuchprovider:x")
    assert not failed.ok and failed.observed is None
    assert failed.error is not None and "ModelLoadError" in failed.error
    assert "nosuchprovider" not in failed.error  # the model string is never quoted
    assert "ERROR" in render([failed])


def test_check_exits_non_zero_on_a_mismatch(server: DevServer) -> None:
    out = io.StringIO()
    argv = ["check", "--url", server.url, "--graph", "legacy", "--scenario", "success-hard"]
    assert main([*argv, "--model", "nosuchprovider:x"], out) == EXIT_FAILED
    assert "MISMATCH legacy success-hard" in out.getvalue()
    out = io.StringIO()
    assert main(argv, out) == 0
    assert "1/1 rows match" in out.getvalue()


def first_run_examples() -> list[tuple[str, list[str]]]:
    """The README's first-run commands, each with the lines it shows before ``...``."""
    readme = (ROOT / "README.md").read_text("utf-8")
    section = readme.split("<!-- first-run -->", 1)[1].split("<!-- /first-run -->", 1)[0]
    blocks = re.findall(r"```(bash|text)\n(.*?)```", section, re.S)
    pairs = []
    for (kind, command_text), (output_kind, output) in zip(blocks[::2], blocks[1::2], strict=True):
        assert (kind, output_kind) == ("bash", "text")
        shown = output.splitlines()
        assert shown[-1] == "..."
        pairs.append((command_text.strip(), shown[:-1]))
    return pairs


def test_the_readme_first_run_prints_what_it_shows(server: DevServer) -> None:
    examples = first_run_examples()
    assert len(examples) == 2
    # A newcomer's first result works; the random draw comes second, said to be a draw.
    (_, first), (_, second) = examples
    assert "rule=completed" in first[0] and "forced by --force-outcome success" in first[1]
    assert second[1].startswith("  outcome: drawn at random")
    for line, shown in examples:
        program, *args = shlex.split(line)
        assert program == ".venv/bin/python"
        done = command(*args[2:], url=server.url)  # args: -m client ...
        assert args[:2] == ["-m", "client"]
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[: len(shown)] == shown


def test_the_client_says_whether_an_outcome_was_drawn_or_forced(server: DevServer) -> None:
    drawn = command("What is the store?", "--seed", "3", url=server.url)
    assert drawn.returncode == 0, drawn.stderr
    notes = [line for line in drawn.stdout.splitlines() if line.startswith("  outcome: ")]
    assert notes and all("drawn at random" in note and "seed 3" in note for note in notes)
    assert all("--force-outcome success" in note for note in notes)
    forced = command("What is the store?", "--force-outcome", "transient,success", url=server.url)
    notes = [line for line in forced.stdout.splitlines() if line.startswith("  outcome: ")]
    assert notes == ["  outcome: forced by --force-outcome transient,success"] * 2
    refused = command("buy a desk for 900", url=server.url)
    assert "  outcome: refused by the spend-cap policy before the tool ran" in refused.stdout


def test_ask_names_the_server_it_used_on_standard_error(server: DevServer) -> None:
    done = command("What is the store?", "--force-outcome", "success", url=server.url)
    assert done.returncode == 0, done.stderr
    # The same line check and answer print, on standard error: the answer's output is clean.
    assert done.stderr.splitlines() == [f"server: {server.url} (LANGGRAPH_URL)"]
    assert "server:" not in done.stdout
    assert done.stdout.startswith("stop decision: stop")


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("forced", [(), ("--force-outcome", "success")], ids=["drawn", "forced"])
def test_a_knowledge_base_miss_says_so_and_what_helps(
    server: DevServer, graph: str, forced: tuple[str, ...]
) -> None:
    # Seed 0 draws success for this question: the lookup runs and finds no page.
    done = command("How does quantum pastry work?", "--graph", graph, *forced, url=server.url)
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stdout.splitlines() if line.startswith("  outcome: ")]
    assert len(notes) == 1
    assert "a knowledge-base miss" in notes[0]
    assert "ask about a topic it has, as in “How does a checkpointer work?”" in notes[0]
    assert "with --force-outcome success" not in notes[0]  # forcing cannot help a miss
    assert "Nothing found for “How does quantum pastry work?”" in done.stdout
    assert "a question that names one of them finds its page" in done.stdout


@pytest.mark.parametrize("graph", GRAPHS)
def test_a_topic_under_another_word_form_is_found(server: DevServer, graph: str) -> None:
    done = command(
        "How do I stream tokens?", "--graph", graph, "--force-outcome", "success", url=server.url
    )
    assert done.returncode == 0, done.stderr
    assert "rule=completed" in done.stdout and "\n# Streaming\n" in done.stdout


@pytest.mark.parametrize("graph", GRAPHS)
def test_a_first_then_question_names_both_parts(server: DevServer, graph: str) -> None:
    question = "First explain sharding, then checkpointers."
    done = command(question, "--graph", graph, "--force-outcome", "success", url=server.url)
    assert done.returncode == 0, done.stderr
    found = done.stdout.find("Nothing found for “First explain sharding”")
    assert -1 < found < done.stdout.find("\n# Checkpointers\n")


# ---------------------------------------------------------------------------------------
# Approvals: show the pending request, answer it with a flag, a prompt, or later.

ASK_FLAGS = ("--on-policy-block", "ask", "--spend-cap", "500", "--force-outcome", "success")


async def test_approve_flag_answers_at_once_and_the_receipt_is_the_answer(
    server: DevServer, client: LangGraphClient
) -> None:
    scenario = by_name("approval-approve")
    done = command(scenario.query, *ASK_FLAGS, "--approve", url=server.url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "approval needed:"
    assert lines[1].startswith("  1. checkout (approve/reject): Approve this purchase")
    assert "**a standing desk** for $900.00; the limit is $500.00" in lines[1]
    assert "answered: approve" in lines
    [decision] = [line for line in lines if line.startswith("stop decision:")]
    assert "rule=completed" in decision and "approval=approved policy=spend_cap" in decision
    assert f"path: {' -> '.join(scenario.path('legacy'))}" in lines
    assert "model calls: 1" in lines
    thread_id = lines[-1].split("thread: ")[1]
    state = await client.threads.get_state(thread_id)
    assert state["interrupts"] == []
    assert state["values"]["stop_decision"]["approval"] == "approved"  # type: ignore[call-overload]


async def test_without_a_flag_the_run_stays_paused_and_answer_answers_it_later(
    server: DevServer, client: LangGraphClient
) -> None:
    scenario = by_name("approval-parallel_reject_and_receipt")
    graph = "middleware"
    paused = command(scenario.query, "--graph", graph, *ASK_FLAGS, url=server.url)  # not a TTY
    assert paused.returncode == EXIT_PAUSED, paused.stderr
    hint = f".venv/bin/python -m client answer --graph {graph} --thread-id "
    assert hint in paused.stdout
    thread_id = paused.stdout.split(hint, 1)[1].split()[0]
    # The printed command names the server it paused on: it works from any shell.
    assert f"--thread-id {thread_id} --url {server.url} --approve" in paused.stdout
    assert len((await client.threads.get_state(thread_id))["interrupts"]) == 1

    reason = "Over *budget*"
    args = ("answer", "--graph", graph, "--thread-id", thread_id)  # no context: the turn's holds
    done = command(*args, "--reject", reason, url=server.url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"server: {server.url} (LANGGRAPH_URL)"
    assert "approval needed:" in done.stdout and "answered: reject" in done.stdout
    assert "rule=policy_block" in done.stdout and "approval=rejected" in done.stdout
    # Piped: plain text, the escapes that keep the reason from adding markup undone.
    assert "**Reason given:** Over *budget*" in done.stdout
    assert "# Thank you for your order" in done.stdout  # the mouse within the cap
    state = await client.threads.get_state(thread_id)
    assert state["interrupts"] == []
    messages = state["values"]["messages"]  # type: ignore[call-overload]
    # The server keeps the escapes: only the piped output writes them plain.
    assert any(r"Over \*budget\*" in str(message["content"]) for message in messages)
    again = command(*args, "--approve", url=server.url)
    assert again.returncode == EXIT_FAILED
    assert "has no pending approval" in again.stdout


@pytest.mark.parametrize("graph", GRAPHS)
async def test_each_call_shows_only_its_own_approval(
    server: DevServer, client: LangGraphClient, graph: str
) -> None:
    question = "buy a sofa for 700 and a lamp for 40"  # only the sofa is above the cap
    done = command(question, "--graph", graph, "--on-policy-block", "ask", "--approve",
                   url=server.url)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("  1. checkout (approve/reject)") == 1
    assert "  2. " not in done.stdout
    thread_id = done.stdout.splitlines()[-1].split("thread: ")[1]
    turn = current_turn(
        values_of((await client.threads.get_state(thread_id))["values"])["messages"]
    )
    item = {
        call["id"]: call["args"]["item"]
        for message in turn
        if message["type"] == "ai"
        for call in message.get("tool_calls") or []
    }
    shown = decision_lines(done.stdout)
    sofa = [line for line in shown if item[named_call(line)] == "a sofa"]
    lamp = [line for line in shown if item[named_call(line)] == "a lamp"]
    assert sofa and lamp and len(sofa) + len(lamp) == len(shown)
    assert all(line.endswith(" approval=approved policy=spend_cap") for line in sofa), sofa
    assert not any("approval=" in line for line in lamp), lamp


@pytest.mark.parametrize("graph", GRAPHS)
async def test_an_answer_later_counts_the_model_calls_of_the_whole_turn(
    server: DevServer, client: LangGraphClient, graph: str
) -> None:
    question = ("buy a sofa for 700 and a lamp for 40", "--graph", graph, *ASK_FLAGS)
    at_once = command(*question, "--reject", "Over budget", url=server.url)
    assert at_once.returncode == 0, at_once.stderr
    paused = command(*question, url=server.url)
    assert paused.returncode == EXIT_PAUSED, paused.stderr
    thread_id = paused.stdout.split("--thread-id ", 1)[1].split()[0]
    args = ("answer", "--graph", graph, "--thread-id", thread_id, "--reject", "Over budget")
    later = command(*args, url=server.url)
    assert later.returncode == 0, later.stderr
    turn = current_turn(
        values_of((await client.threads.get_state(thread_id))["values"])["messages"]
    )
    # Each reply that issued calls is a model call; the hard stop's answer is none.
    replies = sum(1 for message in turn if message["type"] == "ai" and message.get("tool_calls"))
    assert replies >= 1
    counted = [line for line in later.stdout.splitlines() if line.startswith("model calls: ")]
    assert counted == [f"model calls: {replies}"]
    assert f"model calls: {replies}" in at_once.stdout.splitlines()


async def test_the_printed_answer_later_line_runs_as_printed(
    server: DevServer, client: LangGraphClient
) -> None:
    scenario = by_name("approval-parallel_reject_and_receipt")
    paused = command(scenario.query, "--graph", "legacy", *ASK_FLAGS, url=server.url)
    assert paused.returncode == EXIT_PAUSED, paused.stderr
    [printed] = [line for line in paused.stdout.splitlines() if "-m client answer " in line]
    assert printed.startswith(".venv/bin/python -m client answer "), "a line of its own"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGGRAPH_", "LANGSMITH_"))}
    done = subprocess.run(
        printed, shell=True, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "answered: approve" in done.stdout
    thread_id = printed.split("--thread-id ")[1].split()[0]
    assert (await client.threads.get_state(thread_id))["interrupts"] == []


@pytest.mark.parametrize("graph", GRAPHS)
async def test_an_answer_later_runs_under_the_settings_the_run_was_asked_with(
    server: DevServer, client: LangGraphClient, graph: str
) -> None:
    # Asked with a forced fatal outcome and no retries; answered later with no flags at all.
    asked = ["--on-policy-block", "ask", "--force-outcome", "fatal", "--max-retries", "0"]
    asked += ["--graph", graph]
    paused = command("buy a standing desk for 900", *asked, url=server.url)
    assert paused.returncode == EXIT_PAUSED, paused.stderr
    thread_id = paused.stdout.split("--thread-id ", 1)[1].split()[0]
    done = command(
        "answer", "--graph", graph, "--thread-id", thread_id, "--approve", url=server.url
    )
    assert done.returncode == 0, done.stderr
    assert "rule=fatal" in done.stdout and "approval=approved" in done.stdout
    assert "outcome: forced by --force-outcome fatal" in done.stdout
    values = values_of((await client.threads.get_state(thread_id))["values"])
    tools = [m for m in values["messages"] if m["type"] == "tool"]
    assert [m["artifact"]["reason"] for m in tools] == ["fatal"]  # one call, no retry


class Terminal(io.StringIO):
    """Typed answers, read as from a terminal."""

    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_prompt_per_action(server: DevServer) -> None:
    scenario = by_name("approval-two_blocked_approve_one")
    out = io.StringIO()
    typed = Terminal("a\nr\nNot this quarter\n")
    argv = [scenario.query, "--url", server.url, "--graph", "middleware", *ASK_FLAGS]
    assert main(argv, out, stdin=typed) == 0
    printed = out.getvalue()
    assert printed.count("\n  1. checkout") == 1 and printed.count("\n  2. checkout") == 1
    assert "answered: approve, reject" in printed
    assert "rule=policy_block" in printed and "approval=rejected" in printed
    assert "**Reason given:** Not this quarter" in printed
    assert "model calls: 1" in printed


def test_the_readme_approval_commands_run_as_printed(server: DevServer) -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    section = readme.split("## Ask a person instead of refusing", 1)[1].split("\n## ", 1)[0]
    [commands] = re.findall(r"```bash\n(.*?)```", section, re.S)
    [printed] = re.findall(r"```text\n(.*?)```", section, re.S)
    lines = commands.strip().splitlines()
    assert len(lines) == 2
    outputs = []
    for line in lines:
        words = shlex.split(line)
        assert words[:3] == [".venv/bin/python", "-m", "client"]  # the venv's, as a clone has
        done = command(*words[3:], url=server.url)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0].startswith(printed)  # the first command's output, as the README shows it
    assert "approval=rejected" in outputs[1]
    assert "**Reason given:** Over this quarter's budget" in outputs[1]


async def test_the_documented_way_to_reject_an_agent_chat_ui_approval_rejects(
    server: DevServer, client: LangGraphClient
) -> None:
    # As Agent Chat UI runs it: an assistant carrying the settings, a run with no context.
    readme = (ROOT / "README.md").read_text("utf-8")
    [shown] = re.findall(r"`(\.venv/bin/python -m client answer [^`]*<thread id>[^`]*)`", readme)
    assistant = await client.assistants.create(
        "legacy", context={"on_policy_block": "ask", "force_outcome": "success"}
    )
    thread = await client.threads.create()
    question: dict[str, Any] = {
        "messages": [{"role": "user", "content": "buy a standing desk for 900"}]
    }
    await client.runs.wait(thread["thread_id"], assistant["assistant_id"], input=question)
    assert len((await client.threads.get_state(thread["thread_id"]))["interrupts"]) == 1

    line = shown.replace("<thread id>", thread["thread_id"])
    env = {**os.environ, "LANGGRAPH_URL": server.url}
    done = subprocess.run(
        ["bash", "-c", line], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "answered: reject" in done.stdout and "approval=rejected" in done.stdout
    state = await client.threads.get_state(thread["thread_id"])
    assert state["interrupts"] == []
    values: dict[str, Any] = state["values"]  # type: ignore[assignment]
    assert values["stop_decision"]["approval"] == "rejected"
    assert not any("Thank you for your order" in str(m["content"]) for m in values["messages"])
