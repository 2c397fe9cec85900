"""The configurations compared side by side, each one entry of :func:`configurations`.

Every configuration is stock ``langchain.agents.create_agent`` with AgentDojo's default
system message, the suite's tools and the replay model; they differ only in what the tools
are (:data:`bench.agentdojo.tools.Kind`, from a mapping) and in the stop middleware:

- ``stock``: every tool plain, no middleware;
- ``return_direct/<mapping>``: the mapping's tools carry ``return_direct=True``;
- ``stop/<mapping>``: the mapping's tools adopted with ``adopt()``, and
  ``StopOnArtifactMiddleware(stop_mode="hard")``; ``+retry`` adds ``retry_in_place=True``;
  ``+reads`` adopts every other tool too, with ``adopt(tool, stops=False)``, so a read's
  timeout is retried in place as well;
- ``stop/when_marked``: every tool ``adopt(tool, stops="when_marked")``: a call stops when the
  model marks it (the argument ``stop_on_artifact.MARK_ARGUMENT``). The replay marks the call
  after which stopping keeps the task's utility: an oracle, so its figures are an upper bound.
  ``stop/when_marked/ends`` gives the argument only to the tools some task ends with (the
  others ``adopt(stops=False)``): fewer schemas carry it, so every call sends fewer tokens.
  ``stop/when_marked/shared`` adopts every tool ``when_marked`` with ``mark="shared"``: no
  argument on any schema, and the agent gets ``stop_on_artifact.mark_tool()``, one small tool
  the replay calls in the same reply as the call it marks (the same oracle). The mark's call
  stays in the trace AgentDojo judges: ``utility()`` reads the answer and the environment, and
  the tasks judged from their calls (``utility_from_traces``) look for their own functions by
  name, so an extra ``mark_final`` changes no verdict.

The middleware gets ``max_model_calls`` and ``max_retries`` above the longest ground truth
(18 calls) and its faults, so neither bound ends a run the replay would finish.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from agentdojo.agent_pipeline.agent_pipeline import load_system_message
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from stop_on_artifact import StopOnArtifactMiddleware, mark_tool

from bench.agentdojo.mappings import ToolMapping
from bench.agentdojo.tools import Kind

MAX_MODEL_CALLS = 50
"""The middleware's cap per request: the library's largest, far above 18 calls plus faults."""
MAX_RETRIES = 10
"""Transient outcomes allowed per request under the middleware."""


@cache
def system_prompt() -> str:
    """Return AgentDojo's default system message, the one its own pipelines send."""
    return str(load_system_message(None))


@dataclass(frozen=True)
class Config:
    """One configuration: what the tools are, and whether the stop middleware runs."""

    name: str
    description: str
    mapping: ToolMapping | None = None
    stopping: Kind = "plain"
    """What the mapping's tools become."""
    others: Kind = "plain"
    """What every other tool becomes."""
    middleware: bool = False
    retry_in_place: bool = False
    marks: bool = False
    """The replay marks the call after which stopping keeps the task's utility (an oracle)."""
    parallel: bool = False
    """The replay issues the calls that do not depend on each other in one step."""

    @property
    def shared_mark(self) -> bool:
        """Whether the agent gets the shared mark tool: some tool is adopted `shared_mark`."""
        return "shared_mark" in (self.stopping, self.others)

    @property
    def upper_bound(self) -> bool:
        """Whether it was fitted to the scored tasks, so its figures are an upper bound.

        True for an oracle (when to stop, which calls go together) and for a mapping found
        from those tasks' ground truth: every mapping but ``team``, chosen without them.
        """
        fitted_mapping = self.mapping is not None and self.mapping.name != "team"
        return self.marks or self.parallel or fitted_mapping

    def kinds(self, suite: str) -> dict[str, Kind]:
        """Return ``{tool: kind}`` for the tools of ``suite`` that are not plain."""
        if self.mapping is None:
            return {}
        return self.mapping.kinds(suite, self.stopping)

    def build(self, model: BaseChatModel, tools: list[BaseTool]) -> Any:
        """Return the compiled agent for one task."""
        middleware: list[AgentMiddleware[Any, Any, Any]] = []
        if self.middleware:
            middleware.append(
                StopOnArtifactMiddleware(
                    stop_mode="hard",
                    retry_in_place=self.retry_in_place,
                    max_retries=MAX_RETRIES,
                    max_model_calls=MAX_MODEL_CALLS,
                )
            )
        tools = [*tools, mark_tool()] if self.shared_mark else tools
        return create_agent(model, tools, system_prompt=system_prompt(), middleware=middleware)


STOCK = Config(name="stock", description="stock create_agent, every tool plain")


def configurations(team: ToolMapping, no_loss: ToolMapping, ends: ToolMapping) -> list[Config]:
    """Return every configuration, stock first; ``ends`` may stop when marked."""
    configs = [STOCK]
    for mapping in (team, no_loss):
        configs.append(
            Config(
                name=f"return_direct/{mapping.name}",
                description=f"create_agent, return_direct=True on the {mapping.name} tools",
                mapping=mapping,
                stopping="return_direct",
            )
        )
        variants = ((False, False), (True, False)) + ((True, True),) * (mapping is no_loss)
        for retry, reads in variants:
            configs.append(
                Config(
                    name=f"stop/{mapping.name}" + "+retry" * retry + "+reads" * reads,
                    description=(
                        f"the stop middleware (hard), the {mapping.name} tools adopted"
                        + ", retry_in_place=True" * retry
                        + ", every other tool adopt(stops=False)" * reads
                    ),
                    mapping=mapping,
                    stopping="stops",
                    others="reads" if reads else "plain",
                    middleware=True,
                    retry_in_place=retry,
                )
            )
    for retry in (False, True):
        configs.append(
            Config(
                name="stop/when_marked" + "+retry" * retry,
                description=(
                    'the stop middleware (hard), every tool adopt(stops="when_marked"); the '
                    "replay marks the call after which stopping keeps the utility (an oracle)"
                    + ", retry_in_place=True"
                    * retry
                ),
                others="when_marked",
                middleware=True,
                retry_in_place=retry,
                marks=True,
            )
        )
    for retry in (False, True):
        configs.append(
            Config(
                name="stop/when_marked/shared" + "+retry" * retry,
                description=(
                    'the stop middleware (hard), every tool adopt(stops="when_marked", '
                    'mark="shared") and the mark tool; the replay calls the mark beside the '
                    "call it marks (the same oracle)" + ", retry_in_place=True" * retry
                ),
                others="shared_mark",
                middleware=True,
                retry_in_place=retry,
                marks=True,
            )
        )
    configs.append(
        Config(
            name=f"stop/when_marked/{ends.name}+retry",
            description=(
                f'the stop middleware (hard), the {ends.name} tools adopt(stops="when_marked"), '
                "every other tool adopt(stops=False); the replay marks as above"
                ", retry_in_place=True"
            ),
            mapping=ends,
            stopping="when_marked",
            others="reads",
            middleware=True,
            retry_in_place=True,
            marks=True,
        )
    )
    configs.append(
        Config(
            name="stock+parallel",
            description="stock create_agent, every tool plain; the replay issues the calls that "
            "do not depend on each other in one step",
            parallel=True,
        )
    )
    for retry in (False, True):
        configs.append(
            Config(
                name="stop/when_marked+parallel" + "+retry" * retry,
                description=(
                    'the stop middleware (hard), every tool adopt(stops="when_marked"); the '
                    "replay issues the calls that do not depend on each other in one step and "
                    "marks every call of the last step when stopping there keeps the utility "
                    "(an oracle)" + ", retry_in_place=True" * retry
                ),
                others="when_marked",
                middleware=True,
                retry_in_place=retry,
                marks=True,
                parallel=True,
            )
        )
    return configs
