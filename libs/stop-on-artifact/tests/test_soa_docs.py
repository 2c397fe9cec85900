"""Every Python block of the library's ``docs/*.md`` pages, run exactly as printed.

A page's blocks run in order in one fresh module namespace and assert what they show; a
block followed by a ``text`` block must print exactly that text, any other prints nothing.
A block that imports what is not installed here is skipped with its reason: langchain's
agents or deepagents (the langgraph 0.6.6 environment), the MCP adapters (dev dependencies);
where the compat runner lists deepagents or the adapters in ``COMPAT_REQUIRED`` (lib-newest),
their blocks run, and a missing module fails.

The blocks that use langchain's own MCP client (``langchain.mcp``, on fastmcp 4 and mcp 2.x)
cannot run beside the adapters (mcp 1.x): they are a page's second test, ``page.md:langchain.mcp``,
run in their own namespace where fastmcp is installed (the lib-langchain-mcp compat env, which
sets ``COMPAT_REQUIRED=fastmcp``: there a missing fastmcp fails) and skipped elsewhere. So each
block runs in one environment or the other, never in neither.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import sys
import types
from pathlib import Path

import pytest
from soa_graphs import has_middleware

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"```(python|text)\n(.*?)```", flags=re.S)
# the home page shows the README's blocks (test_soa_readme runs them) and a summary: none here
PROSE = {"index.md", "agentdojo.md"}
PAGES = sorted(page for page in DOCS.glob("*.md") if page.name not in PROSE)
LANGCHAIN_MCP = "langchain.mcp"
"""The variant of a page's blocks that use langchain's own MCP client."""


def variant(code: str) -> str:
    """Return ``LANGCHAIN_MCP`` for a block on langchain.mcp / fastmcp, else ``""``."""
    found = re.search(r"^from (langchain\.mcp|fastmcp)\b|^import fastmcp\b", code, flags=re.M)
    return LANGCHAIN_MCP if found else ""


def variants() -> list[tuple[Path, str]]:
    """Each page once per variant its Python blocks use."""
    return [
        (page, name)
        for page in PAGES
        for name in sorted({variant(code) for kind, code in BLOCK.findall(page.read_text("utf-8"))
                            if kind == "python"})
    ]  # fmt: skip


def test_the_docs_folder_has_pages_with_python_blocks() -> None:
    assert {"functional.md", "mcp.md"} <= {page.name for page in PAGES}
    for page in PAGES:
        assert "```python" in page.read_text("utf-8"), page.name


def missing(code: str) -> str | None:
    """Name what the block imports that is not installed here, or None."""
    if variant(code) == LANGCHAIN_MCP:
        if "fastmcp" in os.environ.get("COMPAT_REQUIRED", "").split(","):
            return None  # the compat environment: a missing fastmcp fails when the block runs
        if importlib.util.find_spec("fastmcp") is None or not has_middleware():
            return "langchain[mcp] (fastmcp 4, mcp 2.x; the lib-langchain-mcp compat env)"
        return None
    required = os.environ.get("COMPAT_REQUIRED", "").split(",")  # there: missing fails
    if re.search(r"^from langchain_mcp_adapters|^from mcp\b", code, flags=re.M):
        if "langchain_mcp_adapters" in required:
            return None
        if importlib.util.find_spec("langchain_mcp_adapters") is None or not has_middleware():
            return "langchain-mcp-adapters"
    if re.search(r"^from deepagents|^import deepagents", code, flags=re.M):
        if "deepagents" in required:
            return None
        if importlib.util.find_spec("deepagents") is None or not has_middleware():
            return "deepagents"
    if re.search(r"^from langchain\.agents", code, flags=re.M) and not has_middleware():
        return "langchain 1.x"
    return None


@pytest.mark.parametrize(
    ("page", "blocks"),
    variants(),
    ids=[f"{page.name}:{name}" if name else page.name for page, name in variants()],
)
def test_the_page_runs_as_printed(page: Path, blocks: str, monkeypatch: pytest.MonkeyPatch) -> None:
    found = BLOCK.findall(page.read_text("utf-8"))
    chosen = [kind == "python" and variant(code) == blocks for kind, code in found]
    for (_, code), run in zip(found, chosen, strict=True):
        if run and (needed := missing(code)) is not None:
            pytest.skip(f"{page.name} needs {needed}, not installed here")
    module = types.ModuleType(f"library_docs_{page.stem}_{blocks.replace('.', '_')}".rstrip("_"))
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for index, (_, code) in enumerate(found):
        if not chosen[index]:
            continue
        assert "assert" in code, f"{page.name}: block {index} checks nothing"
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"docs/{page.name}:{index}", "exec"), module.__dict__)  # noqa: S102
        shown = found[index + 1] if index + 1 < len(found) else None
        expected = shown[1] if shown is not None and shown[0] == "text" else ""
        assert out.getvalue() == expected, f"{page.name}: block {index} printed otherwise"
