"""Internal: a person's answer is used by one run, even when two resumes answer at once.

Two runs that resume the same paused step (two clients approving at the same moment, on
one process and one checkpointer) both start from the same checkpoint, so both would run
the approved calls. When a resume's answer is read, its run claims the pause, keyed by the
thread and the asking task (whose id is the same for every run resumed from one
checkpoint); a second run claiming the same pause fails with :class:`ApprovalUsedError`
before any call of the step runs. The run that claimed it may read the answer again (a
node re-run within that run). Servers that run one run per thread at a time
(``langgraph dev``, LangGraph Platform) refuse the second run before it starts.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from langgraph.config import get_config

_CAP = 10_000
_claims: OrderedDict[tuple[str, str], str] = OrderedDict()
_lock = threading.Lock()


class ApprovalUsedError(RuntimeError):
    """Another run already used the answer to this pause: nothing of the step ran twice."""


def claim_answer() -> None:
    """Claim the pause the running task asked about, for the running run.

    Raises:
        ApprovalUsedError: If another run claimed it first.
    """
    try:
        config = get_config()
    except RuntimeError:  # outside a graph run: nothing to race with
        return
    configurable = config.get("configurable") or {}
    thread = configurable.get("thread_id")
    if thread is None:
        return  # no thread, no resume
    key = (str(thread), str(configurable.get("checkpoint_ns", "")))
    owner = str(getattr(config.get("callbacks"), "parent_run_id", None) or id(config))
    with _lock:
        held = _claims.get(key)
        if held is not None and held != owner:
            msg = "another run already used the answer to this approval; nothing ran twice"
            raise ApprovalUsedError(msg)
        _claims[key] = owner
        _claims.move_to_end(key)
        while len(_claims) > _CAP:
            _claims.popitem(last=False)
