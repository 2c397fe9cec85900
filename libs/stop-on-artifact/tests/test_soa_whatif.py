"""The what-if over recorded traces: `stop_on_artifact.whatif`, its readers and its command.

Hermetic: the LangSmith project is served by a loopback stand-in that answers
`Client.list_runs` as LangSmith's API does (`GET /sessions`, `POST /runs/query`); the server
threads' reader is tested on a thread's `values` (no `langgraph dev` here).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from langchain_core.load import dumpd
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from stop_on_artifact import fatal, transient
from stop_on_artifact.whatif import (
    Conversation,
    main,
    read_jsonl,
    read_langsmith,
    stops,
    thread_conversation,
    to_messages,
    whatif,
)

LIBRARY = Path(__file__).resolve().parents[1]
EXAMPLE = LIBRARY / "docs" / "whatif-example.jsonl"
SRC = str(LIBRARY / "src")


def by_trace(report: Any) -> dict[tuple[str, int], Any]:
    return {(o.trace, o.turn): o for o in report.outcomes}


def test_both_message_formats_several_turns_a_retry_and_parallel_calls() -> None:
    conversations = read_jsonl(str(EXAMPLE))
    assert [c.id for c in conversations] == ["refund-1", "refund-then-mail", "retry", "parallel"]
    report = whatif(conversations, stops(["refund"]), price=(0.59, 0.79))
    turns = by_trace(report)
    openai = turns["refund-1", 0]  # OpenAI chat format: lookup, refund, then the model's answer
    assert (openai.model_calls, openai.model_calls_saved, openai.rule, openai.tool) == (
        3, 1, "completed", "refund",
    )  # fmt: skip
    assert (openai.input_tokens_saved, openai.output_tokens_saved) == (1010, 14)
    assert openai.dollars_saved == round((1010 * 0.59 + 14 * 0.79) / 1e6, 6)
    assert openai.answer == "Refunded 40 EUR for A-7." and not openai.cut
    cut = turns["refund-then-mail", 0]  # LangChain dicts: the email ran after the refund
    assert (cut.model_calls_saved, cut.cut) == (2, ["send_email"])
    later = turns["refund-then-mail", 1]  # the second turn: no stopping tool, nothing saved
    assert (later.model_calls, later.model_calls_saved, later.rule) == (2, 0, None)
    retried = turns["retry", 0]  # an error result, then the retry that succeeded stops
    assert (retried.model_calls_saved, retried.answer) == (1, "Refunded 12 EUR for C-1.")
    both = turns["parallel", 0]  # one step, two refunds: the answer has both parts
    assert both.model_calls_saved == 1
    assert both.answer == "Refunded 5 EUR for D-1.\n\n---\n\nRefunded 7 EUR for D-2."
    assert report.outcomes[0] is cut  # the cut turns come first
    data = report.as_dict()
    assert (data["traces"], data["turns"], data["model_calls"], data["model_calls_saved"]) == (
        4, 5, 13, 5,
    )  # fmt: skip
    assert data["cut"] == ["refund-then-mail"]
    assert data["tools"] == {
        "refund": {"ended": 4, "model_calls_saved": 5, "dollars_saved": 0.003041, "cut": 1}
    }


def errors_are_transient(message: ToolMessage) -> dict[str, Any] | None:
    """A mapping as `adopt(refund, transient=TimeoutError)` gives: errors are transient."""
    if message.status == "error":
        return transient(error="TimeoutError")
    return stops(["refund"])(message)


def test_a_transient_counts_toward_the_retry_budget_by_the_library_rule() -> None:
    [retry] = [c for c in read_jsonl(str(EXAMPLE)) if c.id == "retry"]
    from stop_on_artifact import StopSettings

    report = whatif([retry], errors_are_transient, StopSettings(max_retries=0))
    [outcome] = report.outcomes
    assert (outcome.rule, outcome.tool, outcome.model_calls_saved) == ("retry_budget", "refund", 2)
    assert outcome.cut == ["refund"]  # the retry that would have succeeded is cut short
    assert outcome.answer is not None and "still unavailable" in outcome.answer
    assert whatif([retry], errors_are_transient).outcomes[0].rule == "completed"


def test_the_parallel_policy_decides_a_step_with_a_failed_sibling() -> None:
    ask = AIMessage(
        "",
        tool_calls=[
            {"name": "refund", "args": {"order": "E-1"}, "id": "g1"},
            {"name": "refund", "args": {"order": "E-2"}, "id": "g2"},
        ],
    )
    messages: list[BaseMessage] = [
        HumanMessage("Refund E-1 and E-2."),
        ask,
        ToolMessage("Refunded E-1.", tool_call_id="g1", name="refund"),
        ToolMessage("Timed out.", tool_call_id="g2", name="refund", status="error"),
        AIMessage("", tool_calls=[{"name": "refund", "args": {"order": "E-2"}, "id": "g3"}]),
        ToolMessage("Refunded E-2.", tool_call_id="g3", name="refund"),
        AIMessage("Both refunded."),
    ]
    from stop_on_artifact import StopSettings

    conversation = [Conversation("p", messages)]
    waits = whatif(conversation, stops(["refund"])).outcomes[0]  # "all": the retry first
    assert (waits.model_calls_saved, waits.cut) == (1, [])
    assert waits.answer == "Refunded E-1.\n\n---\n\nRefunded E-2."
    early = whatif(conversation, stops(["refund"]), StopSettings(parallel_policy="any"))
    assert (early.outcomes[0].model_calls_saved, early.outcomes[0].cut) == (2, ["refund"])


def test_a_fatal_artifact_from_a_mapping_stops_and_answers() -> None:
    [one] = [c for c in read_jsonl(str(EXAMPLE)) if c.id == "retry"]
    refuse = lambda m: fatal() if m.status == "error" else None  # noqa: E731
    [outcome] = whatif([one], refuse).outcomes
    assert (outcome.rule, outcome.answer) == ("fatal", "Error: payment service timed out.")
    assert outcome.cut == ["refund"]


def test_a_malformed_line_is_named_and_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = EXAMPLE.read_text("utf-8").splitlines()
    bad = tmp_path / "bad.jsonl"
    broken = ['{"id": "x", "messages": [', '{"id": "y"}', '{"messages": [{"role": "wizard"}]}']
    bad.write_text("\n".join([lines[0], *broken, lines[1]]) + "\n", "utf-8")
    found = read_jsonl(str(bad))
    assert [c.id for c in found] == ["refund-1", "refund-then-mail"]
    err = capsys.readouterr().err
    assert re.findall(r"line (\d+) skipped", err) == ["2", "3", "4"]
    assert "Traceback" not in err


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stop_on_artifact.whatif", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=LIBRARY,
        env={"PYTHONPATH": f"{SRC}:{Path(__file__).parent}", "PATH": "/usr/bin:/bin"},
    )


def test_the_command_prints_json_and_names_an_unknown_tool(tmp_path: Path) -> None:
    done = run(str(EXAMPLE), "--stops", "refund", "--json", "--chart", str(tmp_path / "c.svg"))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert {k: data[k] for k in ("traces", "turns", "model_calls", "model_calls_saved")} == {
        "traces": 4, "turns": 5, "model_calls": 13, "model_calls_saved": 5,
    }  # fmt: skip
    assert data["cut"] == ["refund-then-mail"]
    svg = (tmp_path / "c.svg").read_text("utf-8")
    assert svg.startswith("<svg") and "refund" in svg and "5 saved" in svg
    unknown = run(str(EXAMPLE), "--stops", "refund,refnd")
    assert unknown.returncode == 2 and "refnd" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n" + EXAMPLE.read_text("utf-8"), "utf-8")
    skipped = run(str(bad), "--stops", "refund", "--json")
    assert skipped.returncode == 0 and "line 1 skipped" in skipped.stderr
    assert json.loads(skipped.stdout)["traces"] == 4


def test_the_command_takes_a_mapping_function() -> None:
    done = run(str(EXAMPLE), "--mapping", "test_soa_whatif:errors_are_transient", "--json",
               "--max-retries", "0")  # fmt: skip
    assert done.returncode == 0, done.stderr
    rules = {(t["trace"], t["rule"]) for t in json.loads(done.stdout)["per_turn"]}
    assert ("retry", "retry_budget") in rules
    missing = run(str(EXAMPLE), "--mapping", "no_such_module:f")
    assert missing.returncode == 2 and "no_such_module" in missing.stderr


def test_a_thread_values_dict_converts_as_langchain_message_dicts() -> None:
    values = {
        "messages": [
            dumpd_dict(m)
            for m in (
                HumanMessage("Refund A-7.", id="h1"),
                AIMessage("", id="a1", tool_calls=[{"name": "refund", "args": {}, "id": "c1"}]),
                ToolMessage("Refunded.", tool_call_id="c1", name="refund", id="t1"),
                AIMessage("Done.", id="a2"),
            )
        ]
    }
    conversation = thread_conversation("thread-1", values)
    assert [type(m).__name__ for m in conversation.messages] == [
        "HumanMessage", "AIMessage", "ToolMessage", "AIMessage",
    ]  # fmt: skip
    [outcome] = whatif([conversation], stops(["refund"])).outcomes
    assert (outcome.trace, outcome.model_calls_saved, outcome.answer) == (
        "thread-1",
        1,
        "Refunded.",
    )
    assert thread_conversation("empty", None).messages == []


def dumpd_dict(message: BaseMessage) -> dict[str, Any]:
    """A message as the server's thread state returns it (`model_dump`, `type` human/ai/tool)."""
    return message.model_dump(mode="json")


# --- LangSmith: a loopback stand-in for the read side of its API -------------------------


def langsmith_runs(
    history: list[BaseMessage], conversation: list[BaseMessage], project: str
) -> list[dict[str, Any]]:
    """The runs LangChain's tracer records for one turn: a root, llm and tool children.

    Each model call's inputs are the whole thread so far, ``history`` (earlier turns) first.
    """
    trace = uuid.uuid4()
    start = datetime(2026, 12, 1, tzinfo=UTC)
    root = {"id": str(trace), "trace_id": str(trace), "name": "agent", "run_type": "chain",
            "parent_run_id": None, "start_time": start.isoformat(), "dotted_order": "a",
            "inputs": {"messages": [dumpd(conversation[0])]}, "outputs": {},
            "session_id": project}  # fmt: skip
    runs = [root]
    for n, message in enumerate(conversation[1:], 1):
        run: dict[str, Any] = {
            "id": str(uuid.uuid4()), "trace_id": str(trace), "parent_run_id": str(trace),
            "start_time": (start + timedelta(seconds=n)).isoformat(),
            "dotted_order": f"a.{n:03d}", "session_id": project,
        }  # fmt: skip
        if isinstance(message, AIMessage):
            usage = message.usage_metadata or {"input_tokens": 0, "output_tokens": 0}
            sent = [dumpd(m) for m in [*history, *conversation[:n]]]
            bare = message.model_copy(update={"usage_metadata": None})
            run |= {"name": "ChatModel", "run_type": "llm", "inputs": {"messages": [sent]},
                    "outputs": {"generations": [[{"text": message.content,
                                                  "message": dumpd(bare)}]]},
                    "prompt_tokens": usage["input_tokens"],
                    "completion_tokens": usage["output_tokens"],
                    "total_tokens": usage["input_tokens"] + usage["output_tokens"]}  # fmt: skip
        elif isinstance(message, ToolMessage):
            output: Any = dumpd(message) if n % 2 else message.content  # both shapes
            run |= {"name": message.name, "run_type": "tool", "inputs": {"input": "{}"},
                    "outputs": {"output": output},
                    "error": "ToolException" if message.status == "error" else None}  # fmt: skip
        runs.append(run)
    return runs


class ReadSide(BaseHTTPRequestHandler):
    """`GET /info`, `GET /sessions?name=` and `POST /runs/query` over `server.runs`."""

    server: Any

    def log_message(self, *args: object) -> None:
        pass

    def answer(self, payload: object) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?")[0].removeprefix("/api/v1")
        if path == "/info":
            self.answer({"version": "0.20.0", "batch_ingest_config": {}})
        elif path == "/sessions":
            name = re.search(r"name=([^&]+)", self.path)
            found = name is not None and name[1] == self.server.project
            self.answer([{"id": self.server.project_id, "name": self.server.project,
                          "tenant_id": str(uuid.UUID(int=0)),
                          "start_time": "2026-01-01T00:00:00+00:00",
                          "reference_dataset_id": None}] if found else [])  # fmt: skip
        else:
            self.send_error(404)

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.queries.append(body)
        runs = [r for r in self.server.runs if r["session_id"] in body.get("session", [])]
        page, start = 2, int(body.get("cursor") or 0)  # small pages: the cursor is followed
        chunk = [{**r, "session_id": self.server.project_id} for r in runs[start : start + page]]
        more = start + page < len(runs)
        self.answer({"runs": chunk, "cursors": {"next": str(start + page) if more else None}})


@pytest.fixture
def langsmith_stand_in() -> Iterator[Any]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), ReadSide)
    server.project, server.project_id = "support-bot", str(uuid.uuid5(uuid.NAMESPACE_URL, "p"))  # type: ignore[attr-defined]
    server.runs, server.queries = [], []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_langsmith_project_read_through_the_sdk(langsmith_stand_in: Any) -> None:
    langsmith = pytest.importorskip("langsmith")
    project_id = langsmith_stand_in.project_id
    recorded = read_jsonl(str(EXAMPLE))
    for conversation in recorded:  # one trace per turn, as a LangGraph agent records them
        messages = conversation.messages
        starts = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
        for start, stop in zip(starts, [*starts[1:], len(messages)], strict=True):
            turn = messages[start:stop]
            langsmith_stand_in.runs += langsmith_runs(messages[:start], turn, project_id)
    url = f"http://127.0.0.1:{langsmith_stand_in.server_address[1]}"
    client = langsmith.Client(api_url=url, api_key="dummy")
    read = read_langsmith("support-bot", client)
    assert len(read) == 5 and len(langsmith_stand_in.queries) > 1  # paged by the cursor
    report = whatif(read, stops(["refund"]), price=(0.59, 0.79)).as_dict()
    local = whatif(recorded, stops(["refund"]), price=(0.59, 0.79)).as_dict()
    for key in ("turns", "model_calls", "model_calls_saved", "input_tokens_saved",
                "output_tokens_saved", "dollars_saved", "tools"):  # fmt: skip
        assert report[key] == local[key], key
    assert report["traces"] == 5 and len(report["cut"]) == 1  # a trace per turn
    answers = sorted(str(t["answer"]) for t in report["per_turn"] if t["answer"])
    assert answers == sorted(str(t["answer"]) for t in local["per_turn"] if t["answer"])


def test_an_unknown_langsmith_project_is_an_error_not_a_traceback(
    langsmith_stand_in: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("langsmith")
    monkeypatch.setenv(
        "LANGSMITH_ENDPOINT", f"http://127.0.0.1:{langsmith_stand_in.server_address[1]}"
    )
    monkeypatch.setenv("LANGSMITH_API_KEY", "dummy")
    with pytest.raises(SystemExit) as exited:
        main(["langsmith:no-such-project", "--stops", "refund"])
    assert exited.value.code == 2
    assert "no-such-project" in capsys.readouterr().err


def test_to_messages_reads_usage_in_both_shapes() -> None:
    openai_usage = {"prompt_tokens": 3, "completion_tokens": 4}
    [openai, lc] = to_messages([
        {"role": "assistant", "content": None, "usage": openai_usage},
        {"type": "ai", "content": "x", "usage_metadata": {"input_tokens": 5, "output_tokens": 6}},
    ])  # fmt: skip
    assert isinstance(openai, AIMessage) and isinstance(lc, AIMessage)
    assert openai.usage_metadata == {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    assert lc.usage_metadata == {"input_tokens": 5, "output_tokens": 6, "total_tokens": 11}


def test_the_page_commands_print_what_it_shows_and_draw_its_chart(tmp_path: Path) -> None:
    """docs/whatif.md: each command followed by its output runs as printed, in a copy."""
    page = (LIBRARY / "docs" / "whatif.md").read_text("utf-8")
    shown = re.findall(
        r"```bash\n(python -m stop_on_artifact\.whatif [^\n]*)\n```\n\n```text\n(.*?)```",
        page,
        re.S,
    )
    assert shown, "the page shows a command and its output"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / EXAMPLE.name).write_text(EXAMPLE.read_text("utf-8"), "utf-8")
    for command, output in shown:
        args = command.split()[3:]
        done = subprocess.run(
            [sys.executable, "-m", "stop_on_artifact.whatif", *args],
            capture_output=True, text=True, check=False, timeout=120, cwd=tmp_path,
            env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout == output, command
    chart = (LIBRARY / "docs" / "whatif-example.svg").read_text("utf-8")
    assert (tmp_path / "whatif-example.svg").read_text("utf-8") == chart
    assert "![Model calls saved and turns cut, per tool](whatif-example.svg)" in page


class ThreadsSide(BaseHTTPRequestHandler):
    """`POST /threads/search` as a LangGraph server answers it, over `server.threads`."""

    server: Any

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert self.path == "/threads/search"
        page = self.server.threads[body["offset"] : body["offset"] + body["limit"]]
        data = json.dumps(page).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_a_server_s_threads_are_read_page_by_page() -> None:
    """`read_threads` through `langgraph_sdk` against a stand-in (no `langgraph dev` here)."""
    pytest.importorskip("langgraph_sdk")
    from stop_on_artifact.whatif import read_threads

    server = ThreadingHTTPServer(("127.0.0.1", 0), ThreadsSide)
    messages = [
        HumanMessage("Refund A-7."),
        AIMessage("", tool_calls=[{"name": "refund", "args": {}, "id": "c1"}]),
        ToolMessage("Refunded.", tool_call_id="c1", name="refund"),
        AIMessage("Done."),
    ]
    values = {"messages": [dumpd_dict(m) for m in messages]}
    server.threads = [  # type: ignore[attr-defined]
        {"thread_id": f"t{n}", "values": values if n != 3 else {}} for n in range(130)
    ]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        found = read_threads(f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
    assert len(found) == 129 and found[0].id == "t0"  # two pages; the empty thread left out
    data = whatif(found, stops(["refund"])).as_dict()
    assert (data["traces"], data["model_calls"], data["model_calls_saved"]) == (129, 258, 129)
