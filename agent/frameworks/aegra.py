"""What the app relies on in ``aegra_api`` (the production server) beyond its entry point.

Aegra documents one way in, ``uvicorn aegra_api.main:app``, whose startup migrates the
database and creates the graphs' default assistants in every worker; two workers doing so at
once collide on the assistants' key. So the production launcher runs :data:`SETUP_SCRIPT`
once, in Aegra's environment, before the workers start. It uses Aegra's internals:

- ``aegra_api.core.migrations.run_migrations()``: applies Aegra's database migrations.
- ``aegra_api.core.database.db_manager``: its ``initialize()`` and ``close()`` coroutines
  open and close the database (initializing also creates the checkpointer's and the store's
  tables).
- ``aegra_api.services.langgraph_service.get_langgraph_service()``: the service whose
  ``initialize()`` coroutine loads the graphs and creates their default assistants.

:data:`RELIED_ON` lists them; ``tests/unit_tests/test_frameworks.py`` fails, in Aegra's
environment (``.prod/venv``), if one goes or changes its shape.

A run's end is also where Aegra 0.11 is slow: ``WorkerExecutor.wait_for_completion``, which
every ``runs.wait`` (and a join) awaits, looks for the run's done-key in Redis every 2.0 s, a
constant with no setting. :func:`quick_completion_wait` gives each worker the same wait with
looks 10 to 50 ms apart (the database fallback stays 2 s apart); it refuses to run when the
method's source is not the one it was written against (:data:`COMPLETION_WAIT_SHA256`).

Aegra 0.11 stores a run's ``multitask_strategy`` but never applies it, and its check that a
resume answers an interrupted thread reads the thread without a lock: two runs of one thread
execute at once, and two answers to one pause both run. :func:`one_run_per_thread` makes every
worker keep LangGraph's rules instead (langgraph-api's ``create_valid_run``):

- **Creation** (``run_preparation._prepare_run``, wrapped in every module that bound it): under
  a PostgreSQL advisory lock on the thread (``pg_advisory_xact_lock`` in the request's own
  transaction, released by the commit that inserts the run or by the rollback of a refusal),
  Aegra's own checks and insert become one critical section across workers. A run naming no
  strategy gets ``enqueue``; ``reject`` is refused with 409 and :data:`agent.runs.BUSY` while
  a run of the thread is pending or running; ``interrupt`` and ``rollback`` cancel those runs
  once the new one is inserted (Aegra's own cancel). A resume (``command.resume``) is always
  ``reject``, refused with 409 and :func:`agent.runs.answered` while another run of the thread
  is pending or running, or when the thread is not ``interrupted``. A run that may still be
  committing the pause being answered (a run that answers nothing) gets Aegra's own settle
  time (ten looks 0.1 s apart) before that refusal.
- **Start** (``WorkerExecutor._execute_and_release``): a run whose thread has an earlier run
  pending or running waits, without holding a worker slot, until every earlier run has ended
  (looks at the earlier run's done-key every :data:`TURN_LOOK` s, at the runs table every
  :data:`TURN_RECHECK` s), so runs of a thread execute one at a time in creation order. A
  ``rollback`` run first deletes the runs it cancelled and their checkpoints. A dead worker's
  run keeps its place: Aegra's lease reaper queues it again and the runs behind it go on
  waiting; a waiting run whose worker died is queued again by the reaper's stuck-pending look.

Each wrapped function is compared with the source it was written against (the ``*_SHA256``
constants): a changed one refuses to be patched, naming the function and the constant.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agent.runs import BUSY, CONFLICT, DEFAULT_STRATEGY, STRATEGIES, answered, is_resume

RELIED_ON: tuple[tuple[str, str], ...] = (
    ("aegra_api.core.migrations", "run_migrations"),
    ("aegra_api.core.database", "db_manager"),
    ("aegra_api.services.langgraph_service", "get_langgraph_service"),
)
"""The ``(module, name)`` pairs of Aegra's internals :data:`SETUP_SCRIPT` uses."""

SETUP_SCRIPT = """
import asyncio
from aegra_api.core.database import db_manager
from aegra_api.core.migrations import run_migrations
from aegra_api.services.langgraph_service import get_langgraph_service

async def setup() -> None:
    await db_manager.initialize()  # also creates the checkpointer's and the store's tables
    try:
        await get_langgraph_service().initialize()  # the graphs' default assistants
    finally:
        await db_manager.close()

run_migrations()
asyncio.run(setup())
"""
"""Run once before the workers start, in Aegra's Python: Aegra's migrations, LangGraph's
table setup and the graphs' default assistants."""


COMPLETION_WAIT_SHA256 = "d64940b7ecb0726a393d286a745a080cb9658bc0db281f6a1805f08d77f47013"
"""sha256 of ``aegra_api`` 0.11.0's ``WorkerExecutor.wait_for_completion`` source."""

FIRST_LOOK = 0.01
"""Seconds before the second look at a run's done-key; each wait after doubles, up to
:data:`LAST_LOOK`."""
LAST_LOOK = 0.05
"""The longest wait between two looks at a run's done-key (one ``EXISTS`` on Redis)."""
DATABASE_LOOK = 2.0
"""Seconds between looks at the run's row, for a done-key that never comes (Aegra's own)."""


def _check_source(function: Any, sha256: str, name: str, user: str, constant: str) -> None:
    """Raise unless ``function``'s source hashes to ``sha256`` (the source a patch was written for).

    Raises:
        RuntimeError: The message names the function, the patch and the constant to update.
    """
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):  # no source to compare: not the function this was written for
        source = ""
    if hashlib.sha256(source.encode()).hexdigest() != sha256:
        msg = (
            f"{name} changed; check agent/frameworks/aegra.py's {user} against it and update "
            f"{constant}"
        )
        raise RuntimeError(msg)


def quick_completion_wait() -> None:
    """Make ``WorkerExecutor.wait_for_completion`` look at the done-key every 10-50 ms.

    Call it once per worker process, before serving. Idempotent.

    Raises:
        RuntimeError: ``aegra_api``'s method is not the one this replaces; the message names
            the method and what to check.
    """
    module = importlib.import_module("aegra_api.services.worker_executor")
    executor = module.WorkerExecutor
    if getattr(executor.wait_for_completion, "_quick", False):
        return
    _check_source(
        executor.wait_for_completion,
        COMPLETION_WAIT_SHA256,
        "aegra_api.services.worker_executor.WorkerExecutor.wait_for_completion",
        "quick_completion_wait",
        "COMPLETION_WAIT_SHA256",
    )
    settings = module.settings
    redis_error = module.RedisError

    async def wait_for_completion(self: Any, run_id: str, *, timeout: float = 300.0) -> None:
        done_key = f"{settings.redis.REDIS_CHANNEL_PREFIX}done:{run_id}"
        client = module.redis_manager.get_client()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        database_at = loop.time() + DATABASE_LOOK
        pause = FIRST_LOOK
        while loop.time() < deadline:
            try:
                if await client.exists(done_key):
                    return
            except redis_error:
                pass
            if loop.time() >= database_at:
                if await module._is_run_terminal(run_id):
                    return
                database_at = loop.time() + DATABASE_LOOK
            await asyncio.sleep(pause)
            pause = min(pause * 2, LAST_LOOK)
        msg = f"Run {run_id} did not complete within {timeout}s"
        raise TimeoutError(msg)

    wait_for_completion.__doc__ = executor.wait_for_completion.__doc__
    wait_for_completion._quick = True  # type: ignore[attr-defined]
    executor.wait_for_completion = wait_for_completion


# One run at a time per thread, with LangGraph's multitask strategies

PREPARE_RUN_SHA256 = "6fb453c1b1125b80cd147dfa3381337755cba0183197e788f1e6cb6e9e2c00ae"
"""sha256 of ``aegra_api`` 0.11.0's ``run_preparation._prepare_run`` source: it checks a
resume first, marks the thread busy, inserts the run and commits the session it is given."""
RESUME_CHECK_SHA256 = "202a97674c9d17abe620c51ddb2e4af9ccebaa84ea5760e5252db0e70bf18457"
"""sha256 of ``run_preparation._validate_resume_command``: a 400 starting "Cannot resume"
when the thread is not interrupted, after its settle looks."""
EXECUTE_AND_RELEASE_SHA256 = "630e184c863b62d12f64574db264b88142faf5de687810480658e9deb3fff866"
"""sha256 of ``WorkerExecutor._execute_and_release``: runs a dequeued run in the slot its
worker loop took, and gives the slot back when it ends."""
RUN_INTERRUPTION_SHA256 = "a74025e6da9388d8555904e5744dca2f93abfddbc346ae557f55e39365c960d6"
"""sha256 of ``api.runs._request_run_interruption``, the cancel behind Aegra's cancel route."""

PREPARE_RUN_USERS = (
    "aegra_api.services.run_preparation",
    "aegra_api.api.runs",
    "aegra_api.api.crons",
    "aegra_api.services.cron_scheduler",
    "aegra_api.services.event_streaming.commands",
)
"""Every module of ``aegra_api`` 0.11.0 that binds ``_prepare_run`` (the test in
``tests/unit_tests/test_frameworks.py`` looks for others)."""

LOCK_NAMESPACE = 4242
"""The first key of the thread's advisory lock (the second is ``hashtext(thread_id)``)."""
TURN_LOOK = 0.05
"""Seconds between looks at the done-key of the run a waiting run follows."""
TURN_RECHECK = 1.0
"""Seconds between looks at the runs table while a run waits for its turn."""

_ACTIVE = "('pending', 'running')"
_LOCK = f"SELECT pg_advisory_xact_lock({LOCK_NAMESPACE}, hashtext(:thread_id))"
_IN_FLIGHT = f"""
SELECT run_id, (execution_params #> '{{execution,command,resume}}') IS NOT NULL AS resume
FROM runs WHERE thread_id = :thread_id AND status IN {_ACTIVE} ORDER BY created_at, run_id
"""
_THREAD_STATUS = "SELECT status FROM thread WHERE thread_id = :thread_id"
_TURN = f"""
SELECT r.status, r.thread_id, r.created_at,
       r.execution_params #>> '{{behavior,multitask_strategy}}' AS strategy,
       (SELECT e.run_id FROM runs e
        WHERE e.thread_id = r.thread_id AND e.status IN {_ACTIVE}
          AND (e.created_at, e.run_id) < (r.created_at, r.run_id)
        ORDER BY e.created_at, e.run_id LIMIT 1) AS earlier
FROM runs r WHERE r.run_id = :run_id
"""
_SUPERSEDED = """
SELECT run_id FROM runs
WHERE thread_id = :thread_id AND created_at < :created_at AND status = 'interrupted'
  AND updated_at >= :created_at
"""
_ROLLBACK = (
    """DELETE FROM checkpoint_writes w USING checkpoints c
    WHERE c.thread_id = :thread_id AND c.metadata ->> 'run_id' = :run_id
      AND w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns
      AND w.checkpoint_id = c.checkpoint_id""",
    "DELETE FROM checkpoints WHERE thread_id = :thread_id AND metadata ->> 'run_id' = :run_id",
    "DELETE FROM runs WHERE run_id = :run_id",
)


def one_run_per_thread() -> None:
    """Make Aegra run one run at a time per thread and use each answer to a pause once.

    Call it once per worker process, before serving (the module docstring says what each
    strategy does). Idempotent; nothing is patched unless every function it wraps is the
    one it was written against.

    Raises:
        RuntimeError: A wrapped function changed (the message names it and its constant), or
            Aegra is not on its worker executor (``REDIS_BROKER_ENABLED=true``), where runs
            start.
    """
    preparation = importlib.import_module("aegra_api.services.run_preparation")
    if getattr(preparation._prepare_run, "_one_per_thread", False):
        return
    worker = importlib.import_module("aegra_api.services.worker_executor")
    runs_api = importlib.import_module("aegra_api.api.runs")
    users = [importlib.import_module(name) for name in PREPARE_RUN_USERS]
    original = preparation._prepare_run
    for function, sha256, name, constant in (
        (original, PREPARE_RUN_SHA256, "run_preparation._prepare_run", "PREPARE_RUN_SHA256"),
        (
            preparation._validate_resume_command,
            RESUME_CHECK_SHA256,
            "run_preparation._validate_resume_command",
            "RESUME_CHECK_SHA256",
        ),
        (
            worker.WorkerExecutor._execute_and_release,
            EXECUTE_AND_RELEASE_SHA256,
            "worker_executor.WorkerExecutor._execute_and_release",
            "EXECUTE_AND_RELEASE_SHA256",
        ),
        (
            runs_api._request_run_interruption,
            RUN_INTERRUPTION_SHA256,
            "api.runs._request_run_interruption",
            "RUN_INTERRUPTION_SHA256",
        ),
    ):
        _check_source(function, sha256, f"aegra_api.{name}", "one_run_per_thread", constant)
    strays = [module.__name__ for module in users if module._prepare_run is not original]
    if strays:
        msg = f"_prepare_run in {', '.join(strays)} is not aegra_api's: patched elsewhere?"
        raise RuntimeError(msg)
    if not worker.settings.redis.REDIS_BROKER_ENABLED:
        msg = (
            "one_run_per_thread needs Aegra's worker executor, where runs start: set "
            "REDIS_BROKER_ENABLED=true"
        )
        raise RuntimeError(msg)
    # Both wrappers are built (every name they use looked up) before either is installed.
    prepare = _serialized_creation(original, preparation, runs_api)
    execute = _turn_taking(
        worker.WorkerExecutor._execute_and_release,
        worker,
        importlib.import_module("aegra_api.services.run_executor"),
    )
    for module in users:
        setattr(module, "_prepare_run", prepare)  # noqa: B010 (a module's global)
    worker.WorkerExecutor._execute_and_release = execute


@dataclass(frozen=True)
class _InFlight:
    """A run of the thread that is pending or running, read under the thread's lock."""

    run_id: str
    resume: bool
    """Whether it answers a pause (its command has ``resume``)."""


def _serialized_creation(original: Any, preparation: Any, runs_api: Any) -> Any:
    """Wrap ``_prepare_run`` in the thread's lock and LangGraph's strategies."""
    text = importlib.import_module("sqlalchemy").text
    http_exception = preparation.HTTPException
    settle_looks = preparation._RESUME_SETTLE_ATTEMPTS
    settle_pause = preparation._RESUME_SETTLE_INTERVAL_SECONDS
    run_orm = preparation.RunORM
    session_maker = preparation._get_session_maker
    interrupt_run = runs_api._request_run_interruption

    async def in_flight(session: Any, thread_id: str) -> list[_InFlight]:
        rows = await session.execute(text(_IN_FLIGHT), {"thread_id": thread_id})
        return [_InFlight(str(row.run_id), bool(row.resume)) for row in rows]

    async def check_resume(session: Any, thread_id: str, runs: list[_InFlight]) -> None:
        """Refuse an answer to a pause that is no longer (or not yet) waiting for one."""
        for look in range(settle_looks + 1):
            # A run that answers the pause took it; one that answers nothing may be the run
            # that paused, still committing: Aegra's own settle time for that.
            if any(run.resume for run in runs) or (runs and look == settle_looks):
                raise http_exception(CONFLICT, answered(thread_id))
            if not runs:
                break
            await asyncio.sleep(settle_pause)
            runs = await in_flight(session, thread_id)
        status = (await session.execute(text(_THREAD_STATUS), {"thread_id": thread_id})).scalar()
        if status is not None and status != "interrupted":  # a missing thread: Aegra's 404
            raise http_exception(CONFLICT, answered(thread_id))

    async def supersede(runs: list[_InFlight], action: str) -> None:
        async with session_maker()() as session:
            for run in runs:
                found = await session.get(run_orm, run.run_id)
                if found is not None:
                    await interrupt_run(session, found, action)

    async def _prepare_run(
        session: Any,
        thread_id: str,
        request: Any,
        user: Any,
        *,
        initial_status: str,
        event_streaming_v2: bool = False,
    ) -> Any:
        resume = is_resume({"command": request.command})
        strategy = request.multitask_strategy or DEFAULT_STRATEGY
        if strategy not in STRATEGIES:
            msg = f"multitask_strategy must be one of {', '.join(STRATEGIES)}"
            raise http_exception(422, msg)
        strategy = "reject" if resume else strategy
        request.multitask_strategy = strategy  # the run records the strategy it ran under
        try:
            await session.execute(text(_LOCK), {"thread_id": thread_id})
            session.expire_all()  # rows read before the lock are read again
            runs = await in_flight(session, thread_id)
            if resume:
                await check_resume(session, thread_id, runs)
            elif runs and strategy == "reject":
                raise http_exception(CONFLICT, BUSY)
            created = await original(
                session,
                thread_id,
                request,
                user,
                initial_status=initial_status,
                event_streaming_v2=event_streaming_v2,
            )
        except BaseException as error:
            await session.rollback()  # releases the lock
            refused = isinstance(error, http_exception) and error.status_code == 400
            if resume and refused and str(getattr(error, "detail", "")).startswith("Cannot resume"):
                raise http_exception(CONFLICT, answered(thread_id)) from None
            raise
        if runs and strategy in ("interrupt", "rollback"):
            action = "interrupt" if strategy == "interrupt" else "cancel"
            await asyncio.shield(supersede(runs, action))  # done even if the client leaves
        return created

    _prepare_run.__doc__ = original.__doc__
    _prepare_run._one_per_thread = True  # type: ignore[attr-defined]
    return _prepare_run


@dataclass(frozen=True)
class _Turn:
    """Where a dequeued run stands, from one look at the runs table."""

    status: str
    thread_id: str
    created_at: datetime
    strategy: str | None
    earlier: str | None
    """The first earlier run of the thread still pending or running, if any."""


def _turn_taking(original: Any, worker: Any, run_executor: Any) -> Any:
    """Wrap ``_execute_and_release``: a run starts when every earlier run of its thread ended."""
    text = importlib.import_module("sqlalchemy").text
    session_maker = worker._get_session_maker
    done_prefix = f"{worker.settings.redis.REDIS_CHANNEL_PREFIX}done:"
    redis_manager, redis_error = worker.redis_manager, worker.RedisError
    push_back, signal_done = worker._push_back, run_executor._signal_run_done
    # The runs this process holds, waiting or running: a copy of one that Aegra's reaper queued
    # again is dropped (running it would take over the entry Aegra cancels the run by).
    holding: set[str] = set()

    async def look(run_id: str) -> _Turn | None:
        async with session_maker()() as session:
            row = (await session.execute(text(_TURN), {"run_id": run_id})).one_or_none()
        if row is None:
            return None
        earlier = None if row.earlier is None else str(row.earlier)
        return _Turn(str(row.status), str(row.thread_id), row.created_at, row.strategy, earlier)

    async def until_done(run_id: str) -> None:
        client = redis_manager.get_client()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TURN_RECHECK
        while loop.time() < deadline:
            try:
                if await client.exists(done_prefix + run_id):
                    return
            except redis_error:
                pass
            await asyncio.sleep(TURN_LOOK)

    async def roll_back(turn: _Turn) -> None:
        """Delete the runs a ``rollback`` run cancelled, with their checkpoints."""
        where = {"thread_id": turn.thread_id, "created_at": turn.created_at}
        async with session_maker()() as session:
            cancelled = (await session.execute(text(_SUPERSEDED), where)).scalars().all()
            for run_id in cancelled:
                for statement in _ROLLBACK:
                    await session.execute(
                        text(statement), {"thread_id": turn.thread_id, "run_id": run_id}
                    )
            await session.commit()

    async def _execute_and_release(
        self: Any, run_id: str, worker_name: str, semaphore: asyncio.Semaphore
    ) -> None:
        if run_id in holding:
            semaphore.release()
            return
        holding.add(run_id)
        try:
            await take_turn(self, run_id, worker_name, semaphore)
        finally:
            holding.discard(run_id)

    async def take_turn(
        self: Any, run_id: str, worker_name: str, semaphore: asyncio.Semaphore
    ) -> None:
        held = True  # the slot the worker loop took for this run
        try:
            turn = await look(run_id)
            while turn is not None and turn.status == "pending" and turn.earlier is not None:
                if held:  # wait without the slot: runs of other threads go on
                    semaphore.release()
                    held = False
                if not self._running:  # stopping: another worker takes the run
                    await push_back(run_id)
                    return
                await until_done(turn.earlier)
                turn = await look(run_id)
            if not held:
                await semaphore.acquire()
                held = True
            if turn is not None and turn.status == "pending" and turn.strategy == "rollback":
                await roll_back(turn)
        except BaseException:
            if held:
                semaphore.release()
            raise
        if turn is None or turn.status != "pending":
            semaphore.release()
            if turn is None or turn.status not in ("pending", "running"):
                # Cancelled (or rolled back) before it started: tell its waiters now, not in 2 s.
                await signal_done(run_id)
            return  # a run another worker claimed is its own
        await original(self, run_id, worker_name, semaphore)

    _execute_and_release.__doc__ = original.__doc__
    return _execute_and_release
