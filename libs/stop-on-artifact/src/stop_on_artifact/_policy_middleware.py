"""``PolicyMiddleware``: tool policies (refuse, or ask a person) inside ``create_agent``.

::

    agent = create_agent(
        model,
        tools,
        middleware=[
            PolicyMiddleware(policies=[spend_cap]),  # policies first ...
            StopOnArtifactMiddleware(),  # ... then the stop decision
        ],
    )

The order rule: place it BEFORE :class:`~stop_on_artifact._middleware.StopOnArtifactMiddleware`
(and before any middleware that retries or handles tool errors), so its ``wrap_tool_call``
is outermost: a refused call never reaches a retry or a tool, and the refusal is a part
of the step the stop decision reads, never mistaken for a successful short-circuit.

``wrap_model_call`` records the verdict (:func:`stop_on_artifact._policies.screen`) with the
reply, before any pause; ``after_model`` asks (one ``interrupt()`` for the step, from the
RECORD, never screening again; ``create_agent`` runs each tool call as its own task, so only
a hook before tools can pause the step once) and writes the rejected calls' refusals;
``wrap_tool_call`` refuses a refused call, lets an approved, carried or unblocked one run
and marks the approved ones. Needs ``langchain`` 1.x: ``pip install
"stop-on-artifact[langchain]"``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, NotRequired, cast

from typing_extensions import TypedDict, override

try:
    from langchain.agents import AgentState
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain.agents.middleware.types import (
        ContextT,
        ExtendedModelResponse,
        PrivateStateAttr,
        ResponseT,
    )
except ImportError as error:  # langchain missing, or 0.3 (no create_agent)
    msg = (
        "PolicyMiddleware needs langchain 1.x (create_agent): install the extra, "
        "pip install 'stop-on-artifact[langchain]'. A hand-built graph uses "
        "stop_on_artifact._policies.PolicyGate, which needs only langgraph."
    )
    raise ImportError(msg) from error
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from stop_on_artifact._policies import (
    AskHook,
    PolicyGate,
    ToolPolicy,
    answers,
    mark_approved,
    refusal_for,
)

__all__ = ["PolicyMiddleware", "PolicyState"]

ToolResult = ToolMessage | Command[Any]


class PolicyState(AgentState[ResponseT]):
    """``create_agent``'s state with the default ``name="policies"`` records.

    Another ``name`` declares ``<name>_verdict`` and ``<name>_approved`` instead.
    """

    policies_verdict: NotRequired[Annotated[dict[str, Any] | None, PrivateStateAttr]]
    """The verdict on the latest model turn's calls, recorded with the reply."""
    policies_approved: NotRequired[Annotated[list[str], PrivateStateAttr]]
    """``tool_call_id``s approved in ``after_model``, read by ``wrap_tool_call``."""


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

    Example:
        ```python
        from langchain.agents import create_agent

        from stop_on_artifact import StopOnArtifactMiddleware
        from stop_on_artifact._policies import Block, tool_policy
        from stop_on_artifact._policy_middleware import PolicyMiddleware
        from stop_on_artifact.testing import ScriptedChatModel, call_then_answer, forced_tool


        @tool_policy("no_search", tools={"search"})
        def no_search(call, context):
            return Block(refusal="Searching is switched off.", description="Search anyway?")


        agent = create_agent(
            ScriptedChatModel(script=call_then_answer("search")),
            [forced_tool("search", "success")],
            middleware=[PolicyMiddleware(policies=[no_search]), StopOnArtifactMiddleware()],
        )
        result = agent.invoke({"messages": [{"role": "user", "content": "store"}]})
        assert result["stop_decision"]["rule"] == "policy_block"
        assert result["messages"][-1].content == "Searching is switched off."
        ```

    Args:
        policies: The policies, in order; the first that blocks a call decides for it.
        name: The node-name prefix (``<name>.after_model``) and the state keys
            (``<name>_verdict``, ``<name>_approved``); default ``policies``.
        on_ask: Called with an asking policy's name when a step pauses (and on resume).

    Raises:
        PolicyError: Naming the argument, if one has the wrong form.
    """

    state_schema = PolicyState  # type: ignore[assignment]

    def __init__(
        self,
        *,
        policies: Sequence[ToolPolicy],
        name: str = "policies",
        on_ask: AskHook | None = None,
    ) -> None:
        """Check and keep the policies."""
        super().__init__()
        self.gate = PolicyGate(policies=policies, name=name, on_ask=on_ask)
        self.state_schema = _state_schema(self.gate.name)

    @property
    @override
    def name(self) -> str:
        """Node-name prefix: the hook's node is ``<name>.after_model``."""
        return self.gate.name

    def _recorded(
        self, request: ModelRequest[ContextT], response: ModelResponse[ResponseT]
    ) -> ExtendedModelResponse[ResponseT]:
        reply = next((m for m in response.result if isinstance(m, AIMessage)), None)
        calls = reply.tool_calls if reply is not None else []
        verdict = self.gate.screen(calls, request.runtime.context, request.state["messages"])
        command: Command[Any] = Command(update={self.gate.verdict_key: verdict})
        return ExtendedModelResponse(model_response=response, command=command)

    @override
    def wrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], ModelResponse[ResponseT]],
    ) -> ExtendedModelResponse[ResponseT]:
        """Record the verdict on the reply's calls, once, before any tool runs."""
        return self._recorded(request, handler(request))

    @override
    async def awrap_model_call(
        self,
        request: ModelRequest[ContextT],
        handler: Callable[[ModelRequest[ContextT]], Awaitable[ModelResponse[ResponseT]]],
    ) -> ExtendedModelResponse[ResponseT]:
        """Async twin of :meth:`wrap_model_call`."""
        return self._recorded(request, await handler(request))

    @override
    def after_model(
        self, state: PolicyState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Ask about the recorded asked calls; refuse the rejected ones now."""
        values = cast("Mapping[str, Any]", state)
        approved_key = self.gate.approved_key
        messages = values.get("messages") or []
        last = messages[-1] if messages else None
        calls = last.tool_calls if isinstance(last, AIMessage) else []
        verdict = self.gate.verdict(values, calls)
        decisions = answers(verdict, self.gate.on_ask)
        if not decisions:
            return {approved_key: []} if values.get(approved_key) else None
        refusals = [refusal_for(call, verdict, decisions) for call in calls]
        return {
            "messages": [refusal for refusal in refusals if refusal is not None],
            approved_key: [i for i, d in decisions.items() if d["type"] == "approve"],
        }

    @override
    async def aafter_model(
        self, state: PolicyState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Async twin of :meth:`after_model`."""
        return self.after_model(state, runtime)

    def _screen(self, request: ToolCallRequest) -> tuple[ToolMessage | None, dict[str, Any], Any]:
        state = request.state if isinstance(request.state, Mapping) else {}
        context = request.runtime.context if request.runtime is not None else None
        approved = list(state.get(self.gate.approved_key) or [])
        # By call id: the verdict recorded with the reply holds this call, wherever the
        # last message now is (refusals of the step's other calls may follow the reply).
        recorded = state.get(self.gate.verdict_key)
        if isinstance(recorded, Mapping) and request.tool_call["id"] in recorded["screened"]:
            verdict: Any = recorded
        else:  # a call no recorded reply holds (added by another middleware): screen it once
            messages = state.get("messages") or []
            verdict = self.gate.screen([request.tool_call], context, messages)
        decisions: dict[str, Any] = {i: {"type": "approve"} for i in approved}
        return refusal_for(request.tool_call, verdict, decisions), decisions, verdict

    @staticmethod
    def _marked(result: ToolResult, decisions: dict[str, Any], verdict: Any) -> ToolResult:
        if not isinstance(result, ToolMessage):
            return result
        policy_of = verdict["blocked_by"] if verdict is not None else {}
        return mark_approved(result, decisions, policy_of)

    @override
    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        """Return the refusal instead of running a refused call; mark an approved one."""
        refusal, decisions, verdict = self._screen(request)
        if refusal is not None:
            return refusal
        return self._marked(handler(request), decisions, verdict)

    @override
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """Async twin of :meth:`wrap_tool_call`."""
        refusal, decisions, verdict = self._screen(request)
        if refusal is not None:
            return refusal
        return self._marked(await handler(request), decisions, verdict)
