"""The app is the library's first stranger: it imports only what the library calls public.

Walks every module of ``agent/`` and ``bench/`` with ``ast`` and fails on a
``stop_on_artifact`` name that is underscore-private, missing from its module's
``__all__``, or from an internal (``_``-prefixed) module.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
import stop_on_artifact

ROOT = Path(__file__).resolve().parents[2]
WALKED = ("agent", "bench")


def sources() -> list[Path]:
    return sorted(path for folder in WALKED for path in (ROOT / folder).rglob("*.py"))


def problem(module_name: str, name: str | None) -> str | None:
    """Return why importing ``name`` from ``module_name`` crosses the boundary, or None."""
    if any(part.startswith("_") for part in module_name.split(".")[1:]):
        return f"{module_name} is internal"
    module = importlib.import_module(module_name)
    if name is None:
        return None
    if name.startswith("_"):
        return f"{module_name}.{name} is private"
    public = getattr(module, "__all__", None)
    if module is stop_on_artifact and name not in stop_on_artifact.__all__:
        return f"{name} is not in stop_on_artifact.__all__"
    if public is not None and name not in public:
        return f"{module_name}.{name} is not in that module's __all__"
    return None


def crossings(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text("utf-8"))
    aliases: set[str] = set()
    found: list[str | None] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("stop_on_artifact"):
            found += [problem(str(node.module), alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("stop_on_artifact"):
                    found.append(problem(alias.name, None))
                    if alias.name == "stop_on_artifact":
                        aliases.add(alias.asname or alias.name)
    for node in ast.walk(tree):  # stop_on_artifact.X through `import stop_on_artifact as s`
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            found.append(problem("stop_on_artifact", node.attr))
    return [f"{path.relative_to(root)}: {why}" for why in found if why is not None]


def test_the_walk_sees_the_app_and_its_library_imports() -> None:
    paths = sources()
    assert any(p.match("agent/graphs/legacy.py") for p in paths)
    assert sum("stop_on_artifact" in p.read_text("utf-8") for p in paths) >= 10


def test_the_app_imports_only_public_library_names() -> None:
    assert [why for path in sources() for why in crossings(path)] == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from stop_on_artifact._decision import decide", "internal"),
        ("from stop_on_artifact._markdown import excerpt", "internal"),
        ("from stop_on_artifact.messages import scan_turn", "__all__"),
        ("from stop_on_artifact.messages import _nothing", "private"),
        ("from stop_on_artifact import parts", "stop_on_artifact.__all__"),
        ("import stop_on_artifact as s\ns.scan_turn", "stop_on_artifact.__all__"),
        ("import stop_on_artifact._policies", "internal"),
    ],
)
def test_a_crossing_is_caught(tmp_path: Path, source: str, expected: str) -> None:
    path = tmp_path / "probe.py"
    path.write_text(source + "\n", "utf-8")
    found = crossings(path, tmp_path)
    assert len(found) == 1
    assert expected in found[0]


def test_the_public_helpers_resolve() -> None:
    from stop_on_artifact import messages

    for name in messages.__all__:
        assert callable(getattr(messages, name)) or isinstance(getattr(messages, name), str)
