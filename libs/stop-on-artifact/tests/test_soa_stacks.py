"""The stop middleware beside every langchain built-in middleware that runs offline.

Issue 40, item 3. Each test builds ``create_agent`` (or ``create_deep_agent``) with one other
middleware and ``StopOnArtifactMiddleware``, runs one turn with ``invoke`` and with
``ainvoke``, and shows: a completed call still ends the turn with the tool's text and no
further model call; the other middleware still does its job; nothing crashes; no part is
dropped or named "Not done" when every contract call settled. PII, summarization and the
model-call limit also run in both orders: the other middleware before the stop middleware
(``last``, where its docstring puts it) and after it (``first``).

Covered (langchain 1.5.2): Summarization, PII (input, output, tool results; redact, mask,
hash, block), HumanInTheLoop, ModelCallLimit, ToolCallLimit, ToolRetry, ToolError,
ModelRetry, ModelFallback, ModelRefusal, ContextEditing, TodoList, LLMToolSelector,
LLMToolEmulator, AutoMode and ModelRouter (with an offline decision model), file search, the
shell tool; and deepagents' stack. Not here: ProviderToolSearch, which needs a provider's
server-side tool search (with no deferred tool it passes the request through).

The agent's model is a :class:`Booker` script (book, retry what failed, else answer) that
records what each call saw; the booking tool is a :class:`Desk` whose outcomes are set per
call and counted, so a summary that removes the turn's start cannot shift them.
"""

# ruff: noqa: E402 (the imports after the skip need langchain 1.x)
from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

# langchain's built-in middleware is langchain 1.x's (the [langchain] extra); on the langgraph
# 0.6.6 floor the middleware's own ImportError is checked by the other files (conftest.kind).
pytest.importorskip("langchain.agents.middleware", reason="langchain 1.x's middleware")
try:  # the built-ins this file stacks with: langchain 1.5 added the last of them
    from langchain.agents.middleware import AutoModeMiddleware, ModelRouterMiddleware  # noqa: F401
    from langchain_core.decisions import BaseDecisionModel  # noqa: F401
except ImportError as missing:  # the [langchain] floor: the library runs, these do not exist
    pytest.skip(f"stacks need langchain 1.5's built-ins: {missing}", allow_module_level=True)

from langchain.agents import create_agent
from langchain.agents.middleware import (
    AutoModeMiddleware,
    ClearToolUsesEdit,
    ContextEditingMiddleware,
    FilesystemFileSearchMiddleware,
    HostExecutionPolicy,
    HumanInTheLoopMiddleware,
    LLMToolEmulator,
    LLMToolSelectorMiddleware,
    ModelCallLimitMiddleware,
    ModelChoice,
    ModelFallbackMiddleware,
    ModelRefusalMiddleware,
    ModelRetryMiddleware,
    ModelRouterMiddleware,
    PIIDetectionError,
    PIIMiddleware,
    ShellToolMiddleware,
    SummarizationMiddleware,
    TodoListMiddleware,
    ToolCallLimitMiddleware,
    ToolCallRequest,
    ToolErrorMiddleware,
    ToolRetryMiddleware,
)
from langchain_core.decisions import (
    Answer,
    BaseDecisionModel,
    Choice,
    ChoiceAnswer,
    ClassifierResponse,
    NoulAnswer,
    Question,
    State,
)
from langchain_core.exceptions import ModelRefusalError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, tool
from langgraph.checkpoint.memory import InMemorySaver
from soa_graphs import ANSWERED, assert_answer_is_settled_content, retry_line
from stop_on_artifact import StopOnArtifactMiddleware, completed, transient
from stop_on_artifact._turn import message_text
from stop_on_artifact.testing import (
    ScriptedChatModel,
    approve,
    assert_model_calls,
    assert_stopped,
    pending_approval,
    tool_call,
)

Mode = Literal["sync", "async"]
Order = Literal["last", "first"]
"""Where ``StopOnArtifactMiddleware`` goes: after the other middleware, or before it."""
MODES: list[Mode] = ["sync", "async"]
ORDERS: list[Order] = ["last", "first"]
EMAIL = "ana@example.com"
LIMIT_NOTICE = "Tool call limit exceeded"
CLEARED = "[cleared by context editing]"


def booked(query: str) -> str:
    """The booking tool's completed content: Markdown a person reads."""
    return f"## Booked\n\n{query}: confirmed, see you there."


@dataclass
class Desk:
    """The ``book`` contract tool: its ``i``-th call gets ``outcomes[i]``, the last repeating."""

    outcomes: Sequence[Literal["completed", "transient", "raise"]] = ("completed",)
    calls: list[str] = field(default_factory=list)

    def tool(self) -> BaseTool:
        def book(query: str) -> tuple[str, dict[str, Any]]:
            outcome = self.outcomes[min(len(self.calls), len(self.outcomes) - 1)]
            self.calls.append(query)
            if outcome == "raise":
                raise ConnectionError("the booking service reset the connection")
            if outcome == "transient":
                return "The booking service timed out; trying again may work.", transient()
            return booked(query), completed()

        return StructuredTool.from_function(
            book,
            name="book",
            description="Book what the user asks for.",
            response_format="content_and_artifact",
        )


@tool
def get_weather(city: str) -> str:
    """Return today's weather in a city (a plain read tool: no artifact)."""
    return f"Sunny in {city}, 21 degrees."


@tool
def cancel(query: str) -> str:
    """Cancel a booking."""
    return f"Cancelled {query}."


def call_of(messages: Sequence[BaseMessage], call_id: str) -> ToolCall | None:
    """Return the tool call a result answers, from the AIMessage that issued it."""
    calls = (c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls)
    return next((c for c in calls if c["id"] == call_id), None)


def question(messages: Sequence[BaseMessage]) -> str:
    """Return the user's latest message (a summary written by middleware is not one)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            if message.additional_kwargs.get("lc_source") != "summarization":
                return message_text(message)
    return "the booking"


def settled(result: ToolMessage) -> bool:
    """Return whether a result is a completed contract result."""
    artifact = result.artifact
    return isinstance(artifact, dict) and artifact.get("reason") == "completed"


@dataclass
class Booker:
    """The agent's scripted model: call ``first`` (if any), then ``book``; retry, else answer.

    It retries ``book`` with the same arguments after any result but a completed one (a
    transient, an error, a result cleared by context editing), unless a limit told it not
    to; ``fail_first`` calls raise before any reply; with ``refuse`` it replies with a
    refusal block. ``seen`` and ``bound`` keep what each call saw: its messages and the
    names of its tools.
    """

    first: tuple[str, dict[str, Any]] | None = None
    fail_first: int = 0
    refuse: bool = False
    seen: list[list[BaseMessage]] = field(default_factory=list)
    bound: list[list[str]] = field(default_factory=list)

    def __call__(
        self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]
    ) -> AIMessage:
        self.seen.append(list(messages))
        self.bound.append([t["function"]["name"] for t in tools if "function" in t])
        if len(self.seen) <= self.fail_first:
            raise ConnectionError("the model provider is down")
        if self.refuse:
            return AIMessage([{"type": "refusal", "refusal": "I will not book that."}])
        last, call_id = messages[-1], f"call_{len(self.seen)}"
        if not tools:
            return AIMessage(ANSWERED)
        if isinstance(last, HumanMessage):
            name, args = self.first or ("book", {"query": message_text(last)})
            return AIMessage("", tool_calls=[tool_call(name, args, call_id)])
        if isinstance(last, ToolMessage):
            answered = call_of(messages, last.tool_call_id)
            called = answered["name"] if answered else last.name
            args = answered["args"] if answered else {"query": question(messages)}
            if self.first is not None and called == self.first[0]:
                args = {"query": question(messages)}
                return AIMessage("", tool_calls=[tool_call("book", args, call_id)])
            if called == "book" and not settled(last) and LIMIT_NOTICE not in message_text(last):
                return AIMessage("", tool_calls=[tool_call("book", args, call_id)])
        return AIMessage(ANSWERED)


def run(agent: Any, inputs: Any, mode: Mode, config: dict[str, Any] | None = None) -> Any:
    """Run one turn with ``invoke`` or ``ainvoke``."""
    if mode == "sync":
        return agent.invoke(inputs, config)
    return asyncio.run(agent.ainvoke(inputs, config))


def user(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def thread(name: str = "t") -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def answer_of(result: dict[str, Any]) -> str:
    return message_text(result["messages"][-1])


def assert_ends_with_the_tools_text(result: dict[str, Any], text: str, model_calls: int) -> None:
    """A completed call ended the turn: its text alone, ``model_calls`` replies, no "Not done"."""
    assert_stopped(result, "completed")
    assert_answer_is_settled_content(result)
    assert answer_of(result) == text
    assert "Not done" not in answer_of(result)
    assert_model_calls(result, model_calls)


def agent_with(
    others: Sequence[Any],
    tools: Sequence[BaseTool],
    model: BaseChatModel,
    order: Order = "last",
    **kwargs: Any,
) -> Any:
    stop = StopOnArtifactMiddleware()
    middleware = [*others, stop] if order == "last" else [stop, *others]
    return create_agent(model, list(tools), middleware=middleware, **kwargs)


# ---------------------------------------------------------------------------------------
# The table: one other middleware each, the stop middleware last, invoke and ainvoke.


@dataclass
class Stack:
    """One case: the other middleware, the model's script, the desk and what to expect."""

    others: list[Any]
    booker: Booker
    desk: Desk = field(default_factory=Desk)
    tools: list[BaseTool] = field(default_factory=list)
    model: BaseChatModel | None = None
    model_calls: int = 1
    """Replies of the agent's model this turn (``assert_model_calls``)."""

    def agent(self) -> Any:
        model = self.model or ScriptedChatModel(script=self.booker)
        tools = [self.desk.tool(), *self.tools]
        return agent_with(self.others, tools, model, checkpointer=InMemorySaver())


@dataclass
class Turn:
    """What a check reads: the turn's result, the thread's state and how to run another."""

    stack: Stack
    agent: Any
    result: dict[str, Any]
    values: dict[str, Any]
    mode: Mode

    def again(self, text: str) -> dict[str, Any]:
        result: dict[str, Any] = run(self.agent, user(text), self.mode, thread())
        return result


Check = Callable[[Turn], None]
Case = Callable[[Path], tuple[Stack, Check]]
"""A case builds its stack in a fresh directory (for the middleware that touch files)."""


def model_call_limit(tmp: Path) -> tuple[Stack, Check]:
    def check(turn: Turn) -> None:
        assert turn.values["thread_model_call_count"] == 1
        second = turn.again("a table for three")
        assert_ends_with_the_tools_text(second, booked("a table for three"), 1)
        assert turn.agent.get_state(thread()).values["thread_model_call_count"] == 2

    return Stack([ModelCallLimitMiddleware(thread_limit=3)], Booker()), check


def tool_call_limit(tmp: Path) -> tuple[Stack, Check]:
    def check(turn: Turn) -> None:
        assert turn.values["thread_tool_call_count"] == {"book": 1}
        second = turn.again("a table for three")  # blocked: back to the model, which answers
        blocked = [m for m in second["messages"] if isinstance(m, ToolMessage)][-1]
        assert LIMIT_NOTICE in message_text(blocked) and blocked.status == "error"
        assert answer_of(second) == ANSWERED and "Not done" not in answer_of(second)
        assert len(turn.stack.desk.calls) == 1

    limit = ToolCallLimitMiddleware(tool_name="book", thread_limit=1)
    return Stack([limit], Booker()), check


def tool_retry(tmp: Path) -> tuple[Stack, Check]:
    def check(turn: Turn) -> None:
        assert len(turn.stack.desk.calls) == 2  # raised once, retried in the same step

    retry = ToolRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)
    return Stack([retry], Booker(), Desk(["raise", "completed"])), check


def on_error(exc: Exception, request: ToolCallRequest) -> str:
    return f"`{request.tool_call['name']}` failed ({type(exc).__name__}); try again."


def tool_error(tmp: Path) -> tuple[Stack, Check]:
    def check(turn: Turn) -> None:
        errors = [m for m in turn.result["messages"] if isinstance(m, ToolMessage)][:1]
        assert [(m.status, message_text(m)) for m in errors] == [
            ("error", "`book` failed (ConnectionError); try again.")
        ]
        assert len(turn.stack.desk.calls) == 2

    # The error went back to the model, which called again: two replies.
    desk = Desk(["raise", "completed"])
    return Stack([ToolErrorMiddleware(on_error)], Booker(), desk, model_calls=2), check


def model_retry(tmp: Path) -> tuple[Stack, Check]:
    def check(turn: Turn) -> None:
        assert len(turn.stack.booker.seen) == 2  # the first attempt raised

    retry = ModelRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)
    return Stack([retry], Booker(fail_first=1)), check


def model_fallback(tmp: Path) -> tuple[Stack, Check]:
    primary = Booker(fail_first=99)
    fallback = Booker()

    def check(turn: Turn) -> None:
        assert len(primary.seen) == 1 and len(fallback.seen) == 1
        reply = next(m for m in turn.result["messages"] if isinstance(m, AIMessage))
        assert reply.response_metadata["model_name"] == "fallback"

    backup = ScriptedChatModel(script=fallback, model_name="fallback")
    stack = Stack([ModelFallbackMiddleware(backup)], fallback)
    stack.model = ScriptedChatModel(script=primary, model_name="primary")
    return stack, check


def context_editing(tmp: Path) -> tuple[Stack, Check]:
    def check(turn: Turn) -> None:
        retried = turn.stack.booker.seen[1]  # the model saw the transient result cleared
        assert [message_text(m) for m in retried if isinstance(m, ToolMessage)] == [CLEARED]
        kept = [m for m in turn.result["messages"] if isinstance(m, ToolMessage)]
        assert kept[0].artifact is not None  # only the model's view was edited

    edit = ClearToolUsesEdit(trigger=0, keep=0, placeholder=CLEARED)
    desk = Desk(["transient", "completed"])
    stack = Stack([ContextEditingMiddleware(edits=[edit])], Booker(), desk, model_calls=2)
    return stack, check


PLAN = {"todos": [{"content": "Book the table", "status": "in_progress"}]}


def todo_list(tmp: Path) -> tuple[Stack, Check]:
    def check(turn: Turn) -> None:
        assert turn.result["todos"] == PLAN["todos"]
        assert "write_todos" in turn.stack.booker.bound[0]

    planner = Booker(first=("write_todos", PLAN))
    return Stack([TodoListMiddleware()], planner, model_calls=2), check  # plan, then book


def selector(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
    """The selector's model: a structured selection of ``book`` (with_structured_output)."""
    schema = tools[0]["function"]["name"]
    return AIMessage("", tool_calls=[tool_call(schema, {"tools": ["book"]}, "select")])


def tool_selector(tmp: Path) -> tuple[Stack, Check]:
    chose = ScriptedChatModel(script=selector, model_name="selector")

    def check(turn: Turn) -> None:
        assert turn.stack.booker.bound == [["book"]]  # get_weather and cancel were left out

    middleware = LLMToolSelectorMiddleware(model=chose, max_tools=1)
    return Stack([middleware], Booker(), tools=[get_weather, cancel]), check


class Decisions(BaseDecisionModel):
    """A decision model offline: a ``Noul`` answers ``noul``, a ``Choice`` picks ``choice``."""

    model: str = "scripted-decisions"
    noul: float = 0.0
    choice: str = ""
    asked: list[str] = []
    """The questions' types, one entry per question asked."""

    @property
    def _provider(self) -> str:
        return "scripted"

    def _classify(self, state: State, questions: dict[str, Question]) -> ClassifierResponse:
        answers: dict[str, Answer] = {}
        for key, asked in questions.items():
            self.asked.append(asked.type)
            if isinstance(asked, Choice):
                odds = {label: float(label == self.choice) for label in asked.criteria}
                answers[key] = ChoiceAnswer(
                    type="choice", choice=self.choice, probabilities=odds, confidence=1.0
                )
            else:
                answers[key] = NoulAnswer(type="noul", noul=self.noul)
        return ClassifierResponse(model=self.model, answers=answers)


def model_refusal(tmp: Path) -> tuple[Stack, Check]:
    def check(turn: Turn) -> None:
        turn.stack.booker.refuse = True  # the next reply is a refusal: an error, by design
        with pytest.raises(ModelRefusalError, match="I will not book that"):
            turn.again("a table for three")

    return Stack([ModelRefusalMiddleware()], Booker()), check


def auto_mode(tmp: Path) -> tuple[Stack, Check]:
    classifier = Decisions(noul=0.1)

    def check(turn: Turn) -> None:
        assert classifier.asked == ["noul"]  # the book call was classified, found low-risk

    return Stack([AutoModeMiddleware(tools=["book"], classifier=classifier)], Booker()), check


def model_router(tmp: Path) -> tuple[Stack, Check]:
    fast = Booker()
    choices = {
        "fast": ModelChoice(model=ScriptedChatModel(script=fast, model_name="fast"), criteria="a"),
        "deep": ModelChoice(model=ScriptedChatModel(script=Booker()), criteria="b"),
    }
    router = ModelRouterMiddleware(
        choices=choices, instructions="Pick a model.", classifier=Decisions(choice="fast")
    )

    def check(turn: Turn) -> None:
        assert turn.values["model_route"].choice == "fast"
        reply = next(m for m in turn.result["messages"] if isinstance(m, AIMessage))
        assert reply.response_metadata["model_name"] == "fast" and len(fast.seen) == 1

    stack = Stack([router], fast)
    stack.model = ScriptedChatModel(script=Booker(fail_first=99), model_name="unrouted")
    return stack, check


def emulated(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
    return AIMessage("Emulated: light rain in Paris.")


def tool_emulator(tmp: Path) -> tuple[Stack, Check]:
    def check(turn: Turn) -> None:
        weather = [m for m in turn.result["messages"] if isinstance(m, ToolMessage)][0]
        assert message_text(weather) == "Emulated: light rain in Paris."

    emulator = LLMToolEmulator(tools=["get_weather"], model=ScriptedChatModel(script=emulated))
    booker = Booker(first=("get_weather", {"city": "Paris"}))
    return Stack([emulator], booker, tools=[get_weather], model_calls=2), check


def file_search(tmp: Path) -> tuple[Stack, Check]:
    (tmp / "menu.md").write_text("# Menu\n\nSoup of the day.\n")

    def check(turn: Turn) -> None:
        found = [m for m in turn.result["messages"] if isinstance(m, ToolMessage)][0]
        assert "menu.md" in message_text(found)

    search = FilesystemFileSearchMiddleware(root_path=str(tmp), use_ripgrep=False)
    booker = Booker(first=("glob_search", {"pattern": "*.md"}))
    return Stack([search], booker, model_calls=2), check


def shell_tool(tmp: Path) -> tuple[Stack, Check]:
    def check(turn: Turn) -> None:
        listed = [m for m in turn.result["messages"] if isinstance(m, ToolMessage)][0]
        assert "hello" in message_text(listed)
        assert (tmp / "closed").exists()  # after_agent ran: the hard stop ended the session

    shell = ShellToolMiddleware(
        workspace_root=tmp,
        execution_policy=HostExecutionPolicy(),
        shutdown_commands=["touch closed"],
    )
    booker = Booker(first=("shell", {"command": "echo hello"}))
    return Stack([shell], booker, model_calls=2), check


CASES: list[Case] = [
    model_call_limit,
    tool_call_limit,
    tool_retry,
    tool_error,
    model_retry,
    model_fallback,
    context_editing,
    todo_list,
    tool_selector,
    model_refusal,
    auto_mode,
    model_router,
    tool_emulator,
    file_search,
    shell_tool,
]


@pytest.mark.filterwarnings("ignore:The middleware `\\w+` is in beta")
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_a_completed_call_ends_the_turn_beside(case: Case, mode: Mode, tmp_path: Path) -> None:
    stack, did_its_job = case(tmp_path)
    agent = stack.agent()
    result = run(agent, user("a table for two"), mode, thread())
    assert_ends_with_the_tools_text(result, booked("a table for two"), stack.model_calls)
    assert stack.desk.calls[-1] == "a table for two"
    values = dict(agent.get_state(thread()).values)
    did_its_job(Turn(stack, agent, result, values, mode))


@pytest.mark.parametrize("mode", MODES)
def test_a_model_call_limit_the_turn_meets_exactly_is_checked_before_the_stop(mode: Mode) -> None:
    # The limit's before_model hook runs before the stop's (the stop goes last): at exactly
    # its run limit it ends the run with its notice, as it does without the stop (README).
    desk = Desk()
    limit = ModelCallLimitMiddleware(run_limit=1)
    agent = agent_with([limit], [desk.tool()], ScriptedChatModel(script=Booker()))
    result = run(agent, user("a table for two"), mode)
    assert desk.calls == ["a table for two"]
    assert answer_of(result) == "Model call limits exceeded: run limit (1/1)"
    assert "Not done" not in answer_of(result)


@pytest.mark.parametrize("mode", MODES)
def test_a_model_call_limit_still_ends_a_turn_that_needs_more_calls(mode: Mode) -> None:
    desk = Desk(["transient"])
    limit = ModelCallLimitMiddleware(run_limit=2)
    agent = agent_with([limit], [desk.tool()], ScriptedChatModel(script=Booker()))
    result = run(agent, user("a table for two"), mode)
    assert answer_of(result) == "Model call limits exceeded: run limit (2/2)"
    assert len(desk.calls) == 2 and "Not done" not in answer_of(result)


# ---------------------------------------------------------------------------------------
# Summarization: a summary replaces the turn's start, the user's message included.


def summarizer(calls: list[int]) -> ScriptedChatModel:
    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        calls.append(len(messages))
        return AIMessage("The user wants a table booked; the service timed out once.")

    return ScriptedChatModel(script=script, model_name="summarizer")


@dataclass
class Summarized:
    """An agent whose summary (after 4 messages, keeping 2) replaces the turn's start."""

    order: Order
    desk: Desk
    booker: Booker = field(default_factory=Booker)
    summaries: list[int] = field(default_factory=list)
    """The number of messages each summary call read."""

    def agent(self) -> Any:
        middleware = SummarizationMiddleware(
            summarizer(self.summaries), trigger=("messages", 4), keep=("messages", 2)
        )
        model = ScriptedChatModel(script=self.booker)
        tools = [self.desk.tool()]
        return agent_with([middleware], tools, model, self.order, checkpointer=InMemorySaver())


def summary_of(result: dict[str, Any]) -> list[HumanMessage]:
    humans = [m for m in result["messages"] if isinstance(m, HumanMessage)]
    return [m for m in humans if m.additional_kwargs.get("lc_source") == "summarization"]


@pytest.mark.parametrize("mode", MODES)
def test_a_retry_summarized_mid_turn_still_ends_with_the_tools_text(mode: Mode) -> None:
    stack = Summarized("last", Desk(["transient", "completed"]))
    result = run(stack.agent(), user("a table for two"), mode, thread())
    assert stack.summaries and summary_of(result)  # the summary replaced the user's message
    assert "a table for two" not in [message_text(m) for m in result["messages"][:-1]]
    assert stack.desk.calls == ["a table for two", "a table for two"]
    assert len(stack.booker.seen) == 2
    # The turn now starts at the summary: one of its two replies is left to count.
    assert_ends_with_the_tools_text(result, booked("a table for two"), 1)


@pytest.mark.parametrize("mode", MODES)
def test_a_transient_call_summarized_away_still_spends_the_retry_budget(mode: Mode) -> None:
    stack = Summarized("last", Desk(["transient"]))
    agent = stack.agent()
    result = run(agent, user("a table for two"), mode, thread())
    assert_stopped(result, "retry_budget")
    assert_answer_is_settled_content(result)
    assert len(stack.summaries) >= 1 and summary_of(result)
    assert len(stack.desk.calls) == 3 and len(stack.booker.seen) == 3  # max_retries=2
    assert answer_of(result).endswith(retry_line("book", 1))  # one kept
    record = agent.get_state(thread()).values["stop_turn"]  # it outlived the summaries
    assert sum(record["transients"].values()) == 3 and len(record["replies"]) == 3


# ---------------------------------------------------------------------------------------
# PII: on the user's input, the model's output and tool results, in both orders.

Where = Literal["input", "output", "tool_results"]
Strategy = Literal["redact", "mask", "hash"]
SHOWN: dict[Strategy, str] = {
    "redact": "[REDACTED_EMAIL]",
    "mask": "ana@****.com",
    "hash": f"<email_hash:{hashlib.sha256(EMAIL.encode()).hexdigest()[:8]}>",
}


def pii(where: Where, strategy: Literal["block", "redact", "mask", "hash"]) -> PIIMiddleware:
    return PIIMiddleware(
        "email",
        strategy=strategy,
        apply_to_input=where == "input",
        apply_to_output=where == "output",
        apply_to_tool_results=where == "tool_results",
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("strategy", ["redact", "mask", "hash"])
@pytest.mark.parametrize("where", ["input", "tool_results"])
def test_pii_is_handled_in_the_answer(where: Where, strategy: Strategy, mode: Mode) -> None:
    # input: the model books the redacted text; tool_results: the tool's text is redacted
    # before the stop reads it (PII's before_model hook runs first: the stop goes last).
    desk = Desk()
    model = ScriptedChatModel(script=Booker())
    agent = agent_with([pii(where, strategy)], [desk.tool()], model)
    result = run(agent, user(f"a table for two, mail {EMAIL}"), mode)
    assert_stopped(result, "completed")
    assert_model_calls(result, 1)
    assert answer_of(result) == booked(f"a table for two, mail {SHOWN[strategy]}")
    assert len(desk.calls) == 1
    assert_answer_is_settled_content(result)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("strategy", ["redact", "mask", "hash"])
def test_output_redaction_reads_model_output_and_tool_results_redaction_covers_a_stop(
    strategy: Strategy, mode: Mode
) -> None:
    # A hard stop answers from the model node in place of a reply: apply_to_output (PII's
    # after_model) reads it as the model's reply (the README says so), as does
    # apply_to_tool_results, which redacts the tool's content before the stop reads it.
    model = ScriptedChatModel(script=Booker())
    alone = agent_with([pii("output", strategy)], [Desk().tool()], model)
    result = run(alone, user(f"a table for two, mail {EMAIL}"), mode)
    assert answer_of(result) == booked(f"a table for two, mail {SHOWN[strategy]}")
    both = PIIMiddleware(
        "email", strategy=strategy, apply_to_output=True, apply_to_tool_results=True
    )
    result = run(agent_with([both], [Desk().tool()], model), user(f"mail {EMAIL}"), mode)
    assert answer_of(result) == booked(f"mail {SHOWN[strategy]}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "other",
    [
        lambda: pii("tool_results", "redact"),
        lambda: pii("output", "redact"),
        lambda: ModelCallLimitMiddleware(run_limit=5),
        lambda: SummarizationMiddleware(
            model=ScriptedChatModel(script=lambda m, t: AIMessage("summary")),
            trigger=("messages", 4),
            keep=("messages", 2),
        ),
    ],
    ids=["pii_tool_results", "pii_output", "model_call_limit", "summarization"],
)
def test_a_before_model_hook_listed_after_the_stop_runs_before_its_decision(
    other: Any, mode: Mode
) -> None:
    # The stop decides in the model call's layer, after every before_model node: any order.
    desk = Desk()
    agent = agent_with([other()], [desk.tool()], ScriptedChatModel(script=Booker()), "first")
    result = run(agent, user("a table for two"), mode)
    assert desk.calls == ["a table for two"]
    assert result["stop_decision"]["action"] == "stop", result["stop_decision"]
    assert_model_calls(result, 1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", ["input", "tool_results"])
def test_pii_block_raises_by_design(where: Where, mode: Mode) -> None:
    desk = Desk()
    model = ScriptedChatModel(script=Booker())
    agent = agent_with([pii(where, "block")], [desk.tool()], model)
    with pytest.raises(PIIDetectionError, match="email"):
        run(agent, user(f"a table for two, mail {EMAIL}"), mode)
    assert len(desk.calls) == (0 if where == "input" else 1)


# ---------------------------------------------------------------------------------------
# Human in the loop: a paused call, approved later, still ends the turn with its text.


@pytest.mark.parametrize("mode", MODES)
def test_an_approved_call_still_ends_the_turn_with_the_tools_text(mode: Mode) -> None:
    desk, booker = Desk(), Booker()
    hitl = HumanInTheLoopMiddleware(interrupt_on={"book": True})
    model = ScriptedChatModel(script=booker)
    agent = agent_with([hitl], [desk.tool()], model, checkpointer=InMemorySaver())
    paused = run(agent, user("a table for two"), mode, thread())
    assert "__interrupt__" in paused and desk.calls == []
    request = pending_approval(agent, thread())
    assert request is not None and request["action_requests"][0]["name"] == "book"
    result = run(agent, approve(), mode, thread())
    assert_ends_with_the_tools_text(result, booked("a table for two"), 1)
    assert desk.calls == ["a table for two"] and len(booker.seen) == 1


# ---------------------------------------------------------------------------------------
# Done when: a plan or a plain read first, then the contract call; its text alone answers.


@pytest.mark.parametrize("mode", MODES)
def test_a_deep_agent_that_plans_then_books_answers_with_the_booking_alone(mode: Mode) -> None:
    deepagents = pytest.importorskip("deepagents", reason="deepagents is a dev dependency only")
    desk, booker = Desk(), Booker(first=("write_todos", PLAN))
    # deepagents 0.7.32's default stack has no write_todos: the planner comes with it here.
    agent = deepagents.create_deep_agent(
        model=ScriptedChatModel(script=booker),
        tools=[desk.tool()],
        middleware=[TodoListMiddleware(), StopOnArtifactMiddleware()],
    )
    result = run(agent, user("a table for two"), mode)
    assert_ends_with_the_tools_text(result, booked("a table for two"), 2)
    assert result["todos"] == PLAN["todos"]
    assert {"write_todos", "task", "ls", "book"} <= set(booker.bound[0])


@pytest.mark.parametrize("mode", MODES)
def test_a_plain_read_before_the_booking_is_no_part_of_the_answer(mode: Mode) -> None:
    desk, booker = Desk(), Booker(first=("get_weather", {"city": "Paris"}))
    agent = agent_with([], [get_weather, desk.tool()], ScriptedChatModel(script=booker))
    result = run(agent, user("a table for two"), mode)
    assert_ends_with_the_tools_text(result, booked("a table for two"), 2)
    weather = [m for m in result["messages"] if isinstance(m, ToolMessage)][0]
    assert message_text(weather) == "Sunny in Paris, 21 degrees."
