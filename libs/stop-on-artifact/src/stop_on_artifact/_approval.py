"""Asking a person about tool calls with langchain's human-in-the-loop request, as plain dicts."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from langgraph.config import get_config
from langgraph.types import interrupt

if TYPE_CHECKING:
    from langchain.agents.middleware import human_in_the_loop as hitl

    Action: TypeAlias = hitl.ActionRequest
    Decision: TypeAlias = hitl.ApproveDecision | hitl.RejectDecision

ALLOWED_DECISIONS = ("approve", "reject")
MAX_REASON_CHARS = 200  # the longest part of a reject's reason that reaches the answer
_claims: OrderedDict[tuple[str, str], str] = OrderedDict()  # (thread, task) -> the run
_lock = threading.Lock()


class ResumeError(ValueError):
    """A resume value that does not answer the pending approval request."""


class ApprovalUsedError(RuntimeError):
    """Another run already used the answer to this pause: nothing of the step ran twice.

    The claim is held in this process. Across processes or workers, one answer per pause is
    the server's: LangGraph's API refuses a resume sent with `multitask_strategy="reject"`
    while another run holds the thread, and a server of your own must run one run per thread.

    Example:
        Raised by the approval step's second use of one answer:

            >>> from stop_on_artifact import ApprovalUsedError
            >>> issubclass(ApprovalUsedError, RuntimeError)
            True
    """


def with_problem(request: hitl.HITLRequest, problem: str) -> hitl.HITLRequest:
    """Return `request` asked again, each description led by what was wrong."""
    note = f"The last answer could not be used: {problem}."
    actions: list[hitl.ActionRequest] = [
        {**action, "description": f"{note}\n\n{action.get('description', '')}".rstrip()}
        for action in request["action_requests"]
    ]
    return {"action_requests": actions, "review_configs": list(request["review_configs"])}


def is_approval_request(value: object) -> bool:
    """Return True when an interrupt's value holds `action_requests` and `review_configs`."""
    keys = ("action_requests", "review_configs")
    return isinstance(value, Mapping) and all(isinstance(value.get(k), list) for k in keys)


def decisions_problem(response: object, expected: int | None) -> str | None:
    """Name the field wrong in a resume for `expected` actions (None: any), never a value."""
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


def resume_problem(resume: object) -> str | None:
    """Check a run's `command.resume` at a server's door, by itself or by interrupt id.

    Args:
        resume: The resume value, as a client sent it.

    Returns:
        None when it answers a pause, else what is wrong, naming the field.

    Example:
        A server checks a resume value before the run starts:

            >>> from stop_on_artifact import resume_problem
            >>> resume_problem({"decisions": [{"type": "approve"}]}) is None
            True
            >>> resume_problem({"decisions": [{"type": "maybe"}]})
            "resume.decisions[0].type must be one of ['approve', 'reject']"
    """
    if isinstance(resume, Mapping) and "decisions" not in resume and resume:
        if all(isinstance(value, Mapping) for value in resume.values()):
            for value in resume.values():  # keyed by interrupt id
                if (problem := decisions_problem(value, None)) is not None:
                    return problem.replace("resume", "resume.<interrupt id>", 1)
            return None
    return decisions_problem(resume, None)


def read_decisions(response: object, expected: int) -> list[Decision]:
    """Return a resume value's decisions; `ResumeError` names the field if it is wrong."""
    if (problem := decisions_problem(response, expected)) is not None:
        raise ResumeError(problem)
    return list(cast("Mapping[str, Any]", response)["decisions"])


def reject_reason(decision: Mapping[str, Any]) -> str | None:
    """Return a reject's non-blank reason on one line, cut, Markdown and `$` escaped; or None."""
    message = decision.get("message") if decision.get("type") == "reject" else None
    if not isinstance(message, str) or not message.strip():
        return None
    flat = " ".join(message.split())
    if len(flat) > MAX_REASON_CHARS:
        flat = flat[: MAX_REASON_CHARS - 1].rstrip() + "…"
    pieces = "".join(f"\\{c}" if c in "\\`*_[]<>|~#" else c for c in flat).split("$")
    out = [pieces[0]]
    for before, after in zip(pieces, pieces[1:], strict=False):
        out += ["$" if (len(before) - len(before.rstrip("\\"))) % 2 else "\\$", after]
    return "".join(out)


def ask(actions: Sequence[hitl.ActionRequest]) -> list[Decision]:
    """Pause until a resume answers `actions` (a malformed answer is asked again); claim it."""
    configs = [
        {"action_name": a["name"], "allowed_decisions": ["approve", "reject"]} for a in actions
    ]
    request: Any = {"action_requests": list(actions), "review_configs": configs}
    asked = request
    while (problem := decisions_problem(answer := interrupt(asked), len(actions))) is not None:
        asked = with_problem(request, problem)
    claim_answer()
    return read_decisions(answer, len(actions))


def claim_answer() -> None:
    """Claim the answered pause (thread, task namespace) for this run; raise if another did."""
    try:
        config = get_config()
    except RuntimeError:  # outside a graph run: nothing to race with
        return
    configurable = config.get("configurable") or {}
    if (thread := configurable.get("thread_id")) is None:
        return
    key = (str(thread), str(configurable.get("checkpoint_ns", "")))
    owner = str(getattr(config.get("callbacks"), "parent_run_id", None) or id(config))
    with _lock:
        if _claims.get(key, owner) != owner:
            msg = "another run already used the answer to this approval; nothing ran twice"
            raise ApprovalUsedError(msg)
        _claims[key] = owner
        _claims.move_to_end(key)
        if len(_claims) > 10_000:
            _claims.popitem(last=False)
