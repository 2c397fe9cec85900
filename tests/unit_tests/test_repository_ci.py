"""The repository's own CI: the workflows, their checks, pre-commit and CONTRIBUTING.md.

Everything here runs offline: check-jsonschema reads its vendored copy of GitHub's workflow
schema, zizmor runs with ``--offline``, pre-commit only validates its config.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
CI = WORKFLOWS / "ci.yml"
RELEASE = WORKFLOWS / "release.yml"
ZIZMOR_CONFIG = ROOT / ".github" / "zizmor.yml"
BIN = Path(sys.executable).parent
RUN = ".tools/bin/uv run --frozen --no-sync"
LIBRARY_TESTS = "make -C libs/stop-on-artifact test"  # the library's own Makefile
SHA_PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def _load(path: Path) -> dict[Any, Any]:
    data = yaml.safe_load(path.read_text("utf-8"))
    assert isinstance(data, dict), f"{path.name} is not a mapping"
    return data


def _triggers(workflow: dict[Any, Any]) -> Any:
    # YAML 1.1 reads the bare key `on` as True.
    return workflow["on"] if "on" in workflow else workflow[True]


def _steps(workflow: dict[Any, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (job_id, step) for job_id, job in workflow["jobs"].items() for step in job.get("steps", [])
    ]


def _runs(job: dict[str, Any]) -> list[str]:
    return [
        line.strip()
        for step in job.get("steps", [])
        for line in str(step.get("run", "")).splitlines()
        if line.strip()
    ]


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text("utf-8")
    return set(re.findall(r"^([a-z0-9][a-z0-9-]*):(?!=)", text, re.M))


def _zizmor_allowed() -> set[str]:
    """Actions the zizmor config lets through unpinned (each with its reason beside it)."""
    if not ZIZMOR_CONFIG.exists():
        return set()
    config = yaml.safe_load(ZIZMOR_CONFIG.read_text("utf-8")) or {}
    rule = (config.get("rules") or {}).get("unpinned-uses") or {}
    policies = (rule.get("config") or {}).get("policies") or {}
    return {name for name, policy in policies.items() if policy != "hash-pin"}


def test_workflows_parse_as_yaml() -> None:
    names = sorted(path.name for path in WORKFLOWS.glob("*.y*ml"))
    assert names == ["ci.yml", "release.yml"]
    for path in WORKFLOWS.glob("*.y*ml"):
        workflow = _load(path)
        assert workflow["jobs"], path.name
        assert _triggers(workflow), path.name


def test_ci_runs_on_push_and_pull_request_with_read_only_contents() -> None:
    workflow = _load(CI)
    triggers = _triggers(workflow)
    assert {"push", "pull_request"} <= set(triggers)
    assert workflow["permissions"] == {"contents": "read"}


def test_ci_jobs_run_lint_test_and_the_library_on_three_pythons() -> None:
    jobs = _load(CI)["jobs"]
    assert set(jobs) == {"lint", "library", "library-alone", "app"}
    assert "make lint" in _runs(jobs["lint"])
    assert "make test" in _runs(jobs["app"])

    library = jobs["library"]
    assert library["strategy"]["matrix"]["python-version"] == ["3.11", "3.12", "3.13"]
    runs = _runs(library)
    assert runs.index("make install") < runs.index(LIBRARY_TESTS)
    # `make install` syncs .venv with $(PYTHON): the job points it at the matrix's Python.
    assert library["env"]["PYTHON"] == "python${{ matrix.python-version }}"
    setup_python = [
        step
        for step in library["steps"]
        if str(step.get("uses", "")).startswith("actions/setup-python@")
    ]
    assert setup_python[0]["with"]["python-version"] == "${{ matrix.python-version }}"

    # A copy of the library's folder alone, outside the repository, with its own commands.
    alone = _runs(jobs["library-alone"])
    assert 'cp -r libs/stop-on-artifact "$RUNNER_TEMP/stop-on-artifact"' in alone
    assert "make install lint test build" in alone
    for name in ("lint", "app", "library-alone"):
        versions = [
            step["with"]["python-version"]
            for step in jobs[name]["steps"]
            if str(step.get("uses", "")).startswith("actions/setup-python@")
        ]
        assert versions == ["3.12"], name
    assert any(
        str(step.get("uses", "")).startswith("astral-sh/setup-uv@")
        for step in jobs["lint"]["steps"]
    )


def test_every_action_is_pinned_to_a_commit_sha() -> None:
    allowed = _zizmor_allowed()
    seen = 0
    for path in (CI, RELEASE):
        lines = path.read_text("utf-8").splitlines()
        for job_id, step in _steps(_load(path)):
            uses = step.get("uses")
            if uses is None:
                continue
            seen += 1
            action = uses.split("@", 1)[0]
            if action in allowed:
                continue
            assert SHA_PIN.match(uses), f"{path.name} {job_id}: {uses} is not pinned to a SHA"
            # The version the SHA is, for the reader (and for updates), beside it.
            line = next(line for line in lines if f"uses: {uses}" in line)
            assert re.search(r"# v\d+\.\d+\.\d+$", line), f"{path.name}: no # vX.Y.Z on {line!r}"
            if action == "actions/checkout":
                assert step["with"]["persist-credentials"] is False, f"{path.name} {job_id}"
    assert seen >= 8


def test_release_publishes_the_dist_by_trusted_publishing() -> None:
    text = RELEASE.read_text("utf-8")
    workflow = _load(RELEASE)
    triggers = _triggers(workflow)
    assert set(triggers) == {"push"}
    assert triggers["push"] == {"tags": ["v*"]}

    build, publish = workflow["jobs"]["build"], workflow["jobs"]["publish"]
    assert "make dist" in _runs(build)
    upload = [
        s for s in build["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@")
    ]
    assert [u["with"]["path"] for u in upload] == [
        "release-notes.md",
        "libs/stop-on-artifact/dist/",
    ]

    assert publish["needs"] == "build"
    assert publish["environment"]["name"] == "pypi"
    assert publish["permissions"] == {"id-token": "write"}
    uses = [str(step.get("uses", "")) for step in publish["steps"]]
    assert uses[0].startswith("actions/download-artifact@")
    assert uses[-1].startswith("pypa/gh-action-pypi-publish@")
    assert publish["steps"][-1]["with"] == {"packages-dir": "libs/stop-on-artifact/dist/"}

    assert "password" not in text
    assert "secrets." not in text
    assert "id-token: write" not in CI.read_text("utf-8")


def test_release_checks_the_tag_lints_and_tests_the_wheel_before_publishing() -> None:
    # The guard (scripts/release_check.py, tested in the library's test_soa_release.py):
    # first the tag against __version__ and the CHANGELOG's dated section, which becomes the
    # release notes; then make lint and make dist (the suite from the wheel); then the built
    # files' version and Project-URL; only then the upload that publish takes.
    workflow = _load(RELEASE)
    build = workflow["jobs"]["build"]["steps"]
    names = [step.get("name") or step.get("run") or step.get("uses") for step in build]
    guard = 'python libs/stop-on-artifact/scripts/release_check.py --tag "$TAG"'
    tag = next(
        s
        for s in build
        if s.get("name") == "the tag is the version, with a dated CHANGELOG section"
    )
    assert tag["run"] == f"{guard} --notes release-notes.md"
    urls = next(s for s in build if s.get("name") == "refuse a wheel without Project-URL")
    assert urls["run"] == f"{guard} --dist libs/stop-on-artifact/dist"
    for step in (tag, urls):
        assert step["env"] == {"TAG": "${{ github.ref_name }}"}  # never ${{ }} inside run
    order = [names.index(tag["name"]), names.index("make lint"), names.index("make dist")]
    assert order == sorted(order) and order[-1] < names.index(urls["name"])
    uploads = [
        i
        for i, s in enumerate(build)
        if str(s.get("uses", "")).startswith("actions/upload-artifact@")
    ]
    assert uploads and min(uploads) > names.index(urls["name"])
    notes = workflow["jobs"]["notes"]
    assert notes["needs"] == "publish" and notes["permissions"] == {"contents": "write"}
    assert any("--notes-file release-notes.md" in line for line in _runs(notes))
    assert "[project.urls]" in (ROOT / "CONTRIBUTING.md").read_text("utf-8")


def tool(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run one of the environment's tools from the repository's root, offline."""
    return subprocess.run(
        [str(BIN / name), *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_workflows_match_githubs_schema() -> None:
    files = [str(CI), str(RELEASE)]
    done = tool("check-jsonschema", "--builtin-schema", "vendor.github-workflows", *files)
    assert done.returncode == 0, done.stdout + done.stderr


def test_zizmor_finds_nothing_offline() -> None:
    done = tool("zizmor", "--offline", "--no-progress", "--color", "never", ".github/workflows/")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout + done.stderr


def test_make_lint_runs_the_workflow_checks() -> None:
    text = (ROOT / "Makefile").read_text("utf-8")
    lint = re.search(r"^lint:.*\n((?:\t.*\n)+)", text, re.M)
    assert lint is not None
    recipe = [line.strip() for line in lint.group(1).splitlines()]
    assert (
        "$(RUN) check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml"
        in recipe
    )
    assert "$(RUN) zizmor --offline .github/workflows/" in recipe


def test_pre_commit_config_is_valid_and_local_only() -> None:
    path = ROOT / ".pre-commit-config.yaml"
    done = tool("pre-commit", "validate-config", str(path))
    assert done.returncode == 0, done.stdout + done.stderr

    config = _load(path)
    assert [repo["repo"] for repo in config["repos"]] == ["local"]
    hooks = config["repos"][0]["hooks"]
    for hook in hooks:
        assert hook["language"] == "system", hook["id"]
        assert hook["entry"].startswith(f"{RUN} "), hook["id"]
    # The same commands as `make lint`, over the whole project.
    for command in (
        "ruff check agent client tests bench libs",
        "ruff format --check agent client tests bench libs",
        "mypy",
        "zizmor --offline .github/workflows/",
    ):
        hook = next(h for h in hooks if h["entry"] == f"{RUN} {command}")
        assert hook["pass_filenames"] is False, hook["id"]


def test_contributing_names_only_make_targets_that_exist() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text("utf-8")
    named = set(re.findall(r"\bmake ([a-z0-9][a-z0-9-]*)", text))
    assert {"dev", "test", "unit", "lint", "dist"} <= named
    missing = named - _make_targets()
    assert not missing, f"CONTRIBUTING.md names missing targets: {missing}"
    assert "git tag vX.Y.Z && git push --tags" in text
    assert "libs/stop-on-artifact/src/stop_on_artifact/__init__.py" in text
    assert "trusted publishing" in " ".join(text.split())


def test_make_dist_is_a_makefile_target() -> None:
    assert "dist" in _make_targets()
