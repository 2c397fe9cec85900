"""Run the characterization suite on other langchain/langgraph releases: ``make compat``.

Each environment is a throwaway virtualenv made with ``uv venv`` + ``uv pip install``:

- ``pins``: the article's pins, langchain 1.4.2 with langgraph 1.2.11 (langchain-groq 1.1.3);
- ``newest``: the newest release of every dependency;
- ``legacy-0.6.6``: langgraph 0.6.6, the last release before ``create_agent``, with the
  langchain 0.3 line it supports. The project's ``legacy`` graph runs there (the
  forced-outcome matrix, the golden transcripts, the model-call cap); ``middleware`` and the
  ``create_agent`` pins skip, saying what is missing;
- ``lib-newest`` and ``lib-legacy-0.6.6``: the library alone, as a user installs it
  (``pip install "libs/stop-on-artifact[langchain,deepagents,mcp]"``, the extras the install
  lines before the blocks of the README and docs/ends.md name, on the newest releases;
  ``pip install libs/stop-on-artifact`` beside langgraph 0.6.6 and langchain-core 0.3.67, its
  declared lower bounds), running its own suite, ``libs/stop-on-artifact/tests``;
- ``lib-floors``, ``lib-floors-deepagents``, ``lib-floors-langchain-mcp``, ``lib-floors-core``:
  the library at its floors, as a user with old pins has it: the wheel with ``[langchain,mcp]``,
  ``[deepagents]`` (whose floor needs a newer langchain), ``[langchain-mcp]`` (its MCP tests)
  or no extra, and every requirement it declares given as a
  direct one, installed with ``uv pip install --resolution lowest-direct``, so each dependency
  is the lowest its specifier (and its neighbours') allows; then the library's suite.
  Beforehand, the resolver must refuse each dependency below its floor (``name<floor``) beside
  the wheel: the floors are declared, not only tested. ``make dist`` runs them;
- ``lib-langchain-mcp``: the library with its ``[langchain-mcp]`` extra (langchain's own MCP
  client, ``langchain.mcp``: fastmcp 4 on mcp 2.x, which cannot share an environment with
  langchain-mcp-adapters and mcp 1.x), running the library's MCP, adopt and docs tests against
  a real FastMCP 4 server; ``test_soa_mcp.py`` (the adapters) skips there.

The library is installed normally, with its dependencies (never ``--no-deps``). The app goes
in with ``uv pip install -e . --no-deps``; its other dependencies come from ``pyproject.toml``
(the dev server is a dev dependency: no test here starts one). Then pytest runs
``tests/compat/test_characterization.py`` (and ``tests/unit_tests/test_matrix.py``, which
builds both graphs, where both can run) inside the environment. A table of versions,
results and the reasons a graph cannot run closes the output; the exit status is non-zero
if any test failed.

The environments are made and tested side by side (``--jobs``, all at once by default): each
is a package install and a short pytest run in its own folder, mostly waiting on I/O.

Usage: ``python -m tests.compat.run [--only NAME ...] [--keep] [--jobs N]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "libs" / "stop-on-artifact"
LIBRARY_NAME = "stop-on-artifact"
SUITE = "tests/compat/test_characterization.py"
MATRIX = "tests/unit_tests/test_matrix.py"
LIBRARY_SUITE = "libs/stop-on-artifact/tests"
TEST_TOOLS = ("pytest>=8", "pytest-asyncio>=0.23", "hypothesis>=6")
REPORTED = ("langgraph", "langchain", "langchain-core", "langgraph-prebuilt", "langchain-groq")
REPORTED += ("stop-on-artifact", "mcp", "fastmcp", "langchain-mcp-adapters", "pydantic")
REPORTED += ("typing-extensions", "deepagents")
LIBRARY_TESTS = Path(LIBRARY_SUITE)
MCP_SUITE = tuple(
    str(LIBRARY_TESTS / name)
    for name in (
        "test_soa_langchain_mcp.py",  # langchain.mcp, a real FastMCP 4 server
        "test_soa_mcp.py",  # langchain-mcp-adapters: skips, the adapters need mcp<2
        "test_soa_adopt.py",
        "test_soa_docs.py",  # the docs' langchain.mcp blocks run here, and only here
    )
)


def library(extra: str = "") -> str:
    """The library as a requirement: the wheel ``$SOA_WHEEL`` names (``make dist`` built it),
    else its local folder; installed normally, with its deps."""
    wheel = os.environ.get("SOA_WHEEL")
    return (
        f"{LIBRARY_NAME}{extra} @ {Path(wheel).resolve().as_uri() if wheel else LIBRARY.as_uri()}"
    )


@dataclass(frozen=True)
class Environment:
    """One set of versions to characterize."""

    name: str
    pins: tuple[str, ...]
    """Requirements that replace the project's own for the same distribution."""
    unrunnable: tuple[str, ...] = ()
    """Graphs (and ``create_agent``) known not to run here: their tests skip with the reason."""
    project_deps: bool = True
    """Install the project's remaining dependencies from pyproject.toml."""
    upgrade: bool = False
    tests: tuple[str, ...] = (SUITE, MATRIX)
    app: bool = True
    """Install the app too (``-e . --no-deps``); False: the library alone, as a user has it."""
    required: tuple[str, ...] = ()
    """Modules the tests need here (``COMPAT_REQUIRED``): a missing one fails, never skips."""
    floors: tuple[str, ...] | None = None
    """The library's extras installed at their floors (``--resolution lowest-direct``, each
    declared requirement a direct one); None: a normal install."""


ENVIRONMENTS = (
    Environment(
        "pins",
        ("langchain==1.4.2", "langgraph==1.2.11", "langchain-groq==1.1.3"),
    ),
    Environment("newest", (), upgrade=True),
    Environment(
        "legacy-0.6.6",
        ("langgraph==0.6.6", "langchain<1", "pydantic>=2.7", "typing-extensions>=4.10", library()),
        unrunnable=("middleware", "create_agent"),  # create_agent arrived in langchain 1.0
        project_deps=False,
        tests=(SUITE,),
    ),
    Environment(
        "lib-newest",
        (library("[langchain,deepagents,mcp]"),),  # each block's install line (README, docs)
        upgrade=True,
        project_deps=False,
        tests=(LIBRARY_SUITE,),
        app=False,
        required=("deepagents", "langchain_mcp_adapters"),  # so no README or docs block skips
    ),
    Environment(
        "lib-legacy-0.6.6",
        (library(), "langgraph==0.6.6", "langchain-core==0.3.67"),
        project_deps=False,
        tests=(LIBRARY_SUITE,),
        app=False,
    ),
    Environment(  # langchain 1.3.15, langchain-mcp-adapters 0.3.0, mcp 1.30
        "lib-floors",
        (),
        project_deps=False,
        tests=(LIBRARY_SUITE,),
        app=False,
        required=("langchain_mcp_adapters",),
        floors=("langchain", "mcp"),
    ),
    Environment(  # deepagents 0.7.32, which needs langchain 1.4.7
        "lib-floors-deepagents",
        (),
        project_deps=False,
        tests=(LIBRARY_SUITE,),
        app=False,
        required=("deepagents",),
        floors=("deepagents",),
    ),
    Environment(  # langchain[mcp] 1.5.0: langchain.mcp, fastmcp 4, mcp 2.x
        "lib-floors-langchain-mcp",
        (),
        project_deps=False,
        tests=MCP_SUITE,
        app=False,
        required=("fastmcp",),
        floors=("langchain-mcp",),
    ),
    Environment(  # the core alone: langchain-core 0.3.67, langgraph 0.6.6, pydantic 2.7.4
        "lib-floors-core",
        (),
        project_deps=False,
        tests=(LIBRARY_SUITE,),
        app=False,
        floors=(),
    ),
    Environment(
        "lib-langchain-mcp",
        (library("[langchain-mcp]"),),
        upgrade=True,
        project_deps=False,
        tests=MCP_SUITE,
        app=False,
        required=("fastmcp",),
    ),
)


@dataclass
class Result:
    """What one environment showed."""

    env: Environment
    versions: dict[str, str] = field(default_factory=dict)
    passed: int = 0
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None and not self.failed


def find_uv() -> str:
    """``uv``: the one running ``make`` (``$UV``), on PATH, or the project's ``.tools``."""
    for candidate in (os.environ.get("UV"), shutil.which("uv"), str(ROOT / ".tools/bin/uv")):
        if candidate and Path(candidate).exists():
            return candidate
    msg = "uv not found: run `make install` first, or put uv on PATH"
    raise SystemExit(msg)


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def declared(extras: tuple[str, ...]) -> list[str]:
    """What the library's pyproject requires, with those extras: each one once."""
    project = tomllib.loads((LIBRARY / "pyproject.toml").read_text("utf-8"))["project"]
    found = list(project["dependencies"])
    for extra in extras:
        found += [r for r in project["optional-dependencies"][extra] if r not in found]
    return found


def extras(names: tuple[str, ...]) -> str:
    """``("langchain", "mcp")`` -> ``[langchain,mcp]``; none: ``""``."""
    return f"[{','.join(names)}]" if names else ""


def below_floor(requirement: str) -> str | None:
    """``langchain>=1.4,<2`` -> ``langchain<1.4``: a version the resolver must refuse."""
    found = re.search(r">=\s*([\w.]+)", requirement)
    return f"{_name(requirement)}<{found[1]}" if found else None


def requirements(env: Environment) -> list[str]:
    """The project's dependencies with the environment's pins in place, plus pytest."""
    if env.floors is not None:  # the wheel, its declared requirements direct; pytest apart
        return [library(extras(env.floors)), *declared(env.floors)]
    pinned = {_name(pin): pin for pin in env.pins}
    wanted = list(env.pins)
    if env.project_deps:
        project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
        for requirement in project["dependencies"]:
            name = _name(requirement)
            if name == LIBRARY_NAME and name not in pinned:
                wanted.append(library("[langchain]"))  # the workspace member, not PyPI's
            elif name not in pinned:
                wanted.append(requirement)
    return [*wanted, *TEST_TOOLS]


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)  # type: ignore[call-overload, no-any-return]


def _versions(python: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json\n"
        "out = {}\n"
        f"for name in {REPORTED!r}:\n"
        "    try: out[name] = m.version(name)\n"
        "    except m.PackageNotFoundError: out[name] = '-'\n"
        "try:\n"
        "    from tests.compat.test_characterization import default_recursion_limit\n"
        "    limit = default_recursion_limit()\n"
        "    out['default recursion_limit'] = str(limit) if limit else '>= 200'\n"
        "except ImportError:  # the library alone: no app to import\n"
        "    pass\n"
        "print(json.dumps(out))\n"
    )
    done = _run([str(python), "-c", code], cwd=ROOT)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "?"}
    import json

    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _read_junit(path: Path, result: Result) -> None:
    tree = ET.parse(path)
    for case in tree.iter("testcase"):
        name = case.get("name", "?")
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        skipped = case.find("skipped")
        if failure is not None:
            message = (failure.get("message") or "").strip().splitlines()
            result.failed.append(f"{name}: {message[0] if message else 'failed'}")
        elif skipped is not None:
            reason = (skipped.get("message") or "").removeprefix("Skipped: ").strip()
            found = re.search(r"'Skipped: (.*)'\)$", (skipped.text or "").strip())
            if reason == "collection skipped" and found:  # a module's skip: its reason
                reason = found[1]
            result.skipped.append(f"{name}: {reason}")
        else:
            result.passed += 1


def below_floors(env: Environment, install: list[str], uv_env: dict[str, str]) -> str | None:
    """None if the resolver refuses each declared requirement below its floor, beside the
    wheel; else what it accepted."""
    assert env.floors is not None
    wheel = library(extras(env.floors))
    accepted = []
    for requirement in declared(env.floors):
        below = below_floor(requirement)
        if below is None:
            continue
        done = _run([*install, "--dry-run", wheel, below], env=uv_env)
        if done.returncode == 0:
            accepted.append(below)
        elif "No solution found" not in done.stderr:  # refused for another reason: say so
            return f"{below} beside the wheel: {done.stderr.strip()[-500:]}"
    return (
        f"the resolver accepted a version below a floor: {', '.join(accepted)}"
        if accepted
        else None
    )


def characterize(env: Environment, uv: str, keep: bool) -> Result:
    """Create the environment, install, run the suite, and read the results."""
    result = Result(env)
    folder = Path(tempfile.mkdtemp(prefix=f"soa-compat-{env.name}-"))
    venv = folder / "venv"
    python = venv / "bin" / "python"
    uv_env = {**os.environ, "VIRTUAL_ENV": str(venv)}
    uv_env.pop("UV_PROJECT_ENVIRONMENT", None)
    try:
        started = time.monotonic()
        made = _run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)])
        if made.returncode != 0:
            result.error = f"uv venv failed: {made.stderr.strip()}"
            return result
        install = [uv, "pip", "install", "--quiet", "--python", str(python)]
        if env.upgrade:
            install.append("--upgrade")
        if env.floors is not None:
            refused = below_floors(env, install, uv_env)
            if refused:
                result.error = refused
                return result
            done = _run([*install, "--resolution", "lowest-direct", *requirements(env)], env=uv_env)
            if done.returncode == 0:  # the test tools at their newest, never lowered
                done = _run([*install, *TEST_TOOLS], env=uv_env)
        else:
            done = _run([*install, *requirements(env)], env=uv_env)
        if done.returncode == 0 and env.app:
            done = _run([*install, "--no-deps", "-e", str(ROOT)], env=uv_env)
        result.seconds["install"] = time.monotonic() - started
        if done.returncode != 0:
            result.error = f"install failed: {done.stderr.strip()[-2000:]}"
            return result
        result.versions = _versions(python)

        started = time.monotonic()
        junit = folder / "junit.xml"
        test_env = {
            **os.environ,
            "COMPAT_UNRUNNABLE": ",".join(env.unrunnable),
            "COMPAT_REQUIRED": ",".join(env.required),
        }
        test_env.pop("VIRTUAL_ENV", None)
        command = [
            str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "-W", "ignore::DeprecationWarning", f"--junitxml={junit}", *env.tests,
        ]  # fmt: skip
        tested = _run(command, cwd=ROOT, env=test_env)
        result.seconds["tests"] = time.monotonic() - started
        if junit.exists():
            _read_junit(junit, result)
        if tested.returncode not in (0, 1) or not junit.exists():
            tail = "\n".join((tested.stdout + tested.stderr).strip().splitlines()[-15:])
            result.error = f"pytest exited with {tested.returncode}:\n{tail}"
        elif tested.returncode == 1 and not result.failed:
            result.error = "pytest failed without a failing test:\n" + tested.stdout[-1500:]
        return result
    finally:
        if keep:
            print(f"[{env.name}] kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def report(results: list[Result], total: float) -> str:
    lines = []
    for result in results:
        env = result.env
        status = "ok" if result.ok else "FAILED"
        timing = ", ".join(f"{k} {v:.1f}s" for k, v in result.seconds.items())
        lines.append(f"== {env.name}: {status} ({timing})")
        if result.versions:
            lines.append("   " + ", ".join(f"{k} {v}" for k, v in result.versions.items()))
        unrunnable = ", ".join(env.unrunnable) or "-"
        lines.append(
            f"   {result.passed} passed, {len(result.failed)} failed, "
            f"{len(result.skipped)} skipped (declared unrunnable: {unrunnable})"
        )
        reasons = sorted({s.split(": ", 1)[1] for s in result.skipped if ": " in s})
        lines += [f"   why: {reason}" for reason in reasons]
        lines += [f"   FAIL {failure}" for failure in result.failed]
        if result.error:
            lines += ["   " + line for line in result.error.splitlines()]
    lines.append(f"compat: {len(results)} environments in {total:.1f}s")
    passed = sum(r.passed for r in results)
    failed = sum(len(r.failed) + (1 if r.error else 0) for r in results)
    skipped = sum(len(r.skipped) for r in results)
    lines.append(f"{passed} passed, {failed} failed, {skipped} skipped")  # the closing line
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", choices=[e.name for e in ENVIRONMENTS])
    parser.add_argument("--keep", action="store_true", help="keep the environments")
    parser.add_argument(
        "--jobs", type=int, default=0, help="environments at once (default: all of them)"
    )
    args = parser.parse_args(argv)
    uv = find_uv()
    chosen = [e for e in ENVIRONMENTS if not args.only or e.name in args.only]
    started = time.monotonic()
    for env in chosen:
        what = " ".join(env.pins) or ("the floors" if env.floors is not None else "newest releases")
        print(f"[{env.name}] installing {what} ...", flush=True)
    with ThreadPoolExecutor(max_workers=args.jobs or len(chosen)) as pool:
        results = list(pool.map(lambda env: characterize(env, uv, args.keep), chosen))
    print(report(results, time.monotonic() - started))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
