"""`PolicyMiddleware`: tool policies in `create_agent`, placed BEFORE the stop middleware.

Its `wrap_tool_call` is then outermost: a refused call never reaches a retry or a tool.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, NotRequired, cast

from typing_extensions import TypedDict

try:
    from langchain.agents import AgentState
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain.agents.middleware.types import (
        ContextT,
        ExtendedModelResponse,
        PrivateStateAttr,
        ResponseT,
    )
except ImportError as error:  # langchain missing, or older than 1.3.15 (no create_agent, or
    # no ExtendedModelResponse): name the version found, and the one needed
    from importlib.metadata import distributions

    have = [d.version for d in distributions(name="langchain") if error.name != "langchain"]
    found = f"langchain {have[0]} is installed; " if have else ""
    msg = (
        f"{found}"
        "PolicyMiddleware needs langchain>=1.3.15 (create_agent): install the extra, pip install "
        "-U 'stop-on-artifact[langchain]'. A hand-built graph uses PolicyGate "
        "(from stop_on_artifact import PolicyGate), which needs only langgraph."
    )
    raise ImportError(msg) from error
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from stop_on_artifact._gate import PolicyGate
from stop_on_artifact._policies import (
    AskHook,
    ToolPolicy,
    answers,
    mark_approved,
    refusal_for,
    screen,
)

__all__ = ["PolicyMiddleware", "PolicyState"]

ToolResult = ToolMessage | Command[Any]
Marker = Callable[[ToolResult], ToolResult]


class PolicyState(AgentState[ResponseT]):
    """`create_agent`'s state with the records of the default `name="policies"`."""

    policies_verdict: NotRequired[Annotated[dict[str, Any] | None, PrivateStateAttr]]
    policies_approved: NotRequired[Annotated[list[str], PrivateStateAttr]]  # in after_model


def _state_schema(name: str) -> type[Any]:
    if name == "policies":
        return PolicyState
    fields = {
        f"{name}_verdict": NotRequired[Annotated[dict[str, Any] | None, PrivateStateAttr]],
        f"{name}_approved": NotRequired[Annotated[list[str], PrivateStateAttr]],
    }
    return cast("type[Any]", TypedDict(f"PolicyState_{name}", fields))  # type: ignore[operator]


class PolicyMiddleware(AgentMiddleware[PolicyState[ResponseT], ContextT, ResponseT]):
    """Refuse a blocked tool call, or ask a person first, before the tool runs.

    Takes [PolicyGate][stop_on_artifact.PolicyGate]'s arguments; `name` also names the node.

    Args:
        policies: The [tool_policy][stop_on_artifact.tool_policy] list, distinct names, in order.
        name: Names the state's keys and the node (`<name>.after_model`), an identifier.
        on_ask: A function of the policy's name run when a policy asks, or None.

    Example:
        It goes before the stop in `middleware=`:

            >>> from stop_on_artifact import PolicyMiddleware, tool_policy
            >>> PolicyMiddleware(policies=[tool_policy("audit")(lambda call, context: None)]).name
            'policies'
    """

    state_schema = PolicyState  # type: ignore[assignment]

    def __init__(
        self, *, policies: Sequence[ToolPolicy], name: str = "policies", on_ask: AskHook = None
    ) -> None:
        """Check and keep the policies."""
        super().__init__()
        self.gate = PolicyGate(policies=policies, name=name, on_ask=on_ask)
        self.state_schema = _state_schema(self.gate.name)

    @property
    def name(self) -> str:
        """Node-name prefix: the hook's node is `<name>.after_model`."""
        return self.gate.name

    def _recorded(
        self, request: ModelRequest[ContextT], response: ModelResponse[ResponseT]
    ) -> ExtendedModelResponse[ResponseT]:
        reply = next((m for m in response.result if isinstance(m, AIMessage)), AIMessage(""))
        update = self.gate.record(reply, request.state["messages"], request.runtime.context)
        command: Command[Any] = Command(update=update)
        return ExtendedModelResponse(model_response=response, command=command)

    def wrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], ModelResponse[ResponseT]],
    ) -> ExtendedModelResponse[ResponseT]:
        """Record the verdict on the reply's calls, once, before any tool runs."""
        return self._recorded(request, handler(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], Awaitable[ModelResponse[ResponseT]]],
    ) -> ExtendedModelResponse[ResponseT]:
        """Async twin of `wrap_model_call`."""
        return self._recorded(request, await handler(request))

    def after_model(
        self, state: PolicyState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Ask about the recorded asked calls; refuse the rejected ones now."""
        values, key = cast("Mapping[str, Any]", state), self.gate.approved_key
        last = (values.get("messages") or [None])[-1]
        calls = last.tool_calls if isinstance(last, AIMessage) else []
        verdict = self.gate.verdict(values, calls)
        if not (decisions := answers(verdict, self.gate.on_ask)):
            return {key: []} if values.get(key) else None
        refusals = [refusal_for(call, verdict, decisions) for call in calls]
        approved = [i for i, d in decisions.items() if d["type"] == "approve"]
        return {"messages": [r for r in refusals if r is not None], key: approved}

    async def aafter_model(
        self, state: PolicyState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Async twin of `after_model`."""
        return self.after_model(state, runtime)

    def _screen(self, request: ToolCallRequest) -> tuple[ToolMessage | None, Marker]:
        state = request.state if isinstance(request.state, Mapping) else {}
        context = request.runtime.context if request.runtime is not None else None
        verdict: Any = state.get(self.gate.verdict_key)  # by call id: refusals may follow the reply
        if not isinstance(verdict, Mapping) or request.tool_call["id"] not in verdict["screened"]:
            # a call no recorded reply holds (added by another middleware): screen it once
            messages = state.get("messages") or []
            verdict = screen([request.tool_call], self.gate.policies, context, messages)
        approved = state.get(self.gate.approved_key) or []
        decisions: dict[str, Any] = {i: {"type": "approve"} for i in approved}
        policy_of = verdict["blocked_by"] if verdict is not None else {}

        def mark(result: ToolResult) -> ToolResult:
            return cast("ToolResult", mark_approved(result, decisions, policy_of))

        return refusal_for(request.tool_call, verdict, decisions), mark

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        """Return the refusal instead of running a refused call; mark an approved one."""
        refusal, mark = self._screen(request)
        return refusal if refusal is not None else mark(handler(request))

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolResult]]
    ) -> ToolResult:
        """Async twin of `wrap_tool_call`."""
        refusal, mark = self._screen(request)
        return refusal if refusal is not None else mark(await handler(request))
