"""Relock the library's own ``uv.lock``: ``make lock`` (needs the package index).

uv locks a copy of the folder, outside any workspace (in the repository, uv would lock the
workspace instead). With ``--pins LOCK``, every package that lock holds at one version is
held there (``constraint-dependencies`` in the copy only, left out of the written lock): in
the repository, ``--pins ../../uv.lock`` keeps the library's lock on the demo app's versions,
so one ``make install`` at the top caches what a copy of the folder installs offline.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1]
COPIED = ("pyproject.toml", "README.md", "LICENSE", "src")
MANIFEST_CONSTRAINTS = re.compile(r"\n\[manifest\]\nconstraints = \[\n(?:    .*\n)*?\]\n")


def pins(lock: Path) -> list[str]:
    """``name==version`` for each registry package ``lock`` holds at exactly one version."""
    versions: dict[str, set[str]] = {}
    for package in tomllib.loads(lock.read_text("utf-8"))["package"]:
        if "registry" in package.get("source", {}):
            versions.setdefault(package["name"], set()).add(package["version"])
    return [f"{name}=={next(iter(v))}" for name, v in sorted(versions.items()) if len(v) == 1]


def main(argv: list[str] | None = None) -> int:
    """Lock a copy of the folder and write its uv.lock here."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uv", default="uv")
    parser.add_argument("--pins", type=Path, help="a uv.lock whose versions to hold")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="stop-on-artifact-lock-") as folder:
        copy = Path(folder)
        for name in COPIED:
            source = LIBRARY / name
            if source.is_dir():
                shutil.copytree(source, copy / name)
            else:
                shutil.copy2(source, copy / name)
        if args.pins is not None:
            held = ", ".join(f'"{pin}"' for pin in pins(args.pins))
            project = (copy / "pyproject.toml").read_text("utf-8")
            table = f"[tool.uv]\nconstraint-dependencies = [{held}]\n"
            project = (
                project.replace("[tool.uv]\n", table, 1)
                if "[tool.uv]\n" in project
                else (project + "\n" + table)
            )
            (copy / "pyproject.toml").write_text(project, "utf-8")
        done = subprocess.run([args.uv, "lock", "--quiet"], cwd=copy, check=False)
        if done.returncode != 0:
            return done.returncode
        lock = MANIFEST_CONSTRAINTS.sub("\n", (copy / "uv.lock").read_text("utf-8"), count=1)
        (LIBRARY / "uv.lock").write_text(lock, "utf-8")
    print(f"wrote {LIBRARY / 'uv.lock'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
