"""The library README's blocks and the classes' ``Example:`` blocks, run exactly as printed.

The README's Python blocks, in order: ``create_agent``, policies, a hand-built graph,
an MCP server's tool, a side effect run once. Each asserts what it shows and writes nothing to
stdout or stderr (the root logger as a fresh interpreter has it: a server that logs each
request would show here). The hand-built graph and the side effect need only langgraph and run
everywhere; the ``create_agent`` blocks need the ``[langchain]`` extra, and where it is missing
(langgraph 0.6.6) the middleware's import error is checked instead; the MCP block runs where
langchain-mcp-adapters is. Every block imports only what the ``pip install`` lines above it
bring (pyproject's extras); every function the README names is public, and the README stays at
most 14,000 bytes. The site's home page shows these blocks (test_soa_site).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import inspect
import io
import logging
import os
import re
import sys
import tomllib
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest
import stop_on_artifact
import stop_on_artifact.messages
import stop_on_artifact.testing
from soa_graphs import has_middleware
from stop_on_artifact import StopDecision, StopRouter, StopSettings

README = Path(__file__).resolve().parents[1] / "README.md"
MAX_BYTES = 14_000  # 12,000 until the side effects section
BLOCK = re.compile(r"```python\n(.*?)```", flags=re.S)
NAMES = ("create_agent", "policies", "hand_built", "mcp", "side_effects")
NEEDS = {
    "create_agent": "langchain",
    "policies": "langchain",
    "mcp": "langchain_mcp_adapters",
}
INSTALL = re.compile(r'^pip install "stop-on-artifact(?:\[([\w,-]+)\])?"$')  # the index's name
CLONE = 'pip install "./libs/stop-on-artifact[langchain]"'  # unreleased work, from a clone
MIDDLEWARE = {"StopOnArtifactMiddleware", "PolicyMiddleware"}  # the [langchain] extra's names


def text() -> str:
    return README.read_text("utf-8")


def blocks() -> dict[str, str]:
    found = BLOCK.findall(text())
    assert len(found) == len(NAMES), f"the README has {len(found)} Python blocks"
    return dict(zip(NAMES, found, strict=True))


def runner(monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], Any]:
    module = types.ModuleType("library_readme")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__

    def run(name: str, block: str) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), fresh_logging() as err:
            exec(compile(block, f"README:{name}", "exec"), namespace)  # noqa: S102
        assert err.getvalue() == "", f"README:{name} wrote to stderr:\n{err.getvalue()}"
        return out.getvalue()

    return namespace, run


@contextlib.contextmanager
def fresh_logging() -> Iterator[io.StringIO]:
    """Capture stderr, the root logger as in a fresh interpreter: no handler, level WARNING.

    A library that sets logging up when used (FastMCP calls ``logging.basicConfig``) then writes
    what a reader's script would show. pytest's own handlers come back afterwards.
    """
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()
    root.setLevel(logging.WARNING)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            yield err
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def test_the_readme_is_at_most_14000_bytes() -> None:
    size = len(README.read_bytes())
    assert size <= MAX_BYTES, f"README.md is {size} bytes"


def test_the_install_lines_name_the_index_package_then_the_clone_for_unreleased_work() -> None:
    # The README is the package index's page: its install lines name the package there; the
    # clone's path comes after the first, for what is not released yet.
    installs = re.findall(r"```bash\n(.*?)```", text(), flags=re.S)
    assert len(installs) >= 2  # the first, [langchain]; one before each block needing more
    assert installs[0].strip() == 'pip install "stop-on-artifact[langchain]"'
    for install in installs:
        for line in install.strip().splitlines():
            assert INSTALL.match(line), line  # pip install "stop-on-artifact[extras]"
    prose = " ".join(text().split())
    first = prose.index('pip install "stop-on-artifact[langchain]"')
    clone = prose.index("Unreleased work installs from a clone of the repository")
    assert first < clone < prose.index(f"`{CLONE}`")
    assert "not on an index" not in prose
    project = tomllib.loads((README.parent / "pyproject.toml").read_text("utf-8"))["project"]
    assert project["name"] == "stop-on-artifact"
    for install in installs:
        for extra in INSTALL.findall(install.strip()):
            assert not extra or set(extra.split(",")) <= set(project["optional-dependencies"])


def module(requirement: str) -> str:
    """The module a requirement's distribution installs: ``langchain-core>=0.3``, langchain_core."""
    found = re.match(r"[A-Za-z0-9_.-]+", requirement)
    assert found, requirement
    return found.group().lower().replace("-", "_")


def brought() -> dict[str, set[str]]:
    """The top-level modules each install brings: ``""`` the library alone, else an extra."""
    project = tomllib.loads((README.parent / "pyproject.toml").read_text("utf-8"))["project"]
    core = {module(requirement) for requirement in project["dependencies"]}
    core |= {"stop_on_artifact", "pydantic", "typing_extensions"}  # both come with langchain-core
    found = {"": core}
    for extra, requirements in project["optional-dependencies"].items():
        found[extra] = {module(requirement) for requirement in requirements}
    return found


def imported(code: str) -> set[str]:
    """The top-level modules a block imports, beyond the standard library.

    The middleware's names count as langchain: the library imports it for them.
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
            if node.module == "stop_on_artifact" and MIDDLEWARE & {a.name for a in node.names}:
                found.add("langchain")
    return found - set(sys.stdlib_module_names)


def test_each_block_imports_only_what_the_install_lines_above_it_bring() -> None:
    extras = brought()
    installed = set(extras[""])
    shown: list[str] = []
    for kind, code in re.findall(r"```(bash|python)\n(.*?)```", text(), flags=re.S):
        if kind == "bash":
            for line in code.strip().splitlines():
                match = INSTALL.match(line)
                assert match, line
                for extra in filter(None, (match.group(1) or "").split(",")):
                    assert extra in extras, f"{line}: pyproject.toml has no extra {extra!r}"
                    installed |= extras[extra]
                shown.append(line)
            continue
        missing = imported(code) - installed
        assert not missing, f"after {shown}, a block imports {sorted(missing)}:\n{code[:200]}"
    assert shown, "the README shows no install line"


def test_the_blocks_come_in_the_order_the_sections_promise() -> None:
    found = blocks()
    assert "create_agent(" in found["create_agent"]
    assert found["policies"].index("PolicyMiddleware(") < found["policies"].index(
        "StopOnArtifactMiddleware()"
    )
    assert "checkpointer=" in found["policies"]
    assert "StopRouter(" in found["hand_built"]
    assert "from langchain." not in found["hand_built"]  # the floor: langgraph only
    ends = (README.parent / "docs" / "ends.md").read_text("utf-8")  # its blocks: test_soa_docs
    assert "create_deep_agent(" in ends and "subagent_stops=True" in ends
    assert '"subagent_model_calls"] == 1' in ends and "docs/ends.md" in text()
    assert 'pip install "stop-on-artifact[deepagents]"' in ends
    assert "adopt(tool)" in found["mcp"] and "load_mcp_tools(" in found["mcp"]
    assert "InjectedIdempotencyKey]" in found["side_effects"]
    assert "from langchain." not in found["side_effects"]  # langgraph only, as on 0.6.6


def needs(name: str) -> bool:
    """Return whether what block ``name`` needs is installed (required: it must be)."""
    if NEEDS.get(name) in os.environ.get("COMPAT_REQUIRED", "").split(","):
        return True  # a stranger's install of the extras: the block runs, or fails
    if NEEDS.get(name) == "langchain":
        return has_middleware()
    if NEEDS.get(name) == "langchain_mcp_adapters":  # on langchain 1.x
        return has_middleware() and importlib.util.find_spec(NEEDS[name]) is not None
    return True


@pytest.mark.parametrize("name", NAMES)
def test_the_readme_block_runs_as_printed(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    found = blocks()
    _, run = runner(monkeypatch)  # a fresh namespace: every block runs on its own
    if not needs(name):
        if NEEDS[name] != "langchain":
            pytest.skip(f"{NEEDS[name]} is a dev dependency only")
        with pytest.raises(ImportError, match="langchain"):  # the block imports langchain first
            run(name, found[name])
        with pytest.raises(ImportError, match=r"stop-on-artifact\[langchain\]"):
            exec("from stop_on_artifact import StopOnArtifactMiddleware", {})  # noqa: S102
        return
    assert run(name, found[name]) == ""  # every check is an assert in the block
    assert "assert" in found[name]


def test_no_docstring_holds_a_code_example_the_readme_does_not_run() -> None:
    sources = sorted((README.parent / "src" / "stop_on_artifact").glob("*.py"))
    assert sources
    assert [path.name for path in sources if "```" in path.read_text("utf-8")] == []


def loaded(module: Any, name: str) -> Any:
    """The module's attribute; None for the middleware where langchain 1.x is missing."""
    try:
        return getattr(module, name)
    except ImportError:
        assert not has_middleware()
        return None


def public_names() -> set[str]:
    """The three public ``__all__``, and the public attributes of the classes they list."""
    modules = (stop_on_artifact, stop_on_artifact.testing, stop_on_artifact.messages)
    public = {name for module in modules for name in module.__all__}
    classes = [c for m in modules for n in m.__all__ if isinstance(c := loaded(m, n), type)]
    return public | {name for cls in classes for name in vars(cls) if not name.startswith("_")}


def test_every_function_the_readme_names_is_public() -> None:
    readme = text()
    assert "stop_on_artifact._" not in readme, "the README names an internal module"
    named = set(re.findall(r"`([A-Za-z_]\w*)\(", readme))
    imports = re.findall(r"from stop_on_artifact[\w.]* import (\([^)]*\)|[^\n]+)", readme)
    for imported in imports:
        named |= {name.strip(" ()\n") for name in imported.split(",")} - {""}
    assert named, "the README names no function"
    assert named <= public_names(), sorted(named - public_names())


def test_the_readme_names_every_setting_argument_and_rule() -> None:
    readme = text()
    arguments = set(inspect.signature(StopRouter.__init__).parameters) - {"self"}
    arguments -= {"settings", "on_decision", "on_model_call"}  # named as a whole, or hooks
    rules = set(get_args(get_type_hints(StopDecision)["rule"]))
    assert "stop_mode_never" in rules
    for name in set(StopSettings.model_fields) | arguments | rules:
        assert f"`{name}" in readme, name


def test_every_readme_link_works_on_a_package_index_page() -> None:
    # A package index shows the README alone: a relative link there points nowhere.
    # readme-renderer[md] renders as the index does; the dev tools have it, a wheel's env not
    renderer = pytest.importorskip("readme_renderer.markdown")
    html = renderer.render(text(), variant="GFM")
    assert html is not None and "<h2" in html and "<code>" in html, "the README did not render"
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert [href for href in hrefs if not href.startswith(("https://", "#"))] == []


def test_the_readme_rendered_as_an_index_does_opens_with_the_index_install_line() -> None:
    # What PyPI shows: the README rendered by readme-renderer (GFM) and nothing else. The
    # first code block a reader meets there installs from the index; the clone line follows.
    renderer = pytest.importorskip("readme_renderer.markdown")
    html = renderer.render(text(), variant="GFM")
    assert html is not None
    first = re.search(r"<pre[^>]*>(.*?)</pre>", html, flags=re.S)  # highlighted: spans inside
    assert first is not None, "no code block rendered"
    shown = re.sub(r"<[^>]+>", "", first[1]).replace("&quot;", '"').strip()
    assert shown == 'pip install "stop-on-artifact[langchain]"'
    after = html[first.end() :]
    assert f"<code>{CLONE}</code>" in after.replace("&quot;", '"')
    assert "not on an index" not in html
