"""The README's "Use it in your own agent" blocks, run exactly as printed, in order.

They import only the library and langchain / langgraph (never this app), as a stranger's
agent would.
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


def test_the_section_starts_from_installing_the_library_and_links_its_readme() -> None:
    text = section()
    first = re.search(r"```(\w+)\n(.*?)```", text, flags=re.S)
    assert first is not None and first[1] == "bash"
    assert first[2].startswith('pip install "./libs/stop-on-artifact[langchain]"')
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


def test_the_examples_run_as_printed_and_stop_on_the_artifact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    setup, with_middleware, hand_built, adopting, testing = blocks()
    # A module of its own, as a script has: LangGraph reads the State's annotations there.
    module = types.ModuleType("readme_example")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__

    def run(name: str, block: str) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, f"README:{name}", "exec"), namespace)  # noqa: S102 - our README
        return out.getvalue()

    assert run("setup", setup) == ""
    for name, block in (("create_agent", with_middleware), ("StateGraph", hand_built)):
        assert run(name, block) == "completed | # Order A-17\n", name
        result = namespace["result"]
        # One model call: the tool's text is the answer, relayed without a model.
        model_calls = [m for m in result["messages"] if m.type == "ai" and m.usage_metadata]
        assert len(model_calls) == 1, name
        assert result["messages"][-1].content == ANSWER
        assert result["stop_decision"]["answer_from"] == [result["messages"][-2].tool_call_id]
    # The context's default ("polish") did not replace the middleware's "hard"; a set one does.
    agent, context = namespace["agent"], namespace["AppContext"]
    polished = agent.invoke(namespace["question"], context=context(stop_mode="polish"))
    assert polished["messages"][-1].content != ANSWER
    assert len([m for m in polished["messages"] if m.type == "ai" and m.usage_metadata]) == 2

    printed = run("adopt", adopting)
    assert printed == "{'stop': False, 'reason': 'transient', 'error': 'TimeoutError'}\n"
    assert "eta.internal" not in str(namespace["eta"].invoke(namespace["call"]).content)
    assert run("testing", testing) == ""  # the test function ran and its assertions held
