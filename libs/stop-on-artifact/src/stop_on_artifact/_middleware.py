"""`StopOnArtifactMiddleware`: the stop decision in `create_agent` (langchain 1.x)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from inspect import Signature, signature
from typing import Annotated, Any, NotRequired, Self, cast

from typing_extensions import override

try:
    from langchain.agents import AgentState
    from langchain.agents.middleware import (
        AgentMiddleware,
        ExtendedModelResponse,
        ModelCallResult,
        ModelRequest,
        ModelResponse,
    )
    from langchain.agents.middleware.types import ContextT, PrivateStateAttr, ResponseT
except ImportError as error:  # langchain missing, or older than 1.3.15 (no create_agent, or
    # no ExtendedModelResponse): name the version found, and the one needed
    from importlib.metadata import distributions

    have = [d.version for d in distributions(name="langchain") if error.name != "langchain"]
    found = f"langchain {have[0]} is installed; " if have else ""
    msg = (
        f"{found}"
        "StopOnArtifactMiddleware needs langchain>=1.3.15 (create_agent): install the extra, "
        "pip install -U 'stop-on-artifact[langchain]'. The router (StopRouter) needs only "
        "langgraph."
    )
    raise ImportError(msg) from error
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from stop_on_artifact._artifact import STOPPING_REASONS, Reason, build
from stop_on_artifact._core import DecisionHook, Engine, internals_changed, pregel, steps_left
from stop_on_artifact._decision import (
    MODEL_CALL_LIMIT_MESSAGE,
    NOT_DONE_MESSAGE,
    RETRY_BUDGET_MESSAGE,
    StopDecision,
    decide_turn,
    logger,
)
from stop_on_artifact._record import TURN_KEY, Decision, TurnRecord, opens_turn, starts_turn
from stop_on_artifact._settings import (
    ParallelPolicy,
    SettingsFromContext,
    StopMode,
    StopSettings,
    settings_from_arguments,
)
from stop_on_artifact._structured import Calls, declares_schema, schema_payload, stopped
from stop_on_artifact._turn import scan_turn, tool_calls
from stop_on_artifact.messages import require_messages

ToolResult = ToolMessage | Command[Any]
_HOOKS = ("before_model", "after_model", "after_agent")
ModelCallHook = Callable[[Sequence[BaseMessage], "StopDecision | None"], None]
"""Called after each model call with the messages so far and the turn's latest decision."""
DOOR = "StopOnArtifactMiddleware"
NO_RECORD = (
    "it writes one at the turn's first model call, so a tool step no model call of this "
    "agent issued (a state update, a parent graph's reply) has none: start the turn with "
    "a user's message, or let the agent's model issue the calls"
)


class StopOnArtifactState(AgentState[ResponseT]):
    """`create_agent`'s state with the latest stop decision and the turn's record."""

    stop_decision: NotRequired[Decision]  # several in one step: the parent's own decides next
    stop_turn: NotRequired[Annotated[TurnRecord | None, PrivateStateAttr]]


class StopOnArtifactMiddleware(
    AgentMiddleware[StopOnArtifactState[ResponseT], ContextT, ResponseT]
):
    """Stop after a tool step when [stop_on_artifact.decide][stop_on_artifact.decide] says so.

    The decision is made in the model call's layer (`wrap_model_call`), after every other
    middleware's `before_model` hook: it records `stop_decision` (checkpointed), streams it and,
    on a hard stop, answers with the settled tools' content instead of calling the model, so
    the loop ends as a model reply without tool calls would. Under `polish` the model is
    called once more, with no tools. The graph gets no node of its own: a run takes the steps
    stock `create_agent` takes, and a `wrap_tool_call` layer only where a setting uses one
    (`retry_in_place`, `subagent_stops`, settings a run's context may set).

    The flat settings arguments (`stop_mode`, `parallel_policy`, `max_retries`,
    `max_model_calls`, `retry_in_place`, `initial_delay`, `backoff_factor`,
    `max_delay`) are [StopSettings][stop_on_artifact.StopSettings]' fields, described there.

    Args:
        settings: All of the flat settings at once, instead of the flat arguments.
        from_context: Let the context of the run that starts a turn set them.
        settings_from_context: Your own `(context) -> StopSettings | None` instead.
        on_decision: Called with every decision, after it is streamed.
        on_model_call: Called after every model call with the messages so far and the turn's
            latest decision.
        subagent_stops: A subagent's stop, handed back by deepagents' `task` tool, is read as
            that call's artifact (see the README).
        retry_budget_message: A hard stop's closing line when the retry budget is spent.
        model_call_limit_message: Its closing line when the model-call cap ends the run.
        not_done_message: A part left undone unless its tool wrote `not_done` ({where},
            {tool} and {why} are filled in).

    Raises:
        TypeError: If `settings` is not a [StopSettings][stop_on_artifact.StopSettings] or comes
            with a flat argument, or both `from_context` and `settings_from_context`.
        ValueError: If an argument is outside its allowed values (named, never quoted).

    Example:
        A scripted model calls the tool once; its completed result answers:

            >>> from langchain.agents import create_agent
            >>> from stop_on_artifact import StopOnArtifactMiddleware
            >>> from stop_on_artifact import testing
            >>> model = testing.ScriptedChatModel(script=testing.call_then_answer())
            >>> stop = StopOnArtifactMiddleware()
            >>> agent = create_agent(model, [testing.forced_tool()], middleware=[stop])
            >>> result = agent.invoke({"messages": [{"role": "user", "content": "refunds"}]})
            >>> result["stop_decision"]["rule"], result["messages"][-1].content.splitlines()[-1]
            ('completed', 'The page about refunds.')
    """

    state_schema = StopOnArtifactState  # type: ignore[assignment]

    def __new__(cls, *args: Any, **arguments: Any) -> Self:
        """Return the class whose layers the settings use: `wrap_tool_call` only if one does."""
        settings = arguments.get("settings")
        layered = arguments.get("retry_in_place") or getattr(settings, "retry_in_place", False)
        layered = layered or arguments.get("subagent_stops") or arguments.get("from_context")
        layered = layered or arguments.get("settings_from_context") is not None
        chosen = _WithToolLayer if layered and cls is StopOnArtifactMiddleware else cls
        return cast("Self", super().__new__(chosen))

    def __init__(
        self,
        *,
        stop_mode: StopMode | None = None,
        parallel_policy: ParallelPolicy | None = None,
        max_retries: int | None = None,
        max_model_calls: int | None = None,
        retry_in_place: bool | None = None,
        initial_delay: float | None = None,
        backoff_factor: float | None = None,
        max_delay: float | None = None,
        settings: StopSettings | None = None,
        from_context: bool = False,
        settings_from_context: SettingsFromContext | None = None,
        on_decision: DecisionHook | None = None,
        on_model_call: ModelCallHook | None = None,
        subagent_stops: bool = False,
        retry_budget_message: str = RETRY_BUDGET_MESSAGE,
        model_call_limit_message: str = MODEL_CALL_LIMIT_MESSAGE,
        not_done_message: str = NOT_DONE_MESSAGE,
    ) -> None:
        """Validate and keep the settings and texts."""
        super().__init__()
        flat = {"stop_mode": stop_mode, "parallel_policy": parallel_policy,
                "max_retries": max_retries, "max_model_calls": max_model_calls,
                "retry_in_place": retry_in_place, "initial_delay": initial_delay,
                "backoff_factor": backoff_factor, "max_delay": max_delay}  # fmt: skip
        texts = {"retry_budget_message": retry_budget_message, "not_done_message": not_done_message,
                 "model_call_limit_message": model_call_limit_message}  # fmt: skip
        chosen = settings_from_arguments(DOOR, settings, flat)
        self._engine = Engine(DOOR, NO_RECORD, chosen, texts, from_context, settings_from_context,
                              on_decision)  # fmt: skip
        self.on_model_call = on_model_call
        self.subagent_stops = bool(subagent_stops)
        self.settings: StopSettings = chosen  # a turn's, unless a run's context sets its own

    @property
    @override
    def name(self) -> str:
        """The middleware's name in `create_agent` (one per agent)."""
        return "stop_on_artifact"

    def _calls(self, request: ModelRequest[Any]) -> Calls:
        """Yield each request to send (None: no model call); return what makes the response.

        At a turn's start the turn is recorded; after a tool step the step is decided here,
        before the model is called: a hard stop answers without it, a polish call is sent
        without tools, and a continue sends the request (when the step limit leaves no room
        for another round, a reply that calls tools ends the turn on `step_limit` instead).
        """
        state = request.state
        messages = state.get("messages") or []
        require_messages(messages)

        def sent(response: ModelResponse[Any] | None, decision: Any) -> ModelResponse[Any]:
            assert response is not None  # a request was sent
            if self.on_model_call is not None:
                self.on_model_call([*messages, *response.result], decision)
            return response

        record = cast("TurnRecord | None", state.get(TURN_KEY))
        if starts_turn(messages, record) or opens_turn(messages, record):
            update = self._engine.turn_update(messages, begins=True, need=sum(_steps()) + 1)
            update[TURN_KEY]["schema"] = request.response_format is not None
            return ExtendedModelResponse(sent((yield request), None), Command(update=update))
        decision = cast("StopDecision | None", state.get("stop_decision"))
        engine, schema = self._engine, declares_schema(state)
        settings = engine.turn_settings(state, current=True)
        if schema and decision is not None and engine.polishing(state):  # the strategy retries
            return (yield from stopped(self._engine, request, decision, sent))
        if schema:  # a declared schema's call is one of max_model_calls
            settings = settings.model_copy(update={"max_model_calls": settings.max_model_calls - 1})
        turn, response, room = scan_turn(messages, record), None, True
        left = steps_left()  # the graph's nodes are counted only under a step limit
        if left is not None and left <= sum(_steps()):  # no room: ask, then see
            if decide_turn(turn, settings)["action"] == "continue":
                response = sent((yield request), decision)
                room = not any(tool_calls(m) for m in response.result)
        spends = (lambda d: schema_payload(d, messages) is None) if schema else None
        update, answer = engine.decide_step(state, [], settings, room=room, turn=turn,
                                            spends_call=spends)  # fmt: skip
        decision = update["stop_decision"]
        if decision["action"] == "continue":
            response = response or sent((yield request), decision)
            return ExtendedModelResponse(response, Command(update=update))
        if answer is not None and not schema:
            result = ModelResponse(result=[AIMessage(content=answer)])
            return ExtendedModelResponse(result, Command(update={**update, **_uncounted(state)}))
        done = yield from stopped(self._engine, request, decision, sent, answer)
        if isinstance(done, ExtendedModelResponse):  # its own decision (a missing schema) wins
            command = done.command or Command()
            merged = {**update, **cast("dict[str, Any]", command.update or {})}
            return ExtendedModelResponse(done.model_response, Command(update=merged))
        return ExtendedModelResponse(cast("ModelResponse[Any]", done), Command(update=update))

    @override
    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelCallResult[Any]:
        """Answer a hard stop in the declared schema; unbind the polish call's tools; record."""
        calls = self._calls(request)
        try:
            sent = next(calls)
            while True:
                sent = calls.send(handler(sent) if sent is not None else None)
        except StopIteration as done:
            return cast("ModelCallResult[Any]", done.value)

    @override
    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult[Any]:
        """Async twin of `wrap_model_call`."""
        calls = self._calls(request)
        try:
            sent = next(calls)
            while True:
                sent = calls.send(await handler(sent) if sent is not None else None)
        except StopIteration as done:
            return cast("ModelCallResult[Any]", done.value)


class _WithToolLayer(StopOnArtifactMiddleware[Any, Any]):
    """With `wrap_tool_call`: in-place retries and subagents' stops."""

    def _handed_back(self, result: ToolResult) -> ToolResult:
        """Read a subagent's hard stop (deepagents' `task` result) as its call's artifact.

        Its text must be the stop's answer (deepagents hands back an earlier message when
        that is blank): else the result stays plain. A spent budget is a part not done.
        """
        update = result.update if isinstance(result, Command) else None
        if not self.subagent_stops or not isinstance(update, dict) or "stop_decision" not in update:
            return result
        update, messages = dict(update), list(update.get("messages") or [])
        decision = update.pop("stop_decision")
        if len(messages) != 1 or not isinstance(messages[0], ToolMessage):
            return result
        hard = decision and decision["action"] == "stop" and "answer_chars" in decision
        if hard and messages[0].artifact is None:
            handed = messages[0].text
            if len(handed) != decision["answer_chars"]:
                logger.warning("a subagent's stop came back without its answer: read as plain")
                return replace(cast("Command[Any]", result), update=update)
            fields: dict[str, Any] = {"subagent_saved_calls": _saved(decision)}
            rule = decision["rule"]
            if rule not in STOPPING_REASONS:  # a spent budget: not done, and why
                fields["not_done"] = f"**Not done: the subagent's part**: it ended on `{rule}`."
            reason: Reason = rule if rule in STOPPING_REASONS else "transient"
            update["messages"] = [
                messages[0].model_copy(update={"artifact": build(reason, fields)})
            ]
        return replace(cast("Command[Any]", result), update=update)

    @override
    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        """Retry a transient call in place first (`retry_in_place`); read a subagent's stop."""
        state = request.state if isinstance(request.state, dict) else {}
        return self._handed_back(self._engine.run_tool(lambda: handler(request), state))

    @override
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """Async twin of `wrap_tool_call`."""
        state = request.state if isinstance(request.state, dict) else {}
        return self._handed_back(await self._engine.arun_tool(lambda: handler(request), state))


def _steps() -> tuple[int, int]:
    """Count this graph's nodes: a round's, and those after the model call that answers."""
    if not (nodes := _nodes()):
        return 2, 1  # model and tools; then the answering model call
    before, after, end = (sum(n.endswith(f".{h}") for n in nodes) for h in _HOOKS)
    return before + after + 2, after + end


def _saved(decision: StopDecision) -> int:
    """Return the model calls a stop saved, its subagents' included."""
    saved: Mapping[str, Any] = decision.get("saved") or {}
    return int(saved.get("model_calls", 0)) + int(saved.get("subagent_model_calls", 0))


def _uncounted(state: Mapping[str, Any]) -> dict[str, int]:
    """Return what keeps `ModelCallLimitMiddleware` from counting a stop's answer as a call.

    Its `after_model` hook counts every reply of the model node; a hard stop's is no call.
    """
    if "ModelCallLimitMiddleware.after_model" not in _nodes():
        return {}
    keys = ("thread_model_call_count", "run_model_call_count")
    return {key: int(state.get(key) or 0) - 1 for key in keys}


def _nodes() -> list[str]:
    """Return the running graph's node names in order (its `branch:to:<node>` channels).

    Raises:
        RuntimeError: If the running langgraph keeps its channels another way.
    """
    if (read := pregel("__pregel_read")) is None:
        return []  # outside a graph's step
    try:
        channels = list(read.args[1])
    except (AttributeError, IndexError, TypeError) as error:
        raise internals_changed("the graph's channels", error) from error
    return [channel[10:] for channel in channels if channel.startswith("branch:to:")]


_INIT = signature(StopOnArtifactMiddleware.__init__)
StopOnArtifactMiddleware.__signature__ = _INIT.replace(  # type: ignore[attr-defined]
    parameters=list(_INIT.parameters.values())[1:], return_annotation=Signature.empty
)  # the constructor's own (__new__ only picks the class)
