"""Serve Aegra's app in uvicorn workers that die with their supervisor.

uvicorn's supervisor starts its workers itself, so :mod:`client.lifeline`'s
``preexec_fn`` cannot reach them; each worker imports this module first and asks for SIGKILL
when the supervisor dies (the launcher's own death signal takes the supervisor down). Runs in
Aegra's environment (``.prod/venv``), where ``aegra_api`` is installed.
"""

from __future__ import annotations

import importlib
import signal
from typing import Any

from client.lifeline import set_parent_death_signal

set_parent_death_signal(signal.SIGKILL)

app: Any = importlib.import_module("aegra_api.main").app
"""``aegra_api.main:app``."""
