"""The release guard (scripts/release_check.py): a wrong tag, an undated or missing CHANGELOG
section, a wheel or sdist without Project-URL are refused; the notes are the section's body.

The built files here are written by hand (their metadata is all the guard reads), so the test
needs neither a build nor the network.
"""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
import stop_on_artifact

LIBRARY = Path(__file__).resolve().parents[1]
SCRIPT = LIBRARY / "scripts" / "release_check.py"
CHANGELOG = """# Changelog

## Unreleased

- Something next.

## 1.2.0 - 2026-12-01

- **A change.** Its words.

## 1.1.0 - 2026-11-01

- Before.
"""
URLS = "Project-URL: Repository, https://example.org/stop-on-artifact\n"


def guard() -> ModuleType:
    spec = importlib.util.spec_from_file_location("release_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and the like look a module up by name
    spec.loader.exec_module(module)
    return module


def library(tmp_path: Path, version: str = "1.2.0", changelog: str = CHANGELOG) -> Path:
    package = tmp_path / "lib" / "src" / "stop_on_artifact"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f'"""Doc."""\n\n__version__ = "{version}"\n')
    (tmp_path / "lib" / "CHANGELOG.md").write_text(changelog)
    return tmp_path / "lib"


def dist(tmp_path: Path, version: str = "1.2.0", urls: str = URLS, sdist_urls: str = URLS) -> Path:
    folder = tmp_path / "dist"
    folder.mkdir()
    head = f"Metadata-Version: 2.4\nName: stop-on-artifact\nVersion: {version}\n"
    with zipfile.ZipFile(folder / f"stop_on_artifact-{version}-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"stop_on_artifact-{version}.dist-info/METADATA", head + urls)
    data = (head + sdist_urls).encode()
    with tarfile.open(folder / f"stop_on_artifact-{version}.tar.gz", "w:gz") as sdist:
        info = tarfile.TarInfo(f"stop_on_artifact-{version}/PKG-INFO")
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return folder


def check(*argv: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, check=False
    )
    return done.returncode, done.stdout + done.stderr


def test_a_matching_tag_passes_and_writes_the_dated_sections_notes(tmp_path: Path) -> None:
    lib, notes = library(tmp_path), tmp_path / "notes.md"
    code, out = check(
        "--tag", "refs/tags/v1.2.0", "--dist", str(dist(tmp_path)), "--notes", str(notes),
        "--library", str(lib),
    )  # fmt: skip
    assert code == 0, out
    assert notes.read_text() == "- **A change.** Its words.\n"  # that section only


def test_a_tag_other_than_the_version_is_refused(tmp_path: Path) -> None:
    lib = library(tmp_path)
    for tag in ("v1.2.1", "1.2.0", "v1.2", "v1.2.0rc1"):
        code, out = check("--tag", tag, "--dist", str(dist(tmp_path)), "--library", str(lib))
        assert code == 1 and "is not v1.2.0, the version in __init__.py" in out, (tag, out)
        for path in (tmp_path / "dist").iterdir():
            path.unlink()
        (tmp_path / "dist").rmdir()


@pytest.mark.parametrize("where", ["wheel", "sdist"])
def test_a_built_file_without_project_url_is_refused(tmp_path: Path, where: str) -> None:
    built = dist(
        tmp_path, urls="" if where == "wheel" else URLS, sdist_urls="" if where == "sdist" else URLS
    )
    code, out = check("--tag", "v1.2.0", "--dist", str(built), "--library", str(library(tmp_path)))
    assert code == 1 and "has no Project-URL: add [project.urls]" in out, out
    assert (".whl" if where == "wheel" else ".tar.gz") in out


def test_built_files_of_another_version_are_refused(tmp_path: Path) -> None:
    built = dist(tmp_path, version="1.1.0")
    code, out = check("--tag", "v1.2.0", "--dist", str(built), "--library", str(library(tmp_path)))
    assert code == 1 and "is version 1.1.0, not 1.2.0" in out, out


@pytest.mark.parametrize(
    ("changelog", "words"),
    [
        (CHANGELOG.replace("## 1.2.0 - 2026-12-01", "## 1.2.0"), "has no date"),
        (CHANGELOG.replace("## 1.2.0 - 2026-12-01", "## Later"), "has no section for 1.2.0"),
    ],
)
def test_an_undated_or_missing_changelog_section_is_refused(
    tmp_path: Path, changelog: str, words: str
) -> None:
    lib = library(tmp_path, changelog=changelog)
    code, out = check("--tag", "v1.2.0", "--library", str(lib))
    assert code == 1 and words in out, out


def test_the_last_section_runs_to_the_end_and_the_version_is_read_from_the_source() -> None:
    module = guard()
    assert module.release_notes(CHANGELOG, "1.1.0") == "- Before.\n"
    assert module.version() == stop_on_artifact.__version__
