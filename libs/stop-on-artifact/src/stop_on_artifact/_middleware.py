"""`StopOnArtifactMiddleware`: the stop decision in `create_agent` (langchain 1.x)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any, NotRequired, cast

from typing_extensions import override

try:
    from langchain.agents import AgentState
    from langchain.agents.middleware import (
        AgentMiddleware,
        ExtendedModelResponse,
        ModelCallResult,
        ModelRequest,
        ModelResponse,
        hook_config,
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
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import TypeAdapter, ValidationError

from stop_on_artifact._artifact import STOPPING_REASONS, STRUCTURED_FIELD, Reason, build, contract
from stop_on_artifact._core import StopCore
from stop_on_artifact._decision import StopDecision, logger
from stop_on_artifact._record import TURN_KEY, Decision, TurnRecord, opens_turn, starts_turn
from stop_on_artifact.messages import require_messages

ToolResult = ToolMessage | Command[Any]
NODE = "stop_on_artifact.before_model"
_HOOKS = ("before_model", "after_model", "after_agent")
_Calls = Generator["ModelRequest[Any] | None", "ModelResponse[Any] | None", Any]


class StopOnArtifactState(AgentState[ResponseT]):
    """`create_agent`'s state with the latest stop decision and the turn's record."""

    stop_decision: NotRequired[Decision]  # several in one step: the parent's own decides next
    stop_turn: NotRequired[Annotated[TurnRecord | None, PrivateStateAttr]]


class MiddlewareOrderError(RuntimeError):
    """Another middleware's `before_model` hook runs after the stop's: it would not see a stop.

    Example:
        Raised at the turn's first model call when the order is wrong:

            >>> from stop_on_artifact import MiddlewareOrderError
            >>> issubclass(MiddlewareOrderError, RuntimeError)
            True
    """


class StopOnArtifactMiddleware(
    StopCore, AgentMiddleware[StopOnArtifactState[ResponseT], ContextT, ResponseT]
):
    """Stop after a tool step when [stop_on_artifact.decide][stop_on_artifact.decide] says so.

    `before_model` decides after each tool step, records `stop_decision` (checkpointed),
    streams it and, on a hard stop, jumps to the end with the settled tools' content. Under
    `polish` one more model call runs, with no tools. It takes
    [StopRouter][stop_on_artifact.StopRouter]'s arguments, and `on_model_call`.

    It goes last among the middleware with a `before_model` hook (a hook after it would never
    see a stopped step): else the turn's first model call raises
    [MiddlewareOrderError][stop_on_artifact.MiddlewareOrderError]. `wrap_tool_call` is on the
    instance's class only when a setting uses it.

    Args:
        **arguments: [StopRouter][stop_on_artifact.StopRouter]'s arguments, with `on_model_call`
            and `subagent_stops`.

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

    if not TYPE_CHECKING:  # a type checker sees StopCore's keyword-only, typed signature

        def __init__(self, **arguments: Any) -> None:
            """Validate and keep the settings (StopCore's); take the tool layer if they use it."""
            super().__init__(**arguments)
            if self.per_run or self.settings.retry_in_place or self.subagent_stops:
                self.__class__ = _ToolLayer

    @property
    @override
    def name(self) -> str:
        """Node-name prefix: the hook's node is `stop_on_artifact.before_model`."""
        return "stop_on_artifact"

    @hook_config(can_jump_to=["end"])
    @override
    def before_model(
        self, state: StopOnArtifactState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Decide about the tool step that just ran, if any."""
        messages = state.get("messages", [])
        require_messages(messages)
        record = state.get(TURN_KEY)
        if starts_turn(messages, record) or opens_turn(messages, record):  # on any message
            if later := _hooks_after(NODE):
                msg = (
                    f"{', '.join(later)} runs after {NODE} and would never see a hard stop's "
                    "step: put StopOnArtifactMiddleware last in create_agent's middleware="
                )
                raise MiddlewareOrderError(msg)
            return self.turn_update(messages, runtime.context, begins=True)
        settings, schema = self.turn_settings(state), _schema(state)
        if schema:  # a declared schema's call is one of max_model_calls
            if self.polishing(state):
                return None  # the strategy retries the structured call: the stop stands
            settings = settings.model_copy(update={"max_model_calls": settings.max_model_calls - 1})
        update, answer = self.decide_step(state, [], settings)
        if answer is not None and not schema:
            return {**update, "jump_to": "end", "messages": [AIMessage(content=answer)]}
        return update  # with a response_format, the model node answers in its schema

    @hook_config(can_jump_to=["end"])
    @override
    async def abefore_model(
        self, state: StopOnArtifactState[ResponseT], runtime: Runtime[ContextT]
    ) -> dict[str, Any] | None:
        """Async twin of `before_model`."""
        return self.before_model(state, runtime)

    @override
    def start_nodes(self) -> int:
        """The stop's `before_model` node begins a turn."""
        return 1

    @override
    def steps(self, state: Mapping[str, Any] | None = None) -> tuple[int, int]:
        """Count this graph's nodes: a round's, and an end's (the structured call included)."""
        nodes = _nodes()
        if not nodes:
            return super().steps(state)
        before, after, end = (sum(n.endswith(f".{h}") for n in nodes) for h in _HOOKS)
        return before + after + 2, end + (after + 1 if state and _schema(state) else 0)

    @override
    def spends_call(self, state: Mapping[str, Any], decision: StopDecision) -> bool:
        """A stop still calls the model for a declared schema, unless its tool answered it."""
        return _schema(state) and _payload(decision, state.get("messages") or []) is None

    def _calls(self, request: ModelRequest[Any]) -> _Calls:
        """Yield each request to send (None: no model call); return what makes the response.

        A hard stop with a declared schema sends one call offered only the schema (none when
        the tool's artifact answered it, or when `max_model_calls=1` leaves none); the polish
        call with a schema is prose, then the structured call.
        """
        state = request.state
        decision = cast("StopDecision | None", state.get("stop_decision"))

        def record(response: ModelResponse[Any] | None) -> ModelResponse[Any]:
            assert response is not None  # a request was sent
            if self.on_model_call is not None:
                self.on_model_call([*state["messages"], *response.result], decision)
            return response

        if not self.polishing(state) or decision is None:
            response = record((yield request))
            turn = cast("TurnRecord | None", state.get(TURN_KEY))
            if turn is None or "schema" in turn:
                return response
            declared = {**turn, "schema": request.response_format is not None}  # turn's 1st call
            return ExtendedModelResponse(response, Command(update={TURN_KEY: declared}))
        schema, settings = request.response_format, self.turn_settings(state)
        if "answer_chars" not in decision:  # the one polish call (prose), then the schema
            prose = record((yield request.override(tools=[], response_format=None)))
            if schema is None:
                return prose
            asked: list[Any] = [*request.messages, *prose.result]
            shaped = record((yield request.override(tools=[], messages=asked)))
            return _structured(decision, prose.result, shaped)
        answer = AIMessage(content=self.answer(decision, state["messages"]))
        if (payload := _payload(decision, state["messages"])) is None:
            if settings.max_model_calls == 1:  # the cap leaves no call for the schema
                return _structured(decision, [answer], None)
            asked = [*request.messages, answer]
            return _structured(
                decision, [answer], record((yield request.override(tools=[], messages=asked)))
            )
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
                model_response=record((yield request)),
                command=Command(update={"stop_decision": again}),
            )
        return ModelResponse(result=[answer], structured_response=value)

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


def _nodes() -> list[str]:
    """Return the running graph's node names in order (its `branch:to:<node>` channels)."""
    try:
        channels = list(get_config()["configurable"]["__pregel_read"].args[1])
    except (RuntimeError, KeyError, AttributeError, IndexError, TypeError):
        return []
    return [channel[10:] for channel in channels if channel.startswith("branch:to:")]


def _hooks_after(node: str) -> list[str]:
    """Return the `before_model` hooks that run after `node` in this create_agent graph."""
    hooks = [name for name in _nodes() if name.endswith(".before_model")]
    return hooks[hooks.index(node) + 1 :] if node in hooks else []
