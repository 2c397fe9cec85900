"""Each framework internal the fences in ``agent/frameworks`` rely on is still there.

One shape test and one behavioural test through the fence per use: the day langsmith,
langchain-core, langgraph, langgraph-api or Aegra changes what a fence relies on, a test
here fails, naming the fence.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import langsmith
import pytest
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tracers.langchain import LangChainTracer
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.memory import InMemoryStore
from langsmith.run_helpers import get_current_run_tree
from typing_extensions import TypedDict

from agent.frameworks import aegra
from agent.frameworks.langchain_core import OPEN_RUNS_ATTRIBUTE, open_run
from agent.frameworks.langgraph import DROPPED_BY_REBUILD, NOT_CONSTRUCTOR_ARGUMENTS, rebuild
from agent.frameworks.langgraph_api import ERROR_DETAIL_KEY, replace_log_detail
from agent.frameworks.langsmith import HIDDEN_ERROR_METHOD, ErrorHidingClient
from tests.support.langsmith_collector import LangSmithCollector
from tests.support.probe import run_probe

ROOT = Path(__file__).resolve().parents[2]


AEGRA_PYTHON = ROOT / ".prod" / "venv" / "bin" / "python"


# langsmith: Client._hide_run_error


def test_langsmith_client_has_the_private_error_hook_with_one_argument() -> None:
    method = getattr(langsmith.Client, HIDDEN_ERROR_METHOD)
    assert callable(method)
    assert list(inspect.signature(method).parameters) == ["self", "error"]
    assert not hasattr(langsmith.Client, "hide_error")  # the fence's own name is free


class _Upper(ErrorHidingClient):
    def hide_error(self, error: Any) -> Any:
        return "HIDDEN " + str(error).upper()


def test_every_run_error_sent_goes_through_the_fence() -> None:
    with LangSmithCollector() as collector:
        client = _Upper(api_url=collector.url, api_key="x")
        created, updated = uuid.uuid4(), uuid.uuid4()
        client.create_run("op", {}, "chain", id=created, project_name="p", error="boom")
        client.create_run("op", {}, "chain", id=updated, project_name="p")
        client.update_run(updated, error="bang", end_time=None)
        client.flush()

        def errored(runs: dict[str, dict[str, Any]]) -> bool:
            return all(runs.get(str(rid), {}).get("error") for rid in (created, updated))

        runs = collector.wait_for(errored)
    assert runs[str(created)]["error"] == "HIDDEN BOOM"
    assert runs[str(updated)]["error"] == "HIDDEN BANG"


# langchain-core: LangChainTracer.run_map


def test_langchain_tracer_keeps_open_runs_in_a_dict_by_run_id() -> None:
    tracer = LangChainTracer(client=langsmith.Client(api_url="http://127.0.0.1:9", api_key="x"))
    assert isinstance(getattr(tracer, OPEN_RUNS_ATTRIBUTE), dict)


def test_the_root_run_is_found_under_the_trace_id_while_it_is_open() -> None:
    seen: dict[str, Any] = {}

    def inner(x: int, config: RunnableConfig) -> int:
        current = get_current_run_tree()
        assert current is not None
        callbacks = config.get("callbacks")
        handlers: list[object] = list(getattr(callbacks, "handlers", None) or [])
        seen["root"] = open_run(handlers, str(current.trace_id))
        seen["trace_id"] = current.trace_id
        seen["current"] = current.id
        return x

    outer = RunnableLambda(lambda x: x) | RunnableLambda(inner)
    with LangSmithCollector() as collector:
        client = langsmith.Client(api_url=collector.url, api_key="x")
        with langsmith.tracing_context(enabled=True, client=client, project_name="p"):
            outer.invoke(1)
        client.flush()
    root = seen["root"]
    assert root is not None
    assert root.id == seen["trace_id"] != seen["current"]
    assert open_run([object()], str(seen["trace_id"])) is None


# langgraph: a CompiledStateGraph rebuilt from its __dict__


class _State(TypedDict):
    n: int


class _Marked(CompiledStateGraph[Any, Any, Any, Any]):
    pass


def _compiled() -> CompiledStateGraph[Any, Any, Any, Any]:
    builder = StateGraph(_State)
    builder.add_node("step", lambda state: {"n": state["n"] + 1})
    builder.add_edge(START, "step")
    return builder.compile(checkpointer=InMemorySaver(), store=InMemoryStore(), name="g")


def test_a_compiled_graph_built_from_its_dict_is_the_same_graph() -> None:
    graph = _compiled()
    rebuilt = rebuild(graph, CompiledStateGraph)
    held = {k: v for k, v in graph.__dict__.items() if k not in NOT_CONSTRUCTOR_ARGUMENTS}
    again = {k: v for k, v in rebuilt.__dict__.items() if k not in NOT_CONSTRUCTOR_ARGUMENTS}
    assert set(held) - set(again) == DROPPED_BY_REBUILD  # pinned: langgraph's copy drops them
    assert set(again) <= set(held)
    changed = sorted(k for k in again if again[k] is not held[k] and again[k] != held[k])
    assert not changed, changed


def test_a_rebuilt_graph_keeps_its_parts_and_its_class_through_server_copies() -> None:
    graph = _compiled()
    marked = rebuild(graph, _Marked)
    assert type(marked) is _Marked
    assert set(marked.nodes) == set(graph.nodes)
    assert marked.checkpointer is graph.checkpointer
    assert marked.store is graph.store
    assert marked.name == "g"
    other = InMemorySaver()
    copy = marked.copy(update={"checkpointer": other})
    assert type(copy) is _Marked and copy.checkpointer is other
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    assert marked.invoke({"n": 1}, config) == {"n": 2}
    assert marked.get_state(config).values == {"n": 2}


# langgraph-api: the access log's scope["error_detail"]

ACCESS_LOG_PROBE = """
import asyncio, json, sys
import jsonschema_rs
from langgraph_api.errors import validation_error_handler
from langgraph_api.middleware.http_logger import AccessLoggerMiddleware
from starlette.applications import Starlette
from starlette.routing import Route
from agent.http import DevRouteGuard

class Logger:
    def __init__(self): self.details = []
    def isEnabledFor(self, level): return False
    def log(self, level, msg, **kw): self.details.append(kw.get("error_detail"))

async def bad(request):
    jsonschema_rs.validate({"type": "object"}, "planted-value-42")

inner = Starlette(
    routes=[Route("/runs", bad, methods=["POST"])],
    exception_handlers={jsonschema_rs.ValidationError: validation_error_handler},
)

async def call(app):
    scope = {"type": "http", "method": "POST", "path": "/runs", "raw_path": b"/runs",
             "query_string": b"", "headers": [], "http_version": "1.1", "scheme": "http",
             "server": ("127.0.0.1", 1), "client": ("127.0.0.1", 2), "root_path": ""}
    async def receive(): return {"type": "http.request", "body": b"", "more_body": False}
    async def send(message): pass
    await app(scope, receive, send)

out = {}
for name, app in (("bare", inner), ("guarded", DevRouteGuard(inner, {}))):
    logger = Logger()
    asyncio.run(call(AccessLoggerMiddleware(app, logger)))
    out[name] = logger.details
print(json.dumps(out))
"""


def test_langgraph_api_logs_what_its_handler_put_in_the_scope_and_the_fence_replaces_it() -> None:
    env = {**os.environ, "REDIS_URI": "fake", "DATABASE_URI": ":memory:"}
    env |= {"LANGGRAPH_RUNTIME_EDITION": "inmem", "MIGRATIONS_PATH": "__inmem"}
    done = run_probe(sys.executable, ACCESS_LOG_PROBE, env=env)
    assert done.returncode == 0, done.stderr
    logged = json.loads(done.stdout.strip().splitlines()[-1])
    [bare] = logged["bare"]
    assert "planted-value-42" in bare  # the server's handler set the key; its log wrote it
    assert logged["guarded"] == ['the request body: expected of type "object"']


def test_replace_log_detail_touches_only_a_scope_that_holds_the_key() -> None:
    scope: dict[str, Any] = {ERROR_DETAIL_KEY: "quoted"}
    replace_log_detail(scope, "field only")
    assert scope == {ERROR_DETAIL_KEY: "field only"}
    empty: dict[str, Any] = {}
    replace_log_detail(empty, "field only")
    assert empty == {}


# Aegra: the setup script's internals, checked in Aegra's own environment

AEGRA_PROBE = """
import importlib, inspect, json, sys
relied_on = json.loads(sys.argv[1])
problems = []
for module, name in relied_on:
    try:
        value = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as error:
        problems.append(f"{module}.{name}: {type(error).__name__}")
        continue
    if name == "db_manager":
        for method in ("initialize", "close"):
            bound = getattr(value, method, None)
            if not inspect.iscoroutinefunction(bound) or inspect.signature(bound).parameters:
                problems.append(f"db_manager.{method}: not a coroutine without arguments")
    elif inspect.signature(value).parameters:
        problems.append(f"{module}.{name}: takes arguments")
    if name == "get_langgraph_service":
        service = inspect.signature(value, eval_str=True).return_annotation
        init = getattr(service, "initialize", None)
        if not inspect.iscoroutinefunction(init) or list(inspect.signature(init).parameters) != [
            "self"
        ]:
            problems.append("LangGraphService.initialize: not a coroutine without arguments")
print(json.dumps(problems))
"""


def test_the_setup_script_imports_exactly_what_the_fence_lists() -> None:
    tree = ast.parse(aegra.SETUP_SCRIPT)
    imported = {
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("aegra")
        for alias in node.names
    }
    assert imported == set(aegra.RELIED_ON)


@pytest.mark.skipif(not AEGRA_PYTHON.exists(), reason="needs Aegra's env (make prod-env)")
def test_aegra_still_has_the_internals_the_setup_script_uses() -> None:
    done = run_probe(AEGRA_PYTHON, AEGRA_PROBE, json.dumps(aegra.RELIED_ON))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


# aegra_api: WorkerExecutor.wait_for_completion, replaced per worker

QUICK_WAIT_PROBE = """
import asyncio, inspect, json, sys
from agent.frameworks import aegra
from aegra_api.services import worker_executor as module
problems = [name for name in ("settings", "RedisError", "redis_manager", "_is_run_terminal")
            if not hasattr(module, name)]
original = module.WorkerExecutor.wait_for_completion
params = list(inspect.signature(original).parameters)
if params != ["self", "run_id", "timeout"]:
    problems.append(f"wait_for_completion takes {params}")
aegra.quick_completion_wait()
aegra.quick_completion_wait()
if module.WorkerExecutor.wait_for_completion is original:
    problems.append("not replaced")

async def changed(self, run_id, *, timeout=300.0):
    return None

module.WorkerExecutor.wait_for_completion = changed
try:
    aegra.quick_completion_wait()
    problems.append("a changed method was replaced")
except RuntimeError as error:
    if "COMPLETION_WAIT_SHA256" not in str(error):
        problems.append("the error does not name the hash")
print(json.dumps(problems))
"""


@pytest.mark.skipif(not AEGRA_PYTHON.exists(), reason="needs Aegra's env (make prod-env)")
def test_the_quick_wait_replaces_exactly_the_method_it_was_written_against() -> None:
    done = run_probe(AEGRA_PYTHON, QUICK_WAIT_PROBE)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


QUICK_WAIT_TIMING = """
import asyncio, json, sys, time
from agent.frameworks import aegra
from aegra_api.core.redis_manager import redis_manager
from aegra_api.services import worker_executor as module
from aegra_api.settings import settings

async def late(executor) -> float:
    run_id = "probe-" + str(time.monotonic_ns())
    waiter = asyncio.create_task(executor.wait_for_completion(run_id, timeout=30))
    await asyncio.sleep(0.3)
    await redis_manager.get_client().set(f"{settings.redis.REDIS_CHANNEL_PREFIX}done:{run_id}", 1)
    marked = time.monotonic()
    await waiter
    return time.monotonic() - marked

async def main() -> None:
    await redis_manager.initialize()
    executor = module.WorkerExecutor()
    aegra.quick_completion_wait()
    print("lates:", json.dumps([await late(executor) for _ in range(3)]))
    await redis_manager.close()

asyncio.run(main())
"""


@pytest.mark.skipif(not AEGRA_PYTHON.exists(), reason="needs Aegra's env (make prod-env)")
def test_the_quick_wait_sees_a_runs_end_well_inside_aegras_own_look(tmp_path: Path) -> None:
    import shutil
    import socket
    import time

    redis_server = shutil.which("redis-server")
    if redis_server is None:
        pytest.skip("needs redis-server (make services)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    redis = subprocess.Popen(
        [redis_server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", tmp_path],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)
        env = {**os.environ, "REDIS_URL": f"redis://127.0.0.1:{port}/0"}
        done = run_probe(AEGRA_PYTHON, QUICK_WAIT_TIMING, env=env)
    finally:
        redis.terminate()
        redis.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("lates: ")]
    lates = json.loads(line.removeprefix("lates: "))
    # Aegra's own wait looks every 2.0 s, so it answers 0-2 s after the end (0.85 s on average
    # for an end 0.3 s after the start); the quick wait answers within one LAST_LOOK.
    assert max(lates) < 0.5 * 2.0 / 2, lates


# aegra_api: one run at a time per thread (run creation and run start, wrapped per worker)

ONE_RUN_PROBE = """
import importlib, inspect, json, pathlib, re
from agent.frameworks import aegra
from aegra_api.api import runs as runs_api
from aegra_api.models.run_job import RunBehavior, RunExecution
from aegra_api.services import run_executor, run_preparation as preparation
from aegra_api.services import worker_executor as worker
from langgraph.checkpoint.postgres.base import BasePostgresSaver

problems = []
users = [importlib.import_module(name) for name in aegra.PREPARE_RUN_USERS]
# Every module that binds _prepare_run is wrapped (a new one would keep the unlocked original).
root = pathlib.Path(preparation.__file__).parents[1]
binders = {
    "aegra_api." + ".".join(path.relative_to(root).with_suffix("").parts)
    for path in root.rglob("*.py")
    if re.search(r"^from aegra_api\\.services\\.run_preparation import .*\\b_prepare_run\\b",
                 path.read_text("utf-8"), re.M)
}
if binders | {preparation.__name__} != set(aegra.PREPARE_RUN_USERS):
    problems.append(f"_prepare_run is bound in {sorted(binders)}")
# The names and shapes the wrappers use.
for module, names in (
    (preparation, ("HTTPException", "RunORM", "_get_session_maker", "_RESUME_SETTLE_ATTEMPTS",
                   "_RESUME_SETTLE_INTERVAL_SECONDS")),
    (worker, ("settings", "redis_manager", "RedisError", "_get_session_maker", "_push_back")),
    (run_executor, ("_signal_run_done",)),
):
    problems += [f"{module.__name__}.{n} is missing" for n in names if not hasattr(module, n)]
shapes = {
    "_prepare_run": (preparation._prepare_run,
                     ["session", "thread_id", "request", "user", "initial_status",
                      "event_streaming_v2"]),
    "_execute_and_release": (worker.WorkerExecutor._execute_and_release,
                             ["self", "run_id", "worker_name", "semaphore"]),
    "_request_run_interruption": (runs_api._request_run_interruption,
                                  ["session", "run_orm", "action"]),
    "_push_back": (worker._push_back, ["run_id"]),
    "_signal_run_done": (run_executor._signal_run_done, ["run_id"]),
}
for name, (function, params) in shapes.items():
    if list(inspect.signature(function).parameters) != params:
        problems.append(f"{name} takes {list(inspect.signature(function).parameters)}")
if "command" not in RunExecution.model_fields:
    problems.append("execution_params no longer hold execution.command")
if "multitask_strategy" not in RunBehavior.model_fields:
    problems.append("execution_params no longer hold behavior.multitask_strategy")
columns = {c.name for c in preparation.RunORM.__table__.columns}
if not {"run_id", "thread_id", "status", "created_at", "updated_at", "execution_params"} <= columns:
    problems.append(f"runs has {sorted(columns)}")
tables = " ".join(BasePostgresSaver.MIGRATIONS)
if "CREATE TABLE IF NOT EXISTS checkpoint_writes" not in tables or "metadata JSONB" not in tables:
    problems.append("the checkpointer's tables changed")

# A changed function refuses the patch, names its constant, and nothing is patched.
targets = [
    (preparation, "_prepare_run", "PREPARE_RUN_SHA256"),
    (preparation, "_validate_resume_command", "RESUME_CHECK_SHA256"),
    (worker.WorkerExecutor, "_execute_and_release", "EXECUTE_AND_RELEASE_SHA256"),
    (runs_api, "_request_run_interruption", "RUN_INTERRUPTION_SHA256"),
]
before = {name: getattr(owner, name) for owner, name, _ in targets}
for owner, name, constant in targets:
    async def changed(*args, **kwargs):
        return None
    setattr(owner, name, changed)
    try:
        aegra.one_run_per_thread()
        problems.append(f"a changed {name} was patched")
    except RuntimeError as error:
        if constant not in str(error):
            problems.append(f"the refusal does not name {constant}")
    setattr(owner, name, before[name])
users[1]._prepare_run = changed  # another patch got there first
try:
    aegra.one_run_per_thread()
    problems.append("patched over another patch")
except RuntimeError as error:
    if users[1].__name__ not in str(error):
        problems.append("the refusal does not name the module")
users[1]._prepare_run = before["_prepare_run"]
worker.settings.redis.REDIS_BROKER_ENABLED = False
try:
    aegra.one_run_per_thread()
    problems.append("patched without the worker executor")
except RuntimeError as error:
    if "REDIS_BROKER_ENABLED" not in str(error):
        problems.append("the refusal does not name REDIS_BROKER_ENABLED")
worker.settings.redis.REDIS_BROKER_ENABLED = True
if any(getattr(owner, name) is not before[name] for owner, name, _ in targets):
    problems.append("a refused patch changed something")

aegra.one_run_per_thread()
aegra.one_run_per_thread()
wrapped = preparation._prepare_run
for module in users:
    if module._prepare_run is not wrapped or wrapped is before["_prepare_run"]:
        problems.append(f"{module.__name__}._prepare_run is not wrapped")
execute = worker.WorkerExecutor._execute_and_release
if execute is before["_execute_and_release"]:
    problems.append("_execute_and_release is not wrapped")
for function, original in ((wrapped, before["_prepare_run"]),
                           (execute, before["_execute_and_release"])):
    params = inspect.signature(function).parameters.keys()
    if params != inspect.signature(original).parameters.keys():
        problems.append(f"{function.__name__} changed its parameters")
print(json.dumps(problems))
"""


@pytest.mark.skipif(not AEGRA_PYTHON.exists(), reason="needs Aegra's env (make prod-env)")
def test_one_run_per_thread_wraps_exactly_what_it_was_written_against() -> None:
    # Behaviour through these wrappers: tests/prod_tests/test_prod_multitask.py and
    # test_prod_one_answer.py, on two workers.
    env = {**os.environ, "REDIS_BROKER_ENABLED": "true"}
    done = run_probe(AEGRA_PYTHON, ONE_RUN_PROBE, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


# langgraph_runtime_inmem: Runs.next's pause, wrapped where langgraph dev serves

QUICK_SCHEDULER_PROBE = """
import asyncio, json
from agent.frameworks import langgraph_runtime_inmem as fence
from langgraph_runtime_inmem import ops
problems = []
if fence.next_source_sha256() != fence.NEXT_SHA256:
    problems.append("Runs.next is not the method the fence was written against")
original = ops.Runs.next
fence.quick_scheduler()
fence.quick_scheduler()
if ops.Runs.next is original or not getattr(ops.Runs.next, "_quick", False):
    problems.append("not replaced")

async def looks() -> list[object]:
    return [found async for found in ops.Runs.next(wait=True, limit=1)]

if asyncio.run(looks()) != []:
    problems.append("an empty queue yielded a run")

async def changed(wait, limit=1):
    yield None

ops.Runs.next = staticmethod(changed)
try:
    fence.quick_scheduler()
    problems.append("a changed method was replaced")
except RuntimeError as error:
    if "NEXT_SHA256" not in str(error):
        problems.append("the error does not name the hash")
print(json.dumps(problems))
"""


def test_the_quick_scheduler_wraps_exactly_the_method_it_was_written_against() -> None:
    done = run_probe(sys.executable, QUICK_SCHEDULER_PROBE)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_http_app_applies_it_only_on_the_in_memory_runtime() -> None:
    probe = (
        "import agent.http; from langgraph_runtime_inmem import ops; "
        "print(getattr(ops.Runs.next, '_quick', False))"
    )
    for edition, quick in (("inmem", "True"), ("postgres", "False")):
        env = {**os.environ, "LANGGRAPH_RUNTIME_EDITION": edition}
        done = run_probe(sys.executable, probe, env=env)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == quick, edition
