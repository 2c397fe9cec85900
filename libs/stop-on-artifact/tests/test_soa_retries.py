"""Retries that reword their arguments: a later call of the same tool takes an unsettled part.

Hosted models often retry a timed-out call with other words (``"refund policy"``, then
``"refund policy for orders"``). The rule: a call of a later model call pairs with an
unsettled part of its tool, equal arguments first, then the tool's other calls with its
other unsettled parts in the question's order; a call left over is a new part. Calls of
one AIMessage are always parts of their own.

The property tests check :func:`decide`, :func:`final_text` and the parts against an
oracle written here from that rule; the example tests run a scripted model through the
hand-built graph (everywhere, langgraph 0.6.6 included) and ``create_agent`` (langchain 1.x).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from soa_graphs import (
    Script,
    assert_answer_is_settled_content,
    build,
    forced_result,
    stop_decision,
    user,
)
from stop_on_artifact import (
    StopSettings,
    completed,
    decide,
    fatal,
    final_text,
    policy_block,
    transient,
)
from stop_on_artifact._decision import (
    ANSWER_SEPARATOR,
    MODEL_CALL_LIMIT_MESSAGE,
    RETRY_BUDGET_MESSAGE,
    is_hard_stop,
)
from stop_on_artifact._turn import message_text
from stop_on_artifact.messages import turn_results
from stop_on_artifact.testing import (
    ScriptedChatModel,
    assert_model_calls,
    assert_stopped,
    forced_tool,
    tool_call,
)

PROPERTIES = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

TOOLS = ("search", "checkout", "lookup")
QUERIES = ("refund policy", "refund policy for orders", "shipping", "shipping times", "returns")
"""A small pool, so later calls often repeat an earlier call's words exactly."""

# An outcome: how one call's result reads. "missing": the call has no ToolMessage.
OUTCOMES = (
    "completed",
    "fatal",
    "policy_block",
    "error_fatal",
    "transient",
    "error",
    "invalid",
    "plain",
    "missing",
)
SETTLED = frozenset({"completed", "fatal", "policy_block", "error_fatal"})
PLAIN = frozenset({"plain"})
"""Successes with no artifact: inputs the model reads, never parts. An error is a part."""


@pytest.fixture(autouse=True, scope="module")
def _quiet_warnings() -> Iterator[None]:
    """Generated invalid artifacts would log one warning each."""
    core = logging.getLogger("stop_on_artifact._decision")
    level = core.level
    core.setLevel(logging.ERROR)
    yield
    core.setLevel(level)


# ---------------------------------------------------------------------------------------
# Generated turns.


@dataclass(frozen=True)
class Call:
    """One generated tool call and how its result reads."""

    call_id: str
    name: str
    args: dict[str, Any]
    outcome: str
    step: int
    """The index of the model call (AIMessage) that issued it."""


def result_message(call: Call) -> ToolMessage | None:
    """The call's ToolMessage; its content names the call, so each answer part is known."""
    content = f"content of {call.call_id}"
    artifacts: dict[str, Any] = {
        "completed": completed(),
        "fatal": fatal(),
        "policy_block": policy_block(),
        "error_fatal": fatal(),
        "transient": transient(),
        "invalid": {"stop": "yes", "reason": "completed"},
    }
    if call.outcome == "missing":
        return None
    status = "error" if call.outcome in ("error", "error_fatal") else "success"
    return ToolMessage(
        content,
        tool_call_id=call.call_id,
        name=call.name,
        artifact=artifacts.get(call.outcome),
        status=status,
    )


def as_messages(steps: Sequence[Sequence[Call]]) -> list[BaseMessage]:
    """A user message, then each model call's AIMessage followed by its calls' results."""
    messages: list[BaseMessage] = [HumanMessage("earlier"), AIMessage("an earlier answer")]
    messages.append(HumanMessage("the question"))
    for calls in steps:
        issued = [tool_call(c.name, c.args, c.call_id) for c in calls]
        messages.append(AIMessage("", tool_calls=issued))
        messages += [m for m in map(result_message, calls) if m is not None]
    return messages


@st.composite
def arguments(draw: st.DrawFn) -> dict[str, Any]:
    """Arguments from the small pool, sometimes with an extra key (another wording)."""
    args: dict[str, Any] = {"query": draw(st.sampled_from(QUERIES))}
    if draw(st.integers(0, 4)) == 0:
        args["limit"] = draw(st.integers(1, 2))
    return args


@st.composite
def turns(draw: st.DrawFn) -> list[list[Call]]:
    """One to five model calls of one to four tool calls each, any tools, any outcomes."""
    steps: list[list[Call]] = []
    for step in range(draw(st.integers(1, 5))):
        calls = []
        for index in range(draw(st.integers(1, 4))):
            calls.append(
                Call(
                    call_id=f"c{step}_{index}",
                    name=draw(st.sampled_from(TOOLS[:2]) | st.sampled_from(TOOLS)),
                    args=draw(arguments()),
                    outcome=draw(st.sampled_from(OUTCOMES)),
                    step=step,
                )
            )
        steps.append(calls)
    return steps


stop_settings = st.builds(
    StopSettings,
    stop_mode=st.just("hard"),
    parallel_policy=st.sampled_from(["all", "priority", "any"]),
    max_retries=st.sampled_from([0, 1, 50]),
    max_model_calls=st.sampled_from([2, 50]),
)


# ---------------------------------------------------------------------------------------
# The oracle: the rule as the README states it, kept apart from the library's code.


@dataclass
class Part:
    """A part of the question: its attempts, the latest last."""

    attempts: list[Call] = field(default_factory=list)

    @property
    def latest(self) -> Call:
        return self.attempts[-1]

    @property
    def settled(self) -> bool:
        return self.latest.outcome in SETTLED


def oracle(steps: Sequence[Sequence[Call]]) -> list[Part]:
    """Group the calls into parts by the rule, step by step."""
    parts: list[Part] = []
    for calls in steps:
        # Only parts of earlier model calls can be retried: decide this step's pairs first.
        open_parts = [p for p in parts if not p.settled and p.latest.outcome not in PLAIN]
        paired: dict[str, Part] = {}
        for name in TOOLS:
            waiting = [p for p in open_parts if p.latest.name == name]
            mine = [c for c in calls if c.name == name]
            for call in mine:  # equal arguments first
                same = [p for p in waiting if p.latest.args == call.args]
                if same:
                    paired[call.call_id] = same[0]
                    waiting.remove(same[0])
            for call in [c for c in mine if c.call_id not in paired]:
                if not waiting:
                    break
                paired[call.call_id] = waiting.pop(0)
        for call in calls:
            if call.call_id in paired:
                paired[call.call_id].attempts.append(call)
            else:
                parts.append(Part([call]))
    return [part for part in parts if part.latest.outcome not in PLAIN]


def expected_answer(parts: Sequence[Part], rule: str) -> list[str]:
    """How each text of the answer starts, by the oracle: a settled part's content, an
    unsettled part's generic not-done line (its place and tool), then a closing line: a
    spent retry budget's names each part left timing out by its place and its call."""
    texts: list[str] = []
    for number, part in enumerate(parts, start=1):
        if part.settled:
            texts.append(f"content of {part.latest.call_id}")
            continue
        where = f"part {number} of {len(parts)}" if len(parts) > 1 else "this request"
        texts.append(f"**Not done: {where} (`{part.latest.name}`)**")
    if rule == "model_call_limit":
        texts.append(MODEL_CALL_LIMIT_MESSAGE)
    if rule == "retry_budget":
        spent = [
            (f"part {n} of {len(parts)}" if len(parts) > 1 else "this request", part.latest.name)
            for n, part in enumerate(parts, start=1)
            if not part.settled and part.latest.outcome == "transient"
        ]
        opening = RETRY_BUDGET_MESSAGE.split("{where}")[0]
        texts += [f"{opening}{where} (`{name}`)**" for where, name in spent] or [opening]
    return texts


# ---------------------------------------------------------------------------------------
# Properties.


def check_answer(steps: Sequence[Sequence[Call]], context: StopSettings) -> None:
    """Everything the rule says about one generated turn."""
    messages = as_messages(steps)
    parts = oracle(steps)
    latest = [result_message(part.latest) for part in parts]
    assert [m.tool_call_id if m else None for m in turn_results(messages)] == [
        m.tool_call_id if m else None for m in latest
    ]

    decision = decide(messages, context)
    if not is_hard_stop(decision, context):
        assert decision["answer_from"] == decision["unsettled"] == []
        return
    assert decision["answer_from"] == [p.latest.call_id for p in parts if p.settled]
    assert decision["unsettled"] == [p.latest.call_id for p in parts if not p.settled]
    # Every call of the turn is listed, or was retried (by the same tool, from a later
    # model call) by a call that is.
    listed = {*decision["answer_from"], *decision["unsettled"]}
    for part in parts:
        assert part.latest.call_id in listed
        assert len({c.name for c in part.attempts}) == 1
        assert [c.step for c in part.attempts] == sorted({c.step for c in part.attempts})

    texts = expected_answer(parts, decision["rule"])
    answer = final_text(decision, messages).split(ANSWER_SEPARATOR)
    assert len(answer) == len(texts)
    for said, expected in zip(answer, texts, strict=True):
        assert said.startswith(expected)
    if len(parts) == 1:
        assert not answer[0].startswith("**Not done: part"), "one part is never 'part 1 of N'"


@PROPERTIES
@given(steps=turns(), context=stop_settings)
def test_any_turn_is_answered_in_parts_as_the_rule_pairs_them(
    steps: list[list[Call]], context: StopSettings
) -> None:
    check_answer(steps, context)


@st.composite
def reworded_retries_of_one_part(draw: st.DrawFn) -> list[list[Call]]:
    """One call, then one call of the same tool per later model call, in any words."""
    name = draw(st.sampled_from(TOOLS))
    unsettled = st.sampled_from(["transient", "invalid", "missing"])
    count = draw(st.integers(2, 5))
    steps = []
    for step in range(count):
        last = st.sampled_from([o for o in OUTCOMES if o not in PLAIN])
        outcome = draw(unsettled if step < count - 1 else last)
        args = draw(arguments())
        steps.append([Call(f"r{step}", name, args, outcome, step)])
    return steps


@PROPERTIES
@given(steps=reworded_retries_of_one_part(), context=stop_settings)
def test_a_one_part_question_retried_in_other_words_stays_one_part(
    steps: list[list[Call]], context: StopSettings
) -> None:
    messages = as_messages(steps)
    assert len(turn_results(messages)) == 1
    decision = decide(messages, context)
    if is_hard_stop(decision, context):
        last = steps[-1][0]
        listed = decision["answer_from"] if last.outcome in SETTLED else decision["unsettled"]
        assert listed == [last.call_id]
        answer = final_text(decision, messages)
        assert not answer.startswith("**Not done: part")
        if last.outcome in SETTLED:
            assert answer == f"content of {last.call_id}"
        else:
            assert answer.startswith(f"**Not done: this request (`{last.name}`)**")
    check_answer(steps, context)


@st.composite
def several_parts_then_retries(draw: st.DrawFn) -> tuple[list[list[Call]], list[Call]]:
    """Parts of one tool, then one model call that retries the unsettled ones (some in the
    same words, some in others, in any order) among new calls of this and other tools.

    Returns the steps and, for each part of the first model call, the call expected to
    take its place (itself when it settled).
    """
    name = draw(st.sampled_from(TOOLS[:2]))
    queries = draw(st.lists(st.sampled_from(QUERIES), min_size=1, max_size=4, unique=True))
    first = [
        Call(f"a{i}", name, {"query": q}, draw(st.sampled_from(OUTCOMES)), 0)
        for i, q in enumerate(queries)
    ]
    open_parts = [c for c in first if c.outcome not in SETTLED | PLAIN]
    # Which unsettled parts are retried in the same words; the others are reworded.
    exact = [c for c in open_parts if draw(st.booleans())]
    reworded = [c for c in open_parts if c not in exact]
    done = st.sampled_from(["completed", "fatal"])
    retries = [Call(f"x{i}", name, dict(c.args), draw(done), 1) for i, c in enumerate(exact)]
    retries += [
        Call(f"w{i}", name, {"query": f"{c.args['query']} please"}, draw(done), 1)
        for i, c in enumerate(reworded)
    ]
    other = next(t for t in TOOLS if t != name)
    extra = [
        Call(f"n{i}", draw(st.sampled_from([name, other])), {"query": f"new {i}"}, draw(done), 1)
        for i in range(draw(st.integers(0, 2)))
    ]
    second = draw(st.permutations([*retries, *extra]))
    if not second:
        return [first], [c for c in first if c.outcome not in PLAIN]
    # The reworded calls (and the new ones of this tool) go to the parts left, in order.
    by_words = {c.args["query"]: c for c in second if c.call_id.startswith("x")}
    rest = [c for c in second if c.name == name and not c.call_id.startswith("x")]
    expected = []
    for call in first:
        if call.outcome in PLAIN:
            continue
        if call.outcome in SETTLED:
            expected.append(call)
        elif call in exact:
            expected.append(by_words[call.args["query"]])
        else:
            expected.append(rest.pop(0))
    new_parts = [c for c in second if c not in expected]
    return [first, second], [*expected, *new_parts]


@PROPERTIES
@given(case=several_parts_then_retries(), context=stop_settings)
def test_several_parts_retried_in_same_and_other_words_keep_their_places(
    case: tuple[list[list[Call]], list[Call]], context: StopSettings
) -> None:
    steps, expected = case
    messages = as_messages(steps)
    ids = [m.tool_call_id if m else None for m in turn_results(messages)]
    assert ids == [c.call_id if result_message(c) else None for c in expected]
    decision = decide(messages, context)
    plain_in_step = any(c.outcome in PLAIN for c in steps[-1])  # unread: back to the model
    if all(c.outcome in SETTLED for c in expected) and not plain_in_step:  # all settled: stop
        assert is_hard_stop(decision, context)
        assert decision["answer_from"] == [c.call_id for c in expected]
        assert decision["unsettled"] == []
        answer = final_text(decision, messages).split(ANSWER_SEPARATOR)
        assert answer == [f"content of {c.call_id}" for c in expected]
    check_answer(steps, context)


def test_the_same_words_pair_first_and_a_call_left_over_is_a_new_part() -> None:
    steps = [
        [Call("a", "search", {"query": "refund policy"}, "transient", 0)],
        [
            Call("b", "search", {"query": "refund policy for orders"}, "completed", 1),
            Call("c", "search", {"query": "refund policy"}, "completed", 1),
        ],
    ]
    messages = as_messages(steps)
    # The same words pair first; the reworded call is a new part, after it.
    decision = decide(messages, StopSettings())
    assert decision["answer_from"] == ["c", "b"]
    assert [p.latest.call_id for p in oracle(steps)] == ["c", "b"]


def test_calls_of_one_model_call_are_parts_of_their_own() -> None:
    steps = [
        [
            Call("a", "search", {"query": "refund policy"}, "transient", 0),
            Call("b", "search", {"query": "refund policy"}, "transient", 0),
        ],
        [Call("c", "search", {"query": "refund policy for orders"}, "completed", 1)],
    ]
    messages = as_messages(steps)
    assert [m.tool_call_id if m else None for m in turn_results(messages)] == ["c", "b"]
    decision = decide(messages, StopSettings(parallel_policy="any"))
    assert decision["answer_from"] == ["c"]
    assert decision["unsettled"] == ["b"]
    answer = final_text(decision, messages).split(ANSWER_SEPARATOR)
    assert answer[1].startswith("**Not done: part 2 of 2 (`search`)**")


def test_a_call_after_every_part_settled_is_a_new_part() -> None:
    steps = [
        [Call("a", "search", {"query": "refund policy"}, "completed", 0)],
        [Call("b", "search", {"query": "refund policy for orders"}, "transient", 1)],
    ]
    decision = decide(as_messages(steps), StopSettings(max_retries=0))
    assert decision["rule"] == "retry_budget"
    assert decision["answer_from"] == ["a"]
    assert decision["unsettled"] == ["b"]
    answer = final_text(decision, as_messages(steps))
    assert answer.split(ANSWER_SEPARATOR)[1].startswith("**Not done: part 2 of 2 (`search`)**")


# ---------------------------------------------------------------------------------------
# Through both kinds of agent: a timed-out search retried in other words.

FIRST_WORDS = "refund policy"
RETRY_WORDS = "refund policy for orders"


def rewording_script(
    questions: Sequence[str], rewordings: Sequence[str] = (RETRY_WORDS,)
) -> Script:
    """Search each question at once; retry each timed-out search in the next words given."""

    def script(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
        if not tools:
            return AIMessage("The model answered.")
        last = messages[-1]
        if isinstance(last, HumanMessage):
            calls = [tool_call("search", {"query": q}, f"q{i}") for i, q in enumerate(questions)]
            return AIMessage("", tool_calls=calls)
        step = []
        for message in reversed(messages):
            if not isinstance(message, ToolMessage):
                break
            step.append(message)
        timed_out = [m for m in reversed(step) if (m.artifact or {}).get("reason") == "transient"]
        if not timed_out:
            return AIMessage("The model answered.")
        retries = sum(isinstance(m, AIMessage) for m in messages) - 1
        words = rewordings[min(retries, len(rewordings) - 1)]
        calls = [
            tool_call("search", {"query": f"{words} {i}" if i else words}, f"r{len(messages)}_{i}")
            for i in range(len(timed_out))
        ]
        return AIMessage("", tool_calls=calls)

    return script


def test_a_search_retried_in_other_words_answers_one_part(kind: str) -> None:
    model = ScriptedChatModel(script=rewording_script([FIRST_WORDS]))
    tools = [forced_tool("search", ["transient", "success"])]
    result = build(kind, model, tools).invoke(user(FIRST_WORDS))
    decision = assert_stopped(result, "completed")
    retry = [m for m in result["messages"] if isinstance(m, AIMessage) and m.tool_calls][-1]
    assert retry.tool_calls[0]["args"] == {"query": RETRY_WORDS}
    assert decision["answer_from"] == [retry.tool_calls[0]["id"]]
    assert decision["unsettled"] == []
    answer = message_text(result["messages"][-1])
    assert answer == forced_result("success", RETRY_WORDS)[0]
    assert "Not done" not in answer
    assert ANSWER_SEPARATOR not in answer
    assert_model_calls(result, 2)
    assert_answer_is_settled_content(result)


async def test_a_search_retried_in_other_words_answers_one_part_async(kind: str) -> None:
    model = ScriptedChatModel(script=rewording_script([FIRST_WORDS]))
    tools = [forced_tool("search", ["transient", "success"])]
    result = await build(kind, model, tools).ainvoke(user(FIRST_WORDS))
    assert_stopped(result, "completed")
    assert message_text(result["messages"][-1]) == forced_result("success", RETRY_WORDS)[0]


def test_a_reworded_retry_keeps_its_part_before_a_later_part(kind: str) -> None:
    model = ScriptedChatModel(script=rewording_script([FIRST_WORDS, "shipping"]))
    tools = [forced_tool("search", ["transient", "success", "success"])]
    result = build(kind, model, tools).invoke(user("refunds; shipping"))
    decision = assert_stopped(result, "completed")
    assert len(decision["answer_from"]) == 2
    assert message_text(result["messages"][-1]) == ANSWER_SEPARATOR.join(
        [forced_result("success", RETRY_WORDS)[0], forced_result("success", "shipping")[0]]
    )
    assert_answer_is_settled_content(result)


def test_reworded_retries_that_keep_timing_out_are_one_part_not_done(kind: str) -> None:
    rewordings = [RETRY_WORDS, "refund policy for online orders", "refunds"]
    model = ScriptedChatModel(script=rewording_script([FIRST_WORDS], rewordings))
    tools = [forced_tool("search", "transient")]
    result = build(kind, model, tools, settings=StopSettings(max_retries=2)).invoke(user("r"))
    decision = assert_stopped(result, "retry_budget")
    assert decision["answer_from"] == []
    assert len(decision["unsettled"]) == 1
    answer = message_text(result["messages"][-1])
    assert answer == ANSWER_SEPARATOR.join(
        [
            "**Not done: this request (`search`)**: it failed for a reason that may pass "
            "(a timeout or a busy service), so it was not completed. Ask again to retry.",
            RETRY_BUDGET_MESSAGE.format(where="this request", tool="search", tries=3),
        ]
    )
    assert stop_decision(result)["tool_call_id"] == decision["unsettled"][0]
    assert_answer_is_settled_content(result)
