"""`python -m client` starts without the agent: what importing the CLI loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import get_args

from agent.context import Context, ForcedOutcome
from agent.tools.outcomes import DEFAULT_WEIGHTS
from client import context_flags

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("langgraph", "langchain_core", "langgraph_sdk", "agent", "stop_on_artifact")


def test_importing_the_cli_and_its_api_client_loads_no_heavy_module() -> None:
    code = (
        "import sys, client.cli, client.api; "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_the_flags_copy_matches_the_context() -> None:
    assert context_flags.flags_of(Context) == context_flags.FIELDS
    assert context_flags.OUTCOMES == get_args(ForcedOutcome)
    assert context_flags.DEFAULT_SEED == Context.model_fields["seed"].default
    assert dict(context_flags.DEFAULT_WEIGHTS) == dict(DEFAULT_WEIGHTS)
