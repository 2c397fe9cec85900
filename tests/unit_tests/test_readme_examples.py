"""The README's "Use it in your own agent" blocks, run exactly as printed."""

from __future__ import annotations

import contextlib
import io
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "## Use it in your own agent"


def blocks() -> list[str]:
    text = README.read_text("utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start : end if end != -1 else None]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_examples_run_as_printed_and_stop_on_the_artifact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    setup, with_middleware, hand_built = blocks()
    # A module of its own, as a script has: LangGraph reads the State's annotations there.
    module = types.ModuleType("readme_example")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__
    exec(compile(setup, "README:setup", "exec"), namespace)  # noqa: S102 - our own README
    for name, block in (("create_agent", with_middleware), ("StateGraph", hand_built)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, f"README:{name}", "exec"), namespace)  # noqa: S102
        assert out.getvalue() == "completed | # Order A-17\n", name
        result = namespace["result"]
        # One model call: the tool's text is the answer, relayed without a model.
        model_calls = [m for m in result["messages"] if m.type == "ai" and m.usage_metadata]
        assert len(model_calls) == 1, name
        assert result["messages"][-1].content == "# Order A-17\n\nShipped on 30 November."
        assert result["stop_decision"]["answer_from"] == [result["messages"][-2].tool_call_id]
