"""The library README's blocks and the classes' ``Example:`` blocks, run exactly as printed.

The hand-built graph runs everywhere, under every ``stop_mode``; the create_agent blocks need
the ``[langchain]`` extra, and where it is missing (langgraph 0.6.6) the middleware's import
error is checked instead. Every function the README names is in a public ``__all__``.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import re
import sys
import textwrap
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import stop_on_artifact
import stop_on_artifact._policies
import stop_on_artifact._retry
import stop_on_artifact.messages
import stop_on_artifact.testing
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from soa_graphs import has_middleware

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"```python\n(.*?)```", flags=re.S)
HARD = 'router = StopRouter(stop_mode="hard")'


CONTINUES = "This block continues the one above"


def blocks() -> list[str]:
    found = BLOCK.findall(README.read_text("utf-8"))
    hand_built, with_middleware, _, _, adopting, testing = found
    return [hand_built, with_middleware, adopting, testing]


def test_the_install_lines_name_a_path_in_a_clone() -> None:
    text = README.read_text("utf-8")
    [install] = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    for line in install.strip().splitlines():
        assert line.startswith("pip install ")
        target = line.split("#")[0].split(maxsplit=2)[2].strip().strip('"').split("[")[0]
        assert target == "./libs/stop-on-artifact"
        assert (README.parent / "pyproject.toml").is_file()
    assert "from a clone of this repository" in text


def paragraph_before(text: str, block: str) -> str:
    """The paragraph just above a fenced block."""
    opening = text.index("```python\n" + block)
    return text[:opening].rstrip().rsplit("\n\n", 1)[1]


def test_a_block_that_needs_another_says_so_in_the_line_before() -> None:
    text = README.read_text("utf-8")
    hand_built, with_middleware, adopting, testing = blocks()
    assert paragraph_before(text, with_middleware).startswith(CONTINUES)
    for block in (hand_built, adopting, testing):  # on their own
        assert CONTINUES not in paragraph_before(text, block)


def policy_blocks() -> list[str]:
    _, _, gate, middleware, _, _ = BLOCK.findall(README.read_text("utf-8"))
    return [gate, middleware]


def test_the_policy_blocks_say_what_they_continue() -> None:
    text = README.read_text("utf-8")
    gate, middleware = policy_blocks()
    assert "continues the hand-built block" in " ".join(paragraph_before(text, gate).split())
    assert paragraph_before(text, middleware).startswith(CONTINUES)


def runner(monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], Any]:
    module = types.ModuleType("library_readme")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    namespace: dict[str, Any] = module.__dict__

    def run(name: str, block: str) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(block, f"README:{name}", "exec"), namespace)  # noqa: S102
        return out.getvalue()

    return namespace, run


def test_the_readme_examples_run_as_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    hand_built, with_middleware, adopting, testing = blocks()
    namespace, run = runner(monkeypatch)
    printed = run("adopt", adopting)
    assert printed == "{'stop': False, 'reason': 'transient', 'error': 'TimeoutError'}\n"
    assert "eta.internal" not in str(namespace["eta"].invoke(namespace["call"]).content)
    assert run("hand-built", hand_built) == "completed | # Refunds\n"
    assert len([m for m in namespace["result"]["messages"] if m.type == "ai"]) == 2
    if not has_middleware():  # the block imports langchain first; the middleware names the extra
        with pytest.raises(ImportError, match="langchain"):
            run("create_agent", with_middleware)
        with pytest.raises(ImportError, match=r"stop-on-artifact\[langchain\]"):
            exec("from stop_on_artifact import StopOnArtifactMiddleware", {})  # noqa: S102
        return
    assert run("create_agent", with_middleware) == (
        "fatal | Nothing in the handbook matches that.\n"
    )
    assert run("testing", testing) == ""
    exec(testing, {})  # noqa: S102 - in a namespace of its own: it runs alone


@pytest.mark.parametrize(
    ("mode", "tools_per_call", "rule"),
    [
        ("hard", [["lookup"]], "completed"),
        ("polish", [["lookup"], []], "completed"),  # the polish call binds no tool
        ("never", [["lookup"], ["lookup"]], "stop_mode_never"),
    ],
)
def test_the_readme_hand_built_graph_is_right_in_every_mode(
    monkeypatch: pytest.MonkeyPatch, mode: str, tools_per_call: list[list[str]], rule: str
) -> None:
    hand_built = blocks()[0]
    assert HARD in hand_built
    namespace, run = runner(monkeypatch)
    seen: list[list[str]] = []

    def spy(script: Any) -> Any:
        def spied(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> AIMessage:
            seen.append([tool["function"]["name"] for tool in tools])
            reply: AIMessage = script(messages, tools)
            return reply

        return spied

    namespace["spy"] = spy
    block = hand_built.replace(HARD, f'router = StopRouter(stop_mode="{mode}")').replace(
        'script=call_then_answer("lookup")', 'script=spy(call_then_answer("lookup"))'
    )
    printed = run(f"hand-built-{mode}", block)
    assert printed.startswith(f"{rule} | ")
    assert seen == tools_per_call
    last = namespace["result"]["messages"][-1]
    assert isinstance(last, AIMessage) and not last.tool_calls
    # A second turn on the same thread starts clean: the decision is cleared, tools bound.
    router = namespace["router"]
    state = {**namespace["result"], "messages": list(namespace["result"]["messages"])}
    state["messages"].append(HumanMessage("and exchanges?"))
    update = router.turn_update(state["messages"])
    assert update["stop_decision"] is None
    assert update["stop_turn"]["turn"] == f"#{len(state['messages']) - 1}"  # the message has no id
    assert update["stop_turn"]["settings"]["stop_mode"] == mode
    assert router.tools_for(state, ["lookup"]) == ["lookup"]


def examples(cls: type) -> list[str]:
    doc = inspect.getdoc(cls) or ""
    section = doc.split("Example:", 1)[1] if "Example:" in doc else ""
    return [textwrap.dedent(block) for block in BLOCK.findall(textwrap.dedent(section))]


def test_the_router_docstring_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    (example,) = examples(stop_on_artifact.StopRouter)
    assert 'StopRouter(stop_mode="polish", max_retries=1)' in example
    namespace, run = runner(monkeypatch)
    run("StopRouter", example)
    assert [m.type for m in namespace["result"]["messages"]] == ["human", "ai", "tool", "ai"]


def test_the_middleware_docstring_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    if not has_middleware():
        pytest.skip("create_agent is langchain 1.x")
    from stop_on_artifact import StopOnArtifactMiddleware

    (example,) = examples(StopOnArtifactMiddleware)
    assert 'StopOnArtifactMiddleware(stop_mode="never")' in example
    namespace, run = runner(monkeypatch)
    run("StopOnArtifactMiddleware", example)
    assert namespace["result"]["stop_decision"]["rule"] == "stop_mode_never"


def loaded(module: Any, name: str) -> Any:
    """The module's attribute; None for the middleware where langchain 1.x is missing."""
    try:
        return getattr(module, name)
    except ImportError:
        assert not has_middleware()
        return None


def test_every_function_the_readme_names_is_public() -> None:
    text = README.read_text("utf-8")
    public = set(stop_on_artifact.__all__) | set(stop_on_artifact.testing.__all__)
    public |= set(stop_on_artifact.messages.__all__) | set(stop_on_artifact._retry.__all__)
    public |= set(stop_on_artifact._policies.__all__)
    modules: tuple[Any, ...] = (stop_on_artifact, stop_on_artifact.testing)
    modules = (*modules, stop_on_artifact._policies)
    if has_middleware():
        policy_middleware = importlib.import_module("stop_on_artifact._policy_middleware")
        public |= set(policy_middleware.__all__)
        modules = (*modules, policy_middleware)
    else:  # its __all__ as written: importing it needs langchain 1.x
        source = Path(stop_on_artifact._policies.__file__).with_name("policy_middleware.py")
        listed = source.read_text("utf-8").split("__all__ = [", 1)[1].split("]", 1)[0]
        public |= set(re.findall(r'"(\w+)"', listed))
    classes = [c for m in modules for n in m.__all__ if isinstance(c := loaded(m, n), type)]
    public |= {name for cls in classes for name in vars(cls) if not name.startswith("_")}
    named = set(re.findall(r"`([A-Za-z_]\w*)\(", text))
    imports = re.findall(r"from stop_on_artifact[\w.]* import (\([^)]*\)|[^\n]+)", text)
    for imported in imports:
        named |= {name.strip(" ()\n") for name in imported.split(",")} - {""}
    assert named, "the README names no function"
    assert named <= public, sorted(named - public)


def test_the_readme_policy_examples_run_as_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    hand_built = blocks()[0]
    gate, middleware = policy_blocks()
    _, run = runner(monkeypatch)
    run("hand-built", hand_built)
    assert run("policies-hand-built", gate) == (
        "policy_block | Above the 500 limit: not paid.\n"
        "Pay 900, above the 500 limit?\n"
        "approved | Paid 900.00.\n"
    )
    if not has_middleware():
        with pytest.raises(ImportError, match="langchain"):
            run("policies-create_agent", middleware)
        return
    assert run("policies-create_agent", middleware) == (
        "rejected | Above the 500 limit: not paid.\n\n**Reason given:** over budget\n"
    )
