"""Every Python block of the library's ``docs/*.md`` pages, run exactly as printed.

A page's blocks run in order in one fresh module namespace and assert what they show; a
block followed by a ``text`` block must print exactly that text, any other prints nothing.
A block that imports what is not installed here is skipped with its reason: langchain's
agents or deepagents (the langgraph 0.6.6 environment), the MCP adapters (dev dependencies).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import sys
import types
from pathlib import Path

import pytest
from soa_graphs import has_middleware

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"```(python|text)\n(.*?)```", flags=re.S)
PAGES = sorted(DOCS.glob("*.md"))


def test_the_docs_folder_has_pages_with_python_blocks() -> None:
    assert {"functional.md", "mcp.md"} <= {page.name for page in PAGES}
    for page in PAGES:
        assert "```python" in page.read_text("utf-8"), page.name


def missing(code: str) -> str | None:
    """Name what the block imports that is not installed here, or None."""
    if re.search(r"^from langchain_mcp_adapters|^from mcp\b", code, flags=re.M):
        if importlib.util.find_spec("langchain_mcp_adapters") is None or not has_middleware():
            return "langchain-mcp-adapters"
    if re.search(r"^from deepagents|^import deepagents", code, flags=re.M):
        if importlib.util.find_spec("deepagents") is None or not has_middleware():
            return "deepagents"
    if re.search(r"^from langchain\.agents", code, flags=re.M) and not has_middleware():
        return "langchain 1.x"
    return None


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_the_page_runs_as_printed(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = BLOCK.findall(page.read_text("utf-8"))
    for kind, code in found:
        if kind == "python" and (needed := missing(code)) is not None:
            pytest.skip(f"{page.name} needs {needed}, not installed here")
    module = types.ModuleType(f"library_docs_{page.stem}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for index, (kind, code) in enumerate(found):
        if kind != "python":
            continue
        assert "assert" in code, f"{page.name}: block {index} checks nothing"
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"docs/{page.name}:{index}", "exec"), module.__dict__)  # noqa: S102
        shown = found[index + 1] if index + 1 < len(found) else None
        expected = shown[1] if shown is not None and shown[0] == "text" else ""
        assert out.getvalue() == expected, f"{page.name}: block {index} printed otherwise"
