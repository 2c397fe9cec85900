"""The artifact contract and decide(), on hand-built message lists."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import stop_on_artifact as stopping
import stop_on_artifact.testing as soa_testing
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from stop_on_artifact import InvalidArtifactError, decide, parse_artifact
from stop_on_artifact._decision import is_hard_stop
from stop_on_artifact._turn import scan_turn

from agent.context import Context
from tests.support.closing import retry_closing


def step(*results: tuple[str, Any] | tuple[str, Any, str], history: int = 0) -> list[BaseMessage]:
    """A user message, one AIMessage with len(results) calls, then their ToolMessages."""
    calls = [
        {"name": "search", "args": {"query": f"q{i}"}, "id": f"c{i}", "type": "tool_call"}
        for i in range(len(results))
    ]
    messages: list[BaseMessage] = [HumanMessage("hi")]
    for h in range(history):  # earlier transient steps this turn
        messages.append(
            AIMessage(
                "", tool_calls=[{"name": "search", "args": {}, "id": f"h{h}", "type": "tool_call"}]
            )
        )
        messages.append(
            ToolMessage(
                "timeout", tool_call_id=f"h{h}", name="search", artifact=stopping.transient()
            )
        )
    messages.append(AIMessage("", tool_calls=calls))
    for i, result in enumerate(results):
        content, artifact = result[0], result[1]
        status = result[2] if len(result) > 2 else "success"
        messages.append(
            ToolMessage(
                content, tool_call_id=f"c{i}", name="search", artifact=artifact, status=status
            )
        )
    return messages


def ctx(**fields: Any) -> Context:
    return Context(model="offline", **fields)


def test_builders_cover_the_vocabulary() -> None:
    assert stopping.completed(topic="store") == {
        "stop": True,
        "reason": "completed",
        "topic": "store",
    }
    assert stopping.transient() == {"stop": False, "reason": "transient"}
    assert stopping.fatal()["stop"] is True
    assert stopping.policy_block()["reason"] == "policy_block"
    with pytest.raises(InvalidArtifactError, match="set by the builder"):
        stopping.completed(stop=False)
    with pytest.raises(InvalidArtifactError, match="scalar"):
        stopping.completed(extra=[1, 2])


INVALID = [
    pytest.param({"reason": "completed"}, id="missing-stop"),
    pytest.param({"stop": True}, id="missing-reason"),
    pytest.param({"stop": "false", "reason": "completed"}, id="stop-string-false"),
    pytest.param({"stop": "true", "reason": "completed"}, id="stop-string-true"),
    pytest.param({"stop": 1, "reason": "completed"}, id="stop-int"),
    pytest.param({"stop": True, "reason": "done"}, id="unknown-reason"),
    pytest.param({"stop": True, "reason": None}, id="reason-none"),
    pytest.param({"stop": True, "reason": "transient"}, id="stop-contradicts-reason"),
    pytest.param({"stop": True, "reason": "completed", "blob": {"a": 1}}, id="nested-field"),
    pytest.param({"stop": True, "reason": "completed", "blob": "x" * 500}, id="huge-field"),
]


@pytest.mark.parametrize("artifact", ["stop", ["stop", True], {"exit_code": 0}])
def test_an_artifact_that_is_not_the_contract_is_a_plain_input(
    artifact: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(InvalidArtifactError):  # what it is not, parse_artifact says
        parse_artifact(artifact)
    with caplog.at_level(logging.WARNING, logger="stop_on_artifact._decision"):
        decision = decide(step(("page", artifact), ("done", stopping.completed())), ctx())
    assert (decision["action"], decision["rule"]) == ("continue", "no_artifact")  # unread yet
    assert not caplog.records


@pytest.mark.parametrize("artifact", INVALID)
def test_invalid_artifacts_continue_and_warn_without_content(
    artifact: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(InvalidArtifactError):
        parse_artifact(artifact)
    secret = "SECRET-CONTENT-4242"
    with caplog.at_level(logging.WARNING, logger="stop_on_artifact._decision"):
        decision = decide(step((secret, artifact)), ctx())
    assert decision == {
        "action": "continue",
        "rule": "invalid_artifact",
        "reason": None,
        "tool": "search",
        "tool_call_id": "c0",
        "answer_from": [],
        "unsettled": [],
    }
    assert "invalid artifact" in caplog.text
    assert secret not in caplog.text
    assert "'false'" not in caplog.text  # types, never values


def test_missing_artifact_continues() -> None:
    assert decide(step(("text", None)), ctx())["rule"] == "no_artifact"


def test_tool_error_continues_unless_fatal_artifact() -> None:
    assert decide(step(("boom", None, "error")), ctx())["rule"] == "tool_error"
    # A success artifact on an error message never ends the run as a success.
    decision = decide(step(("boom", stopping.completed(), "error")), ctx())
    assert (decision["action"], decision["rule"]) == ("continue", "tool_error")
    decision = decide(step(("declined", stopping.fatal(), "error")), ctx())
    assert (decision["action"], decision["rule"]) == ("stop", "fatal")


@pytest.mark.parametrize(
    ("policy", "reasons", "expected"),
    [
        ("priority", ["completed", "fatal"], ("stop", "fatal", "c1")),
        ("priority", ["fatal", "policy_block", "completed"], ("stop", "policy_block", "c1")),
        ("priority", ["completed", "completed"], ("stop", "completed", "c0")),
        ("priority", ["transient", "completed"], ("stop", "completed", "c1")),
        ("priority", ["transient", "transient"], ("continue", "transient", "c0")),
        ("any", ["completed", "fatal"], ("stop", "completed", "c0")),
        ("any", ["transient", "fatal", "completed"], ("stop", "fatal", "c1")),
        ("all", ["completed", "fatal"], ("stop", "completed", "c0")),
        ("all", ["completed", "transient"], ("continue", "transient", "c1")),
        # A policy block is never outvoted; under all it waits for a sibling's retry.
        ("any", ["completed", "policy_block"], ("stop", "policy_block", "c1")),
        ("priority", ["transient", "policy_block"], ("stop", "policy_block", "c1")),
        ("all", ["transient", "policy_block"], ("continue", "transient", "c0")),
        ("all", ["completed", "policy_block"], ("stop", "policy_block", "c1")),
    ],
)
def test_parallel_policies(policy: str, reasons: list[str], expected: tuple[str, ...]) -> None:
    builders = {
        "completed": stopping.completed,
        "fatal": stopping.fatal,
        "transient": stopping.transient,
        "policy_block": stopping.policy_block,
    }
    messages = step(*[(r, builders[r]()) for r in reasons])
    decision = decide(messages, ctx(parallel_policy=policy))
    assert (decision["action"], decision["rule"], decision["tool_call_id"]) == expected


def test_call_order_not_finish_order() -> None:
    messages = step(("a", stopping.completed()), ("b", stopping.fatal()))
    # ToolMessages finished in reverse order: c1 arrived first.
    messages[-2], messages[-1] = messages[-1], messages[-2]
    decision = decide(messages, ctx(parallel_policy="any"))
    assert decision["tool_call_id"] == "c0"
    assert decision["answer_from"] == ["c0", "c1"]
    assert stopping.final_text(decision, messages) == "a\n\n---\n\nb"


SEP = soa_testing.ANSWER_SEPARATOR


@pytest.mark.parametrize("policy", ["priority", "any"])
def test_a_hard_stop_answers_every_call_in_call_order(policy: str) -> None:
    messages = step(
        ("page a", stopping.completed()),
        ("oops", stopping.transient(not_done="**Not looked up: q1**: timed out.")),
        ("bad", {"stop": "yes", "reason": "completed"}),
        ("blocked", stopping.policy_block()),
        ("dead end", stopping.fatal()),
    )
    decision = decide(messages, ctx(parallel_policy=policy))
    assert (decision["action"], decision["rule"]) == ("stop", "policy_block")
    assert decision["answer_from"] == ["c0", "c3", "c4"]
    assert decision["unsettled"] == ["c1", "c2"]
    assert stopping.final_text(decision, messages) == SEP.join(
        [
            "page a",
            "**Not looked up: q1**: timed out.",  # the tool's own line
            "**Not done: part 3 of 5 (`search`)**: its result could not be confirmed, so it "
            "was not completed. Ask again to retry.",
            "blocked",
            "dead end",
        ]
    )
    for text in ("oops", "bad"):  # what the model read is never the answer
        assert text not in stopping.final_text(decision, messages).split(SEP)


@pytest.mark.parametrize("policy", ["all", "priority", "any"])
@pytest.mark.parametrize("plain", [("boom", None, "error"), ("none", None)])
def test_a_plain_result_beside_stops_goes_back_to_the_model_and_is_never_a_part(
    policy: str, plain: Any
) -> None:
    messages = step(("page a", stopping.completed()), plain, ("blocked", stopping.policy_block()))
    decision = decide(messages, ctx(parallel_policy=policy))
    if len(plain) > 2 and policy != "all":  # an errored call is a part: the block stops at once
        assert (decision["action"], decision["rule"]) == ("stop", "policy_block")
        assert (decision["answer_from"], decision["unsettled"]) == (["c0", "c2"], ["c1"])
        return
    assert decision["action"] == "continue"  # nobody has read the plain result yet
    later = [*messages, AIMessage("", tool_calls=[{"name": "search", "args": {}, "id": "z"}])]
    later.append(
        ToolMessage("page z", tool_call_id="z", name="search", artifact=stopping.completed())
    )
    final = decide(later, ctx(parallel_policy=policy))
    assert final["action"] == "stop"
    if len(plain) > 2:  # an errored call is a part: z, the model's retry, answers it in place
        assert final["answer_from"] + final["unsettled"] == ["c0", "z", "c2"]
    else:  # a result the model read is an input, never a part
        assert final["answer_from"] + final["unsettled"] == ["c0", "c2", "z"]


def test_under_all_a_block_waits_for_the_retry_then_decides() -> None:
    messages = step(("blocked", stopping.policy_block()), ("timeout", stopping.transient()))
    assert decide(messages, ctx())["action"] == "continue"
    retry = AIMessage(
        "",
        tool_calls=[{"name": "search", "args": {"query": "q1"}, "id": "r1", "type": "tool_call"}],
    )
    done = [
        *messages,
        retry,
        ToolMessage("receipt", tool_call_id="r1", name="search", artifact=stopping.completed()),
    ]
    decision = decide(done, ctx())
    assert (decision["action"], decision["rule"], decision["tool_call_id"]) == (
        "stop",
        "policy_block",
        "c0",
    )
    assert (decision["answer_from"], decision["unsettled"]) == (["c0", "r1"], [])
    assert stopping.final_text(decision, done) == f"blocked{SEP}receipt"
    # The block stops in every mode once the turn is settled.
    for mode in ("polish", "never"):
        assert decide(done, ctx(stop_mode=mode))["rule"] == "policy_block"


def test_a_retry_takes_the_place_of_the_call_it_retries() -> None:
    messages = step(("timeout", stopping.transient()), ("dead end", stopping.fatal()))
    retry = AIMessage(
        "",
        tool_calls=[{"name": "search", "args": {"query": "q0"}, "id": "r0", "type": "tool_call"}],
    )
    done = [
        *messages,
        retry,
        ToolMessage("page", tool_call_id="r0", name="search", artifact=stopping.completed()),
    ]
    decision = decide(done, ctx())
    assert decision["answer_from"] == ["r0", "c1"]  # the question's order, not the call order
    assert stopping.final_text(decision, done) == f"page{SEP}dead end"


def test_a_call_with_other_arguments_retries_the_unsettled_part() -> None:
    messages = step(("timeout", stopping.transient()))
    other = AIMessage(
        "", tool_calls=[{"name": "search", "args": {"query": "x"}, "id": "n0", "type": "tool_call"}]
    )
    done = [
        *messages,
        other,
        ToolMessage("page", tool_call_id="n0", name="search", artifact=stopping.completed()),
    ]
    decision = decide(done, ctx())
    assert (decision["answer_from"], decision["unsettled"]) == (["n0"], [])
    assert stopping.final_text(decision, done) == "page"


def test_a_call_after_its_tool_settled_is_a_new_part() -> None:
    messages = step(("page", stopping.completed()))
    other = AIMessage(
        "", tool_calls=[{"name": "search", "args": {"query": "x"}, "id": "n0", "type": "tool_call"}]
    )
    done = [
        *messages,
        other,
        ToolMessage("more", tool_call_id="n0", name="search", artifact=stopping.completed()),
    ]
    decision = decide(done, ctx())
    assert (decision["answer_from"], decision["unsettled"]) == (["c0", "n0"], [])
    assert stopping.final_text(decision, done) == f"page{SEP}more"


def test_a_call_without_a_result_is_named_as_not_done() -> None:
    messages = step(("page", stopping.completed()))
    issued = messages[1]
    assert isinstance(issued, AIMessage)
    calls = issued.tool_calls + [
        {"name": "search", "args": {"query": "q9"}, "id": "c9", "type": "tool_call"}
    ]
    messages[1] = AIMessage("", tool_calls=calls)
    decision = decide(messages, ctx())
    assert (decision["answer_from"], decision["unsettled"]) == (["c0"], ["c9"])
    assert stopping.final_text(decision, messages).endswith(
        "it returned no result, so it was not completed. Ask again to retry."
    )


def test_a_generic_not_done_line_names_the_tool_never_its_arguments() -> None:
    secret = "sk-live-SECRET1234"
    messages = step(("timeout", stopping.transient()))
    messages[1] = AIMessage(
        "",
        tool_calls=[
            {"name": "pay`**[x](y)", "args": {"card": secret}, "id": "c0", "type": "tool_call"}
        ],
    )
    decision = decide(messages, ctx(max_retries=0))
    text = stopping.final_text(decision, messages)
    assert secret not in text
    assert text.startswith("**Not done: this request (`payxy`)**")


def test_not_done_is_a_string_of_bounded_length() -> None:
    assert stopping.transient(not_done="x" * 500)["not_done"] == "x" * 500
    with pytest.raises(InvalidArtifactError, match="not_done"):
        stopping.transient(not_done="x" * 501)
    with pytest.raises(InvalidArtifactError, match="not_done"):
        parse_artifact({"stop": False, "reason": "transient", "not_done": 3})


def test_earlier_steps_of_the_turn_count_and_a_retry_budget_closes_the_answer() -> None:
    messages: list[BaseMessage] = [
        AIMessage("earlier"),  # a previous turn's answer, before the user message
        HumanMessage("a; b"),
        AIMessage(
            "",
            tool_calls=[
                {"name": "search", "args": {}, "id": "a1", "type": "tool_call"},
                {"name": "search", "args": {}, "id": "b1", "type": "tool_call"},
            ],
        ),
        ToolMessage("page a", tool_call_id="a1", name="search", artifact=stopping.completed()),
        ToolMessage("timeout", tool_call_id="b1", name="search", artifact=stopping.transient()),
    ]
    assert decide(messages, ctx())["action"] == "continue"  # default policy: all
    retry = AIMessage(
        "", tool_calls=[{"name": "search", "args": {}, "id": "b2", "type": "tool_call"}]
    )
    settled = [
        *messages,
        retry,
        ToolMessage("page b", tool_call_id="b2", name="search", artifact=stopping.completed()),
    ]
    decision = decide(settled, ctx())
    assert decision["answer_from"] == ["a1", "b2"]
    assert stopping.final_text(decision, settled) == f"page a{SEP}page b"
    spent = [
        *messages,
        retry,
        ToolMessage("timeout", tool_call_id="b2", name="search", artifact=stopping.transient()),
    ]
    decision = decide(spent, ctx(max_retries=1))
    assert (decision["rule"], decision["answer_from"]) == ("retry_budget", ["a1"])
    assert decision["unsettled"] == ["b2"]
    assert stopping.final_text(decision, spent) == SEP.join(
        [
            "page a",
            "**Not done: part 2 of 2 (`search`)**: it failed for a reason that may pass (a "
            "timeout or a busy service), so it was not completed. Ask again to retry.",
            retry_closing("search", 2, "part 2 of 2"),
        ]
    )


def test_polish_and_never_leave_the_answer_to_the_model() -> None:
    messages = step(("page", stopping.completed()))
    assert decide(messages, ctx(stop_mode="polish"))["answer_from"] == []
    assert decide(messages, ctx(stop_mode="never"))["answer_from"] == []
    assert decide(messages, ctx())["answer_from"] == ["c0"]
    blocked = step(("no", stopping.policy_block()))
    assert decide(blocked, ctx(stop_mode="polish"))["answer_from"] == ["c0"]


def test_default_parallel_policy_is_all() -> None:
    messages = step(("page", stopping.completed()), ("timeout", stopping.transient()))
    assert ctx().parallel_policy == "all"
    assert (decide(messages, ctx())["action"], decide(messages, ctx())["rule"]) == (
        "continue",
        "transient",
    )


def test_stop_mode_never_continues_except_policy_block() -> None:
    never = ctx(stop_mode="never")
    for builder in (stopping.completed, stopping.fatal):
        decision = decide(step(("x", builder())), never)
        assert (decision["action"], decision["rule"]) == ("continue", "stop_mode_never")
    decision = decide(step(("x", stopping.policy_block())), never)
    assert (decision["action"], decision["rule"]) == ("stop", "policy_block")


@pytest.mark.parametrize("mode", ["hard", "polish", "never"])
def test_retry_budget_reads_state_not_artifact(mode: str) -> None:
    context = ctx(max_retries=2, stop_mode=mode)
    assert decide(step(("t", stopping.transient()), history=1), context)["rule"] == "transient"
    decision = decide(step(("t", stopping.transient()), history=2), context)
    assert (decision["action"], decision["rule"]) == ("stop", "retry_budget")
    assert decision["answer_from"] == []
    assert decision["unsettled"] == ["c0"]  # h1 retried h0, c0 (other words) retried h1
    answer = stopping.final_text(decision, step(("t", stopping.transient()), history=2))
    assert answer.split(SEP)[-1] == retry_closing("search", 3)
    assert [part.split("**")[1] for part in answer.split(SEP)[:-1]] == [
        "Not done: this request (`search`)",
    ]
    assert (
        decide(step(("t", stopping.transient()), history=2), ctx(max_retries=3))["action"]
        == "continue"
    )


def test_retry_budget_counts_since_last_user_message() -> None:
    earlier = step(("t", stopping.transient()), history=2)
    messages = [*earlier, AIMessage("sorry"), *step(("t", stopping.transient()))]
    assert decide(messages, ctx(max_retries=2))["rule"] == "transient"


def test_no_tool_step() -> None:
    assert decide([HumanMessage("hi")], ctx())["action"] == "continue"
    assert decide([], ctx())["rule"] == "no_tool_step"


def test_hard_stop_by_mode() -> None:
    stop = decide(step(("x", stopping.completed())), ctx())
    assert is_hard_stop(stop, ctx(stop_mode="hard"))
    assert not is_hard_stop(stop, ctx(stop_mode="polish"))
    blocked = decide(step(("x", stopping.policy_block())), ctx())
    assert is_hard_stop(blocked, ctx(stop_mode="polish"))


def test_model_call_limit_bounds_the_loop() -> None:
    messages = step(("t", stopping.transient()), history=3)  # 4 model calls so far
    decision = decide(messages, ctx(max_retries=50, max_model_calls=4))
    assert (decision["action"], decision["rule"]) == ("stop", "model_call_limit")
    assert stopping.final_text(decision, messages).endswith(soa_testing.MODEL_CALL_LIMIT_MESSAGE)
    assert decision["unsettled"] == ["c0"]  # one part: each later search retried it
    assert decide(messages, ctx(max_retries=50, max_model_calls=5))["action"] == "continue"
    # A stop artifact still wins: the cap only replaces a continue.
    assert (
        decide(
            step(("x", stopping.completed()), history=3), ctx(max_retries=50, max_model_calls=1)
        )["rule"]
        == "completed"
    )


def test_a_repeated_transient_result_spends_the_budget_once() -> None:
    messages = step(("t", stopping.transient()), history=1)
    messages.append(messages[-1].model_copy())  # the same tool_call_id delivered twice
    assert scan_turn(messages).transients == 2
    assert decide(messages, ctx(max_retries=2))["rule"] == "transient"
