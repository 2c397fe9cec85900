"""In-place retries of a transient call: bounded, recorded, backed off."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from langchain_core.messages import ToolMessage
from stop_on_artifact import completed, fatal, transient
from stop_on_artifact._artifact import IN_PLACE_FIELD
from stop_on_artifact._retry import aretry_in_place, is_transient, retry_in_place
from stop_on_artifact._settings import MAX_DELAY
from stop_on_artifact._turn import in_place_retries


def budget(retries: int) -> Callable[[object], bool]:
    """A shared in-place budget of ``retries`` retries, as the core hands one out."""
    left = [retries]

    def take(_result: object) -> bool:
        left[0] -= 1
        return left[0] >= 0

    return take


def results(*outcomes: str) -> list[ToolMessage]:
    build = {"transient": transient, "completed": completed, "fatal": fatal}
    return [
        ToolMessage(content=f"attempt {i}", tool_call_id="c1", artifact=build[o]())
        for i, o in enumerate(outcomes)
    ]


class Tool:
    """A call whose attempts return the given results in turn."""

    def __init__(self, *outcomes: str) -> None:
        self.left = results(*outcomes)
        self.calls = 0

    def __call__(self) -> ToolMessage:
        self.calls += 1
        return self.left.pop(0)


def test_a_transient_then_success_is_retried_once_and_recorded() -> None:
    tool, waits = Tool("transient", "completed"), list[float]()
    kept = retry_in_place(tool, take=budget(2), initial_delay=0.1, sleep=waits.append)
    assert tool.calls == 2 and kept.content == "attempt 1"
    assert kept.artifact[IN_PLACE_FIELD] == 1 and in_place_retries(kept) == 1
    assert kept.artifact["reason"] == "completed" and waits == [0.1]


def test_a_first_success_is_not_retried_nor_marked() -> None:
    tool = Tool("completed")
    kept = retry_in_place(tool, take=budget(3), sleep=lambda _: None)
    assert tool.calls == 1 and IN_PLACE_FIELD not in kept.artifact


@pytest.mark.parametrize("outcome", ["completed", "fatal"])
def test_only_transient_is_retried(outcome: str) -> None:
    tool = Tool("transient", outcome, "completed")
    kept = retry_in_place(tool, take=budget(5), sleep=lambda _: None)
    assert tool.calls == 2 and kept.artifact["reason"] == outcome


def test_the_retries_are_bounded_and_the_last_transient_is_kept() -> None:
    tool, waits = Tool("transient", "transient", "transient", "completed"), list[float]()
    kept = retry_in_place(
        tool, take=budget(2), initial_delay=1.0, backoff_factor=3.0, sleep=waits.append
    )
    assert tool.calls == 3 and is_transient(kept) and in_place_retries(kept) == 2
    assert waits == [1.0, 3.0]


def test_zero_retries_runs_once() -> None:
    tool = Tool("transient", "completed")
    assert is_transient(retry_in_place(tool, take=budget(0), sleep=lambda _: None))
    assert tool.calls == 1


def test_delays_are_bounded_whatever_the_settings() -> None:
    waits: list[float] = []
    retry_in_place(
        Tool("transient", "transient", "completed"),
        take=budget(2),
        initial_delay=4.0,
        backoff_factor=10.0,
        max_delay=60.0,
        sleep=waits.append,
    )
    assert waits == [4.0, MAX_DELAY]  # fmt: skip


def test_something_other_than_a_tool_message_is_returned_as_is() -> None:
    assert retry_in_place(lambda: "not a message", take=budget(3)) == "not a message"


def test_an_invalid_artifact_is_not_transient() -> None:
    bad = ToolMessage(content="x", tool_call_id="c1", artifact={"stop": "maybe"})
    assert not is_transient(bad)
    assert in_place_retries(bad) == 0


async def test_the_async_twin_retries_the_same_way() -> None:
    tool = Tool("transient", "transient", "completed")

    async def run() -> ToolMessage:
        await asyncio.sleep(0)
        return tool()

    kept = await aretry_in_place(run, take=budget(2), initial_delay=0.0)
    assert tool.calls == 3 and in_place_retries(kept) == 2
    assert kept.artifact["reason"] == "completed"


def test_a_tool_can_tell_which_attempt_runs() -> None:
    from stop_on_artifact._retry import current_attempt

    seen: list[int] = []
    tool = Tool("transient", "transient", "completed")

    def run() -> ToolMessage:
        seen.append(current_attempt())
        return tool()

    retry_in_place(run, take=budget(3), sleep=lambda _: None)
    assert seen == [0, 1, 2] and current_attempt() == 0


async def test_the_async_twin_tells_the_attempt_too() -> None:
    from stop_on_artifact._retry import current_attempt

    seen: list[int] = []
    tool = Tool("transient", "completed")

    async def run() -> ToolMessage:
        await asyncio.sleep(0)
        seen.append(current_attempt())
        return tool()

    await aretry_in_place(run, take=budget(3))
    assert seen == [0, 1]
