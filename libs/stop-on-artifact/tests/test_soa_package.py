"""The library's face: its public names, its imports, its typing, and the wheel it builds."""

from __future__ import annotations

import ast
import email
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
import stop_on_artifact

LIBRARY = Path(__file__).resolve().parents[1]
PACKAGE = LIBRARY / "src" / "stop_on_artifact"
STDLIB = {"__future__", "collections", "dataclasses", "logging", "typing", "json", "re", "string"}
STDLIB |= {"asyncio", "contextvars", "time"}  # in_place: the waits between retries
STDLIB |= {"threading"}  # _approval: one run uses an answer
STDLIB |= {"functools", "importlib"}  # the record's settings validated once; lazy imports
STDLIB |= {"hashlib"}  # idempotency_key: a digest names the call
STDLIB |= {"inspect"}  # the middleware shows its constructor's signature
STDLIB |= {"argparse", "contextlib", "html", "itertools", "sys"}  # whatif: a command, an SVG
WHATIF_READERS = {"langsmith", "langgraph_sdk"}  # imported by whatif's readers when they run
ALLOWED = STDLIB | {"typing_extensions", "pydantic", "langchain_core", "langgraph"}

PUBLIC = {
    # the artifact: builders and parsing
    "completed", "transient", "fatal", "policy_block", "parse_artifact", "InvalidArtifactError",
    # the decision, its settings, a hard stop's answer
    "decide", "StopDecision", "final_text", "StopSettings",
    # wiring: create_agent, hand-built graphs, the state they keep
    "StopOnArtifactMiddleware", "StopRouter", "StopState",
    # policies: refuse, or ask a person
    "PolicyMiddleware", "PolicyGate", "tool_policy", "Block", "ApprovalUsedError",
    "resume_problem",
    # existing tools and in-place retries
    "adopt", "MARK_ARGUMENT", "mark_tool", "current_attempt", "MCPErrorResult",
    # side effects run once
    "idempotency_key", "InjectedIdempotencyKey",
}  # fmt: skip
LAZY = {
    "StopOnArtifactMiddleware",
    "PolicyMiddleware",
}  # they need the [langchain] extra


def test_all_is_the_small_public_api_and_every_name_resolves() -> None:
    assert set(stop_on_artifact.__all__) == PUBLIC
    for name in PUBLIC - LAZY:
        assert getattr(stop_on_artifact, name) is not None
    for helper in ("turn_start", "invocation_index", "transient_count", "latest_tool_step"):
        assert helper not in stop_on_artifact.__all__
        assert not hasattr(stop_on_artifact, helper), helper


def test_the_package_is_typed() -> None:
    assert (PACKAGE / "py.typed").is_file()


def imports(path: Path, typing_only: bool = False) -> list[str]:
    """The modules ``path`` imports; with ``typing_only``, only under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text("utf-8"))
    guarded = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    ]
    typing = {id(node) for block in guarded for stmt in block.body for node in ast.walk(stmt)}
    names: list[str] = []
    for node in ast.walk(tree):
        if (id(node) in typing) != typing_only:
            continue
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def module_level(path: Path) -> set[str]:
    """The modules ``path`` imports at its top level (not inside a function)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_the_core_imports_only_itself_and_its_two_libraries() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert {p.stem for p in modules} >= {
        "_artifact",
        "_decision",
        "_router",
        "_middleware",
        "testing",
    }
    for path in modules:
        for name in imports(path, typing_only=True):  # types only: langchain's own, say
            assert name.split(".")[0] in ALLOWED | {"stop_on_artifact", "langchain"}, name
        for name in imports(path):
            root = name.split(".")[0]
            if root in WHATIF_READERS:  # the [whatif] extra, never on importing the module
                assert path.stem == "whatif", f"{path.name} imports {name}"
                assert name not in module_level(path), f"{path.name} imports {name} eagerly"
            elif root == "langchain":  # only the create_agent middleware needs langchain 1.x
                assert path.stem in {"_middleware", "_policy_middleware", "_structured"}, (
                    f"{path.name} imports {name}"
                )
            else:
                assert root in ALLOWED | {"stop_on_artifact"}, f"{path.name} imports {name}"


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )


def test_importing_the_package_loads_no_langchain_and_no_app() -> None:
    done = run_python(
        "import sys, stop_on_artifact, stop_on_artifact.testing\n"
        "print(sorted({m.split('.')[0] for m in sys.modules}))"
    )
    assert done.returncode == 0, done.stderr
    loaded = done.stdout
    assert "'langchain'" not in loaded and "'agent'" not in loaded
    assert "'langchain_core'" in loaded


BLOCK_LANGCHAIN = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "langchain" or name.startswith("langchain."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Block())
import stop_on_artifact
stop_on_artifact.StopRouter()
from stop_on_artifact import StopOnArtifactMiddleware
"""


def langchain_floor() -> str:
    """The [langchain] extra's floor, from pyproject: ``langchain>=1.3.15,<2`` -> 1.3.15."""
    project = tomllib.loads((LIBRARY / "pyproject.toml").read_text("utf-8"))["project"]
    (requirement,) = project["optional-dependencies"]["langchain"]
    found = re.search(r">=([\w.]+)", requirement)
    assert found, requirement
    return found[1]


def test_the_middleware_without_langchain_fails_naming_the_extra() -> None:
    done = run_python(BLOCK_LANGCHAIN)
    assert done.returncode == 1
    floor = langchain_floor()
    assert f"ImportError: StopOnArtifactMiddleware needs langchain>={floor}" in done.stderr
    assert "pip install -U 'stop-on-artifact[langchain]'" in done.stderr
    assert "is installed" not in done.stderr  # missing, not too old


# langchain 1.0's middleware: no ExtendedModelResponse (what 1.0.0 to 1.0.x lack), the rest
# there. A stand-in, as the suite must not install langchain 1.0 to see the message.
OLD_LANGCHAIN = """
import importlib.metadata, sys, types
def fake(name, **names):
    module = types.ModuleType(name)
    module.__dict__.update(names, __path__=[])
    sys.modules[name] = module
class Stub: ...
fake("langchain")
fake("langchain.agents", AgentState=Stub)
fake("langchain.agents.middleware", AgentMiddleware=Stub, ModelRequest=Stub, ModelResponse=Stub)
fake("langchain.agents.middleware.types", ContextT=Stub, PrivateStateAttr=Stub, ResponseT=Stub)
class Installed:  # langchain 1.0.0's metadata, whatever this environment has
    version = "1.0.0"
real = importlib.metadata.distributions
importlib.metadata.distributions = lambda **kw: (
    [Installed()] if kw.get("name") == "langchain" else real(**kw)
)
from stop_on_artifact import {name}
"""


@pytest.mark.parametrize("name", ["StopOnArtifactMiddleware", "PolicyMiddleware"])
def test_the_middleware_on_a_langchain_below_the_floor_names_the_version_it_needs(
    name: str,
) -> None:
    done = run_python(OLD_LANGCHAIN.replace("{name}", name))
    assert done.returncode == 1
    assert "cannot import name 'ExtendedModelResponse'" in done.stderr  # the cause, chained
    floor = langchain_floor()
    assert (
        f"ImportError: langchain 1.0.0 is installed; {name} needs langchain>={floor}"
    ) in done.stderr
    assert "pip install -U 'stop-on-artifact[langchain]'" in done.stderr


def find_uv() -> str:
    """uv: ``$UV`` (the Makefiles set it), else on PATH."""
    for candidate in (os.environ.get("UV"), shutil.which("uv")):
        if candidate and Path(candidate).exists():
            return candidate
    pytest.fail("uv not found: put uv on PATH, or name it in $UV")


def test_the_wheel_holds_only_stop_on_artifact(tmp_path: Path) -> None:
    done = subprocess.run(
        [find_uv(), "build", "--wheel", "--quiet", "--out-dir", str(tmp_path), str(LIBRARY)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("stop_on_artifact-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    dist_info = f"stop_on_artifact-{stop_on_artifact.__version__}.dist-info"
    assert tops == {"stop_on_artifact", dist_info}
    assert "stop_on_artifact/py.typed" in names
    assert "stop_on_artifact/testing.py" in names
    metadata = email.message_from_bytes(zipfile.ZipFile(wheel).read(f"{dist_info}/METADATA"))
    assert metadata["Name"] == "stop-on-artifact"
    assert (metadata["License-Expression"], metadata["License-File"]) == ("MIT", "LICENSE")
    shipped = zipfile.ZipFile(wheel).read(f"{dist_info}/licenses/LICENSE").decode()
    assert shipped == (LIBRARY / "LICENSE").read_text("utf-8")
    assert shipped.startswith("MIT License")
    requires = {
        re.match(r"[A-Za-z0-9_.-]+", r)[0]: r  # type: ignore[index]
        for r in metadata.get_all("Requires-Dist") or []
    }
    assert sorted(requires) == [
        "deepagents", "langchain", "langchain-core", "langchain-mcp-adapters", "langgraph",
        "langsmith", "mcp", "pydantic", "typing-extensions",
    ]  # fmt: skip
    core_names = ("langchain-core", "langgraph", "pydantic", "typing-extensions")
    for requirement in metadata.get_all("Requires-Dist") or []:  # what the core imports
        core = requirement.startswith(core_names)
        assert core != ("extra ==" in requirement), requirement
    assert set(metadata.get_all("Provides-Extra") or []) == {
        "langchain", "mcp", "langchain-mcp", "deepagents", "whatif",
    }  # fmt: skip
    assert ">=0.6.6" in requires["langgraph"] and "extra" not in requires["langgraph"]
    assert ">=0.3.67" in requires["langchain-core"] and "extra" not in requires["langchain-core"]


@pytest.mark.skipif(not os.environ.get("SOA_WHEEL"), reason="make dist's environments only")
def test_the_package_under_test_is_the_built_wheel() -> None:
    import importlib.metadata
    import json

    wheel = Path(os.environ["SOA_WHEEL"]).resolve()
    assert LIBRARY not in Path(stop_on_artifact.__file__).resolve().parents  # never the source
    direct = importlib.metadata.distribution("stop-on-artifact").read_text("direct_url.json")
    assert direct is not None and json.loads(direct)["url"] == wheel.as_uri()


def test_the_sdist_is_the_librarys_alone(tmp_path: Path) -> None:
    done = subprocess.run(
        [find_uv(), "build", "--sdist", "--quiet", "--out-dir", str(tmp_path), str(LIBRARY)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (sdist,) = tmp_path.glob("stop_on_artifact-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
        info = archive.extractfile(f"stop_on_artifact-{stop_on_artifact.__version__}/PKG-INFO")
        assert info is not None
        metadata = email.message_from_bytes(info.read())
    assert "LICENSE" in names and metadata["License-Expression"] == "MIT"
    # its own files: what builds, lints and tests it alone, the site's config beside docs/
    for name in ("pyproject.toml", "README.md", "CHANGELOG.md", "CONTRIBUTING.md", "Makefile"):
        assert name in names, name
    assert "mkdocs.yml" in names and "docs/index.md" in names
    assert "scripts/release_check.py" in names and "tests/conftest.py" in names
    assert "src/stop_on_artifact/py.typed" in names
    shipped = {name.split("/")[0] for name in names}
    allowed = {"src", "tests", "docs", "scripts"} | {n for n in names if "/" not in n}
    assert shipped <= allowed, shipped - allowed
    with tarfile.open(sdist) as archive:
        ignore = archive.extractfile(f"stop_on_artifact-{stop_on_artifact.__version__}/.gitignore")
        assert ignore is not None
        assert ignore.read().decode() == (LIBRARY / ".gitignore").read_text(
            "utf-8"
        )  # not the app's
    top = {n for n in names if "/" not in n}
    assert top == {
        ".gitignore", "CHANGELOG.md", "CONTRIBUTING.md", "LICENSE", "Makefile", "PKG-INFO",
        "README.md", "mkdocs.yml", "pyproject.toml", "uv.lock",
    }, top  # fmt: skip
    # its tests reach nothing outside it: no ../../.tools, no repository root's LICENSE
    outside = re.compile(r"LIBRARY\.parents\[|parents\[[2-9]\]|\.tools" + "/")
    for name in sorted(n for n in names if n.startswith("tests/") and n.endswith(".py")):
        assert not outside.search((LIBRARY / name).read_text("utf-8")), name


def test_the_source_stays_small_with_no_import_circle() -> None:
    modules = {path.stem: path for path in PACKAGE.glob("*.py")}
    sizes = {name: len(path.read_text("utf-8").splitlines()) for name, path in modules.items()}
    # 2,747 lines at 0.4.0; 0.5.0 adds the parts rule, the record's counts, the order check,
    # the shared in-place budget, adopt's stops= and langchain.mcp, and drops the generated
    # classes and the retry loops' twins: 2,987; 0.6.0 may add 150 for the step limit, subagents
    # side by side, one field rule and a stop's answer whole (#53): 3,140, the cap.
    # The turn begins where the run begins (#54): 3,129 at pickup + 100; a stop and
    # response_format (#55): 3,224 at pickup + 150; a subagent's stop ends the parent's
    # turn (#56): 3,318 at pickup + 80, the cap.
    # #47 docstrings with Args and an Example: +311
    # The shared mark (#48): +70
    # Side effects run once (idempotency_key, adopt's InjectedIdempotencyKey): 3,728 + 71
    # One turn, read once (#61), 3,799 at pickup: the schema from the agent's setting, not
    # the thread: +12; the polish call is one of max_model_calls: +4; an unknown tool's call
    # is no part: +5; a retry pairs with its part when its reply is gone, an emptied step
    # keeps the turn: +20
    # #61 shape 6 (the decision in the model call; the order check gone), the scan private:
    # 3,809. #62, every door the same: an approval before the mode, a Command's ToolMessage,
    # the router's wrap_tool_call, errors naming the door, internals read loudly: +100;
    # where one answer per pause is guarded across workers (ApprovalUsedError): +4.
    # One engine both doors hold (#62): each door's own typed constructor, a Command through
    # the gate and the router: 4,085; a smaller face (63 -> 42 names), private docstrings cut
    # to a line, one approval mark for a ToolMessage or a Command: 3,907.
    # #63: a spent retry budget's closing line names each part left timing out, its place
    # and tool and its tries, a template checked as not_done_message is: +44.
    # What-if over recorded traces (#65): +350
    # #64: an import on a too-old langchain names the version it needs: +12
    assert sum(sizes.values()) <= 4317, sizes
    assert max(sizes.values()) <= 400, sizes
    assert {name for name in modules if not name.startswith("_")} == {
        "messages",
        "testing",
        "whatif",
    }
    graph = {
        name: {
            imported.split(".")[1]
            for imported in imports(path)
            if imported.startswith("stop_on_artifact.")
        }
        for name, path in modules.items()
        if name != "__init__"
    }

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for step in graph.get(start, set()) - seen:
            if step == goal or reaches(step, goal, seen | {step}):
                return True
        return False

    assert [name for name in graph if reaches(name, name, set())] == []
