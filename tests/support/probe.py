"""Run a short Python probe in a fresh interpreter, from the project's root."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_probe(
    python: str | Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -c <probe> args...`` from the project's root; its output as text.

    Args:
        python: The interpreter (the project's, or another environment's).
        *args: The probe's source, then its arguments.
        env: The probe's environment; this process's when None.

    Returns:
        The finished process (never raises on a non-zero exit; the caller asserts).
    """
    return subprocess.run(
        [str(python), "-c", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
