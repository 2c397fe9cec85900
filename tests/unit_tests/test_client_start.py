"""`python -m client` starts without the agent and renders answers on a terminal."""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from agent.context import Context, ForcedOutcome
from agent.tools.checkout import receipt
from agent.tools.outcomes import DEFAULT_WEIGHTS
from client import context_flags
from client.terminal import plain_text, show

ROOT = Path(__file__).resolve().parents[2]
BENCH_COMMAND = ".venv/bin/python -m bench.client_start"
RECEIPT = receipt("a **gaming chair**", 250, "ORD-7")
"""The checkout tool's receipt: a heading, a bold label, a table, the caller's ``**`` escaped."""
EXPECTED_ROWS = (
    "python -c pass",
    "client --help",
    "client ask --help",
    "client check --help",
    "client answer --help",
    "client report --help",
    "client --no-such-flag",
    "question overhead",
)
HEAVY = ("langgraph", "langchain_core", "langgraph_sdk", "agent", "stop_on_artifact")
SERVER_SIDE = ("langgraph", "agent", "stop_on_artifact")
"""What the server runs: a question loads none of it (the SDK loads part of langchain_core)."""


@pytest.mark.parametrize(
    ("step", "heavy"),
    [
        ("pass", (*HEAVY, "httpx", "rich")),  # what --help and a bad flag import
        ("cli.connect(cli.DEFAULT_URL)", SERVER_SIDE),  # what a question adds: the SDK
    ],
)
def test_the_client_loads_no_heavy_module(step: str, heavy: tuple[str, ...]) -> None:
    code = (
        f"import sys; from client import cli; {step}; "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r})))"
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


def test_piped_output_is_the_text_without_markdown_escapes() -> None:
    out = io.StringIO()
    assert r"a \*\*gaming chair\*\*" in RECEIPT  # the escapes to undo
    show(RECEIPT, out)
    assert "| a **gaming chair** | $250.00 |" in out.getvalue()
    assert "\\" not in out.getvalue()
    fenced = "```\nx = '\\*'\n```\n`a\\*` \\*"
    assert plain_text(fenced) == "```\nx = '\\*'\n```\n`a\\*` *"


def test_a_terminal_gets_rendered_markdown() -> None:
    leader, follower = os.openpty()
    with os.fdopen(follower, "w") as terminal:
        show(RECEIPT, terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    text = shown.decode()
    assert "gaming chair" in text and "$250.00" in text and "Thank you" in text
    # The caller's own asterisks show as typed; markup renders; no backslash is left.
    assert "a **gaming chair**" in text and "ORD-7" in text and "**ORD-7**" not in text
    assert "Total charged" in text and "**Total charged**" not in text
    assert "\\" not in text and "# Thank" not in text and "| Item |" not in text


def test_the_benchmark_command_runs_as_bench_readme_prints_it() -> None:
    readme = (ROOT / "bench" / "README.md").read_text("utf-8")
    assert f"```bash\n{BENCH_COMMAND}\n```" in readme
    done = subprocess.run(
        shlex.split(BENCH_COMMAND), cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode in (0, 1), done.stderr[-2000:]  # 1: a median missed its target
    rows = [line.split(" | ")[0] for line in done.stdout.splitlines() if line.startswith("| ")]
    assert rows[1:] == [f"| {name}" for name in EXPECTED_ROWS]
    for line in done.stdout.splitlines()[3:]:
        median, fastest, slowest = (float(cell) for cell in line.split("|")[2:5])
        assert 0 < fastest <= median <= slowest
