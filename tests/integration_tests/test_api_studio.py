"""What LangGraph Studio reads from the server: assistants, schemas, graphs."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any, get_args

from langgraph_sdk.client import LangGraphClient

from agent.context import Context
from agent.graphs.legacy import graph as legacy_graph
from agent.graphs.middleware import graph as middleware_graph
from client.scenarios import GRAPHS, MODEL_NODES, by_name
from tests.support.api import model_messages, tool_steps, user_input

ROOT = Path(__file__).resolve().parents[2]
COMPILED = {"legacy": legacy_graph, "middleware": middleware_graph}


async def system_assistants(client: LangGraphClient) -> dict[str, dict[str, Any]]:
    found = await client.assistants.search(metadata={"created_by": "system"}, limit=100)
    by_graph: dict[str, list[dict[str, Any]]] = {}
    for assistant in found:
        by_graph.setdefault(assistant["graph_id"], []).append(dict(assistant))
    assert {graph: len(items) for graph, items in by_graph.items()} == dict.fromkeys(GRAPHS, 1)
    return {graph: items[0] for graph, items in by_graph.items()}


async def test_one_default_assistant_per_graph(client: LangGraphClient) -> None:
    declared = json.loads((ROOT / "langgraph.json").read_text())["graphs"]
    assistants = await system_assistants(client)
    assert set(assistants) == set(declared) == set(GRAPHS)
    for graph, assistant in assistants.items():
        assert assistant["name"] == graph
        assert assistant["context"] == {}  # every field at its default
        by_graph = await client.assistants.search(graph_id=graph, limit=100)
        assert assistant["assistant_id"] in {a["assistant_id"] for a in by_graph}


def _allowed(annotation: Any) -> list[str]:
    """Literal values anywhere in an annotation (`A | list[A] | None` included)."""
    if typing.get_origin(annotation) is typing.Literal:
        return list(get_args(annotation))
    return [value for arg in get_args(annotation) for value in _allowed(arg)]


def _enums(schema: dict[str, Any]) -> list[str]:
    """Enum values anywhere in a JSON schema, in order, without repeats."""
    found: list[str] = []
    if isinstance(schema, dict):
        found += schema.get("enum", [])
        for value in schema.values():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict):
                    found += _enums(item)
    return list(dict.fromkeys(found))


async def test_schemas_show_every_context_field(client: LangGraphClient) -> None:
    for graph, assistant in (await system_assistants(client)).items():
        schemas = await client.assistants.get_schemas(assistant["assistant_id"])
        context = schemas["context_schema"]
        assert context is not None, graph
        properties = context["properties"]
        assert set(properties) == set(Context.model_fields), graph
        assert context.get("additionalProperties") is False
        for name, field in Context.model_fields.items():
            shown = properties[name]
            assert field.description and shown["description"] == field.description, name
            allowed = _allowed(field.annotation)
            assert _enums(shown) == list(dict.fromkeys(allowed)), name
            if field.default_factory is None:
                assert shown["default"] == field.default, name
            for bound, key in (("ge", "minimum"), ("le", "maximum")):
                limit = next((getattr(m, bound) for m in field.metadata if hasattr(m, bound)), None)
                if limit is not None:
                    assert shown[key] == limit, (name, key)
        # Enum fields really list their values (not an empty schema that accepts anything).
        assert properties["stop_mode"]["enum"] == ["hard", "polish", "never"]
        input_schema, state_schema = schemas["input_schema"], schemas["state_schema"]
        assert input_schema is not None and state_schema is not None, graph
        assert "messages" in input_schema["properties"]
        assert "stop_decision" in state_schema["properties"]


def _edges(graph: dict[str, Any]) -> set[tuple[str, str, bool]]:
    return {(e["source"], e["target"], bool(e.get("conditional"))) for e in graph["edges"]}


async def test_graphs_show_their_nodes_and_edges(client: LangGraphClient) -> None:
    assistants = await system_assistants(client)
    drawn = {}
    for graph, assistant in assistants.items():
        served = await client.assistants.get_graph(assistant["assistant_id"])
        local = COMPILED[graph].get_graph().to_json()
        assert {n["id"] for n in served["nodes"]} == {n["id"] for n in local["nodes"]}
        assert _edges(served) == _edges(local)
        drawn[graph] = served

    legacy = drawn["legacy"]
    assert {n["id"] for n in legacy["nodes"]} == {
        "__start__",
        "agent",
        "tools",
        "finalize",
        "__end__",
    }
    assert _edges(legacy) == {
        ("__start__", "agent", False),
        ("agent", "tools", True),  # should_continue
        ("agent", "__end__", True),
        ("tools", "agent", True),  # route_after_tools: continue or polish
        ("tools", "finalize", True),  # route_after_tools: hard stop
        ("finalize", "__end__", False),
    }
    middleware = drawn["middleware"]
    nodes = {n["id"] for n in middleware["nodes"]}
    assert {"model", "tools"} <= nodes
    assert not any(n.startswith("stop_on_artifact") for n in nodes)  # it decides in "model"
    assert MODEL_NODES & nodes == {"model"}
    assert {
        ("__start__", "model", False),
        ("tools", "model", True),  # back to the model, where the stop decides
        ("spend_cap.after_model", "__end__", True),  # a reply without calls, a stop's too
    } <= _edges(middleware)


async def test_an_assistant_runs_with_its_own_context(client: LangGraphClient) -> None:
    # The assistant carries stop_mode="polish"; the run adds only the forced outcome, and
    # the two contexts merge: the run polishes (one more model call, no tools).
    polished = by_name("success-polish")
    assert polished.context["stop_mode"] == "polish"
    created = []
    try:
        for graph in GRAPHS:
            assistant = await client.assistants.create(
                graph_id=graph, context={"stop_mode": "polish"}, name=f"{graph}-polish"
            )
            created.append(assistant["assistant_id"])
            assert assistant["context"] == {"stop_mode": "polish"}
            thread_id = (await client.threads.create())["thread_id"]
            path: list[str] = []
            async for part in client.runs.stream(
                thread_id,
                assistant["assistant_id"],
                input=user_input(polished.query),
                context={"force_outcome": polished.context["force_outcome"]},
                stream_mode="updates",
            ):
                assert part.event != "error", part.data
                if part.event == "updates":
                    path.extend(part.data)
            assert path == polished.path(graph)
            state = await client.threads.get_state(thread_id)
            values: dict[str, Any] = state["values"]  # type: ignore[assignment]
            assert len(model_messages(values["messages"][1:])) == polished.model_calls == 2
            assert values["stop_decision"]["rule"] == polished.rule
            assert len(tool_steps(values["messages"][1:])) == polished.tool_steps
        # The graphs' own assistants are untouched.
        assert all(not a["context"] for a in (await system_assistants(client)).values())
    finally:
        for assistant_id in created:
            await client.assistants.delete(assistant_id)
