"""Self-tests: the loopback test servers work with the real langsmith and groq clients."""

from __future__ import annotations

import json
import urllib.request
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import langsmith
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_groq import ChatGroq
from langsmith.run_helpers import get_current_run_tree
from langsmith.utils import LangSmithError, LangSmithNotFoundError
from pydantic import SecretStr

from tests.support.fake_groq import FakeGroq, plan_reply
from tests.support.langsmith_collector import LangSmithCollector, project_id

MODEL = "llama-3.3-70b-versatile"


@pytest.fixture
def loopback_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every client in these tests on 127.0.0.1, and off the real services."""
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    for name in ("GROQ_API_BASE", "GROQ_BASE_URL", "GROQ_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    # The langsmith client otherwise shells out to `git describe` for a revision id.
    monkeypatch.setenv("LANGSMITH_REVISION_ID", "support-self-test")


# --------------------------------------------------------------------------- langsmith


@pytest.fixture(params=[True, False], ids=["multipart", "batch"])
def collector(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, loopback_env: None
) -> Iterator[LangSmithCollector]:
    with LangSmithCollector(multipart=request.param) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        yield server


@langsmith.traceable(name="child_step")
def _child(x: int) -> dict[str, int]:
    run_tree = get_current_run_tree()
    assert run_tree is not None
    # Send the queued posts now, so this run's end arrives as a separate patch (otherwise
    # the client folds a post and a patch queued together into one post).
    run_tree.client.flush()
    run_tree.add_metadata({"added_in_child": "yes", "x_seen": x})
    return {"doubled": x * 2}


@langsmith.traceable(name="parent_step")
def _parent(x: int) -> dict[str, Any]:
    return {"child": _child(x), "done": True}


def test_langsmith_client_traces_into_collector(collector: LangSmithCollector) -> None:
    client = langsmith.Client(api_url=collector.url, api_key="dummy")
    with langsmith.tracing_context(
        enabled=True, client=client, metadata={"suite": "support"}, project_name="selftest"
    ):
        result = _parent(21)
    client.flush()
    assert result == {"child": {"doubled": 42}, "done": True}

    runs = collector.wait_for(
        lambda runs: len(runs) == 2 and all(r.get("end_time") for r in runs.values())
    )
    assert collector.errors == []
    [root] = collector.roots()
    [child] = collector.find(name="child_step")
    assert root["name"] == "parent_step"
    assert child["parent_run_id"] == root["id"]
    assert child["trace_id"] == root["id"] == root["trace_id"]
    assert child["dotted_order"].startswith(root["dotted_order"])
    assert set(runs) == {root["id"], child["id"]}

    assert root["inputs"] == {"x": 21}
    assert child["inputs"] == {"x": 21}
    assert child["outputs"] == {"doubled": 42}
    assert root["outputs"] == {"child": {"doubled": 42}, "done": True}
    assert root["session_name"] == child["session_name"] == "selftest"

    child_meta = child["extra"]["metadata"]
    # Metadata from the post (tracing_context) and from the patch (add_metadata) merged.
    assert child_meta["suite"] == "support"
    assert child_meta["added_in_child"] == "yes"
    assert child_meta["x_seen"] == 21
    assert collector.find(added_in_child="yes") == [child]
    assert collector.find(name="parent_step", suite="support") == [root]
    assert collector.find(suite="nope") == []

    # Exactly the ingest endpoint /info asked for was used, and the raw bytes are kept.
    paths = {r.path for r in collector.requests_log if r.path.startswith("/runs")}
    assert paths == ({"/runs/multipart"} if collector.multipart else {"/runs/batch"})
    assert any(r.path == "/info" for r in collector.requests_log)
    traffic = b"".join(collector.run_traffic)
    assert b"added_in_child" in traffic
    if collector.multipart:
        assert f'name="post.{child["id"]}.inputs"'.encode() in traffic
        assert f'name="patch.{child["id"]}.extra"'.encode() in traffic
        assert f'name="patch.{child["id"]}.outputs"'.encode() in traffic
    else:
        assert b'"patch":[' in traffic
    assert b"dummy" not in traffic  # the API key travels in a header, not the body
    assert collector.requests_log[-1].headers.get("x-api-key") == "dummy"

    snapshot = collector.runs_snapshot()
    snapshot[root["id"]]["name"] = "mutated"
    assert collector.runs[root["id"]]["name"] == "parent_step"
    collector.clear()
    assert collector.runs_snapshot() == {} and collector.run_traffic == []


@langsmith.traceable(name="rooted")
def _rooted(x: int) -> int:
    return x


def test_collector_answers_list_runs_and_get_run_stats_with_their_filters(
    loopback_env: None,
) -> None:
    with LangSmithCollector(projects={"empty"}, page_size=2) as server:
        client = langsmith.Client(api_url=server.url, api_key="dummy")
        traced: list[tuple[str, dict[str, Any], list[str]]] = [
            ("a", {"rule": "completed", "n": 1}, ["stop:completed"]),
            ("a", {"rule": "fatal", "n": 2}, []),
            ("a", {"other": "x"}, []),
            ("b", {"rule": "completed", "n": 3}, []),
        ]
        for project, metadata, tags in traced:
            with langsmith.tracing_context(
                enabled=True, client=client, project_name=project, metadata=metadata, tags=tags
            ):
                _rooted(1)
        client.flush()
        server.wait_for(lambda runs: sum(bool(r.get("end_time")) for r in runs.values()) == 4)

        def names(**query: Any) -> list[Any]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                found = client.list_runs(project_name="a", is_root=True, **query)
                return sorted(run.metadata.get("n", 0) for run in found)

        assert names() == [0, 1, 2], "project a only, over two pages"
        assert names(filter='eq(metadata_key, "rule")') == [1, 2]
        pair = 'and(eq(metadata_key, "rule"), eq(metadata_value, "completed"))'
        assert names(filter=pair) == [1]
        assert names(filter='has(tags, "stop:completed")') == [1]
        assert names(filter='or(eq(metadata_value, "fatal"), not(eq(metadata_key, "rule")))') == [
            0,
            2,
        ]
        assert names(start_time=datetime.now(UTC) + timedelta(hours=1)) == []
        assert names(select=["id", "name", "run_type", "start_time", "trace_id", "extra"])
        [page] = [json.loads(r.body) for r in server.requests_log if r.path == "/runs/query"][:1]
        assert page["session"] == [project_id("a")]
        stats = client.get_run_stats(project_names=["a"], is_root=True, filter=pair)
        assert stats == {"run_count": 1}
        assert not server.errors
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            with pytest.raises(LangSmithNotFoundError):
                list(client.list_runs(project_name="nowhere"))
            assert list(client.list_runs(project_name="empty")) == []
            with pytest.raises(LangSmithError):
                list(client.list_runs(project_name="a", filter="gt(latency, 5)"))
        assert server.errors == [
            "POST /runs/query: ValueError: filter: gt is not evaluated by the collector"
        ]


def send(method: str, url: str, payload: Any) -> int:
    """Send one JSON request the way a client without a tracing queue would."""
    req = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        method=method,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        return int(resp.status)


def test_collector_merges_single_run_endpoints_and_accepts_unknown_posts(
    loopback_env: None,
) -> None:
    with LangSmithCollector() as server:
        run_id = "00000000-0000-0000-0000-000000000001"
        post = {
            "id": run_id,
            "name": "r",
            "inputs": {"a": 1},
            "extra": {"metadata": {"from_post": 1}, "runtime": {"v": 1}},
        }
        assert send("POST", f"{server.url}/runs", post) == 202
        patch = {"outputs": {"b": 2}, "name": None, "extra": {"metadata": {"from_patch": 2}}}
        assert send("PATCH", f"{server.url}/runs/{run_id}", patch) == 200
        assert send("POST", f"{server.url}/v1/metadata/submit", {"k": "v"}) == 200
        run = server.runs_snapshot()[run_id]
        assert run["name"] == "r"
        assert run["inputs"] == {"a": 1} and run["outputs"] == {"b": 2}
        assert run["extra"] == {"metadata": {"from_post": 1, "from_patch": 2}, "runtime": {"v": 1}}
        assert server.other_traffic == [b'{"k": "v"}']
        assert len(server.run_traffic) == 2
        with pytest.raises(TimeoutError):
            server.wait_for(lambda runs: len(runs) > 1, timeout=0.2)


def test_collector_keeps_a_patch_that_arrived_before_its_post(loopback_env: None) -> None:
    with LangSmithCollector() as server:
        run_id = "00000000-0000-0000-0000-000000000002"
        patch = {
            "tags": ["stop:completed"],
            "end_time": "2026-01-01T00:00:01",
            "extra": {"metadata": {"stop_rule": "completed", "shared": "patch"}},
        }
        send("PATCH", f"{server.url}/runs/{run_id}", patch)
        post = {
            "id": run_id,
            "name": "tools",
            "tags": [],
            "inputs": {"a": 1},
            "extra": {"metadata": {"from_post": 1, "shared": "post"}},
        }
        send("POST", f"{server.url}/runs", post)
        run = server.runs_snapshot()[run_id]
        assert run["tags"] == ["stop:completed"]
        assert run["end_time"] == "2026-01-01T00:00:01"
        assert run["name"] == "tools" and run["inputs"] == {"a": 1}
        assert run["extra"]["metadata"] == {
            "stop_rule": "completed",
            "shared": "patch",
            "from_post": 1,
        }


# --------------------------------------------------------------------------- groq


@tool
def search(query: str) -> str:
    """Search the knowledge base."""
    return f"results for {query}"


@tool
def checkout(item: str, amount: float) -> str:
    """Buy an item."""
    return f"bought {item} for {amount}"


@pytest.fixture
def groq_server(loopback_env: None) -> Iterator[FakeGroq]:
    with FakeGroq() as server:
        yield server


def _model(server: FakeGroq) -> Any:
    llm = ChatGroq(model=MODEL, api_key=SecretStr("dummy"), base_url=server.url, max_retries=0)
    return llm.bind_tools([search, checkout])


def _tool_results(ai: AIMessage, content: str) -> list[ToolMessage]:
    return [ToolMessage(content=content, tool_call_id=tc["id"]) for tc in ai.tool_calls]


def test_chat_groq_invoke_tool_calls_and_prose(groq_server: FakeGroq) -> None:
    model = _model(groq_server)
    question = HumanMessage("checkpointer; streaming")
    ai = model.invoke([question])
    assert isinstance(ai, AIMessage)
    assert [(tc["name"], tc["args"]) for tc in ai.tool_calls] == [
        ("search", {"query": "checkpointer"}),
        ("search", {"query": "streaming"}),
    ]
    assert [tc["id"] for tc in ai.tool_calls] == ["call_groq_1_0", "call_groq_1_1"]
    assert ai.usage_metadata is not None
    assert ai.usage_metadata["input_tokens"] > 0
    assert ai.usage_metadata["total_tokens"] == (
        ai.usage_metadata["input_tokens"] + ai.usage_metadata["output_tokens"]
    )
    assert ai.response_metadata["model_name"] == MODEL

    answer = model.invoke([question, ai, *_tool_results(ai, "LangGraph checkpointers persist")])
    assert answer.content == "Here is what I found: LangGraph checkpointers persist"
    assert answer.tool_calls == []
    assert answer.usage_metadata is not None

    sent = groq_server.requests[0]
    assert sent["model"] == MODEL
    assert {t["function"]["name"] for t in sent["tools"]} == {"search", "checkout"}
    checkout_schema = next(t for t in sent["tools"] if t["function"]["name"] == "checkout")
    assert checkout_schema["function"]["parameters"]["properties"]["amount"]["type"] == "number"
    assert groq_server.auth_headers == ["Bearer dummy", "Bearer dummy"]
    follow_up = groq_server.requests[1]["messages"]
    assert [m["role"] for m in follow_up] == ["user", "assistant", "tool", "tool"]


def test_chat_groq_stream_aggregates_tool_calls_and_usage(groq_server: FakeGroq) -> None:
    model = _model(groq_server)
    question = HumanMessage("checkpointer; streaming")
    chunks = list(model.stream([question]))
    assert len(chunks) > 2
    full = chunks[0]
    for chunk in chunks[1:]:
        full = full + chunk
    assert isinstance(full, AIMessageChunk)
    assert [(tc["name"], tc["args"]) for tc in full.tool_calls] == [
        ("search", {"query": "checkpointer"}),
        ("search", {"query": "streaming"}),
    ]
    assert [tc["id"] for tc in full.tool_calls] == ["call_groq_1_0", "call_groq_1_1"]
    assert full.usage_metadata is not None and full.usage_metadata["total_tokens"] > 0
    assert full.response_metadata.get("finish_reason") == "tool_calls"
    assert groq_server.requests[0]["stream"] is True

    invoked = model.invoke([question])
    assert [(tc["name"], tc["args"]) for tc in invoked.tool_calls] == [
        (tc["name"], tc["args"]) for tc in full.tool_calls
    ]
    assert invoked.usage_metadata == full.usage_metadata

    prose = list(model.stream([question, full, *_tool_results(full, "streamed result")]))
    text = "".join(str(c.content) for c in prose)
    assert text == "Here is what I found: streamed result"


async def test_chat_groq_async_checkout_and_transient_retry(groq_server: FakeGroq) -> None:
    model = _model(groq_server)
    question = HumanMessage("Please buy a red mug for 12.50")
    ai = await model.ainvoke([question])
    assert [(tc["name"], tc["args"]) for tc in ai.tool_calls] == [
        ("checkout", {"item": "a red mug", "amount": 12.5})
    ]
    results = [
        ToolMessage(content="Error: upstream timed out", tool_call_id=ai.tool_calls[0]["id"])
    ]
    retry = await model.ainvoke([question, ai, *results])
    assert [(tc["name"], tc["args"]) for tc in retry.tool_calls] == [
        ("checkout", {"item": "a red mug", "amount": 12.5})
    ]
    assert retry.tool_calls[0]["id"] == "call_groq_2_0"

    no_tools = ChatGroq(
        model=MODEL, api_key=SecretStr("dummy"), base_url=groq_server.url, max_retries=0
    )
    plain = await no_tools.ainvoke("hello there")
    assert plain.content == "You asked: hello there"
    assert plain.tool_calls == []


def test_fake_groq_base_url_from_env_and_unknown_path(
    groq_server: FakeGroq, monkeypatch: pytest.MonkeyPatch
) -> None:
    import urllib.error

    monkeypatch.setenv("GROQ_API_BASE", groq_server.url)
    monkeypatch.setenv("GROQ_API_KEY", "from-env")
    llm = ChatGroq(model=MODEL, max_retries=0)
    assert llm.invoke("hi").content == "You asked: hi"
    assert groq_server.auth_headers[-1] == "Bearer from-env"

    with pytest.raises(urllib.error.HTTPError) as excinfo:
        urllib.request.urlopen(f"{groq_server.url}/openai/v1/models", timeout=5)
    assert excinfo.value.code == 404
    assert json.loads(excinfo.value.read())["error"]["code"] == "unknown_url"


def test_plan_reply_mixed_transient_results() -> None:
    body: dict[str, Any] = {
        "tools": [{"type": "function", "function": {"name": "search"}}],
        "messages": [
            {"role": "user", "content": "a; b"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "1",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"query": "a"}'},
                    },
                    {
                        "id": "2",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"query": "b"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "1", "content": "fine"},
            {"role": "tool", "tool_call_id": "2", "content": "503 Service Temporarily Unavailable"},
        ],
    }
    assert plan_reply(body).tool_calls == [("search", {"query": "b"})]
    body["messages"][-1]["content"] = "also fine"
    assert plan_reply(body).content == "Here is what I found: fine"
