"""The library stands alone: a copy of ``libs/stop-on-artifact`` by itself, outside the
repository, installs from its own ``uv.lock``, lints (ruff, mypy strict, with its own
settings), builds and tests with its own Makefile: the commands its CONTRIBUTING.md gives.

Offline: uv runs with ``UV_OFFLINE=1`` against its cache, which ``make install`` filled (the
library's lock holds the demo app's versions: ``make lock`` pins them), so nothing is
resolved or downloaded here. CI's ``library-alone`` job runs the same commands online.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "libs" / "stop-on-artifact"
LEFT_BEHIND = (
    ".venv dist site __pycache__ .mypy_cache .ruff_cache .pytest_cache .hypothesis".split()
)


def uv() -> str:
    found = os.environ.get("UV") or str(ROOT / ".tools" / "bin" / "uv")
    assert Path(found).exists(), "run `make install` first: it puts uv in .tools/bin"
    return str(Path(found).resolve())


def make(copy: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "UV_OFFLINE": "1", "UV": uv()}
    for name in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "SOA_WHEEL", "PYTHONPATH"):
        env.pop(name, None)
    return subprocess.run(
        ["make", "--no-print-directory", *targets],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )


def test_contributing_gives_the_commands_the_makefile_has() -> None:
    text = (LIBRARY / "CONTRIBUTING.md").read_text("utf-8")
    makefile = (LIBRARY / "Makefile").read_text("utf-8")
    named = set(re.findall(r"^make ([a-z-]+)", text, flags=re.M))
    assert {"install", "test", "lint", "build"} <= named
    for target in named:
        assert re.search(rf"^{target}:", makefile, flags=re.M), target


def test_a_copy_of_the_folder_alone_installs_lints_builds_and_tests(tmp_path: Path) -> None:
    copy = tmp_path / "stop-on-artifact"  # no ../../uv.lock above it: the standalone mode
    shutil.copytree(LIBRARY, copy, ignore=shutil.ignore_patterns(*LEFT_BEHIND))
    done = make(copy, "install", "lint", "build")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (copy / ".venv" / "bin" / "python").exists()  # its own environment, not the app's
    assert "mypy" in done.stdout and "Success: no issues found" in done.stdout
    (wheel,) = (copy / "dist").glob("stop_on_artifact-*.whl")
    (sdist,) = (copy / "dist").glob("stop_on_artifact-*.tar.gz")
    assert "stop_on_artifact/py.typed" in zipfile.ZipFile(wheel).namelist()
    with tarfile.open(sdist) as archive:
        assert any(name.endswith("/Makefile") for name in archive.getnames())
    # the suite runs there too: the files about the package, the release and the README
    tests = "tests/test_soa_package.py tests/test_soa_release.py tests/test_soa_readme.py"
    done = make(copy, "test", f"ARGS={tests}", "WORKERS=0")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"\d+ passed", done.stdout) and " failed" not in done.stdout
