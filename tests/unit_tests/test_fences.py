"""A framework's private names are used in ``agent/frameworks`` and nowhere else.

Walks every module of ``agent/`` and ``bench/`` with ``ast`` and flags, outside the fences:
an import of a private module or name of a framework; an attribute ``._name`` read off a
framework import; a method of a framework subclass that overrides (or a ``self._name`` that
reads) a private name the framework class defines; the internals the fences hold that carry
no underscore (``run_map``, ``__dict__``, ``"error_detail"``); and an ``aegra_api`` module
other than its entry point ``aegra_api.main``. The walker is proven on the fences themselves:
there it must find every use they hold.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]
FENCES = ROOT / "agent" / "frameworks"
SCANNED = (ROOT / "agent", ROOT / "bench")
FRAMEWORKS = frozenset(
    {
        "langsmith",
        "langchain",
        "langchain_core",
        "langgraph",
        "langgraph_api",
        "langgraph_sdk",
        "langgraph_runtime_inmem",
        "aegra_api",
        "uvicorn",
        "starlette",
    }
)
UNDERSCORE_FREE_INTERNALS = frozenset({"run_map", "__dict__"})
INTERNAL_STRINGS = frozenset({"error_detail"})
AEGRA_INTERNAL = re.compile(r"\baegra_api\.(?!main\b)")
INMEM_INTERNAL = re.compile(r"\blanggraph_runtime_inmem\.\w")
"""The dev server's runtime has no public API for an app at all."""
DOCUMENTED_HOOKS = frozenset({"_generate", "_agenerate", "_stream", "_astream", "_llm_type"})
"""langchain-core's documented extension points for a custom chat model."""


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _framework(module: str | None) -> bool:
    return module is not None and module.split(".", 1)[0] in FRAMEWORKS


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _framework_classes(cls: type) -> list[type]:
    return [base for base in cls.__mro__[1:] if _framework(base.__module__)]


def _imported(name: str) -> Any:
    """Import a module, undoing what it registers with yaml for the whole process.

    AgentDojo (bench/agentdojo) quotes every string ``yaml.dump`` writes once imported;
    other tests in this process (the diagrams') dump yaml too.
    """
    kept = {
        dumper: (dict(dumper.yaml_representers), dict(dumper.yaml_multi_representers))
        for dumper in (yaml.Dumper, yaml.SafeDumper)
    }
    try:
        return importlib.import_module(name)
    finally:
        for dumper, (plain, multi) in kept.items():
            dumper.yaml_representers = plain
            dumper.yaml_multi_representers = multi


def _class_findings(tree: ast.Module, path: Path) -> list[str]:
    """Private names a framework subclass overrides or reads off ``self``."""
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.bases]
    if not classes:
        return []
    module = _imported(_module_name(path))
    found: list[str] = []
    for node in classes:
        bases = _framework_classes(getattr(module, node.name))
        if not bases:
            continue
        names = {f.name for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)}
        names |= {
            n.attr
            for n in ast.walk(node)
            if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and n.value.id == "self"
        }
        for name in sorted(n for n in names if _private(n) and n not in DOCUMENTED_HOOKS):
            owners = [b.__qualname__ for b in bases if name in vars(b)]
            if owners:
                found.append(f"{path.name}:{node.lineno}: {node.name} uses {owners[0]}.{name}")
    return found


def findings(path: Path) -> list[str]:
    """Every use of a framework's private name in one module."""
    source = path.read_text()
    tree = ast.parse(source)
    bound: set[str] = set()
    found: list[str] = []
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _framework(alias.name):
                    bound.add((alias.asname or alias.name).split(".", 1)[0])
                    if any(_private(part) for part in alias.name.split(".")):
                        found.append(f"{where}: imports {alias.name}")
        elif isinstance(node, ast.ImportFrom) and _framework(node.module):
            assert node.module is not None
            for alias in node.names:
                bound.add(alias.asname or alias.name)
                if any(_private(p) for p in [*node.module.split("."), alias.name]):
                    found.append(f"{where}: imports {node.module}.{alias.name}")
        elif isinstance(node, ast.Attribute) and node.attr in UNDERSCORE_FREE_INTERNALS:
            found.append(f"{where}: reads .{node.attr}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            internal = AEGRA_INTERNAL.search(node.value) or INMEM_INTERNAL.search(node.value)
            if node.value in INTERNAL_STRINGS or internal:
                found.append(f"{where}: names {node.value.strip().splitlines()[0][:60]}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in bound:
                found.append(f"{path.name}:{node.lineno}: reads {root.id}...{node.attr}")
    return found + _class_findings(tree, path)


def _modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_framework_private_name_is_used_outside_the_fences() -> None:
    found = [
        finding
        for folder in SCANNED
        for path in _modules(folder)
        if FENCES not in path.parents
        for finding in findings(path)
    ]
    assert not found, "move these into agent/frameworks:\n" + "\n".join(found)


def test_the_walker_finds_every_use_the_fences_hold() -> None:
    found = {path.stem: findings(path) for path in _modules(FENCES)}
    assert any("ErrorHidingClient uses Client._hide_run_error" in f for f in found["langsmith"])
    assert any("reads .run_map" in f for f in found["langchain_core"])
    assert any("reads .__dict__" in f for f in found["langgraph"])
    assert any("names error_detail" in f for f in found["langgraph_api"])
    assert any("names aegra_api.core" in f for f in found["aegra"])
    assert any("names langgraph_runtime_inmem.ops" in f for f in found["langgraph_runtime_inmem"])
    assert inspect.getdoc(importlib.import_module("agent.frameworks"))
