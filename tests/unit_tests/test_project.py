"""What the project promises about itself: config, docs, deployability."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

from client import diagrams

ROOT = Path(__file__).resolve().parents[2]


def test_no_return_direct_in_agent() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "agent").rglob("*.py")
        if re.search(r"return_direct\s*=", path.read_text("utf-8"))
    ]
    assert offenders == [], f"return_direct set in {offenders}: the artifact decides"


def test_langgraph_json_exposes_both_graphs() -> None:
    config = json.loads((ROOT / "langgraph.json").read_text())
    assert set(config["graphs"]) == {"legacy", "middleware"}


def test_the_diagrams_match_the_graphs() -> None:
    page = (ROOT / "docs" / "graphs.md").read_text("utf-8")
    assert diagrams.update(page) == page, "run `.venv/bin/python -m client.diagrams` to refresh"


def test_readme_opens_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    first_block = re.search(r"```(?:bash|sh)?\n(.*?)```", readme, re.S)
    assert first_block is not None
    assert first_block.group(1).split() == ["make", "dev", "make", "test"]


def test_make_help_lists_dev_and_test_first_each_description_in_one_column() -> None:
    listed = subprocess.run(
        ["make", "-s", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    lines = listed.stdout.splitlines()
    targets = re.findall(r"^([a-z0-9-]+):.*## ", (ROOT / "Makefile").read_text("utf-8"), re.M)
    names = [line.split(" ", 1)[0] for line in lines]
    assert names[:2] == ["dev", "test"]
    assert sorted(names) == sorted(targets)  # every documented target, once
    width = max(map(len, targets))  # the longest name (bench-agentdojo) sets the column
    for line in lines:
        name, gap, text = line[:width], line[width : width + 2], line[width + 2 :]
        assert gap == "  " and name.rstrip() in targets, line
        assert text and not text.startswith(" "), line


def test_env_example_lists_every_variable_read() -> None:
    listed = set(re.findall(r"^([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))
    read: set[str] = set()
    for path in [*(ROOT / "agent").rglob("*.py"), *(ROOT / "client").rglob("*.py")]:
        text = path.read_text("utf-8")
        read |= set(re.findall(r"environ(?:\.get)?\(\s*\"([A-Z0-9_]+)\"", text))
        read |= set(re.findall(r"environ\[\"([A-Z0-9_]+)\"\]", text))
        read |= set(re.findall(r"getenv\(\s*\"([A-Z0-9_]+)\"", text))
    assert read, "the scan found no variables at all"
    assert read <= listed, f"not in .env.example: {sorted(read - listed)}"
    for name in listed:
        assert re.search(rf"^# .*\n(?:#.*\n)*{name}=", (ROOT / ".env.example").read_text(), re.M)


def test_ci_runs_make_test_only() -> None:
    lines = [
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[-1] == "make test"


def test_langgraph_dockerfile_builds(tmp_path: Path) -> None:
    out = tmp_path / "Dockerfile"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "langgraph_cli",
            "dockerfile",
            "-c",
            str(ROOT / "langgraph.json"),
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert "agent.graphs.legacy:graph" in text
    assert "agent.graphs.middleware:graph" in text


def test_bench_readme_tables_come_from_latest_json() -> None:
    from bench.report import README, readme_block

    assert README == ROOT / "bench" / "README.md"
    result = json.loads((ROOT / "bench" / "results" / "latest.json").read_text("utf-8"))
    readme = README.read_text("utf-8")
    assert readme_block(result) in readme, "run `make bench` to refresh bench/README.md"


def test_dev_server_refuses_an_env_file_that_reaches_real_services(tmp_path: Path) -> None:
    from tests.support.dev_server import DevServerError, check_env_file

    config = tmp_path / "langgraph.json"
    config.write_text(json.dumps({"graphs": {}, "env": ".env"}))
    (tmp_path / ".env").write_text("LANGSMITH_TRACING=false\nLANGSMITH_PROJECT=p\n")
    check_env_file(config)  # harmless values pass
    (tmp_path / ".env").write_text("GROQ_API_KEY=sk-secret-value\nLANGSMITH_TRACING=true\n")
    try:
        check_env_file(config)
    except DevServerError as error:
        assert "GROQ_API_KEY, LANGSMITH_TRACING" in str(error)
        assert "sk-secret-value" not in str(error)
    else:
        raise AssertionError("a .env with a Groq key must stop the test server")


def test_the_apps_wheel_ships_only_agent(tmp_path: Path) -> None:
    import shutil
    import zipfile

    uv = shutil.which("uv") or str(ROOT / ".tools" / "bin" / "uv")
    done = subprocess.run(
        [uv, "build", "--wheel", "--quiet", "--out-dir", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("stop_on_artifact_app-*.whl")
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"agent"}
    assert "tests" not in tops and "bench" not in tops
    shipped = {Path(name).stem for name in zipfile.ZipFile(wheel).namelist()}
    tooling = {path.stem for path in (ROOT / "client").glob("*.py")} - {"__init__", "__main__"}
    assert {"cli", "devserver", "prodserver", "scenarios"} <= tooling
    assert not shipped & tooling, f"tooling in the deployed wheel: {sorted(shipped & tooling)}"


def test_agent_imports_nothing_of_the_tooling() -> None:
    """The deployed package never imports ``client`` (the CLI, launchers, scenario tables)."""
    found = []
    for path in (ROOT / "agent").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            tooling = [name for name in names if name.split(".")[0] == "client"]
            found += [f"{path.relative_to(ROOT)}: {name}" for name in tooling]
    assert not found, found
