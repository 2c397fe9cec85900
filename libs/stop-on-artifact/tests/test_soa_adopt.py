"""adopt(): an ordinary tool's text and exceptions become outcomes, on both kinds of agent."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from langchain_core.tools import BaseTool, StructuredTool, ToolException, tool
from soa_graphs import assert_answer_is_settled_content, build, stop_decision, user
from stop_on_artifact import adopt, completed
from stop_on_artifact._adopt import FATAL_CONTENT, TRANSIENT_CONTENT
from stop_on_artifact.testing import (
    ScriptedChatModel,
    assert_model_calls,
    assert_stopped,
    call_then_answer,
)

SECRET = "https://api.example.com/?key=sk-live-123"


class Unavailable(Exception):
    pass


class NotFound(Exception):
    pass


def find(query: str) -> str:
    """Look an order up."""
    if query.startswith("timeout"):
        raise Unavailable(SECRET)
    if query.startswith("missing"):
        raise NotFound(SECRET)
    if query.startswith("bug"):
        raise RuntimeError(SECRET)
    return f"# Order {query}\n\nShipped."


lookup = tool(find)
lookup.name = "lookup"


@tool("lookup")
async def alookup(query: str) -> str:
    """Look an order up."""
    return await asyncio.to_thread(find, query)


class Lookup(BaseTool):
    name: str = "lookup"
    description: str = "Look an order up."

    def _run(self, query: str) -> str:
        return find(query)

    async def _arun(self, query: str) -> str:
        return self._run(query)


TOOLS: dict[str, Any] = {"function": lookup, "coroutine": alookup, "BaseTool": Lookup()}


def adopted(which: str) -> BaseTool:
    return adopt(TOOLS[which], transient=Unavailable, fatal=(NotFound,))


def call(text: str) -> dict[str, Any]:
    return {"type": "tool_call", "name": "lookup", "args": {"query": text}, "id": "c1"}


@pytest.mark.parametrize("which", list(TOOLS))
def test_outcomes_sync_and_async(which: str) -> None:
    tool_ = adopted(which)
    assert tool_.name == "lookup" and tool_.description == "Look an order up."
    assert list(tool_.tool_call_schema.model_json_schema()["properties"]) == ["query"]  # type: ignore[union-attr]
    paths: list[Any] = [lambda c: asyncio.run(tool_.ainvoke(c))]
    if which != "coroutine":  # an async-only @tool has no sync path, adopted or not
        paths.append(tool_.invoke)
    for invoke in paths:
        done = invoke(call("A-17"))
        assert (done.content, done.artifact) == ("# Order A-17\n\nShipped.", completed())
        later = invoke(call("timeout"))
        assert later.content == TRANSIENT_CONTENT
        assert later.artifact == {"stop": False, "reason": "transient", "error": "Unavailable"}
        gone = invoke(call("missing"))
        assert gone.content == FATAL_CONTENT and gone.artifact["reason"] == "fatal"
        for message in (later, gone):
            assert SECRET not in str(message.content) + str(message.artifact)
        with pytest.raises(RuntimeError):
            invoke(call("bug"))


def test_an_unlisted_exception_raises_as_before(kind: str) -> None:
    model = ScriptedChatModel(script=call_then_answer("lookup"))
    graph = build(kind, model, [adopt(lookup, transient=Unavailable)])
    if kind == "router":  # its ToolNode handles tool errors: an error message, rule tool_error
        result = graph.invoke(user("bug"))
        assert stop_decision(result)["rule"] == "tool_error"
        assert result["messages"][2].status == "error"
        assert_model_calls(result, 2)
    else:  # create_agent without ToolErrorMiddleware: the run fails, as the tool alone would
        with pytest.raises(RuntimeError):
            graph.invoke(user("bug"))


@pytest.mark.parametrize(
    ("text", "rule", "calls"), [("A-17", "completed", 1), ("missing", "fatal", 1)]
)
def test_adopted_tools_stop_per_call_in_an_agent(
    kind: str, text: str, rule: str, calls: int
) -> None:
    model = ScriptedChatModel(script=call_then_answer("lookup"))
    result = build(kind, model, [adopted("function")]).invoke(user(text))
    assert_stopped(result, rule)
    assert_model_calls(result, calls)
    assert_answer_is_settled_content(result)


def test_a_transient_failure_goes_back_to_the_model(kind: str) -> None:
    model = ScriptedChatModel(script=call_then_answer("lookup"))
    result = build(kind, model, [adopted("BaseTool")]).invoke(user("timeout"))
    assert_stopped(result, "retry_budget")  # it kept timing out: 2 retries, then the budget
    assert_model_calls(result, 3)


def test_the_wrapped_tools_error_handling_still_applies() -> None:
    @tool
    def flaky(query: str) -> str:
        """Fail with a ToolException."""
        raise ToolException("handled failure")

    flaky.handle_tool_error = True
    message = adopt(flaky, transient=Unavailable).invoke(call("x") | {"name": "flaky"})
    assert message.status == "error" and message.content == "handled failure"


def test_adopt_refuses_what_it_cannot_wrap() -> None:
    @tool(response_format="content_and_artifact")
    def already(query: str) -> tuple[str, dict[str, object]]:
        """Already returns an artifact."""
        return query, completed()

    with pytest.raises(TypeError, match="already returns"):
        adopt(already)
    with pytest.raises(TypeError, match="Exception subclasses"):
        adopt(lookup, transient=(KeyboardInterrupt,))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="both"):
        adopt(lookup, transient=NotFound, fatal=NotFound)


def test_a_plain_function_is_made_a_tool_first() -> None:
    def shout(text: str) -> str:
        """Shout the text."""
        return text.upper()

    message = adopt(shout).invoke(
        {"type": "tool_call", "name": "shout", "args": {"text": "hi"}, "id": "c"}
    )
    assert (message.content, message.artifact) == ("HI", completed())


def _run(tool_: BaseTool, args: dict[str, Any]) -> tuple[Any, Any]:
    message = tool_.invoke({"type": "tool_call", "name": tool_.name, "args": args, "id": "c1"})
    return message.content, message.artifact


def test_stops_false_is_a_plain_result_and_failures_keep_their_artifacts() -> None:
    read = adopt(lookup, stops=False, transient=Unavailable, fatal=NotFound)
    assert _run(read, {"query": "a1"}) == ("# Order a1\n\nShipped.", None)
    assert _run(read, {"query": "timeout"})[1]["reason"] == "transient"
    assert _run(read, {"query": "missing"})[1]["reason"] == "fatal"


def test_when_marked_stops_only_on_a_call_the_model_marked() -> None:
    from stop_on_artifact import MARK_ARGUMENT

    marked = adopt(lookup, stops="when_marked", transient=Unavailable)
    properties = marked.tool_call_schema.model_json_schema()["properties"]  # type: ignore[union-attr]
    assert list(properties) == ["query", MARK_ARGUMENT]
    assert _run(marked, {"query": "a1"})[1] is None
    assert _run(marked, {"query": "a1", MARK_ARGUMENT: False})[1] is None
    assert _run(marked, {"query": "a1", MARK_ARGUMENT: True})[1] == completed()
    assert _run(marked, {"query": "timeout", MARK_ARGUMENT: True})[1]["reason"] == "transient"


def test_when_marked_refuses_a_tool_that_has_the_argument_and_a_bad_stops() -> None:
    @tool
    def ship(final: bool) -> str:
        """Ship."""
        return "ok"

    with pytest.raises(ValueError, match="'final'"):
        adopt(ship, stops="when_marked")
    with pytest.raises(ValueError, match="stops must be"):
        adopt(lookup, stops="sometimes")  # type: ignore[arg-type]


def mcp_tool(client_module: str, error: Exception) -> BaseTool:
    """A tool shaped like an MCP client's (its coroutine's module names the client)."""

    async def call_tool(query: str) -> tuple[str, None]:
        raise error

    call_tool.__module__ = client_module
    return StructuredTool.from_function(
        coroutine=call_tool,
        name="search",
        description="Search.",
        response_format="content_and_artifact",
    )


def mcp_error(name: str, code: int) -> Exception:
    """An exception named like mcp's (``McpError`` in 1.x, ``MCPError`` in 2.x) with its code."""
    error_type: type[Exception] = type(name, (Exception,), {})
    error = error_type(SECRET)
    error.error = SimpleNamespace(code=code)  # type: ignore[attr-defined]
    return error


@pytest.mark.parametrize(
    ("client", "error_name", "code"),
    [
        ("langchain_mcp_adapters.tools", "McpError", 408),  # mcp 1.x: HTTP's 408
        ("langchain.mcp.tools", "MCPError", -32001),  # mcp 2.x (fastmcp 4): REQUEST_TIMEOUT
    ],
)
async def test_an_mcp_request_timeout_is_transient_on_mcp_1_and_2(
    client: str, error_name: str, code: int
) -> None:
    adopted = adopt(mcp_tool(client, mcp_error(error_name, code)))
    call = {"name": "search", "args": {"query": "q"}, "id": "c1", "type": "tool_call"}
    message = await adopted.ainvoke(call)
    assert message.artifact == {"stop": False, "reason": "transient", "error": "TimeoutError"}
    assert message.content == TRANSIENT_CONTENT


async def test_another_mcp_error_is_raised_as_before() -> None:
    adopted = adopt(mcp_tool("langchain.mcp.tools", mcp_error("MCPError", -32602)))
    with pytest.raises(Exception, match="sk-live") as raised:
        await adopted.ainvoke({"query": "q"})
    assert type(raised.value).__name__ == "MCPError"
