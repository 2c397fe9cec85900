"""Reading what the LangGraph API returns: messages are dicts, as the API serializes them."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any, TypedDict

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from stop_on_artifact.testing import (
    ANSWER_SEPARATOR,
    MODEL_CALL_LIMIT_MESSAGE,
)

from agent.graphs.legacy import build_legacy
from agent.graphs.middleware import build_middleware
from client.scenarios import Scenario
from tests.support.closing import split_closing

# ------------------------------------------------------------------- typed SDK calls


class RunRequest(TypedDict):
    """The ``input`` and ``context`` of a run, to pass as ``**request`` to the SDK's runs."""

    input: dict[str, Any]
    context: dict[str, Any]


def run_request(text: str, context: dict[str, Any]) -> RunRequest:
    return {"input": user_input(text), "context": context}


def values_of(output: object) -> dict[str, Any]:
    """A thread's values as ``runs.wait``/``runs.join``/``get_state`` return them: a dict.

    The SDK types them as ``list[dict] | dict`` (a list only for a graph whose state is a
    list, which neither graph here has).
    """
    assert isinstance(output, dict), output
    return output


def metadata_of(resource: Mapping[str, Any]) -> dict[str, Any]:
    """A thread's, run's, assistant's or cron's metadata (the SDK types it ``dict | None``)."""
    metadata = resource["metadata"]
    assert isinstance(metadata, dict), resource
    return metadata


# --------------------------------------------------------------------------- reading state


def user_input(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def current_turn(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages after the last user message."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index]["type"] == "human":
            return messages[index + 1 :]
    return list(messages)


def turns(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Split a thread into turns, each starting after a user message."""
    out: list[list[dict[str, Any]]] = []
    for message in messages:
        if message["type"] == "human":
            out.append([])
        elif out:
            out[-1].append(message)
    return out


def tool_steps(turn: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """ToolMessages grouped per model turn, in the order the model issued the calls."""
    steps: list[list[dict[str, Any]]] = []
    order: dict[str, int] = {}
    for message in turn:
        if message["type"] == "ai" and message.get("tool_calls"):
            order = {call["id"]: i for i, call in enumerate(message["tool_calls"])}
            steps.append([])
        elif message["type"] == "tool" and steps:
            steps[-1].append(message)
    return [sorted(step, key=lambda m: order.get(m["tool_call_id"], len(order))) for step in steps]


def model_messages(turn: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """AIMessages a model produced (they carry usage); a relayed answer carries none."""
    return [m for m in turn if m["type"] == "ai" and m.get("usage_metadata")]


def decisions_in_history(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The distinct stop decisions a thread's checkpoints went through, oldest first."""
    seen: list[dict[str, Any]] = []
    for snapshot in reversed(history):
        decision = snapshot["values"].get("stop_decision")
        if decision and (not seen or seen[-1] != decision):
            seen.append(decision)
    return seen


def text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def canonical(value: Any) -> str:
    """JSON with sorted keys: equal strings mean equal values *and* equal JSON types."""
    return json.dumps(value, sort_keys=True)


def assert_answer(scenario: Scenario, turn: list[dict[str, Any]]) -> None:
    """The final answer of a turn, as the contract says for this scenario."""
    answer = turn[-1]
    assert answer["type"] == "ai" and not answer.get("tool_calls")
    steps = tool_steps(turn)
    if scenario.ending == "finalize":
        expected = [
            not_done_line(steps[i][j]) if (i, j) in scenario.unsettled else text(steps[i][j])
            for i, j in scenario.parts
        ]
        if scenario.closing == "retry_budget":
            body, closing = split_closing(text(answer))
            assert len(closing) == len(scenario.unsettled)  # each part left timing out, named
            assert body == ANSWER_SEPARATOR.join(expected)
        elif scenario.closing == "model_call_limit":
            expected.append(MODEL_CALL_LIMIT_MESSAGE)
        if scenario.closing != "retry_budget":
            assert text(answer) == ANSWER_SEPARATOR.join(expected)
        assert not answer.get("usage_metadata")  # relayed, not generated
    else:
        assert text(answer) not in [text(m) for m in steps[-1]]
        assert answer["usage_metadata"]  # a model phrased it


def not_done_line(message: dict[str, Any]) -> str:
    """The line a tool wrote for its call if it is left undone (its artifact's ``not_done``)."""
    line = (message.get("artifact") or {}).get("not_done")
    assert isinstance(line, str), "the demo's tools write a not_done line on every timeout"
    return line


def answer_ids(scenario: Scenario, turn: list[dict[str, Any]]) -> list[str]:
    """The ``tool_call_id``s the scenario's ``answer_from`` must list."""
    steps = tool_steps(turn)
    return [steps[i][j]["tool_call_id"] for i, j in scenario.answer_parts]


def unsettled_ids(scenario: Scenario, turn: list[dict[str, Any]]) -> list[str]:
    """The ``tool_call_id``s the scenario's ``unsettled`` must list."""
    steps = tool_steps(turn)
    return [steps[i][j]["tool_call_id"] for i, j in scenario.unsettled]


# --------------------------------------------------------------------------- in-process reference


def tool_record(message: BaseMessage) -> dict[str, Any]:
    assert isinstance(message, ToolMessage)
    return {
        "name": message.name,
        "content": message.content,
        "artifact": message.artifact,
        "status": message.status,
    }


def api_tool_record(message: dict[str, Any]) -> dict[str, Any]:
    return {key: message[key] for key in ("name", "content", "artifact", "status")}


async def reference_run(
    graph: str, scenario: Scenario, query: str | None = None
) -> list[BaseMessage]:
    """The same scenario (or its ``query`` instead) in-process: what the API must serialize."""
    builder = build_legacy if graph == "legacy" else build_middleware
    compiled = builder(checkpointer=InMemorySaver())
    # A thread of its own: a purchase's idempotency key names it.
    config: RunnableConfig = {"configurable": {"thread_id": f"reference-{uuid.uuid4().hex}"}}
    text = scenario.query if query is None else query
    result = await compiled.ainvoke(user_input(text), config, context=scenario.context)
    messages: list[BaseMessage] = result["messages"]
    assert isinstance(messages[-1], AIMessage)
    return messages
