"""The library's docs pages (``docs/*.md``): each Python block runs exactly as printed.

A block followed by a ``text`` block must print that text. A page runs where what it imports
is installed (``NEEDS``): the MCP page needs the adapters, a dev dependency.
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

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"```(python|text)\n(.*?)```", flags=re.S)
NEEDS = {"mcp.md": "langchain_mcp_adapters", "functional.md": None}


def pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def test_every_page_is_known() -> None:
    assert {page.name for page in pages()} <= set(NEEDS), "name what a new page needs in NEEDS"


@pytest.mark.parametrize("page", pages(), ids=lambda page: page.name)
def test_the_page_runs_as_printed(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    needed = NEEDS.get(page.name)
    if needed is not None and importlib.util.find_spec(needed) is None:
        pytest.skip(f"{page.name} needs {needed}")
    found = BLOCK.findall(page.read_text("utf-8"))
    assert any(kind == "python" for kind, _ in found), f"{page.name} has no Python block"
    module = types.ModuleType(f"docs_{page.stem}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    printed = ""
    for index, (kind, block) in enumerate(found):
        if kind == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(block, f"{page.name}:{index}", "exec"), module.__dict__)  # noqa: S102
            printed = out.getvalue()
        elif index and found[index - 1][0] == "python":
            assert printed == block, f"{page.name}: block {index - 1} printed {printed!r}"
