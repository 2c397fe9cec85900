"""Render both graphs as Mermaid and keep the diagrams of docs/graphs.md in step.

``.venv/bin/python -m client.diagrams`` rewrites the blocks between ``<!-- mermaid:<graph> -->``
and ``<!-- /mermaid:<graph> -->`` in docs/graphs.md. No network: ``draw_mermaid`` is plain text.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from agent.graphs.legacy import graph as legacy
from agent.graphs.middleware import graph as middleware

PAGE = Path(__file__).resolve().parents[1] / "docs" / "graphs.md"


def mermaid() -> dict[str, str]:
    """Return each graph id's Mermaid source."""
    return {
        "legacy": legacy.get_graph().draw_mermaid(),
        "middleware": middleware.get_graph().draw_mermaid(),
    }


def block(name: str, source: str) -> str:
    """Return the page's block for one graph, markers included."""
    return f"<!-- mermaid:{name} -->\n```mermaid\n{source.strip()}\n```\n<!-- /mermaid:{name} -->"


def pattern(name: str) -> re.Pattern[str]:
    """Match one graph's block."""
    return re.compile(rf"<!-- mermaid:{name} -->.*?<!-- /mermaid:{name} -->", re.S)


def update(text: str) -> str:
    """Return the page's text with every diagram block regenerated.

    Raises:
        ValueError: If a graph's markers are missing.
    """
    for name, source in mermaid().items():
        found = pattern(name).search(text)
        if found is None:
            msg = f"docs/graphs.md has no <!-- mermaid:{name} --> block"
            raise ValueError(msg)
        text = text[: found.start()] + block(name, source) + text[found.end() :]
    return text


def main() -> int:
    """Rewrite the diagrams of docs/graphs.md in place."""
    PAGE.write_text(update(PAGE.read_text("utf-8")), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
