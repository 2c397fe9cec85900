"""The repository and the library are MIT-licensed, and say so where packaging tools look."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_repository_and_the_library_carry_one_mit_license() -> None:
    for folder in (ROOT, ROOT / "libs" / "stop-on-artifact"):
        project = tomllib.loads((folder / "pyproject.toml").read_text("utf-8"))["project"]
        assert (project["license"], project["license-files"]) == ("MIT", ["LICENSE"]), folder
        text = (folder / "LICENSE").read_text("utf-8")
        assert text.startswith("MIT License\n") and "WITHOUT WARRANTY OF ANY KIND" in text
    assert (ROOT / "LICENSE").read_bytes() == (
        ROOT / "libs" / "stop-on-artifact" / "LICENSE"
    ).read_bytes()


def test_the_installed_distributions_declare_it() -> None:
    for name in ("stop-on-artifact-app", "stop-on-artifact"):
        assert importlib.metadata.metadata(name)["License-Expression"] == "MIT", name
