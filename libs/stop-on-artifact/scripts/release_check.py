"""The release guard: what must hold before a tag publishes to PyPI.

``python scripts/release_check.py --tag v0.6.0 --dist dist --notes notes.md`` (from the
library's folder) refuses, exiting non-zero with one line that says why:

- a tag that is not ``v`` followed by ``__version__`` (``src/stop_on_artifact/__init__.py``,
  the one place the version lives);
- a CHANGELOG.md without a dated section for that version (``## 0.6.0 - 2026-12-07``);
- a folder without exactly one wheel and one sdist of that version, or a wheel or sdist whose
  metadata has no ``Project-URL`` (PyPI lists a project's links from those lines).

With ``--notes``, it writes that CHANGELOG section's body, the release notes. The standard
library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import email
import re
import sys
import tarfile
import zipfile
from email.message import Message
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1]
VERSION = re.compile(r'^__version__ = "([^"]+)"$', flags=re.M)
HEADING = re.compile(r"^## (?P<version>\S+)(?: - (?P<date>\d{4}-\d{2}-\d{2}))?\s*$", flags=re.M)


class Refused(Exception):
    """A reason not to publish."""


def version(library: Path = LIBRARY) -> str:
    """``__version__``, read from the source (the package need not be installed)."""
    found = VERSION.search((library / "src/stop_on_artifact/__init__.py").read_text("utf-8"))
    if not found:
        raise Refused('no __version__ = "..." line in src/stop_on_artifact/__init__.py')
    return found[1]


def check_tag(tag: str, expected: str) -> None:
    """The tag is ``v`` + ``__version__``: refs/tags/ may lead, as ``GITHUB_REF`` has it."""
    name = tag.removeprefix("refs/tags/")
    if name != f"v{expected}":
        raise Refused(f"tag {name!r} is not v{expected}, the version in __init__.py")


def release_notes(changelog: str, wanted: str) -> str:
    """The body of the CHANGELOG's ``## <wanted> - YYYY-MM-DD`` section."""
    headings = list(HEADING.finditer(changelog))
    for index, heading in enumerate(headings):
        if heading["version"] != wanted:
            continue
        if not heading["date"]:
            raise Refused(f"CHANGELOG.md's section {wanted} has no date: ## {wanted} - YYYY-MM-DD")
        end = headings[index + 1].start() if index + 1 < len(headings) else len(changelog)
        body = changelog[heading.end() : end].strip()
        if not body:
            raise Refused(f"CHANGELOG.md's section {wanted} is empty")
        return body + "\n"
    raise Refused(f"CHANGELOG.md has no section for {wanted}: ## {wanted} - YYYY-MM-DD")


def _metadata(path: Path) -> Message:
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as archive:
            name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            return email.message_from_bytes(archive.read(name))
    with tarfile.open(path) as archive:
        member = next(
            m
            for m in archive.getmembers()
            if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO")
        )
        extracted = archive.extractfile(member)
        assert extracted is not None
        return email.message_from_bytes(extracted.read())


def check_dist(dist: Path, expected: str) -> None:
    """One wheel and one sdist of ``expected``, each with Project-URL lines."""
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        found = ", ".join(p.name for p in [*wheels, *sdists]) or "nothing"
        raise Refused(f"{dist} must hold one wheel and one sdist; it holds {found}")
    for path in (*wheels, *sdists):
        metadata = _metadata(path)
        if metadata["Version"] != expected:
            raise Refused(f"{path.name} is version {metadata['Version']}, not {expected}")
        if not metadata.get_all("Project-URL"):
            raise Refused(
                f"{path.name} has no Project-URL: add [project.urls] (homepage, documentation, "
                "repository, changelog, issues) to pyproject.toml before publishing"
            )


def main(argv: list[str] | None = None) -> int:
    """Check the tag, the CHANGELOG and the built files; write the release notes."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", required=True, help="vX.Y.Z (or refs/tags/vX.Y.Z)")
    parser.add_argument("--dist", type=Path, help="the folder of the built wheel and sdist")
    parser.add_argument("--notes", type=Path, help="write the CHANGELOG section here")
    parser.add_argument("--library", type=Path, default=LIBRARY, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        expected = version(args.library)
        check_tag(args.tag, expected)
        notes = release_notes((args.library / "CHANGELOG.md").read_text("utf-8"), expected)
        if args.dist is not None:
            check_dist(args.dist, expected)
    except Refused as refused:
        print(f"release refused: {refused}", file=sys.stderr)
        return 1
    if args.notes is not None:
        args.notes.write_text(notes, "utf-8")
    print(f"release {expected}: tag, CHANGELOG section and built files check out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
