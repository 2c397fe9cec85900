"""What a refused run is told: the thread named when its id is a UUID, nothing else quoted."""

from __future__ import annotations

import uuid

import pytest

from agent.resume_door import RUN_ROUTE, _refuses_resume, _resume_request
from agent.runs import BUSY, answered, is_resume, thread_name


def test_a_thread_is_named_only_by_a_uuid() -> None:
    thread_id = str(uuid.uuid4())
    assert thread_name(thread_id) == f"thread {thread_id}"
    assert thread_id in answered(thread_id)
    for planted in ("secret-7f1c", "x" * 5000, "../../etc", ""):
        assert thread_name(planted) == "this thread"
        assert planted not in answered(planted) or planted == ""


@pytest.mark.parametrize(
    ("body", "resumes"),
    [
        ({"command": {"resume": None}}, True),
        ({"command": {"resume": {"decisions": []}}}, True),
        ({"command": {"update": {}}}, False),
        ({"input": {"resume": 1}}, False),
        ({"command": "resume"}, False),
    ],
)
def test_a_resume_is_a_command_with_a_resume_key(body: dict[str, object], resumes: bool) -> None:
    assert is_resume(body) is resumes


def test_the_door_reads_only_the_run_routes_of_a_thread() -> None:
    assert RUN_ROUTE.fullmatch("/threads/abc/runs")
    assert RUN_ROUTE.fullmatch("/threads/abc/runs/wait")
    assert RUN_ROUTE.fullmatch("/threads/abc/runs/stream")
    assert not RUN_ROUTE.fullmatch("/runs/wait")
    assert not RUN_ROUTE.fullmatch("/threads/abc/runs/123/join")
    assert not RUN_ROUTE.fullmatch("/threads/abc/state")


def test_the_door_parses_only_a_body_that_mentions_resume() -> None:
    assert _resume_request(b'{"input": {"messages": []}}') is None
    assert _resume_request(b'{"command": {"resume": 1') is None  # malformed: the server's
    assert _resume_request(b'{"command": {"resume": 1}}') == {"command": {"resume": 1}}


def test_only_a_refusal_to_resume_is_rewritten() -> None:
    assert _refuses_resume(b'{"detail": "' + BUSY.encode() + b'"}')
    assert _refuses_resume(b'{"detail": "Cannot resume: thread is not in interrupted state"}')
    assert not _refuses_resume(b'{"detail": "command.resume.decisions must be a list"}')
    assert not _refuses_resume(b"not json")
