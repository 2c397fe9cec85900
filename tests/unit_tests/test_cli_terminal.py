"""`python -m client` as a terminal program: prompts, EOF, Ctrl-C and closed pipes."""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, TextIO, cast, get_args

import httpx
import pytest

from agent.context import ForcedOutcome
from client import cli
from client.cli import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_PAUSED,
    EXIT_USAGE,
    Observation,
    main,
    outcome_note,
    prompt_decisions,
    read_choice,
    refusal_text,
    run_error_text,
)
from client.context_flags import first_sentence

REQUEST: dict[str, Any] = {
    "action_requests": [{"name": "checkout", "description": "buy a desk"}],
    "review_configs": [{"allowed_decisions": ["approve", "reject"]}],
}

ROOT = Path(__file__).resolve().parents[2]


class Terminal(io.StringIO):
    """Typed input that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class Interrupting:
    """A terminal where the person presses Ctrl-C at the prompt."""

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        raise KeyboardInterrupt


def answers(*typed: str) -> tuple[list[str], Any]:
    prompts: list[str] = []
    queue = list(typed)

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        if not queue:
            raise EOFError
        return queue.pop(0)

    return prompts, ask


@pytest.mark.parametrize("word", ["a", "approve", "Y", " yes ", "APPROVE\n"])
def test_approve_words(word: str) -> None:
    assert read_choice(word) == "approve"


@pytest.mark.parametrize("word", ["r", "Reject", "n", " NO\n"])
def test_reject_words(word: str) -> None:
    assert read_choice(word) == "reject"


@pytest.mark.parametrize("word", ["aprove", "", "  ", "ok", "yess", "approve it"])
def test_anything_else_is_not_understood(word: str) -> None:
    assert read_choice(word) is None


def test_a_typo_is_asked_again_and_never_rejects() -> None:
    prompts, ask = answers("aprove", "", "yes")
    assert prompt_decisions(REQUEST, ask) == {"decisions": [{"type": "approve"}]}
    assert len(prompts) == 3
    assert "a (approve, y, yes) or r (reject, n, no)" in prompts[1]


def test_a_reject_asks_for_a_reason() -> None:
    _, ask = answers("nope", "no", "Over budget")
    decided = prompt_decisions(REQUEST, ask)
    assert decided == {"decisions": [{"type": "reject", "message": "Over budget"}]}


def test_eof_at_the_prompt_raises_eof() -> None:
    _, ask = answers("aprove")
    with pytest.raises(EOFError):
        prompt_decisions(REQUEST, ask)


def paused() -> Observation:
    return Observation(
        graph="middleware",
        thread_id="t-1",
        pending=[{"id": "i-1", "value": REQUEST}],
    )


def settle(stdin: TextIO, out: io.StringIO) -> int:
    args = argparse.Namespace(command="answer", approve=False, reject=None)
    # Nothing reaches the client: the prompt ends the command before any answer is sent.
    return asyncio.run(cli._settle(None, args, paused(), out, stdin, cli.DEFAULT_URL))  # type: ignore[arg-type]


def test_eof_at_the_prompt_leaves_the_run_paused(capsys: pytest.CaptureFixture[str]) -> None:
    assert settle(Terminal("aprove\n"), io.StringIO()) == EXIT_PAUSED
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "end of input" in err and "stays paused" in err
    assert "answer --graph middleware --thread-id t-1" in err


def test_ctrl_c_at_the_prompt_leaves_the_run_paused(capsys: pytest.CaptureFixture[str]) -> None:
    assert settle(cast(TextIO, Interrupting()), io.StringIO()) == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert err.startswith("interrupted;") and err.count("\n") == 1
    assert "answer --graph middleware --thread-id t-1" in err


def test_ctrl_c_anywhere_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def interrupted(*_: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_run", interrupted)
    assert main(["q"], io.StringIO()) == EXIT_INTERRUPTED
    assert capsys.readouterr().err == "interrupted\n"


class ClosedPipe(io.StringIO):
    """Standard output whose reader has gone (``| head``)."""

    def write(self, text: str, /) -> int:
        raise BrokenPipeError


def test_a_closed_pipe_ends_quietly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def prints(_: object, out: TextIO, __: object) -> int:
        print("answer:", file=out)
        return 0

    monkeypatch.setattr(cli, "_run", prints)
    assert main(["q"], ClosedPipe()) == EXIT_BROKEN_PIPE
    assert capsys.readouterr().err == ""


def test_a_closed_stdout_is_pointed_at_devnull(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    target = tmp_path / "stdout"
    with target.open("w") as stub:
        monkeypatch.setattr(sys, "stdout", stub)
        cli._drop_stdout(stub)
        os.write(stub.fileno(), b"after the pipe closed\n")
    assert target.read_text() == ""


def refused(status: int, body: bytes) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "http://127.0.0.1:2024/threads/t/runs/stream")
    response = httpx.Response(status, content=body, request=request)
    return httpx.HTTPStatusError("refused", request=request, response=response)


def test_a_422_reads_as_its_field_message() -> None:
    body = b'{"detail":"context.max_retries: Input should be greater than or equal to 0"}'
    assert refusal_text(refused(422, body)) == (
        "the server refused the run (422): context.max_retries: "
        "Input should be greater than or equal to 0"
    )


def test_a_422_list_reads_as_its_field_messages_joined() -> None:
    body = (
        b'{"detail":[{"loc":["body","context","seed"],"msg":"Input should be an integer"},'
        b'{"loc":["body","input"],"msg":"Field required"}]}'
    )
    text = refusal_text(refused(422, body))
    assert text == (
        "the server refused the run (422): context.seed: Input should be an integer; "
        "input: Field required"
    )
    assert "{" not in text


def test_a_refusal_without_json_is_one_line() -> None:
    assert refusal_text(refused(502, b"bad\n  gateway\n")) == (
        "the server refused the run (502): bad gateway"
    )
    assert refusal_text(refused(503, b"")) == (
        "the server refused the run (503): Service Unavailable"
    )


def test_a_run_error_is_one_sentence() -> None:
    error = {"error": "ModelLoadError", "message": "model could not be loaded:\nGROQ_API_KEY."}
    assert run_error_text(error) == (
        "run failed (ModelLoadError): model could not be loaded: GROQ_API_KEY"
    )
    assert run_error_text("boom") == "run failed (error): boom"
    assert run_error_text({"error": "timeout"}) == "run failed (timeout)"


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_an_empty_question_is_refused_and_nothing_sent(
    question: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def sends(*_: object) -> int:
        raise AssertionError("an empty question was sent")

    monkeypatch.setattr(cli, "_run", sends)
    assert main([question], io.StringIO()) == EXIT_USAGE
    assert main(["ask", question], io.StringIO()) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "the question is empty" in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["q", "--force-outcome", "bogus"], "error: argument --force-outcome: outcome 1 is not"),
        (["q", "--force-outcome", ","], "error: argument --force-outcome: expected one or more"),
        (["q", "--stop-mode", "bogus"], "error: argument --stop-mode: invalid choice (choose"),
        (["q", "--seed", "bogus"], "error: argument --seed: invalid int value"),
        (["check", "--scenario", "bogus"], "error: argument --scenario: invalid choice"),
    ],
)
def test_a_bad_flag_is_one_line_and_a_hint(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == EXIT_USAGE
    err = capsys.readouterr().err
    first, hint = err.splitlines()
    assert first.startswith(said)
    assert hint.startswith("see .venv/bin/python -m client") and hint.endswith(" --help")
    assert "usage:" not in err and "bogus" not in err
    if argv[0] != "check" and argv[1] != "--seed":
        return  # one hint per parser runs (each run starts a Python: seconds)
    # The hint runs as printed, from the clone's root.
    shown = subprocess.run(
        shlex.split(hint.removeprefix("see ")),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"usage: {hint.removeprefix('see ').removesuffix(' --help')}")


def help_of(*argv: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_ask_help_documents_every_outcome(capsys: pytest.CaptureFixture[str]) -> None:
    shown = help_of("ask", capsys=capsys)
    flag = shown.split("--force-outcome OUTCOME[,OUTCOME...] ", 1)[1].split(" --seed", 1)[0]
    for outcome in get_args(ForcedOutcome):
        assert outcome in flag
    assert "retryable is the same" in flag


def test_ask_help_shows_the_whole_model_sentence(capsys: pytest.CaptureFixture[str]) -> None:
    shown = help_of("ask", capsys=capsys)
    assert "e.g. 'groq:llama-3.3-70b-versatile'" in shown


def test_first_sentence_skips_abbreviations() -> None:
    assert first_sentence("One, e.g. two, i.e. three. Four.") == "One, e.g. two, i.e. three"
    assert first_sentence("Seed for the RNG.") == "Seed for the RNG"
    assert first_sentence("No stop") == "No stop"


def test_a_forced_success_that_found_nothing_says_why_it_is_fatal() -> None:
    forced = {"force_outcome": "success"}
    missed = outcome_note({"reason": "fatal", "rule": "fatal"}, forced)
    assert missed == (
        "  outcome: forced by --force-outcome success"
        " (the lookup ran and found no page: a miss is fatal)"
    )
    assert outcome_note({"reason": "completed"}, forced) == (
        "  outcome: forced by --force-outcome success"
    )
    assert "found no page" not in outcome_note({"reason": "fatal"}, {"force_outcome": "fatal"})


MISS = {"stop": True, "reason": "fatal", "cause": "no_match", "attempt": 0}
UNAVAILABLE = {"stop": True, "reason": "fatal", "cause": "unavailable", "attempt": 1}
FATAL = {"action": "stop", "rule": "fatal", "reason": "fatal", "tool_call_id": "c0"}


@pytest.mark.parametrize("context", [{}, {"seed": 4}, {"force_outcome": "success"}])
def test_a_knowledge_base_miss_says_so_and_what_helps(context: dict[str, Any]) -> None:
    note = outcome_note({**FATAL, "answer_from": ["c0"]}, context, {"c0": MISS})
    assert "a knowledge-base miss" in note and "no --force-outcome or --seed changes" in note
    assert "ask about a topic it has, as in “How does a checkpointer work?”" in note
    assert "agent/tools/data/knowledge_base.json" in note
    # A hint that cannot help is never given: no outcome forced turns a miss into a page.
    assert "with --force-outcome success" not in note
    assert ("forced by --force-outcome success" in note) == ("force_outcome" in context)


def test_a_miss_beside_a_drawn_failure_offers_forcing_the_other_calls() -> None:
    decision = {**FATAL, "answer_from": ["c0", "c1"]}
    note = outcome_note(decision, {}, {"c0": MISS, "c1": UNAVAILABLE})
    assert "the search found no page" in note
    assert note.endswith("; force the other calls' outcomes with --force-outcome success")
    two = outcome_note(decision, {}, {"c0": MISS, "c1": MISS})
    assert "2 searches found no page" in two and "--force-outcome success" not in two


def test_a_drawn_failure_that_is_no_miss_still_offers_forcing() -> None:
    note = outcome_note({**FATAL, "answer_from": ["c0"]}, {}, {"c0": UNAVAILABLE})
    assert note.endswith("; force one with --force-outcome success")
    assert "miss" not in note


class Part:
    def __init__(self, event: str, data: Any) -> None:
        self.event, self.data = event, data


class StreamingServer:
    """A ``langgraph_sdk`` client stand-in streaming one run's parts, in a given order."""

    def __init__(self, parts: list[Part]) -> None:
        self.parts = parts
        self.threads = self
        self.runs = self

    async def create(self) -> dict[str, str]:
        return {"thread_id": "t1"}

    async def stream(self, *args: Any, **kwargs: Any) -> Any:
        for part in self.parts:
            yield part

    async def get_state(self, thread_id: str) -> dict[str, Any]:
        return {"values": {}, "interrupts": []}


def tools_update(artifact: dict[str, Any]) -> Part:
    message = {"type": "tool", "tool_call_id": "c0", "content": "x", "artifact": artifact}
    return Part("updates", {"tools": {"messages": [message]}})


DECISION = Part("custom", {"stop_decision": {**FATAL, "answer_from": ["c0"]}})


@pytest.mark.parametrize(
    "parts",
    [
        [DECISION, tools_update(MISS)],  # legacy: the decision first, then the tools update
        [tools_update(MISS), DECISION, Part("updates", {"model": {}})],  # middleware
        [tools_update({"structured_content": MISS}), DECISION],  # an MCP tool, stream ends
    ],
    ids=["decision-first", "update-first", "mcp-artifact"],
)
def test_a_decision_is_shown_with_its_calls_artifacts(parts: list[Part]) -> None:
    shown: list[str] = []

    def hook(decision: dict[str, Any], artifacts: Any) -> None:
        shown.append(outcome_note(decision, {}, artifacts))

    server = cast(Any, StreamingServer(parts))
    seen = asyncio.run(cli.stream_run(server, "legacy", "q", None, on_decision=hook))
    assert len(shown) == 1 and "a knowledge-base miss" in shown[0]
    assert seen.artifacts == {"c0": MISS}
    assert len(seen.decisions) == 1


@pytest.mark.parametrize("command", cli.COMMANDS)
def test_every_flag_of_every_subcommand_shows_its_default(command: str) -> None:
    top = cli.parser()
    [commands] = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    sub = commands.choices[command]
    for action in sub._actions:
        if action.option_strings and action.help != argparse.SUPPRESS and action.dest != "help":
            shown = sub._get_formatter()._expand_help(action)
            assert "(default: " in shown or "(required)" in shown, (command, action.dest)
            assert "(default: None)" not in shown, (command, action.dest)  # one a person reads


@pytest.mark.parametrize(
    ("flag", "default"),
    [
        ("--stop-mode", "hard"),
        ("--spend-cap", "500"),
        ("--max-retries", "2"),
        ("--seed", "0"),
        ("--on-policy-block", "refuse"),
        ("--graph", "legacy"),
    ],
)
def test_ask_help_shows_the_context_defaults(
    flag: str, default: str, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = help_of("ask", capsys=capsys)
    after = shown.split(f" {flag} ", 1)[1]
    assert after.split(" --", 1)[0].endswith(f"(default: {default})")


def test_the_help_says_what_report_reads_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    top = " ".join(capsys.readouterr().out.split())
    assert "report add up what the stops saved: over the running server's threads by default" in top
    assert "`ask` (the default" in top
    assert "reads the threads" not in top or "LangSmith" in top
    listed = subprocess.run(
        ["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    [report] = [line for line in listed.stdout.splitlines() if line.startswith("report ")]
    assert "server's threads" in report and "no key needed" in report
    assert report.index("server's threads") < report.index("LangSmith")
