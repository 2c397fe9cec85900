"""`StopOnArtifactMiddleware`: the stop decision in `create_agent` (langchain 1.x)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import replace
from typing import Annotated, Any, NotRequired, cast

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
except ImportError as error:  # langchain missing, or 0.3 (no create_agent)
    msg = (
        "StopOnArtifactMiddleware needs langchain 1.x (create_agent): install the extra, "
        "pip install 'stop-on-artifact[langchain]'. The router (StopRouter) needs only "
        "langgraph."
    )
    raise ImportError(msg) from error
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command
from pydantic import TypeAdapter, ValidationError

from stop_on_artifact._artifact import STOPPING_REASONS, STRUCTURED_FIELD, Reason, build, contract
from stop_on_artifact._core import StopCore, internals_changed, pregel, steps_left
from stop_on_artifact._decision import StopDecision, decide_turn, logger
from stop_on_artifact._record import TURN_KEY, Decision, TurnRecord, opens_turn, starts_turn
from stop_on_artifact._turn import scan_turn, tool_calls
from stop_on_artifact.messages import require_messages

ToolResult = ToolMessage | Command[Any]
_HOOKS = ("before_model", "after_model", "after_agent")
_Calls = Generator["ModelRequest[Any] | None", "ModelResponse[Any] | None", Any]


class StopOnArtifactState(AgentState[ResponseT]):
    """`create_agent`'s state with the latest stop decision and the turn's record."""

    stop_decision: NotRequired[Decision]  # several in one step: the parent's own decides next
    stop_turn: NotRequired[Annotated[TurnRecord | None, PrivateStateAttr]]


class StopOnArtifactMiddleware(
    StopCore, AgentMiddleware[StopOnArtifactState[ResponseT], ContextT, ResponseT]
):
    """Stop after a tool step when [stop_on_artifact.decide][stop_on_artifact.decide] says so.

    The decision is made in the model call's layer (`wrap_model_call`), after every other
    middleware's `before_model` hook: it records `stop_decision` (checkpointed), streams it and,
    on a hard stop, answers with the settled tools' content instead of calling the model, so
    the loop ends as a model reply without tool calls would. Under `polish` the model is
    called once more, with no tools. The graph gets no node of its own: a run takes the steps
    stock `create_agent` takes. It takes [StopRouter][stop_on_artifact.StopRouter]'s
    arguments, and `on_model_call`; `wrap_tool_call` is on the instance's class only when a
    setting uses it.

    Its keyword-only arguments are [StopRouter][stop_on_artifact.StopRouter]'s (described
    there), with `on_model_call` (called after every model call) and `subagent_stops` (a
    subagent's stop, handed back by deepagents' `task`, read as that call's artifact).

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
    calls_model_hook = True
    door = "StopOnArtifactMiddleware"
    no_record = (
        "it writes one at the turn's first model call, so a tool step no model call of this "
        "agent issued (a state update, a parent graph's reply) has none: start the turn with "
        "a user's message, or let the agent's model issue the calls"
    )

    @property
    @override
    def name(self) -> str:
        """The middleware's name in `create_agent` (one per agent)."""
        return "stop_on_artifact"

    @override
    def _start_nodes(self) -> int:
        """The turn's first model call is where a stop would answer: one more node."""
        return 1

    @override
    def _steps(self, state: Mapping[str, Any] | None = None) -> tuple[int, int]:
        """Count this graph's nodes: a round's, and those after the model call that answers."""
        nodes = _nodes()
        if not nodes:
            return super()._steps(state)
        before, after, end = (sum(n.endswith(f".{h}") for n in nodes) for h in _HOOKS)
        return before + after + 2, after + end

    @override
    def _spends_call(self, state: Mapping[str, Any], decision: StopDecision) -> bool:
        """A stop still calls the model for a declared schema, unless its tool answered it."""
        return _schema(state) and _payload(decision, state.get("messages") or []) is None

    def _calls(self, request: ModelRequest[Any]) -> _Calls:
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
            update = self.turn_update(messages, begins=True)  # its first model call: a schema?
            update[TURN_KEY]["schema"] = request.response_format is not None
            return ExtendedModelResponse(sent((yield request), None), Command(update=update))
        decision = cast("StopDecision | None", state.get("stop_decision"))
        settings, schema = self.turn_settings(state, current=True), _schema(state)
        if schema and decision is not None and self.polishing(state):  # the strategy retries
            return (yield from self._stopped(request, decision, sent))
        if schema:  # a declared schema's call is one of max_model_calls
            settings = settings.model_copy(update={"max_model_calls": settings.max_model_calls - 1})
        turn, response, room = scan_turn(messages, record), None, True
        left = steps_left()  # the graph's nodes are counted only under a step limit
        if left is not None and left <= sum(self._steps(state)):  # no room: ask, then see
            if decide_turn(turn, settings)["action"] == "continue":
                response = sent((yield request), decision)
                room = not any(tool_calls(m) for m in response.result)
        update, answer = self.decide_step(state, [], settings, room=room, turn=turn)
        decision = update["stop_decision"]
        if decision["action"] == "continue":
            response = response or sent((yield request), decision)
            return ExtendedModelResponse(response, Command(update=update))
        if answer is not None and not schema:
            result = ModelResponse(result=[AIMessage(content=answer)])
            return ExtendedModelResponse(result, Command(update={**update, **_uncounted(state)}))
        done = yield from self._stopped(request, decision, sent, answer)
        if isinstance(done, ExtendedModelResponse):  # its own decision (a missing schema) wins
            command = done.command or Command()
            merged = {**update, **cast("dict[str, Any]", command.update or {})}
            return ExtendedModelResponse(done.model_response, Command(update=merged))
        return ExtendedModelResponse(cast("ModelResponse[Any]", done), Command(update=update))

    def _stopped(
        self,
        request: ModelRequest[Any],
        decision: StopDecision,
        sent: Callable[[ModelResponse[Any] | None, Any], ModelResponse[Any]],
        answer: str | list[str | dict[str, Any]] | None = None,
    ) -> _Calls:
        """Answer a stop: the polish call, or a hard stop's answer in the declared schema.

        A hard stop with a declared schema sends one call offered only the schema (none when
        the tool's artifact answered it, or when `max_model_calls=1` leaves none); the polish
        call with a schema is prose, then the structured call.
        """
        state, schema = request.state, request.response_format
        messages = state["messages"]
        if "answer_chars" not in decision:  # the one polish call (prose), then the schema
            prose = sent((yield request.override(tools=[], response_format=None)), decision)
            if schema is None:
                return prose
            asked: list[Any] = [*request.messages, *prose.result]
            shaped = sent((yield request.override(tools=[], messages=asked)), decision)
            return _structured(decision, prose.result, shaped)
        reply = AIMessage(content=answer if answer is not None else self.answer(decision, messages))
        if (payload := _payload(decision, messages)) is None:
            if self.turn_settings(state).max_model_calls == 1:  # no call left for the schema
                return _structured(decision, [reply], None)
            asked = [*request.messages, reply]
            shaped = sent((yield request.override(tools=[], messages=asked)), decision)
            return _structured(decision, [reply], shaped)
        shape: Any = getattr(schema, "schema", schema)
        try:
            value = (
                payload if isinstance(shape, dict) else TypeAdapter(shape).validate_python(payload)
            )
        except ValidationError as error:
            fields = {".".join(map(str, e["loc"])) or "(root)" for e in error.errors()}
            logger.warning(
                "structured_response of tool %s does not match response_format (fields: %s): "
                "invalid_artifact, back to the model", decision["tool"], ", ".join(sorted(fields))
            )  # fmt: skip
            again = {k: v for k, v in decision.items() if k != "saved"}
            again.update(action="continue", rule="invalid_artifact", answer_from=[], unsettled=[])
            return ExtendedModelResponse(
                model_response=sent((yield request), again),
                command=Command(update={"stop_decision": again}),
            )
        return ModelResponse(result=[reply], structured_response=value)

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


class _ToolLayer(StopOnArtifactMiddleware[Any, Any]):
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
        return self._handed_back(self.run_tool(lambda: handler(request), state))

    @override
    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """Async twin of `wrap_tool_call`."""
        state = request.state if isinstance(request.state, dict) else {}
        return self._handed_back(await self.arun_tool(lambda: handler(request), state))


def _saved(decision: StopDecision) -> int:
    """Return the model calls a stop saved, its subagents' included."""
    saved: Mapping[str, Any] = decision.get("saved") or {}
    return int(saved.get("model_calls", 0)) + int(saved.get("subagent_model_calls", 0))


def _structured(
    decision: StopDecision, result: list[BaseMessage], shaped: ModelResponse[Any] | None
) -> ModelCallResult[Any]:
    """Return `result` with the schema's answer; without one, None and why, in the decision.

    A reply the strategy retries (ToolStrategy's `handle_errors`) goes back as it came.
    """
    if shaped is not None and shaped.structured_response is not None:
        return ModelResponse(result=result, structured_response=shaped.structured_response)
    if shaped is not None and any(isinstance(m, ToolMessage) for m in shaped.result):
        return shaped
    logger.warning("no structured_response: the model did not answer in the declared schema")
    missing = {**decision, "structured": "missing"}
    return ExtendedModelResponse(
        model_response=ModelResponse(result=result, structured_response=None),
        command=Command(update={"stop_decision": missing}),
    )


def _schema(state: Mapping[str, Any]) -> bool:
    """Return whether this agent declares a response_format: its turn's record says."""
    record: Mapping[str, Any] = state.get(TURN_KEY) or {}
    return bool(record.get("schema", "structured_response" in state))  # an older record


def _payload(decision: StopDecision, messages: Sequence[BaseMessage]) -> Any:
    """Return the structured answer the one settled part's artifact holds, else None."""
    if len(decision["answer_from"]) != 1 or decision["unsettled"]:
        return None
    for message in reversed(messages):
        if isinstance(message, ToolMessage) and message.tool_call_id == decision["answer_from"][0]:
            artifact = contract(message.artifact)
            return artifact.get(STRUCTURED_FIELD) if isinstance(artifact, dict) else None
    return None


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


StopOnArtifactMiddleware.tool_layer = _ToolLayer
