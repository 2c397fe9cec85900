"""The stop core (libs/stop-on-artifact) knows nothing of this app: strangers install it as is."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "libs" / "stop-on-artifact" / "src" / "stop_on_artifact"
ALLOWED_ROOTS = {"__future__", "collections", "dataclasses", "logging", "typing"}
ALLOWED_ROOTS |= {"typing_extensions", "langchain_core", "langgraph", "langchain"}
APP: tuple[str, ...] = (
    "agent.tools",
    "agent.models",
    "agent.context",
    "agent.tracing",
    "agent.auth",
)
APP += ("agent.graphs", "agent.policy", "agent.client", "agent.state", "agent.http")


def imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text("utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def test_the_core_imports_only_itself_and_the_libraries() -> None:
    modules = sorted(CORE.glob("*.py"))
    assert {p.stem for p in modules} >= {"artifact", "decision", "router", "middleware"}
    for path in modules:
        for name in imports(path):
            root = name.split(".")[0]
            assert root in ALLOWED_ROOTS | {"stop_on_artifact"}, f"{path.name} imports {name}"
    # Only the create_agent middleware may need langchain (1.x); the rest runs on 0.6.
    for path in modules:
        if path.stem != "middleware":
            assert not [n for n in imports(path) if n.split(".")[0] == "langchain"], path.name


def test_importing_the_core_loads_nothing_of_the_app() -> None:
    code = (
        "import sys, stop_on_artifact, stop_on_artifact.middleware\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith(('agent', 'stop_on_artifact')))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "stop_on_artifact.middleware" in loaded
    assert [m for m in loaded if m.startswith(APP)] == []
    assert [m for m in loaded if m == "agent" or m.startswith("agent.")] == []
