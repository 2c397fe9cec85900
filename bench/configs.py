"""The configurations the benchmark compares, each a compiled graph plus a stop mode.

- ``legacy`` and ``middleware`` (the project's two graphs) under each ``stop_mode``;
- ``create_agent``: stock ``langchain.agents.create_agent`` with the same tools and no
  stop, policy or error middleware;
- ``return_direct``: the prebuilt ``create_react_agent`` (deprecated, still shipped) with a
  copy of ``search`` marked ``return_direct=True``, the static-flag way to stop.

The overhead measurement adds ``stop_routing``: stock ``create_agent`` plus only the stop
middleware, so its difference from ``create_agent`` is the stop routing alone; and, to take
that difference apart, stock ``create_agent`` plus one no-op layer each: a ``before_model``
hook that can jump to the end (the extra node the stop hook adds before every model call),
a ``wrap_model_call`` layer, and a ``wrap_tool_call`` layer.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    hook_config,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from stop_on_artifact import StopOnArtifactMiddleware

from agent.context import Context
from agent.graphs.legacy import build_legacy
from agent.graphs.middleware import build_middleware
from agent.models import OfflineChatModel
from agent.tools import TOOLS, checkout, search

StopMode = Literal["hard", "polish", "never"]  # StopSettings.stop_mode
STOP_MODES: tuple[StopMode, ...] = get_args(StopMode)


@dataclass(frozen=True)
class Config:
    """One configuration: a graph, the stop mode its runs get, and how to read it."""

    name: str
    graph_id: str
    """``legacy``, ``middleware``, or the baseline's name."""
    stop_mode: StopMode | None
    """Passed in the run context; None for baselines, which ignore it."""
    description: str
    graph: Any
    extra: dict[str, Any] = field(default_factory=dict)
    """More run context for this configuration (``retry_in_place``, for example)."""

    @property
    def verbatim(self) -> bool:
        """Whether a correct stopped run must answer with the tool's content verbatim."""
        return self.stop_mode == "hard"

    def context(self, query_context: dict[str, Any]) -> dict[str, Any]:
        """Return the run context for a query under this configuration."""
        if self.stop_mode is None:
            return dict(query_context)
        return {**query_context, "stop_mode": self.stop_mode, **self.extra}


def return_direct_search() -> BaseTool:
    """Return a copy of ``search`` with ``return_direct=True``; the project's stays unset."""
    return search.model_copy(update={"return_direct": True})


def build_create_agent(
    tools: Sequence[BaseTool] = TOOLS,
    *,
    model: BaseChatModel | None = None,
    middleware: Sequence[AgentMiddleware[Any, Any]] = (),
) -> Any:
    """Build stock ``create_agent`` with the offline model and no middleware.

    ``context_schema=Context`` lets the tools read ``force_outcome`` from the run context.
    """
    return create_agent(
        model or OfflineChatModel(),
        list(tools),
        middleware=list(middleware),
        context_schema=Context,
    )


def build_stop_routing(tools: Sequence[BaseTool] = TOOLS, stop_mode: StopMode = "never") -> Any:
    """Build stock ``create_agent`` plus only ``StopOnArtifactMiddleware(stop_mode=...)``.

    Configured as a stranger would, in the constructor: the middleware then builds only its
    ``wrap_model_call`` layer (no node, no ``wrap_tool_call``), which is what is timed.
    """
    return build_create_agent(tools, middleware=[StopOnArtifactMiddleware(stop_mode=stop_mode)])


class NoOpHook(AgentMiddleware[AgentState[Any], Any]):
    """A ``before_model`` hook that may jump to the end and never does: one node."""

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        """Do nothing."""
        del state, runtime

    @hook_config(can_jump_to=["end"])
    async def abefore_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        """Do nothing."""
        del state, runtime


class NoOpModelWrap(AgentMiddleware[AgentState[Any], Any]):
    """A ``wrap_model_call`` layer that only passes the call on."""

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse]
    ) -> ModelResponse:
        """Pass the call on."""
        return handler(request)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """Pass the call on."""
        return await handler(request)


class NoOpToolWrap(AgentMiddleware[AgentState[Any], Any]):
    """A ``wrap_tool_call`` layer that only passes the call on."""

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[..., Any]) -> Any:
        """Pass the call on."""
        return handler(request)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[..., Awaitable[Any]]
    ) -> Any:
        """Pass the call on."""
        return await handler(request)


def build_return_direct(model: BaseChatModel | None = None) -> Any:
    """Build the prebuilt ReAct agent with ``search`` as a static ``return_direct`` tool."""
    from langgraph.prebuilt import create_react_agent

    with warnings.catch_warnings():
        # Deprecated since langgraph 1.0 in favour of create_agent; it is the baseline here.
        warnings.simplefilter("ignore")
        return create_react_agent(
            model or OfflineChatModel(), [return_direct_search(), checkout], context_schema=Context
        )


def configurations(model: BaseChatModel | None = None) -> list[Config]:
    """Return every configuration of the main comparison, in report order.

    Args:
        model: The baselines' model; the offline model by default. The project's graphs
            load theirs per run (see :func:`bench.latency.serving`).
    """
    configs: list[Config] = []
    for graph_id, builder in (("legacy", build_legacy), ("middleware", build_middleware)):
        graph = builder()
        for mode in STOP_MODES:
            configs.append(
                Config(
                    name=f"{graph_id}/{mode}",
                    graph_id=graph_id,
                    stop_mode=mode,
                    description=f"the {graph_id} graph, stop_mode={mode}",
                    graph=graph,
                )
            )
    for graph_id, builder in (("legacy", build_legacy), ("middleware", build_middleware)):
        configs.append(
            Config(
                name=f"{graph_id}/hard+in_place",
                graph_id=graph_id,
                stop_mode="hard",
                description=f"the {graph_id} graph, stop_mode=hard, retry_in_place",
                graph=builder(),
                extra={"retry_in_place": True},
            )
        )
    configs.append(
        Config(
            name="create_agent",
            graph_id="create_agent",
            stop_mode=None,
            description="stock create_agent, same tools, no stop/policy middleware",
            graph=build_create_agent(model=model),
        )
    )
    configs.append(
        Config(
            name="return_direct",
            graph_id="return_direct",
            stop_mode=None,
            description="prebuilt create_react_agent, search has return_direct=True",
            graph=build_return_direct(model),
        )
    )
    return configs


def overhead_variants() -> list[Config]:
    """Return the variants timed per tool step; all run ``stop_mode=never`` paths.

    Under ``never`` a stop-capable graph takes exactly the stock loop's path (same model
    calls, same tool steps) while still deciding after every step, so the time difference
    is the routing, not fewer calls.
    """
    return [
        Config("create_agent", "create_agent", None, "stock create_agent", build_create_agent()),
        Config(
            "stop_routing",
            "stop_routing",
            "never",
            "create_agent + StopOnArtifactMiddleware only",
            build_stop_routing(),
        ),
        Config(
            "middleware",
            "middleware",
            "never",
            "the middleware graph: model, spend-cap, tool-error and stop middleware",
            build_middleware(),
        ),
        Config("legacy", "legacy", "never", "the hand-built legacy graph", build_legacy()),
        Config(
            "noop_hook",
            "create_agent",
            None,
            "create_agent + a no-op before_model hook with can_jump_to",
            build_create_agent(middleware=[NoOpHook()]),
        ),
        Config(
            "noop_model_wrap",
            "create_agent",
            None,
            "create_agent + a no-op wrap_model_call layer",
            build_create_agent(middleware=[NoOpModelWrap()]),
        ),
        Config(
            "noop_tool_wrap",
            "create_agent",
            None,
            "create_agent + a no-op wrap_tool_call layer",
            build_create_agent(middleware=[NoOpToolWrap()]),
        ),
    ]
