"""The public face stays small, and each of its names has a use shown in the README or docs."""

from __future__ import annotations

import re
from pathlib import Path

import stop_on_artifact
import stop_on_artifact.messages
import stop_on_artifact.testing
import stop_on_artifact.whatif

LIBRARY = Path(__file__).resolve().parents[1]
MAX_PUBLIC = 45  # issue #62: 63 names before
MODULES = (stop_on_artifact, stop_on_artifact.messages, stop_on_artifact.testing,
           stop_on_artifact.whatif)  # fmt: skip


def public() -> list[str]:
    return [name for module in MODULES for name in module.__all__]


def shown() -> str:
    """The README and the guides (docs/*.md; the generated reference pages list every name)."""
    pages = [LIBRARY / "README.md", *sorted((LIBRARY / "docs").glob("*.md"))]
    return "\n".join(page.read_text("utf-8") for page in pages)


def test_the_public_face_has_at_most_45_names() -> None:
    names = public()
    assert len(names) == len(set(names)), "a name is public twice"
    assert len(names) <= MAX_PUBLIC, len(names)


def test_every_public_name_is_shown_in_the_readme_or_a_guide() -> None:
    """Named in a Python block (the tests run them) or in prose's inline code."""
    text = shown()
    code = "\n".join(re.findall(r"```python\n(.*?)```", text, flags=re.S))
    spans = "\n".join(re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S)))
    missing = [n for n in public() if not re.search(rf"\b{n}\b", code + "\n" + spans)]
    assert missing == []
