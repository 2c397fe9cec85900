"""Answering an approval on a thread paused before turns kept their context.

The approval request, its checks and the re-ask loop are the library's
(:func:`stop_on_artifact.resume_problem` is the check the server's door in
:mod:`agent.auth` calls). What is
this app's own: a thread paused by an older release holds no turn context
(:mod:`agent.turn`), and a client such as Agent Chat UI resumes with none, so such a resume
runs with ``on_policy_block="ask"`` and the person's answer is honoured.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent.context import Context


def context_for_answer(context: Context | Mapping[str, Any] | None) -> Context | dict[str, Any]:
    """Return the context of a run answering an approval on a thread with no turn context.

    Args:
        context: The resuming run's context, as the server or the caller passed it.

    Returns:
        The same context with ``on_policy_block="ask"``.
    """
    if isinstance(context, Context):
        return context.model_copy(update={"on_policy_block": "ask"})
    return {**(context or {}), "on_policy_block": "ask"}
