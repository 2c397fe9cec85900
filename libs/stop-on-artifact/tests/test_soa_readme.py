"""The library README's blocks, run exactly as printed, in order.

The hand-built graph runs everywhere; the create_agent blocks need the ``[langchain]`` extra,
and where it is missing (langgraph 0.6.6) the middleware's import error is checked instead.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from soa_graphs import has_middleware

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_examples_run_as_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    hand_built, with_middleware, testing = re.findall(
        r"```python\n(.*?)```", README.read_text("utf-8"), flags=re.S
    )
    module = types.ModuleType("library_readme")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__

    def run(name: str, block: str) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, f"README:{name}", "exec"), namespace)  # noqa: S102
        return out.getvalue()

    assert run("hand-built", hand_built) == "completed | # Refunds\n"
    assert len([m for m in namespace["result"]["messages"] if m.type == "ai"]) == 2
    if not has_middleware():  # the block imports langchain first; the middleware names the extra
        with pytest.raises(ImportError, match="langchain"):
            run("create_agent", with_middleware)
        with pytest.raises(ImportError, match=r"stop-on-artifact\[langchain\]"):
            exec("from stop_on_artifact import StopOnArtifactMiddleware", {})  # noqa: S102
        return
    assert run("create_agent", with_middleware) == (
        "fatal | Nothing in the handbook matches that.\n"
    )
    assert run("testing", testing) == ""
