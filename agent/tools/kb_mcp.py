"""The knowledge base's ``search`` loaded from its MCP server, in place of the in-process tool.

:func:`mcp_search` loads the server's tool through ``langchain-mcp-adapters`` (streamable
HTTP): a ``content_and_artifact`` tool whose artifact holds the server's structured result,
the artifact contract, which the library reads as it reads any tool's. Two things make it
the in-process tool's twin:

- the model sees the same name, description and ``query`` argument (the server's
  simulation knobs ``outcome`` and ``attempt`` are dropped from the schema it reads);
- an interceptor draws each call's outcome from the run's context, messages and call id
  (:func:`agent.tools.outcomes.draw_outcome`, as the in-process tool does) and sends it
  with the call, so ``force_outcome`` and the seed decide alike on either.

``AGENT_KB_MCP_URL`` (for example ``http://127.0.0.1:2027/mcp``, what ``make kb-mcp``
prints) makes :data:`agent.tools.TOOLS` use it; the graphs load it when they are built, so
the server must answer by then.
"""

from __future__ import annotations

import asyncio
import copy
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from langchain_core.tools import BaseTool
from langchain_mcp_adapters.interceptors import MCPToolCallRequest
from langchain_mcp_adapters.sessions import StreamableHttpConnection
from langchain_mcp_adapters.tools import load_mcp_tools
from langgraph.prebuilt import ToolRuntime
from mcp.types import CallToolResult

from agent.context import run_context
from agent.tools.kb_server import NAME
from agent.tools.outcomes import draw_outcome

URL_VARIABLE = "AGENT_KB_MCP_URL"
"""The variable naming the knowledge base's MCP server; unset, the graphs search in-process."""

HIDDEN_ARGUMENTS = ("outcome", "attempt")
"""The server's simulation knobs, which the interceptor sets and the model never sees."""


class KnowledgeBaseMCPError(RuntimeError):
    """The knowledge base's MCP server did not answer, or serves no ``search`` tool."""


async def simulate(request: MCPToolCallRequest, handler: Any) -> CallToolResult:
    """Send a ``search`` call with the outcome the run draws for it.

    Args:
        request: The call, with the tool runtime the tool node injected.
        handler: The next step of the adapter's chain (the call itself).

    Returns:
        The server's result.

    Raises:
        RuntimeError: If the call runs outside a graph's tool node (no runtime to draw from).
    """
    runtime = request.runtime
    if not isinstance(runtime, ToolRuntime) or runtime.tool_call_id is None:
        raise RuntimeError("search runs inside a graph's tool node, which injects its runtime")
    query = str(request.args.get("query", ""))
    messages = runtime.state["messages"]
    outcome, attempt = draw_outcome(run_context(), messages, runtime.tool_call_id, query)
    args = {**request.args, "outcome": outcome, "attempt": attempt}
    result: CallToolResult = await handler(request.override(args=args))
    return result


def _model_facing(tool: BaseTool) -> BaseTool:
    """Return a copy of the loaded tool whose schema shows the model ``query`` only."""
    schema: dict[str, Any] = copy.deepcopy(tool.args_schema)  # type: ignore[arg-type]
    for name in HIDDEN_ARGUMENTS:
        schema.get("properties", {}).pop(name, None)
    schema["required"] = [n for n in schema.get("required", []) if n not in HIDDEN_ARGUMENTS]
    return tool.model_copy(update={"args_schema": schema})


async def _load(url: str) -> list[BaseTool]:
    connection: StreamableHttpConnection = {"transport": "streamable_http", "url": url}
    return await load_mcp_tools(
        None, connection=connection, tool_interceptors=[simulate], server_name=NAME
    )


def mcp_search(url: str) -> BaseTool:
    """Load the knowledge base's ``search`` from its MCP server.

    It lists the server's tools once, in a thread of its own (a graph module may be imported
    inside a running event loop); each call then opens a session of its own.

    Args:
        url: The server's streamable HTTP endpoint.

    Returns:
        The tool, named ``search`` like the in-process one.

    Raises:
        KnowledgeBaseMCPError: If the server does not answer or serves no ``search``.
    """
    with ThreadPoolExecutor(1) as pool:
        try:
            tools = pool.submit(asyncio.run, _load(url)).result()
        except Exception as exc:  # the adapter raises whatever its transport raised
            raise KnowledgeBaseMCPError(
                f"{URL_VARIABLE}: no MCP server answered at {url} ({type(exc).__name__}); "
                "start one with make kb-mcp"
            ) from None
    found = [tool for tool in tools if tool.name == "search"]
    if not found:
        raise KnowledgeBaseMCPError(f"{URL_VARIABLE}: the MCP server at {url} has no search tool")
    return _model_facing(found[0])
