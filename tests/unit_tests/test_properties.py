"""Property-based tests: the stop contract under any input.

decide() is fed any JSON-like artifact, any mix of ToolMessages (errors, missing
artifacts, missing results, duplicates, unknown ids, several calls, earlier turns) and
any valid Context. The properties are the contract as the README states it, checked
against the message list itself, not against decide()'s internals.

The graph part generates a script of tool outcomes, runs both graphs in-process on it,
and requires the same decisions, the same answer and the same number of model calls.

Hypothesis runs derandomized with no example database, so CI sees the same examples on
every run.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any, get_args

import pytest
import stop_on_artifact as stopping
import stop_on_artifact.testing as soa_testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.tools import ToolRuntime
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from stop_on_artifact import InvalidArtifactError, decide, parse_artifact
from stop_on_artifact._artifact import LIBRARY_FIELDS, MAX_EXTRA_FIELD_CHARS, Reason, speaks
from stop_on_artifact._decision import Rule, is_hard_stop
from stop_on_artifact._turn import invocation_index, message_text

from agent.context import Context
from client.scenarios import GRAPHS
from tests.support.closing import split_closing
from tests.support.extra_tools import checkout_around
from tests.support.graph_runs import build, run

STOP_RULES = frozenset({"completed", "fatal", "policy_block", "retry_budget", "model_call_limit"})
CONTINUE_RULES = frozenset(get_args(Rule)) - STOP_RULES
ARTIFACT_STOPS = ("completed", "fatal", "policy_block")
BUILDERS: dict[str, Callable[..., dict[str, Any]]] = {
    "completed": stopping.completed,
    "transient": stopping.transient,
    "fatal": stopping.fatal,
    "policy_block": stopping.policy_block,
}

PROPERTY_SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
GRAPH_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(autouse=True, scope="module")
def _quiet_contract_warnings() -> Iterator[None]:
    """Fuzzed artifacts are mostly invalid; one warning each would only slow the run."""
    contract_logger = logging.getLogger("stop_on_artifact._decision")
    level = contract_logger.level
    contract_logger.setLevel(logging.ERROR)
    yield
    contract_logger.setLevel(level)


# ---------------------------------------------------------------------------------------
# Strategies.

_small_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30)
)
_any_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)


def json_like(scalars: st.SearchStrategy[Any] = _any_scalars) -> st.SearchStrategy[Any]:
    """Any JSON-like value: scalars, lists and string-keyed dicts, nested."""
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text(max_size=8), children, max_size=4)
        ),
        max_leaves=12,
    )


_field_names = st.text(min_size=1, max_size=10).filter(
    # not_done: a string, tested elsewhere; the library's own fields are refused from a tool
    lambda k: k not in ("stop", "reason", "not_done", *LIBRARY_FIELDS)
)
_extra_fields = st.dictionaries(_field_names, _small_scalars, max_size=3)

valid_artifacts = st.builds(
    lambda reason, extra: BUILDERS[reason](**extra),
    st.sampled_from(list(BUILDERS)),
    _extra_fields,
)


@st.composite
def near_valid_artifacts(draw: st.DrawFn, nested: st.SearchStrategy[Any] | None = None) -> Any:
    """A valid artifact broken in exactly one way."""
    artifact = dict(draw(valid_artifacts))
    how = draw(
        st.sampled_from(
            ["flip_stop", "stop_not_bool", "reason", "drop", "nested", "huge", "key_type"]
        )
    )
    if how == "flip_stop":
        artifact["stop"] = not artifact["stop"]
    elif how == "stop_not_bool":
        artifact["stop"] = draw(st.sampled_from(["false", "true", 0, 1, None, "", [], {}, 1.0]))
    elif how == "reason":
        artifact["reason"] = draw(
            st.text(max_size=12).filter(lambda r: r not in get_args(Reason))
            | st.sampled_from([None, 1, "Completed", "policy-block", ["completed"]])
        )
    elif how == "drop":
        del artifact[draw(st.sampled_from(["stop", "reason"]))]
    elif how == "nested":
        artifact["detail"] = draw(nested or st.sampled_from([[1], {"a": 1}, ({"b": [2]},)]))
    elif how == "huge":
        artifact["detail"] = "x" * (MAX_EXTRA_FIELD_CHARS + draw(st.integers(1, 50)))
    else:
        # A non-str key on purpose (no JSON object has one), so the dict type is overruled.
        artifact[draw(st.integers() | st.none())] = 1  # type: ignore[index]
    return artifact


ARTIFACTS = st.one_of(valid_artifacts, near_valid_artifacts(), json_like(), st.none())
"""Valid, almost valid, arbitrary JSON-like, or no artifact at all."""
_TEXT = st.text(max_size=20)
_NAMES = st.sampled_from(["search", "checkout", "other"])
_STATUS = st.sampled_from(["success", "success", "error"])
_ARGS = st.sampled_from([{}, {}, {"query": "refunds"}, {"query": "refunds for orders"}])
"""Mostly the same arguments; sometimes other words, as a model's retry may have."""


@st.composite
def tool_step(draw: st.DrawFn, prefix: str) -> list[BaseMessage]:
    """An AIMessage with 1-4 tool calls, then any mix of ToolMessages for them.

    Results may be missing, duplicated, out of call order, errors, or for ids the model
    never issued.
    """
    n = draw(st.integers(1, 4))
    ids = [f"{prefix}_{i}" for i in range(n)]
    calls = [
        {"name": draw(st.sampled_from(["search", "checkout"])), "args": draw(_ARGS), "id": i,
         "type": "tool_call"}
        for i in ids
    ]  # fmt: skip
    messages: list[BaseMessage] = [AIMessage("", tool_calls=calls)]
    targets = draw(st.lists(st.sampled_from([*ids, f"{prefix}_unknown"]), min_size=0, max_size=6))
    for tool_call_id in targets:
        messages.append(
            ToolMessage(
                draw(_TEXT),
                tool_call_id=tool_call_id,
                name=draw(_NAMES),
                artifact=draw(ARTIFACTS),
                status=draw(_STATUS),
            )
        )
    return messages


@st.composite
def conversations(draw: st.DrawFn) -> list[BaseMessage]:
    """Earlier turns, then a user message, earlier tool steps, and maybe a last step."""
    messages: list[BaseMessage] = []
    for turn in range(draw(st.integers(0, 1))):
        messages.append(HumanMessage(f"earlier {turn}"))
        messages.extend(draw(tool_step(f"old{turn}")))
        messages.append(AIMessage("an earlier answer"))
    messages.append(HumanMessage("now"))
    for index in range(draw(st.integers(0, 4))):
        messages.extend(draw(tool_step(f"s{index}")))
    if draw(st.integers(0, 9)) > 0:
        messages.extend(draw(tool_step("last")))
    if draw(st.integers(0, 9)) == 0:
        messages.append(AIMessage("a model answer after the step"))
    return messages


contexts = st.builds(
    Context,
    model=st.just("offline"),
    stop_mode=st.sampled_from(["hard", "polish", "never"]),
    parallel_policy=st.sampled_from(["priority", "any", "all"]),
    max_retries=st.integers(0, 4) | st.integers(0, 50),
    max_model_calls=st.integers(1, 6) | st.integers(1, 50),
    spend_cap=st.floats(0, 1e6),
    seed=st.integers(),
    force_outcome=st.none()
    | st.sampled_from(["success", "transient", "retryable", "fatal"])
    | st.lists(st.sampled_from(["success", "transient", "retryable", "fatal"]), max_size=3).filter(
        bool
    ),
)

# ---------------------------------------------------------------------------------------
# An executable reading of the README, used as the oracle.


def valid_or_none(artifact: object) -> dict[str, Any] | None:
    try:
        return parse_artifact(artifact)
    except InvalidArtifactError:
        return None


def this_turn(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    return list(messages[humans[-1] + 1 :]) if humans else list(messages)


def last_step(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    """This turn's ToolMessages after its last AIMessage with tool calls, first copy per id."""
    messages = this_turn(messages)
    issuers = [i for i, m in enumerate(messages) if isinstance(m, AIMessage) and m.tool_calls]
    if not issuers:
        return []
    seen: dict[str, ToolMessage] = {}
    for message in messages[issuers[-1] + 1 :]:
        if isinstance(message, ToolMessage):
            seen.setdefault(message.tool_call_id, message)
    return list(seen.values())


def transients(messages: Sequence[BaseMessage]) -> int:
    """Transient outcomes this turn; a repeated tool_call_id counts once (its first copy)."""
    first: dict[str, ToolMessage] = {}
    for m in this_turn(messages):
        if isinstance(m, ToolMessage):
            first.setdefault(m.tool_call_id, m)
    return sum(
        1 for m in first.values() if (valid_or_none(m.artifact) or {}).get("reason") == "transient"
    )


def is_block(message: ToolMessage) -> bool:
    return says_stop(message) and message.artifact["reason"] == "policy_block"


def turn_results(messages: Sequence[BaseMessage]) -> list[ToolMessage]:
    """This turn's ToolMessages, first copy per id."""
    first: dict[str, ToolMessage] = {}
    for m in this_turn(messages):
        if isinstance(m, ToolMessage):
            first.setdefault(m.tool_call_id, m)
    return list(first.values())


def model_calls(messages: Sequence[BaseMessage]) -> int:
    return sum(isinstance(m, AIMessage) for m in this_turn(messages))


def is_plain(message: ToolMessage | None) -> bool:
    """A success whose artifact (if any) does not speak the contract: an input, never a part.

    An error without the contract (a call another middleware blocked) is a part.
    """
    return message is not None and message.status != "error" and not speaks(message.artifact)


def says_stop(message: ToolMessage) -> bool:
    """A valid stop artifact; on an error status only fatal or policy_block count."""
    artifact = valid_or_none(message.artifact)
    if artifact is None or not artifact["stop"]:
        return False
    return message.status != "error" or artifact["reason"] in ("fatal", "policy_block")


# ---------------------------------------------------------------------------------------
# decide() properties.


@PROPERTY_SETTINGS
@given(artifact=st.one_of(ARTIFACTS, st.integers(), st.binary(), st.sets(st.integers())))
def test_parse_artifact_accepts_or_raises_only_its_own_error(artifact: Any) -> None:
    try:
        parsed = parse_artifact(artifact)
    except InvalidArtifactError as exc:
        # The message names types and keys, never the tool's content.
        assert "x" * MAX_EXTRA_FIELD_CHARS not in str(exc)
        return
    assert parsed is artifact
    assert type(parsed["stop"]) is bool
    assert parsed["stop"] == (parsed["reason"] in ARTIFACT_STOPS)


@PROPERTY_SETTINGS
@given(messages=conversations(), context=contexts)
def test_decide_never_raises_and_returns_a_well_formed_decision(
    messages: list[BaseMessage], context: Context
) -> None:
    before = repr(messages)
    decision = decide(messages, context)

    assert set(decision) == {
        "action", "rule", "reason", "tool", "tool_call_id", "answer_from", "unsettled"
    }  # fmt: skip
    assert decision["action"] in ("stop", "continue")
    assert decision["rule"] in get_args(Rule)
    assert (decision["action"] == "stop") == (decision["rule"] in STOP_RULES)
    assert repr(messages) == before, "decide() must not mutate the messages"
    assert decide(messages, context) == decision, "decide() must be deterministic"

    step = last_step(messages)
    if not step:  # the bounds hold on every decision, a step another middleware emptied too
        over = transients(messages) > context.max_retries
        at_cap = model_calls(messages) >= context.max_model_calls
        rule = "retry_budget" if over else "model_call_limit" if at_cap else "no_tool_step"
        parts = {"answer_from": decision["answer_from"], "unsettled": decision["unsettled"]}
        if rule == "no_tool_step":  # a stop answers the turn's parts (the next test's oracle)
            assert parts == {"answer_from": [], "unsettled": []}
        assert {**decision, "answer_from": [], "unsettled": []} == {
            "action": "continue" if rule == "no_tool_step" else "stop",
            "rule": rule,
            "reason": "transient" if over else None,
            "tool": None,
            "tool_call_id": None,
            "answer_from": [],
            "unsettled": [],
        }
    else:
        chosen = [m for m in step if m.tool_call_id == decision["tool_call_id"]]
        if not chosen:  # under all, a refusal of an earlier step decides a settled turn
            assert (context.parallel_policy, decision["rule"]) == ("all", "policy_block")
            turn = [m for m in this_turn(messages) if isinstance(m, ToolMessage)]
            chosen = [m for m in turn if m.tool_call_id == decision["tool_call_id"]]
        assert chosen, "the decision names a message of this turn"
        assert decision["tool"] == chosen[0].name


def oracle_chains(
    messages: Sequence[BaseMessage], *, plain: bool = False
) -> list[list[dict[str, Any]]]:
    """The turn's parts as the README states them, each as its calls, the latest last.

    Calls in the order the model issued them. The calls of a later model call retry the
    unsettled parts of their tool (settled: the latest call's first result says stop):
    a call with the same arguments as a part's latest call takes the first such part,
    then the tool's other calls take its other unsettled parts in order; a call left over
    is a new part, last. Results for ids no model call issued are parts of their own, last.
    A chain whose latest result is plain (no contract artifact) is no part (``plain`` keeps it).
    """
    turn = this_turn(messages)
    first: dict[str, ToolMessage] = {}
    for m in turn:
        if isinstance(m, ToolMessage):
            first.setdefault(m.tool_call_id, m)
    chains: list[list[dict[str, Any]]] = []
    issued: set[str] = set()
    for message in (m for m in turn if isinstance(m, AIMessage)):
        calls: list[dict[str, Any]] = []
        for asked in message.tool_calls:
            call_id = asked["id"] or ""
            if call_id not in issued:
                issued.add(call_id)
                calls.append({**asked, "id": call_id, "result": first.get(call_id)})
        open_chains = [
            c
            for c in chains
            if c[-1]["result"] is None
            or not (says_stop(c[-1]["result"]) or is_plain(c[-1]["result"]))
        ]
        taken: dict[str, list[dict[str, Any]]] = {}
        for name in dict.fromkeys(call["name"] for call in calls):
            waiting = [c for c in open_chains if c[-1]["name"] == name]
            mine = [call for call in calls if call["name"] == name]
            for call in mine:
                same = next((c for c in waiting if c[-1]["args"] == call["args"]), None)
                if same is not None:
                    taken[call["id"]] = same
                    waiting.remove(same)
            for call, chain in zip(
                [c for c in mine if c["id"] not in taken], waiting, strict=False
            ):
                taken[call["id"]] = chain
        for call in calls:
            if call["id"] in taken:
                taken[call["id"]].append(call)
            else:
                chains.append([call])
    chains += [[{"id": i, "result": m}] for i, m in first.items() if i not in issued]
    return [chain for chain in chains if plain or not is_plain(chain[-1]["result"])]


def oracle_parts(messages: Sequence[BaseMessage]) -> list[tuple[str, ToolMessage | None]]:
    """The turn's parts (see :func:`oracle_chains`): ``(latest call id, its first result)``."""
    return [(chain[-1]["id"], chain[-1]["result"]) for chain in oracle_chains(messages)]


@PROPERTY_SETTINGS
@given(messages=conversations(), context=contexts)
def test_a_hard_stop_answers_every_part_of_the_turn_in_the_questions_order(
    messages: list[BaseMessage], context: Context
) -> None:
    decision = decide(messages, context)
    if not is_hard_stop(decision, context):
        assert decision["answer_from"] == decision["unsettled"] == []
        return
    parts = oracle_parts(messages)
    settled = [i for i, m in parts if m is not None and says_stop(m)]
    assert decision["answer_from"] == settled
    assert decision["unsettled"] == [i for i, _ in parts if i not in settled]

    # Every call the model issued this turn is answered or named as not done, itself or
    # through the later calls of the same tool that retried it.
    listed = set(decision["answer_from"]) | set(decision["unsettled"])
    turn = this_turn(messages)
    every = oracle_chains(messages, plain=True)
    retried_by = {call["id"]: chain[-1] for chain in every for call in chain[:-1]}
    no_part = {call["id"] for chain in every if is_plain(chain[-1]["result"]) for call in chain}
    issuer: dict[str | None, int] = {}
    for n, m in enumerate(turn):
        for c in m.tool_calls if isinstance(m, AIMessage) else []:
            issuer.setdefault(c["id"], n)  # a repeated id counts once, where it was first
    for call in (c for m in turn if isinstance(m, AIMessage) for c in m.tool_calls):
        if call["id"] in listed or call["id"] in no_part:
            continue
        later = retried_by.get(call["id"])
        assert later is not None and later["id"] in listed
        assert later["name"] == call["name"]
        assert issuer[later["id"]] > issuer[call["id"]], "only a later model call retries"

    answer = stopping.final_text(decision, messages)
    expected: list[str] = []
    for number, (call_id, result) in enumerate(parts, start=1):
        if call_id in settled:
            assert result is not None
            text = message_text(result)
        else:
            written = (valid_or_none(result.artifact) or {}).get("not_done") if result else None
            text = written or answer.split(soa_testing.ANSWER_SEPARATOR)[len(expected)]
            if not written:  # the generic line: the part's place, never its arguments
                where = f"part {number} of {len(parts)}" if len(parts) > 1 else "this request"
                assert text.startswith(f"**Not done: {where} (`")
        if text not in expected:
            expected.append(text)
    closing = (
        [soa_testing.MODEL_CALL_LIMIT_MESSAGE] if decision["rule"] == "model_call_limit" else []
    )
    if decision["rule"] == "retry_budget":  # a line per part left timing out, named
        answer, spent = split_closing(answer)
        assert spent
    assert answer == soa_testing.ANSWER_SEPARATOR.join([*expected, *closing])
    # What the model read of an unsettled call is never the answer.
    for call_id, result in parts:
        if call_id not in settled and result is not None and result.text not in expected:
            assert result.text not in answer.split(soa_testing.ANSWER_SEPARATOR)


@PROPERTY_SETTINGS
@given(messages=conversations(), context=contexts)
def test_decide_stops_only_for_a_valid_stop_artifact_a_budget_or_a_policy_block(
    messages: list[BaseMessage], context: Context
) -> None:
    decision = decide(messages, context)
    step = last_step(messages)
    over_retries = transients(messages) > context.max_retries
    at_call_cap = model_calls(messages) >= context.max_model_calls

    if not step:  # the bounds hold on every decision, step or no step
        expected = "retry_budget" if over_retries else "model_call_limit" if at_call_cap else None
        assert decision["rule"] == (expected or "no_tool_step")
        return
    if decision["action"] == "continue":
        # The bounds read from the state hold in every mode: a continue is never past them.
        assert not over_retries
        assert not at_call_cap
        stops = [m for m in step if says_stop(m)]
        if any(is_plain(m) for m in step):  # unread by the model yet: back to it, always
            return
        if context.parallel_policy in ("priority", "any") and stops:
            assert context.stop_mode == "never"
            assert decision["rule"] == "stop_mode_never"
        if context.parallel_policy == "all":
            # A refusal waits only for a sibling that can still be retried.
            settled_step = len(stops) == len(step)
            assert not settled_step or context.stop_mode == "never"
            assert not settled_step or not any(is_block(m) for m in turn_results(messages))
        else:
            assert not any(is_block(m) for m in step), (
                "a policy block stops at once under priority and any, in every stop_mode"
            )
        return

    rule = decision["rule"]
    if rule == "retry_budget":
        assert over_retries
        assert decision["reason"] == "transient"
    elif rule == "model_call_limit":
        assert at_call_cap
        assert not over_retries, "the retry budget is checked first"
    else:
        results = step if rule != "policy_block" else turn_results(messages)
        chosen = next(m for m in results if m.tool_call_id == decision["tool_call_id"])
        artifact = valid_or_none(chosen.artifact)
        assert artifact is not None, "an artifact stop needs a valid artifact"
        assert artifact["stop"] is True
        assert artifact["reason"] == rule == decision["reason"]
        assert says_stop(chosen)
        assert context.stop_mode != "never" or rule == "policy_block"
        if context.parallel_policy == "all":
            assert all(says_stop(m) for m in step)
            if any(is_block(m) for m in turn_results(messages)):
                assert rule == "policy_block"
            return
        if any(is_block(m) for m in step):
            assert rule == "policy_block"
            return
        if context.parallel_policy == "priority":
            order = {"policy_block": 0, "fatal": 1, "completed": 2}
            best = min(order[m.artifact["reason"]] for m in step if says_stop(m))
            assert order[rule] == best


@PROPERTY_SETTINGS
@given(
    context=contexts,
    results=st.lists(st.tuples(valid_artifacts, _STATUS), min_size=1, max_size=5),
    earlier=st.integers(0, 3),
)
def test_several_valid_calls_are_chosen_as_the_parallel_policy_says(
    context: Context, results: list[tuple[dict[str, Any], str]], earlier: int
) -> None:
    """Every call answered once, every artifact valid: the choice is fully determined."""
    messages: list[BaseMessage] = [HumanMessage("q")]
    for index in range(earlier):  # earlier transient steps this turn
        call = {"name": "search", "args": {}, "id": f"e{index}", "type": "tool_call"}
        messages.append(AIMessage("", tool_calls=[call]))
        messages.append(
            ToolMessage(
                "503", tool_call_id=f"e{index}", name="search", artifact=stopping.transient()
            )
        )
    calls = [
        {"name": "search", "args": {}, "id": f"c{i}", "type": "tool_call"}
        for i in range(len(results))
    ]
    messages.append(AIMessage("", tool_calls=calls))
    step = [
        ToolMessage(f"r{i}", tool_call_id=f"c{i}", name="search", artifact=a, status=status)
        for i, (a, status) in enumerate(results)
    ]
    decision = decide([*messages, *reversed(step)], context)  # finish order is irrelevant

    stops = [m for m in step if says_stop(m)]
    rank = {"policy_block": 0, "fatal": 1, "completed": 2}
    blocks = [m for m in stops if is_block(m)]
    goes = [m for m in step if not says_stop(m)]
    if context.parallel_policy == "all":  # a refusal waits for a sibling that can be retried
        expected = goes[0] if goes else (blocks or step)[0]
    elif blocks:
        expected = blocks[0]
    elif context.parallel_policy == "priority":
        expected = min(stops, key=lambda m: rank[m.artifact["reason"]]) if stops else step[0]
    else:
        expected = stops[0] if stops else step[0]
    expected_stop = says_stop(expected)
    if expected_stop and (
        context.stop_mode != "never" or expected.artifact["reason"] == "policy_block"
    ):
        assert decision["action"] == "stop"
        assert decision["rule"] == expected.artifact["reason"]
        assert decision["tool_call_id"] == expected.tool_call_id
        return
    # Otherwise the pick goes on, unless a bound read from the state stops the run.
    over_retries = transients([*messages, *step]) > context.max_retries
    at_cap = earlier + 1 >= context.max_model_calls
    if over_retries:
        assert decision["rule"] == "retry_budget"
    elif at_cap:
        assert decision["rule"] == "model_call_limit"
    else:
        assert decision["action"] == "continue"
        assert decision["tool_call_id"] == expected.tool_call_id


@PROPERTY_SETTINGS
@given(messages=conversations(), context=contexts, seed=st.integers(0, 2**32))
def test_decision_does_not_depend_on_the_order_results_finish_in(
    messages: list[BaseMessage], context: Context, seed: int
) -> None:
    issuers = [i for i, m in enumerate(messages) if isinstance(m, AIMessage) and m.tool_calls]
    if not issuers or not all(isinstance(m, ToolMessage) for m in messages[issuers[-1] + 1 :]):
        return
    head, tail = messages[: issuers[-1] + 1], messages[issuers[-1] + 1 :]
    ids = [m.tool_call_id for m in tail if isinstance(m, ToolMessage)]
    if len(ids) != len(set(ids)):
        return  # with duplicates the first copy counts, so order matters by design
    shuffled = list(tail)
    random.Random(seed).shuffle(shuffled)
    assert decide([*head, *shuffled], context) == decide(messages, context)


@PROPERTY_SETTINGS
@given(context=contexts, results=st.lists(ARTIFACTS, min_size=1, max_size=4))
def test_a_repeated_result_counts_once_in_the_step(context: Context, results: list[Any]) -> None:
    calls = [
        {"name": "search", "args": {}, "id": f"c{i}", "type": "tool_call"}
        for i in range(len(results))
    ]
    messages: list[BaseMessage] = [HumanMessage("q"), AIMessage("", tool_calls=calls)]
    messages += [
        ToolMessage(f"r{i}", tool_call_id=f"c{i}", name="search", artifact=artifact)
        for i, artifact in enumerate(results)
    ]
    # A late copy of the first result, with a different artifact, must not change the pick.
    late = ToolMessage("late copy", tool_call_id="c0", name="search", artifact=stopping.fatal())
    with_copy = decide([*messages, late], context)
    without = decide(messages, context)
    if with_copy["rule"] not in ("retry_budget", "model_call_limit"):
        assert with_copy == without


# ---------------------------------------------------------------------------------------
# Both graphs, on the same generated script.

Outcome = tuple[str, Any, bool]
"""(content, artifact, raises) for one tool call."""

graph_outcomes = st.tuples(
    st.text(alphabet=st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=30),
    st.one_of(
        valid_artifacts,  # weighted: half the outcomes follow the contract
        valid_artifacts,
        valid_artifacts,
        near_valid_artifacts(),
        json_like(_small_scalars),
        st.none(),
    ),
    st.integers(0, 9).map(lambda n: n == 9),  # one call in ten raises
)


def scripted_search(script: Sequence[Outcome]) -> BaseTool:
    """A `search` tool whose n-th call this turn plays ``script[n]`` (the last repeats)."""

    @tool(response_format="content_and_artifact")
    def search(query: str, runtime: ToolRuntime[Context]) -> tuple[str, Any]:
        """Search the knowledge base.

        Args:
            query: What to look up.
            runtime: Injected by the tool node.
        """
        index = invocation_index(runtime.state["messages"], runtime.tool_call_id or "")
        content, artifact, raises = script[min(index, len(script) - 1)]
        if raises:
            raise RuntimeError(f"backend failure {content}")
        return content, artifact

    return search


def _comparable(message: BaseMessage) -> tuple[Any, ...]:
    if isinstance(message, ToolMessage):
        return ("tool", message.name, message.content, message.artifact, message.status)
    if isinstance(message, AIMessage):
        return ("ai", message.content, [(c["name"], c["args"]) for c in message.tool_calls])
    return (type(message).__name__, message.content)


def _has_nan(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, dict):
        return any(_has_nan(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_nan(v) for v in value)
    return False


@GRAPH_SETTINGS
@given(
    script=st.lists(graph_outcomes, min_size=1, max_size=5),
    parts=st.integers(1, 3),
    context=st.fixed_dictionaries(
        {
            "stop_mode": st.sampled_from(["hard", "polish", "never"]),
            "parallel_policy": st.sampled_from(["priority", "any", "all"]),
            "max_retries": st.sampled_from([1, 0, 3]),
            "max_model_calls": st.sampled_from([3, 1, 6]),
        }
    ),
)
def test_both_graphs_reach_the_same_decision_on_a_generated_script(
    script: list[Outcome], parts: int, context: dict[str, Any]
) -> None:
    assert not any(_has_nan(artifact) for _, artifact, _ in script)
    query = "; ".join(f"topic {i}" for i in range(parts))

    async def both() -> list[Any]:
        tools = [scripted_search(script)]
        return [
            await run(build(name, tools), query, {"model": "offline", **context}) for name in GRAPHS
        ]

    legacy, middleware = asyncio.run(both())

    for observed in (legacy, middleware):
        assert not observed.answer.tool_calls, "every run ends with an answer"
        for event in observed.events:
            decision = event["stop_decision"]
            assert decision["rule"] in get_args(Rule)
            assert (decision["action"] == "stop") == (decision["rule"] in STOP_RULES)
        assert observed.model_calls <= context["max_model_calls"] + (
            1 if context["stop_mode"] == "polish" else 0
        )
    assert legacy.agreed == middleware.agreed
    assert legacy.model_calls == middleware.model_calls
    assert [_comparable(m) for m in legacy.messages] == [
        _comparable(m) for m in middleware.messages
    ]
    if legacy.decision is not None:
        assert legacy.events[-1] == {"stop_decision": legacy.decision}


def spy_checkout(ran: list[tuple[str, float]]) -> BaseTool:
    """The real ``checkout``, recording every call that reaches it."""
    return checkout_around(lambda item, amount: ran.append((item, amount)))


@GRAPH_SETTINGS
@given(
    amounts=st.lists(st.integers(1, 2000), min_size=1, max_size=3),
    cap=st.sampled_from([0, 100, 500, 1500]),
    forced=st.lists(st.sampled_from(["success", "transient", "fatal"]), min_size=1, max_size=5),
    policy=st.sampled_from(["priority", "any", "all"]),
    mode=st.sampled_from(["hard", "polish", "never"]),
    max_retries=st.sampled_from([0, 1, 2]),
)
def test_no_refused_purchase_reaches_the_tool_and_no_part_vanishes(
    amounts: list[int], cap: int, forced: list[str], policy: str, mode: str, max_retries: int
) -> None:
    query = "; ".join(f"buy item {i} for {amount}" for i, amount in enumerate(amounts))
    context = {
        "model": "offline",
        "spend_cap": cap,
        "force_outcome": forced,
        "parallel_policy": policy,
        "stop_mode": mode,
        "max_retries": max_retries,
    }

    async def both() -> list[tuple[Any, list[tuple[str, float]]]]:
        out = []
        for name in GRAPHS:
            ran: list[tuple[str, float]] = []
            out.append((await run(build(name, [spy_checkout(ran)]), query, context), ran))
        return out

    (legacy, legacy_ran), (middleware, middleware_ran) = asyncio.run(both())
    # create_agent runs the calls of one model turn as parallel tasks: any finish order.
    assert sorted(legacy_ran) == sorted(middleware_ran)
    assert legacy.agreed[1] == middleware.agreed[1]
    assert legacy.answer.content == middleware.answer.content
    assert all(amount <= cap for _, amount in legacy_ran), "a refused call never runs"
    decision = legacy.decision
    assert decision is not None
    if not is_hard_stop(decision, Context.model_validate(context)):
        return  # the model answers (polish, never): it read every part
    listed = set(decision["answer_from"]) | set(decision["unsettled"])
    answer = legacy.answer.content
    assert isinstance(answer, str)
    sections = answer.split(soa_testing.ANSWER_SEPARATOR)
    for i, amount in enumerate(amounts):
        item = f"item {i}"
        calls = [
            c
            for m in legacy.messages
            if isinstance(m, AIMessage)
            for c in m.tool_calls
            if c["args"].get("item") == item
        ]
        assert calls and calls[-1]["id"] in listed, "every part is answered or named"
        assert any(item in section for section in sections), "and a person reads its name"
        if amount > cap:
            assert any(section.startswith(f"**Not purchased: {item}") for section in sections)
    # The parts come in the question's order.
    firsts = [
        next(k for k, s in enumerate(sections) if f"item {i}" in s) for i in range(len(amounts))
    ]
    assert firsts == sorted(firsts)
