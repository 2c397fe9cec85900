"""The API reference site (``make docs-build``): one page per public name, built strictly.

The reference pages are generated files: ``python libs/stop-on-artifact/tests/test_soa_site.py``
rewrites ``docs/reference/`` and the Reference part of ``mkdocs.yml``'s nav from the three
public ``__all__``, so a new public name without its page fails here until it is run. The strict
build needs the dev tools (mkdocs, mkdocstrings); the compat environments have neither and skip
it. Every public name's docstring has an ``Example:`` whose ``>>>`` lines run as printed, and
the docstrings are Markdown as mkdocstrings renders it: ``[X][stop_on_artifact.X]`` links a
public name, single backticks mark code; a reStructuredText role or a double-backtick literal
would show on the site as typed.
"""

from __future__ import annotations

import ast
import doctest
import html
import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import stop_on_artifact
import stop_on_artifact.messages
import stop_on_artifact.testing
from soa_graphs import has_middleware

LIBRARY = Path(__file__).resolve().parents[1]
MKDOCS = LIBRARY / "mkdocs.yml"
REFERENCE = LIBRARY / "docs" / "reference"
PACKAGE = LIBRARY / "src" / "stop_on_artifact"
MODULES = ("testing", "messages", "whatif")  # one page each, listing its __all__
# the [langchain] extra's modules
NEEDS_LANGCHAIN = {"_middleware", "_policy_middleware", "_structured"}
RST = re.compile(r":[a-z]+:`|(?<!`)``(?!`)")  # a role, or a literal's double backticks (no fence)


def pages() -> dict[str, str]:
    """Each reference page's file name and text: one per name, one per public module."""
    found = {f"{name}.md": f"::: stop_on_artifact.{name}\n" for name in stop_on_artifact.__all__}
    for stem in MODULES:
        module = importlib.import_module(f"stop_on_artifact.{stem}")
        members = "".join(f"        - {name}\n" for name in module.__all__)
        found[f"{stem}.md"] = (
            f"::: stop_on_artifact.{stem}\n    options:\n      members:\n{members}"
        )
    return found


def nav() -> str:
    """The nav's Reference part, the last lines of ``mkdocs.yml``."""
    names = sorted(stop_on_artifact.__all__, key=str.lower)
    lines = [f"      - {name}: reference/{name}.md" for name in names]
    lines += [f"      - stop_on_artifact.{stem}: reference/{stem}.md" for stem in MODULES]
    return "  - Reference:\n" + "\n".join(lines) + "\n"


def write() -> None:
    """Rewrite the reference pages and the nav's Reference part."""
    for stale in REFERENCE.glob("*.md"):
        stale.unlink()
    REFERENCE.mkdir(exist_ok=True)
    for name, text in pages().items():
        (REFERENCE / name).write_text(text, "utf-8")
    config = MKDOCS.read_text("utf-8")
    MKDOCS.write_text(config[: config.index("  - Reference:\n")] + nav(), "utf-8")


def test_every_public_name_has_its_reference_page_and_nav_entry() -> None:
    on_disk = {path.name: path.read_text("utf-8") for path in REFERENCE.glob("*.md")}
    assert on_disk == pages(), "run: python libs/stop-on-artifact/tests/test_soa_site.py"
    assert MKDOCS.read_text("utf-8").endswith(nav()), "the nav's Reference part is stale"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the site strictly once for this module's tests; fail on any warning."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    site = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(MKDOCS), "-d", str(site)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # material's banner, no warning of ours
    )
    assert done.returncode == 0, done.stderr
    assert "WARNING -" not in done.stderr, done.stderr
    return site


def readme_sections() -> dict[str, str]:
    """The README's named sections the home page includes, by name, as the site shows them.

    A section runs from ``<!-- --8<-- [start:name] -->`` to ``<!-- --8<-- [end:name] -->``,
    each alone on its line (an HTML comment: a package index shows nothing). Names, not line
    numbers: a README edit above a section cannot shift it.
    """
    index = (LIBRARY / "docs" / "index.md").read_text("utf-8")
    assert not re.search(r'--8<-- "README\.md:\d', index), "a line range: use a named section"
    names = re.findall(r'^--8<-- "README\.md:([a-z][-_0-9a-z]*)"$', index, flags=re.M)
    readme = (LIBRARY / "README.md").read_text("utf-8")
    found: dict[str, str] = {}
    for name in names:
        start, end = f"<!-- --8<-- [start:{name}] -->\n", f"\n<!-- --8<-- [end:{name}] -->\n"
        assert readme.count(start) == 1 and readme.count(end) == 1, name
        found[name] = readme[readme.index(start) + len(start) : readme.index(end)]
    return found


def test_the_home_page_includes_every_readme_block() -> None:
    sections = readme_sections()
    assert {"intro", "examples"} <= set(sections)
    readme = (LIBRARY / "README.md").read_text("utf-8")
    for code in re.findall(r"```(?:python|bash)\n.*?```", readme, flags=re.S):
        assert any(code in section for section in sections.values()), code[:200]


def shown_code(site: Path) -> list[str]:
    """The text of every code block on the built site's pages, as a reader copies it."""
    found: list[str] = []
    for page in site.rglob("*.html"):
        for code in re.findall(r"<pre[^>]*>(.*?)</pre>", page.read_text("utf-8"), flags=re.S):
            found.append(html.unescape(re.sub(r"<[^>]+>", "", code)))
    return found


def test_the_site_shows_every_readme_block_as_printed(site: Path) -> None:
    """Each README block, run by test_soa_readme, appears whole on the built site."""
    shown = shown_code(site)
    readme = (LIBRARY / "README.md").read_text("utf-8")
    blocks = re.findall(r"```(?:python|bash)\n(.*?)```", readme, flags=re.S)
    assert len(blocks) >= 6
    for block in blocks:
        assert any(block.strip() in code for code in shown), block[:200]
    home = re.sub(r"<[^>]+>", "", (site / "index.html").read_text("utf-8"))
    assert "--8&lt;--" not in home and "[start:" not in home  # no marker shows


def test_the_site_builds_strictly_with_the_docstrings(site: Path) -> None:
    for name in ("StopOnArtifactMiddleware", "completed", "decide"):
        summary = inspect.getdoc(getattr(stop_on_artifact, name)).splitlines()[0]  # type: ignore[union-attr]
        words = re.sub(r"[`:]|func|class", "", summary).split()[:5]
        built = (site / "reference" / name / "index.html").read_text("utf-8")
        plain = re.sub(r"<[^>]+>", "", built)
        assert " ".join(words) in " ".join(plain.split()), (name, words)
    home = (site / "index.html").read_text("utf-8")
    assert "Settings" in home and "content_and_artifact" in home


def test_the_built_pages_show_no_restructuredtext_or_unresolved_link(site: Path) -> None:
    for page in site.rglob("*.html"):
        text = re.sub(r"<[^>]+>", "", page.read_text("utf-8"))
        assert not RST.search(text), (page.relative_to(site), RST.search(text))
        assert "][stop_on_artifact." not in text, page.relative_to(site)  # a link left as typed


def docstrings(path: Path) -> list[tuple[int, str]]:
    """Each docstring of a source file (module, class, function, attribute) and its line."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                found.append((node.lineno, node.value.value))
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda path: path.name)
def test_no_docstring_uses_restructuredtext(path: Path) -> None:
    typed = [(line, RST.search(text)) for line, text in docstrings(path) if RST.search(text)]
    assert not typed, f"{path.name}: RST roles or ``literals`` at lines {typed}; use `x`"


def public_objects() -> dict[str, object]:
    """The functions and classes of ``stop_on_artifact.__all__`` (data aside)."""
    found: dict[str, object] = {}
    for name in stop_on_artifact.__all__:
        try:
            value = getattr(stop_on_artifact, name)
        except ImportError:  # the middleware without langchain 1.x
            assert not has_middleware()
            continue
        if inspect.isclass(value) or inspect.isfunction(value):
            found[name] = value
    return found


@pytest.mark.parametrize("name", sorted(public_objects()))
def test_every_public_name_has_args_and_an_example(name: str) -> None:
    value = public_objects()[name]
    doc = inspect.getdoc(value) or ""
    assert "\nExample:\n" in doc and "    >>> " in doc, f"{name} has no doctest Example:"
    if inspect.isfunction(value):
        takes = [p for p in inspect.signature(value).parameters if p not in ("self", "cls")]
        if takes:
            assert "\nArgs:\n" in doc, f"{name} takes {takes} but has no Args:"


def library_modules() -> list[str]:
    names = [f"stop_on_artifact.{path.stem}" for path in sorted(PACKAGE.glob("*.py"))]
    return [name.removesuffix(".__init__") for name in names]


@pytest.mark.parametrize("module_name", library_modules())
def test_the_docstring_examples_run_as_printed(module_name: str) -> None:
    if module_name.rsplit(".", 1)[-1] in NEEDS_LANGCHAIN and not has_middleware():
        pytest.skip("the middleware needs langchain 1.x, not installed here")
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, module_name, globs={}):
        runner.run(test)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, f"{module_name}: {results.failed} examples failed (see stdout)"


if __name__ == "__main__":
    write()
