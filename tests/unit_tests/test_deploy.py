"""The deployment image: ``langgraph dockerfile`` names the project's graphs and its auth.

``langgraph up``, ``langgraph build`` and LangSmith Deployment build from the same
``langgraph.json``; the Dockerfile the CLI writes is where a missing graph or auth entry
would show. Generating it needs no Docker daemon.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from langgraph_sdk import Auth

ROOT = Path(__file__).resolve().parents[2]
CONFIG = json.loads((ROOT / "langgraph.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def dockerfile(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("docker") / "Dockerfile"
    command = [sys.executable, "-m", "langgraph_cli", "dockerfile"]
    command += ["--config", str(ROOT / "langgraph.json"), str(out)]
    done = subprocess.run(
        command, cwd=out.parent, capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out.read_text("utf-8")


def env_json(dockerfile: str, name: str) -> object:
    prefix = f"ENV {name}="
    lines = [line for line in dockerfile.splitlines() if line.startswith(prefix)]
    assert len(lines) == 1, f"expected one {prefix!r} line in:\n{dockerfile}"
    return json.loads(lines[0].removeprefix(prefix).strip("'"))


def test_the_image_serves_both_graphs(dockerfile: str) -> None:
    assert env_json(dockerfile, "LANGSERVE_GRAPHS") == CONFIG["graphs"]
    assert set(CONFIG["graphs"]) == {"legacy", "middleware"}


def test_the_image_loads_the_projects_auth(dockerfile: str) -> None:
    auth = env_json(dockerfile, "LANGGRAPH_AUTH")
    assert auth == CONFIG["auth"]
    assert isinstance(auth, dict)
    # A module path, not a file path: it resolves wherever the package is installed.
    assert auth["path"] == "agent.auth:auth"
    assert auth["disable_studio_auth"] is True  # Studio needs a key like everyone else


def test_the_auth_path_names_an_auth_object() -> None:
    # That it authenticates is proven through the server: tests/integration_tests/test_auth.py
    module_name, _, attribute = CONFIG["auth"]["path"].partition(":")
    module = __import__(module_name, fromlist=[attribute])
    assert isinstance(getattr(module, attribute), Auth)


def test_the_image_installs_the_project_and_bakes_in_no_secret(dockerfile: str) -> None:
    assert dockerfile.startswith(f"FROM langchain/langgraph-api:{CONFIG['python_version']}")
    assert f"ADD . /deps/{ROOT.name}" in dockerfile
    # The library is a local package of its own; the app's install finds it in the workspace.
    assert re.search(
        r"^ADD \./libs/stop-on-artifact /deps/stop-on-artifact(_1)?$", dockerfile, re.M
    )
    for variable in ("AGENT_API_KEYS", "GROQ_API_KEY", "LANGSMITH_API_KEY", "AGENT_REDACT_TRACES"):
        assert variable not in dockerfile, f"{variable} belongs in the runtime environment"
