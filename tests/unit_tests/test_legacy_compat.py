"""What keeps the legacy graph runnable on langgraph 0.6 / langchain-core 0.3, checked on 1.x.

``make compat`` runs the graph on 0.6.6 itself; these run in the edit loop.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool

from agent import models
from agent.tools import TOOLS
from tests.unit_tests.conftest import build, run

ROOT = Path(__file__).resolve().parents[2]

# Runs in a fresh interpreter: hide what langgraph 0.6 / langchain 0.3 lack, then import.
IMPORT_WITHOUT_1X = """
import importlib.abc, sys
import langgraph.prebuilt.tool_node as tool_node
del tool_node.ToolCallRequest
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in ("langchain.agents", "langchain.tools") or name.startswith("langchain.agents."):
            raise ImportError(f"{name} is hidden: langchain 1.x only")
        return None
sys.meta_path.insert(0, Block())
import agent.graphs.legacy
assert "agent.graphs.middleware" not in sys.modules
print(sorted(agent.graphs.legacy.graph.nodes))
"""


def test_the_legacy_graph_imports_nothing_langchain_1x_only() -> None:
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_WITHOUT_1X],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "'tools'" in done.stdout


def test_tool_schemas_are_counted_on_langchain_core_0_3_as_1x_counts_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    messages = [HumanMessage("How does a checkpointer work?"), AIMessage("It saves state.")]
    schemas = [convert_to_openai_tool(tool) for tool in TOOLS]
    counted_by_core = models.billed_input_tokens(messages, schemas)
    monkeypatch.setattr(models, "_COUNTS_TOOLS", False)
    assert models.billed_input_tokens(messages, schemas) == counted_by_core
    assert models.billed_input_tokens(messages) < counted_by_core


async def test_legacy_refuses_over_cap_calls_in_place_and_keeps_call_positions() -> None:
    text = "checkpointer; buy a laptop for 900; buy a mouse for 20"
    seen = {}
    for graph_name in ("legacy", "middleware"):
        observed = await run(build(graph_name), text, {"force_outcome": "success"})
        issued = next(m for m in observed.messages if isinstance(m, AIMessage) and m.tool_calls)
        results = [m for m in observed.messages if isinstance(m, ToolMessage)]
        assert [m.tool_call_id for m in results] == [c["id"] for c in issued.tool_calls]
        assert [m.artifact["reason"] for m in results] == ["completed", "policy_block", "completed"]
        # The mouse is the third call of the turn, whichever calls the policy refused.
        assert results[2].artifact["attempt"] == 2
        seen[graph_name] = [(m.name, m.content, m.artifact) for m in results]
    assert seen["legacy"] == seen["middleware"]
