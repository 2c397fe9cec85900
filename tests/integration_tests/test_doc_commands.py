"""Every fenced ``bash`` and ``python`` block of the READMEs and docs/, run as printed.

A python block runs in a subprocess with the venv's interpreter from the clone's top folder,
after the blocks it says it continues ("This block continues the one above", in the
paragraph just before it); when that paragraph says it ``prints `X` ``, its last line is
``X``. A block that builds a graph (``add_node``) compiles and runs it, as a reader who
copies it would. A bash block runs line by line: a client command against the
session dev server (``LANGGRAPH_URL`` set, as ``make dev``'s first line tells a person), a
variable assignment in ``bash``. The commands that start a long-running server, install
packages or need an account are listed in ``NOT_RUN`` with the reason, and checked to name a
real Makefile target, module or path instead. A line that fits neither fails the test.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.dev_server import DevServer, copy_of_the_project
from tests.support.langsmith_collector import LangSmithCollector

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv" / "bin" / "python"
PAGES = [
    ROOT / "README.md",
    ROOT / "libs" / "stop-on-artifact" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
CONTINUES = "This block continues the one above"
PRINTS = re.compile(r"\bprints `([^`]+)`")
"""What the paragraph before a python block says it prints (its last line)."""
CLIENT = ".venv/bin/python -m client"

# Printed commands that are not run here, each with why, and what is checked instead.
NOT_RUN: dict[str, str] = {
    "make dev": "starts a server that runs until stopped; the suite starts the same one",
    "make test": "the whole suite, this test included (about 8 minutes)",
    "GROQ_API_KEY=... make e2e": "needs a real GROQ_API_KEY and calls Groq",
    "make compat": "builds five throwaway environments (minutes)",
    "make prod": "starts PostgreSQL, Redis and Aegra until stopped; tests/prod_tests run it",
    "make prod PROD_PORT=8123": "as make prod, on another port",
    "make prod PROD_STATE=/srv/soa": "as make prod, with another state folder",
    **dict.fromkeys(
        (
            'pip install "stop-on-artifact[langchain]"',
            'pip install "stop-on-artifact[mcp]"',
        ),
        "installs from the package index into the active environment",
    ),
    f"{CLIENT} check --url https://...": "https://... stands for your deployment",
    "export DATABASE_URL=postgresql://aegra:...@db-host:5432/aegra": "your database host",
    "export REDIS_URL=redis://:...@redis-host:6379/0 REDIS_BROKER_ENABLED=true": "your Redis",
    "export AEGRA_CONFIG=$PWD/aegra.json RUN_MIGRATIONS_ON_STARTUP=false AGENT_API_KEYS=...": (
        "part of the several-machines recipe, with your keys"
    ),
    ".prod/venv/bin/python -m uvicorn aegra_api.main:app --host 0.0.0.0 --port 2026 --workers 2": (
        "serves until stopped, against the database and Redis above"
    ),
    **dict.fromkeys(
        (
            'make report ARGS="--project stop-on-artifact --since 24h"',
            f"{CLIENT} report --project stop-on-artifact --json",
            f"{CLIENT} report --project stop-on-artifact --since 7d --chart savings.html",
        ),
        "reads traced runs: tests/unit_tests/test_report.py runs it over runs in the stand-in",
    ),
}
ASSIGNMENT = re.compile(r"^[A-Z][A-Z0-9_]*=\S*$")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    page: Path
    line: int
    kind: str
    text: str
    continues: bool
    said: str = ""
    """The paragraph just before the block."""

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def page_blocks(page: Path) -> list[Block]:
    text = page.read_text("utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip().rsplit("\n\n", 1)[-1]
        found.append(
            Block(
                page=page,
                line=text[: match.start()].count("\n") + 1,
                kind=match[1],
                text=match[2],
                continues=CONTINUES in " ".join(before.split()),
                said=" ".join(before.split()),
            )
        )
    return found


def all_blocks(kind: str) -> Iterator[tuple[Block, str]]:
    """Each block of a kind, with the source to run: itself after what it continues."""
    for page in PAGES:
        chain: list[str] = []
        for block in page_blocks(page):
            if block.kind != kind:
                continue
            chain = [*chain, block.text] if block.continues else [block.text]
            yield block, "\n".join(chain)


def command_lines(block: Block) -> list[str]:
    lines = []
    for raw in block.text.splitlines():
        line = raw if "'" in raw or '"' in raw else raw.split("  #", 1)[0]
        line = re.sub(r"\s+# [^\"']*$", "", line).strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def env_for(server: DevServer, collector: LangSmithCollector) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGGRAPH_", "LANGSMITH_"))}
    env.pop("GROQ_API_KEY", None)
    env["LANGGRAPH_URL"] = server.url
    # The tracing example traces into a local stand-in for LangSmith, never the real one.
    env["LANGSMITH_ENDPOINT"] = collector.url
    env["LANGSMITH_API_KEY"] = "dummy"
    return env


@pytest.fixture(scope="module")
def collector() -> Iterator[LangSmithCollector]:
    with LangSmithCollector() as running:
        yield running


def test_the_pages_have_blocks_of_both_kinds() -> None:
    kinds = [block.kind for page in PAGES for block in page_blocks(page)]
    assert kinds.count("python") >= 8 and kinds.count("bash") >= 10
    # A block that continues another has one before it on its page.
    for page in PAGES:
        python = [block for block in page_blocks(page) if block.kind == "python"]
        assert not (python and python[0].continues), page


@pytest.mark.parametrize(
    ("where", "source", "printed"),
    [
        (block.where, source, (said[1] if (said := PRINTS.search(block.said)) else None))
        for block, source in all_blocks("python")
    ],
)
def test_every_python_block_runs(
    server: DevServer,
    collector: LangSmithCollector,
    where: str,
    source: str,
    printed: str | None,
) -> None:
    done = subprocess.run(
        [str(PYTHON), "-c", source],
        cwd=ROOT,
        env=env_for(server, collector),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"{where}\n{done.stderr[-3000:]}"
    if "trace_client()" in source:  # the tracing example's run reached the stand-in
        assert collector.roots(), where
    if printed is not None:
        assert done.stdout.splitlines()[-1:] == [printed], f"{where}\n{done.stdout[-3000:]}"


def test_every_block_that_builds_a_graph_compiles_and_runs_it() -> None:
    """A block is whole: one that adds nodes also adds the entry edge, compiles and runs."""
    builders = [block for block, _ in all_blocks("python") if ".add_node(" in block.text]
    assert any(block.where.startswith("docs/api.md") for block in builders)  # RemoteGraph
    for block in builders:
        text = block.text
        assert "add_edge(START" in text or "set_entry_point(" in text, block.where
        assert ".compile(" in text, block.where
        assert re.search(r"\.a?(invoke|stream)\(", text), block.where


def test_the_remote_graph_blocks_are_run_and_one_shows_the_context_arrived() -> None:
    section = (ROOT / "docs" / "api.md").read_text("utf-8").split("## Compose a deployed", 1)[1]
    remote = [
        (block, source)
        for block, source in all_blocks("python")
        if block.page.name == "api.md" and block.text in section
    ]
    assert len(remote) == 3 and [block.continues for block, _ in remote] == [False, True, True]
    block, source = remote[-1]
    assert "RemoteGraph(" in source and PRINTS.search(block.said), block.where


def bash_lines() -> list[tuple[str, str]]:
    return [(block.where, line) for block, _ in all_blocks("bash") for line in command_lines(block)]


def test_every_bash_line_is_run_or_listed_as_not_run() -> None:
    lines = {line for _, line in bash_lines()}
    for line in lines:
        runnable = line.startswith(f"{CLIENT} ") or ASSIGNMENT.match(line)
        assert runnable or line in NOT_RUN, f"neither run nor listed: {line}"
    assert set(NOT_RUN) <= lines | {"make dev", "make test"}, set(NOT_RUN) - lines


def test_the_commands_not_run_name_real_targets_and_paths() -> None:
    makefile = (ROOT / "Makefile").read_text("utf-8")
    listed = subprocess.run(
        ["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    for line in NOT_RUN:
        words = shlex.split(line)
        while ASSIGNMENT.match(words[0]):  # GROQ_API_KEY=... make e2e
            words = words[1:]
        if words[0] == "make":
            target = words[1]
            assert re.search(rf"^{target}:", makefile, re.M), target
            assert re.search(rf"^{target}\s", listed.stdout, re.M), target
            for assignment in words[2:]:
                variable = assignment.split("=", 1)[0]
                assert re.search(rf"^{variable} \?=", makefile, re.M), variable
        elif words[0] == "pip":  # the index's name: the library's, with an extra it declares
            name, extra = words[2].rstrip("]").split("[")
            project = (ROOT / "libs" / name / "pyproject.toml").read_text("utf-8")
            assert f'name = "{name}"' in project
            assert re.search(rf"^{extra} = \[", project, re.M), f"the [{extra}] extra"
        elif words[0] == ".prod/venv/bin/python":
            assert "$(PROD)/venv" in makefile and re.search(r"^PROD := \.prod$", makefile, re.M)
            assert "aegra-api==" in (ROOT / "aegra" / "requirements.txt").read_text("utf-8")
        elif words[0] == "export":
            assert (ROOT / "aegra.json").is_file()
        else:
            command = words[3]
            assert line.startswith(f"{CLIENT} {command}") and command in ("check", "report")
            done = subprocess.run(
                [str(PYTHON), "-m", "client", command, "--help"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0 and words[4].split("=")[0] in done.stdout, done.stderr


@pytest.mark.parametrize(
    ("where", "line"),
    [(where, line) for where, line in bash_lines() if line not in NOT_RUN],
)
def test_every_bash_line_runs_as_printed(
    server: DevServer, collector: LangSmithCollector, where: str, line: str
) -> None:
    if line.startswith(f"{CLIENT} "):
        args = [str(ROOT / ".venv" / "bin" / "python"), *shlex.split(line)[1:]]
    else:
        args = ["bash", "-c", line]
    before = git_status()
    done = subprocess.run(
        args,
        cwd=ROOT,
        env=env_for(server, collector),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{where}: {line}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    # A newcomer who follows the page ends with the clone as git had it (charts and the
    # server's files land where git ignores them).
    assert git_status() == before, f"{where}: {line} changed git status"


def git_status() -> str:
    done = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout if done.returncode == 0 else ""


# --- outputs shown: compared with what the block prints ------------------------------------

ELIDED = "..."
"""A shown line of only ``...`` stands for any lines; a line ending in `` ...`` for its rest."""
PLACEHOLDER = re.compile(r"<[a-z][a-z ]*>")
"""``<thread id>`` and the like stand for one word of the real output."""


def output_pattern(shown: str) -> re.Pattern[str]:
    """The regex a block's real output must match in full for the ``shown`` lines."""
    parts = []
    for line in shown.rstrip("\n").splitlines():
        if line.strip() == ELIDED:
            parts.append(r"(?:[^\n]*\n)*?")
            continue
        tail = line.endswith(f" {ELIDED}")
        text = line[: -len(ELIDED)] if tail else line
        pieces = PLACEHOLDER.split(text)
        body = r"\S+".join(re.escape(piece) for piece in pieces)
        parts.append(body + (r"[^\n]*" if tail else "") + r"\n")
    return re.compile("".join(parts) + r"\s*", re.S)


def shown_outputs() -> list[tuple[Block, Block]]:
    """Each docs/ command or code block followed by the output it prints.

    The output block is a plain (or ``text``) fence right after the block, or after one
    paragraph that says what it ``prints``.
    """
    pairs = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = page.read_text("utf-8")
        blocks = page_blocks(page)
        starts = [m.start() for m in FENCE.finditer(text)]
        ends = [m.end() for m in FENCE.finditer(text)]
        for index, (block, shown) in enumerate(zip(blocks, blocks[1:], strict=False)):
            if block.kind not in ("python", "bash") or shown.kind not in ("", "text"):
                continue
            between = text[ends[index] : starts[index + 1]].strip()
            said = " prints " in f" {' '.join(between.split())} "
            if not between or ("\n\n" not in between and said):
                pairs.append((block, shown))
    return pairs


@pytest.fixture(scope="module")
def project(server: DevServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project where ``make dev`` wrote the session server's URL, as it does."""
    copy = copy_of_the_project(tmp_path_factory.mktemp("docs") / "project")
    (copy / ".venv").symlink_to(ROOT / ".venv")
    (copy / ".langgraph_api").mkdir(exist_ok=True)
    (copy / ".langgraph_api" / "dev-url").write_text(f"{server.url}\n", "utf-8")
    return copy


def test_the_outputs_shown_are_found() -> None:
    found = {(b.where.split(":")[0], b.kind) for b, _ in shown_outputs()}
    assert found >= {("docs/api.md", "python"), ("docs/api.md", "bash")}, found
    assert any(".venv/bin/python -m client check" in b.text for b, _ in shown_outputs())


@pytest.mark.parametrize(
    ("block", "shown"), shown_outputs(), ids=[b.where for b, _ in shown_outputs()]
)
def test_every_output_shown_is_what_it_prints(
    project: Path, collector: LangSmithCollector, server: DevServer, block: Block, shown: Block
) -> None:
    env = env_for(server, collector)
    del env["LANGGRAPH_URL"]  # found as a person's shell finds it: what make dev wrote
    if block.kind == "python":
        command = [str(PYTHON), "-c", block.text]
    else:
        command = ["bash", "-c", command_lines(block)[0]]
    done = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{block.where}\n{done.stderr[-3000:]}"
    assert output_pattern(shown.text).fullmatch(done.stdout), (
        f"{shown.where}: shown\n{shown.text}\nprinted\n{done.stdout[:3000]}"
    )


def test_the_output_pattern_can_fail() -> None:
    pattern = output_pattern("a: <thread id>\n...\nend ...\n")
    assert pattern.fullmatch("a: 1f2e\nx\ny\nend of it\n")
    assert not pattern.fullmatch("a: two words\nend\n")
    assert not pattern.fullmatch("a: 1f2e\nno end\n")
