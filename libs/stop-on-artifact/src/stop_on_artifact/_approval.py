"""Asking a person about tool calls: langchain's human-in-the-loop request and response.

A policy that would refuse a call can pause the run instead, with a LangGraph
``interrupt()`` whose value is the request of langchain's ``HumanInTheLoopMiddleware``
(``action_requests`` + ``review_configs``), which Agent Chat UI and Studio draw as an
approval card. The run goes on with ``Command(resume=...)`` holding that middleware's
response (``{"decisions": [...]}``, one decision per action, in order). Only ``approve``
and ``reject`` are offered.

:func:`decisions_problem` checks a response, naming the field and never quoting a value.
A malformed response does not fail the run: a failed run marks the thread ``error``, and
a server may then refuse every later resume, so the approval would be lost. :func:`ask`
asks again instead: the run ends paused on the same actions, whose descriptions now begin
with what was wrong (:func:`with_problem`), and the next resume answers.

The values are plain dicts of langchain's shape, so this module needs only langgraph (and
runs on langgraph 0.6.6, where langchain's middleware does not exist). The names are
also exported by :mod:`stop_on_artifact._policies`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, cast

from langgraph.types import interrupt
from typing_extensions import TypedDict

__all__ = [
    "ALLOWED_DECISIONS",
    "MAX_REASON_CHARS",
    "ActionRequest",
    "ApprovalDecision",
    "ApprovalOutcome",
    "ApprovalRequest",
    "ResumeError",
    "ReviewConfig",
    "approval_request",
    "ask",
    "decisions_problem",
    "is_approval_request",
    "read_decisions",
    "reject_reason",
    "resume_shape_problem",
    "with_problem",
]


class ActionRequest(TypedDict):
    """One call a person is asked about (langchain's ``ActionRequest``)."""

    name: str
    """The tool's name."""
    args: dict[str, Any]
    """The call's arguments, as the model issued them."""
    description: NotRequired[str]
    """The one line a person approves against (Markdown)."""


class ReviewConfig(TypedDict):
    """The decisions allowed on one action (langchain's ``ReviewConfig``)."""

    action_name: str
    """The tool's name."""
    allowed_decisions: list[str]
    """Always ``["approve", "reject"]`` here."""


class ApprovalRequest(TypedDict):
    """The interrupt's value (langchain's ``HITLRequest``)."""

    action_requests: list[ActionRequest]
    """One per asked call, in call order."""
    review_configs: list[ReviewConfig]
    """One per action, in the same order."""


class ApprovalDecision(TypedDict):
    """A person's decision on one action: ``{"type": "approve"}`` or a reject."""

    type: Literal["approve", "reject"]
    """What the person decided."""
    message: NotRequired[str | None]
    """A reject's optional reason (it reaches the answer escaped and cut, never metadata)."""


ApprovalOutcome = Literal["approved", "rejected"]
"""What a person decided about a call they were asked about, recorded as ``approval``."""

ALLOWED_DECISIONS: tuple[str, ...] = ("approve", "reject")
"""The decision types every action request here allows."""

MAX_REASON_CHARS = 200
"""Longest part of a reject decision's ``message`` that reaches the answer."""


class ResumeError(ValueError):
    """A resume value that does not answer the pending approval request."""


def approval_request(actions: Sequence[ActionRequest]) -> ApprovalRequest:
    """Return the interrupt value asking about ``actions``: one review config each.

    Args:
        actions: One ``{"name", "args", "description"}`` per call to ask about, in the
            order the model issued the calls.

    Returns:
        ``{"action_requests": [...], "review_configs": [...]}``.
    """
    configs: list[ReviewConfig] = [
        {"action_name": action["name"], "allowed_decisions": ["approve", "reject"]}
        for action in actions
    ]
    return {"action_requests": list(actions), "review_configs": configs}


def with_problem(request: ApprovalRequest, problem: str) -> ApprovalRequest:
    """Return ``request`` asked again after a malformed answer, saying what was wrong.

    Args:
        request: The request the answer did not fit.
        problem: From :func:`decisions_problem`: names a field, quotes no value.

    Returns:
        The same actions and review configs, each description led by the problem.
    """
    note = f"The last answer could not be used: {problem}."
    actions: list[ActionRequest] = [
        {**action, "description": f"{note}\n\n{action.get('description', '')}".rstrip()}
        for action in request["action_requests"]
    ]
    return {"action_requests": actions, "review_configs": list(request["review_configs"])}


def is_approval_request(value: object) -> bool:
    """Return True when an interrupt's value is a human-in-the-loop request.

    Args:
        value: An interrupt's value.

    Returns:
        Whether it holds ``action_requests`` and ``review_configs`` lists.
    """
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("action_requests"), list)
        and isinstance(value.get("review_configs"), list)
    )


def decisions_problem(response: object, expected: int | None) -> str | None:
    """Return what is wrong with a resume value, or None when it answers the request.

    Args:
        response: What ``Command(resume=...)`` carried for this interrupt.
        expected: How many actions the request holds; None checks the shape alone (at a
            server's door, where the pending request is not known).

    Returns:
        A message naming the field (``resume``, ``resume.decisions``,
        ``resume.decisions[i].type``, ...) and the expected form; never a value.
    """
    if not isinstance(response, Mapping) or "decisions" not in response:
        return (
            "resume must be an object {'decisions': [...]} with one decision per action "
            "request, e.g. {'decisions': [{'type': 'approve'}]}"
        )
    decisions = response["decisions"]
    if expected is not None and (not isinstance(decisions, list) or len(decisions) != expected):
        return f"resume.decisions must be a list of {expected} decision(s), one per action request"
    if not isinstance(decisions, list) or not decisions:
        return "resume.decisions must be a non-empty list, one decision per action request"
    for index, decision in enumerate(decisions):
        field = f"resume.decisions[{index}]"
        if not isinstance(decision, Mapping):
            return f"{field} must be an object such as {{'type': 'approve'}}"
        kind = decision.get("type")
        if not isinstance(kind, str) or kind not in ALLOWED_DECISIONS:
            return f"{field}.type must be one of {list(ALLOWED_DECISIONS)}"
        message = decision.get("message")
        if kind == "reject" and message is not None and not isinstance(message, str):
            return f"{field}.message must be a string (the reason, optional)"
    return None


def resume_shape_problem(resume: object) -> str | None:
    """Check a run's ``command.resume`` at a server's door, before any run is queued.

    Only the shape of an approval response is checked (the pending request, and so the
    number of decisions it needs, is the graph's to know): ``{"decisions": [...]}``, or a
    map from interrupt ids to such objects.

    Args:
        resume: The ``resume`` of a run request's ``command``.

    Returns:
        A message naming the field and the expected form (never a value), or None.
    """
    if isinstance(resume, Mapping) and "decisions" not in resume and resume:
        if all(isinstance(value, Mapping) for value in resume.values()):
            for value in resume.values():  # keyed by interrupt id
                problem = decisions_problem(value, None)
                if problem is not None:
                    return problem.replace("resume", "resume.<interrupt id>", 1)
            return None
    return decisions_problem(resume, None)


def ask(request: ApprovalRequest) -> list[ApprovalDecision]:
    """Pause with ``request`` until a resume answers it; return the decisions.

    A malformed answer is asked again (:func:`with_problem`) rather than failing the run.
    On resume the calling node runs again from its start; every answer given so far comes
    back from ``interrupt()`` in order, so the loop reaches the same point each time.

    Args:
        request: The approval request.

    Returns:
        One approve or reject decision per action, in order.
    """
    expected = len(request["action_requests"])
    asked = request
    while True:
        answer = interrupt(asked)
        problem = decisions_problem(answer, expected)
        if problem is None:
            return read_decisions(answer, expected)
        asked = with_problem(request, problem)


def read_decisions(response: object, expected: int) -> list[ApprovalDecision]:
    """Return the decisions of a resume value, checked.

    Args:
        response: What ``interrupt()`` returned.
        expected: How many actions the request holds.

    Returns:
        One approve or reject decision per action, in order.

    Raises:
        ResumeError: If the value does not answer the request; the message names the
            field, never a value.
    """
    problem = decisions_problem(response, expected)
    if problem is not None:
        raise ResumeError(problem)
    return cast("list[ApprovalDecision]", list(cast("Mapping[str, Any]", response)["decisions"]))


def reject_reason(decision: Mapping[str, Any]) -> str | None:
    """Return a reject decision's reason, or None when it gave none.

    Args:
        decision: One decision of a response.

    Returns:
        The reason, when the decision rejects with a non-blank message.
    """
    if decision.get("type") != "reject":
        return None
    message = decision.get("message")
    return message if isinstance(message, str) and message.strip() else None
