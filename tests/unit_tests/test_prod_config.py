"""The production server's config and environment agree with the dev server's.

``aegra.json`` must name the same graphs (as file paths, the only form Aegra loads), the
same auth and the same dependencies as ``langgraph.json`` (Aegra puts each on ``sys.path``
and installs nothing, so a ``src``-layout library is listed by its ``src`` folder); the auth
handler must read the key whether the server passes header names and values as ``bytes``
(langgraph-api) or ``str`` (Aegra).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import Auth

from agent.auth import build_auth, header_value

ROOT = Path(__file__).resolve().parents[2]


def load(name: str) -> dict[str, Any]:
    return dict(json.loads((ROOT / name).read_text("utf-8")))


def as_module(entry: str) -> str:
    """``./agent/graphs/legacy.py:graph`` and ``agent.graphs.legacy:graph`` give the latter."""
    target, _, attribute = entry.rpartition(":")
    if "/" in target or target.endswith(".py"):
        target = target.removeprefix("./").removesuffix(".py").replace("/", ".")
    return f"{target}:{attribute}"


def test_aegra_json_serves_the_graphs_and_auth_of_langgraph_json() -> None:
    dev, prod = load("langgraph.json"), load("aegra.json")
    assert list(prod["graphs"]) == list(dev["graphs"])
    assert {g: as_module(p) for g, p in prod["graphs"].items()} == {
        g: as_module(p) for g, p in dev["graphs"].items()
    }
    for entry in prod["graphs"].values():
        path = entry.rpartition(":")[0]
        assert path.startswith("./") and (ROOT / path).is_file(), entry
    assert prod["auth"] == dev["auth"]
    assert prod["http"] == dev["http"]

    def importable(dep: str) -> str:
        return f"{dep}/src" if (ROOT / dep / "src").is_dir() else dep

    assert prod["dependencies"] == [importable(dep) for dep in dev["dependencies"]]
    assert "./libs/stop-on-artifact/src" in prod["dependencies"]


def test_prod_requirements_pin_every_package_and_the_graph_libraries_of_uv_lock() -> None:
    lines = (ROOT / "aegra" / "requirements.txt").read_text("utf-8").splitlines()
    pins: dict[str, str] = {
        m[1]: m[2] for line in lines if (m := re.match(r"^([A-Za-z0-9_.-]+)==([^ ;\\]+)", line))
    }
    requirement_lines = [line for line in lines if line and line[0] not in " #"]
    assert len(pins) == len(requirement_lines), "every requirement is pinned with =="
    lock = (ROOT / "uv.lock").read_text("utf-8")
    for name in ("langgraph", "langchain", "langchain-core", "langchain-groq", "langsmith"):
        locked = re.search(rf'^name = "{name}"\nversion = "([^"]+)"', lock, re.M)
        assert locked, name
        assert pins[name] == locked.group(1), f"{name}: prod {pins[name]}, uv.lock {locked[1]}"
    assert "aegra-api" in pins


@pytest.mark.parametrize(
    "headers",
    [
        {b"x-api-key": b"k-alice", b"host": b"127.0.0.1"},  # langgraph-api
        {"x-api-key": "k-alice", "host": "127.0.0.1"},  # Aegra
    ],
)
async def test_auth_reads_the_key_from_bytes_or_str_headers(headers: dict[Any, Any]) -> None:
    assert header_value(headers, "x-api-key") == "k-alice"
    auth = build_auth({"k-alice": "alice"})
    assert auth._authenticate_handler is not None
    user = await auth._authenticate_handler(headers)
    assert user == {"identity": "alice"}


@pytest.mark.parametrize("headers", [{}, {"x-api-key": ""}, {b"x-api-key": b"wrong"}])
async def test_auth_refuses_a_missing_or_wrong_key_in_either_form(headers: dict[Any, Any]) -> None:
    auth = build_auth({"k-alice": "alice"})
    assert auth._authenticate_handler is not None
    with pytest.raises(Auth.exceptions.HTTPException) as caught:
        await auth._authenticate_handler(headers)
    assert caught.value.status_code == 401


def test_the_production_launcher_names_the_payment_record_the_tool_reads() -> None:
    from agent.tools.payments import DB_ENV
    from client.prodserver import PAYMENTS_ENV

    assert PAYMENTS_ENV == DB_ENV
