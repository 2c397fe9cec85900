"""The README's "Use it in your own agent" example, run exactly as printed.

It imports only the library and langchain / langgraph (never this app), as a
stranger's agent would.
"""

from __future__ import annotations

import ast
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
ALLOWED = {"__future__", "langchain", "langchain_core", "langgraph", "pydantic", "stop_on_artifact"}
ANSWER = "# Order A-17\n\nShipped on 30 November."


def section() -> str:
    text = README.read_text("utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end != -1 else None]


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", section(), flags=re.S)


def test_the_section_says_how_to_install_the_library_and_links_its_readme() -> None:
    text = section()
    # the index's name first; the clone's path for unreleased work
    assert text.index('`pip install "stop-on-artifact[langchain]"`') < text.index(
        '`pip install "./libs/stop-on-artifact[langchain]"`'
    )
    assert "from a clone of this repository" in text and "not on an index" not in text
    assert "(libs/stop-on-artifact/README.md)" in text


def test_the_examples_import_only_the_library_and_the_frameworks() -> None:
    for block in blocks():
        for node in ast.walk(ast.parse(block)):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] in ALLOWED, name


def test_the_example_runs_as_printed_and_stops_on_the_artifact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (example,) = blocks()  # one short example; the library README has the rest
    # A module of its own, as a script has.
    module = types.ModuleType("readme_example")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(example, "README:create_agent", "exec"), namespace)  # noqa: S102 - our README
    assert out.getvalue() == "completed | # Order A-17\n"
    result = namespace["result"]
    # One model call: the tool's text is the answer, relayed without a model.
    model_calls = [m for m in result["messages"] if m.type == "ai" and m.usage_metadata]
    assert len(model_calls) == 1
    assert result["messages"][-1].content == ANSWER
    assert result["stop_decision"]["answer_from"] == [result["messages"][-2].tool_call_id]
    # Another order times out: the model hears of it instead of the run stopping.
    other = namespace["agent"].invoke({"messages": [{"role": "user", "content": "B-2"}]})
    assert other["stop_decision"]["rule"] != "completed"
    assert other["messages"][-1].content != "The order service timed out (HTTP 504)."
