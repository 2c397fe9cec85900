"""Every Python block of the library's ``docs/*.md`` pages, run exactly as printed.

Each block runs on its own, in a fresh module namespace, prints nothing and asserts what it
shows. A block that imports langchain's agents or deepagents is skipped where that is not
installed (the langgraph 0.6.6 environment); the others run everywhere.
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
BLOCK = re.compile(r"```python\n(.*?)```", flags=re.S)
PAGES = sorted(DOCS.glob("*.md"))
BLOCKS = [
    (f"{page.name}:{number}", code)
    for page in PAGES
    for number, code in enumerate(BLOCK.findall(page.read_text("utf-8")), start=1)
]


def test_the_docs_folder_has_pages_with_python_blocks() -> None:
    assert "functional.md" in [page.name for page in PAGES]
    assert BLOCKS, "no ```python block in docs/*.md"


def missing(code: str) -> str | None:
    """Name what the block imports that is not installed here, or None."""
    if re.search(r"^from deepagents|^import deepagents", code, flags=re.M):
        if importlib.util.find_spec("deepagents") is None or not has_middleware():
            return "deepagents"
    if re.search(r"^from langchain\.agents", code, flags=re.M) and not has_middleware():
        return "langchain 1.x"
    return None


@pytest.mark.parametrize(("name", "code"), BLOCKS, ids=[name for name, _ in BLOCKS])
def test_the_block_runs_as_printed(monkeypatch: pytest.MonkeyPatch, name: str, code: str) -> None:
    if (needed := missing(code)) is not None:
        pytest.skip(f"{name} needs {needed}, not installed here")
    module = types.ModuleType("library_docs")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"docs/{name}", "exec"), module.__dict__)  # noqa: S102
    assert out.getvalue() == ""
    assert "assert" in code  # every check is an assert in the block
