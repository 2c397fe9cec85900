"""Serve Aegra's app in uvicorn workers that die with their supervisor.

uvicorn's supervisor starts its workers itself, so :mod:`client.lifeline`'s
``preexec_fn`` cannot reach them; each worker imports this module first and asks for SIGKILL
when the supervisor dies (the launcher's own death signal takes the supervisor down). Runs in
Aegra's environment (``.prod/venv``), where ``aegra_api`` is installed. Each worker also
waits for a run's end with :func:`agent.frameworks.aegra.quick_completion_wait`, and keeps
LangGraph's rules for runs of one thread with :func:`agent.frameworks.aegra.one_run_per_thread`
(one run at a time, in creation order, under the run's multitask strategy; one answer per
pause), across workers.
"""

from __future__ import annotations

import importlib
import signal
from typing import Any

from agent.frameworks.aegra import one_run_per_thread, quick_completion_wait
from client.lifeline import set_parent_death_signal

set_parent_death_signal(signal.SIGKILL)
quick_completion_wait()  # runs.wait answers within 50 ms of a run's end, not 2 s
one_run_per_thread()  # multitask strategies kept, one answer per pause

app: Any = importlib.import_module("aegra_api.main").app
"""``aegra_api.main:app``."""
