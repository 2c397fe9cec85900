"""Ask a running LangGraph server a question and watch each stop decision arrive.

::

    python -m client "How does a checkpointer work?" --force-outcome transient,success
    python -m client ask "How does a checkpointer work?"   # the same, named
    python -m client check --url https://my-deployment.example.com
    python -m client "buy a standing desk for 900" --on-policy-block ask --approve
    python -m client answer --thread-id <id> --reject "Over budget"
    python -m client report --project stop-on-artifact --since 24h

``ask`` (the default subcommand: a first argument that is not ``ask``, ``answer`` or
``check`` is the question) streams one run (``stream_mode=["updates", "custom"]``) and
prints each ``stop_decision`` event as it arrives, each with a line saying how its outcome
came about (forced, drawn, refused, or a knowledge-base miss and what helps), then the
answer, the node path and the model-call count. ``check`` runs the whole forced-outcome matrix
(:data:`client.scenarios.SCENARIOS`) against the server and prints expected versus
observed per graph. ``report`` adds up what the stops saved, from a LangSmith project
(:mod:`client.report`, which lists its own exit statuses).

A run that pauses for approval (``--on-policy-block ask`` and a checkout above the cap)
prints the pending request, each action's description as a person reads it. ``--approve``
or ``--reject REASON`` answers it at once (every action alike); with neither, a TTY gets a
prompt per action, and anything else gets the ``answer`` command that answers it later.
``answer`` prints the server it answers on, shows a thread's pending request and answers
it the same way. An answer sends no context and takes no context flags: the run goes on
under the settings its turn started with, which the server keeps with the thread.

The server URL comes from ``--url``, else ``LANGGRAPH_URL``, else the first that answers of
the URL ``make dev`` wrote to ``.langgraph_api/dev-url`` (it serves on 2024, or on a free
port when 2024 is taken; a server it is still starting is waited for, with one line on
standard error, while its launcher runs), the URL ``make prod`` wrote to
``.langgraph_api/prod-url``, and ``http://127.0.0.1:2024``. A ``server:`` line names the
server and where its URL came from (``server: http://127.0.0.1:2026 (make prod)``): on
standard output in ``check`` and ``answer``, on standard error in ``ask`` (whose standard
output is the run and its answer). When none answers, the error names each URL it tried and
where it came from, and both ways to start one.
A server that needs a key gets it from ``LANGGRAPH_API_KEY``, which ``langgraph_sdk`` sends as
``x-api-key``.

The approval prompt takes ``a``/``approve``/``y``/``yes`` or ``r``/``reject``/``n``/``no``
(any case) and asks again on anything else. Every error is one line on standard error.

Exit status: 0 on success, 1 when a run failed or ``check`` found a mismatch, 2 on bad
flags or an empty question (nothing is sent), 3 when no server answers at the URL, 4 when
the run is left paused for approval (also when the input ends at the prompt), 130 on
Ctrl-C (a run interrupted at the prompt stays paused: ``answer`` answers it later), 141
when standard output is closed early (``| head``; nothing more is printed).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TextIO, get_args

from client import report, terminal
from client.context_flags import (
    DEFAULT_SEED,
    DEFAULT_WEIGHTS,
    FIELDS,
    OUTCOMES,
)
from client.dev import dev_pid_file, dev_url_file, prod_url_file
from client.scenarios import GRAPHS, SCENARIOS, Scenario, model_calls

if TYPE_CHECKING:
    import httpx
    from langgraph_sdk.client import LangGraphClient


DEFAULT_URL = "http://127.0.0.1:2024"
INVOCATION = ".venv/bin/python -m client"
"""How the commands this client prints run from the clone's root: the project's Python, which
has the client's packages (the system one does not)."""
PROJECT = Path(__file__).resolve().parents[1]
DEV_URL_FILE = dev_url_file(PROJECT)
"""Where ``make dev`` (:mod:`client.dev`) writes the URL it serves at, while it runs."""
DEV_PID_FILE = dev_pid_file(PROJECT)
"""Where ``make dev`` writes its launcher's pid: while it lives, the server is up or starting."""
PROD_URL_FILE = prod_url_file(PROJECT)
"""Where ``make prod`` (:mod:`client.prodserver`) writes the URL it serves at, while it runs."""
DEV_START_WAIT = 120.0
"""Longest wait, in seconds, for a server ``make dev`` is still starting (its launcher alive)."""
URL_ENV = "LANGGRAPH_URL"
"""Environment variable naming the server when ``--url`` is not given."""
STREAM_MODES: list[Literal["updates", "custom"]] = ["updates", "custom"]
"""What the client streams: node updates (the path) and custom events (the decisions)."""

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_UNREACHABLE = 3
EXIT_USAGE = 2
EXIT_PAUSED = 4
EXIT_INTERRUPTED = 130
"""Ctrl-C, as shells report a program that SIGINT ended (128 + 2)."""
EXIT_BROKEN_PIPE = 141
"""Standard output closed early (``| head``), as shells report SIGPIPE (128 + 13)."""

Compare = Literal["full", "decision"]
COMPARED: dict[str, str] = {
    "full": "decision action/rule, node path, model calls, answer parts",
    "decision": "decision action/rule only (path and model calls shown, not compared)",
}
"""What each ``check --compare`` mode holds against the expectation."""


class ServerUnreachableError(ConnectionError):
    """No LangGraph server answered at the URL."""


class RunFailedError(RuntimeError):
    """The server refused the run or the run ended with an error."""


@dataclass
class Observation:
    """What one streamed run showed a client.

    Attributes:
        graph: The graph (or assistant id) that ran.
        thread_id: The thread the run used.
        path: Node names in the order ``stream_mode="updates"`` reported them.
        decisions: The ``stop_decision`` custom events, in order.
        values: The thread's state values after the run.
        pending: The thread's pending interrupts after the run (``{"id", "value"}``).
        artifacts: Each tool call's artifact, by tool-call id, as the ``updates`` stream
            carried its ToolMessage (an MCP tool's one level down, as the library reads it).
        steps: Each tool call's step: the ids of the calls the same model reply issued, in
            its order, by tool-call id (the latest reply that issued an id).
        tools: The tool each call with a result ran, by tool-call id.
        earlier_model_calls: The turn's model calls made before the runs observed here (a
            turn paused for approval, then answered by another client command).
    """

    graph: str
    thread_id: str
    path: list[str] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    pending: list[dict[str, Any]] = field(default_factory=list)
    artifacts: dict[str, dict[str, Any]] = field(default_factory=dict)
    steps: dict[str, list[str]] = field(default_factory=dict)
    tools: dict[str, str] = field(default_factory=dict)
    earlier_model_calls: int = 0

    @property
    def approval(self) -> dict[str, Any] | None:
        """Return the pending approval request (``action_requests`` + ``review_configs``)."""
        for interrupt in self.pending:
            value = interrupt.get("value")
            if isinstance(value, dict) and isinstance(value.get("action_requests"), list):
                return value
        return None

    @property
    def model_calls(self) -> int:
        """Count the turn's model calls: updates from a model node, less a stop's answer.

        A turn answered after a pause adds the calls it made before the pause
        (:attr:`earlier_model_calls`).
        """
        return self.earlier_model_calls + model_calls(self.path, self.values.get("stop_decision"))

    def take(self, messages: object) -> None:
        """Take serialized messages' tool calls and results, later ones over earlier ones.

        Args:
            messages: A node update's messages, or the thread's, as the API serializes them:
                each reply's calls go to :attr:`steps`, each result to :attr:`tools` and
                :attr:`artifacts`.
        """
        for message in messages if isinstance(messages, list) else []:
            if not isinstance(message, dict):
                continue
            calls = message.get("tool_calls") if message.get("type") == "ai" else None
            ids = [str(c.get("id")) for c in calls or [] if isinstance(c, dict) and c.get("id")]
            self.steps.update((call, ids) for call in ids)
            if message.get("type") == "tool" and message.get("tool_call_id"):
                self.tools[str(message["tool_call_id"])] = str(message.get("name") or "")
        self.artifacts.update(_artifacts_of({"messages": messages}))

    @property
    def decision(self) -> dict[str, Any] | None:
        """Return the checkpointed ``stop_decision`` (None when no tool ran)."""
        decision = self.values.get("stop_decision")
        return decision if isinstance(decision, dict) else None

    @property
    def answer(self) -> str:
        """Return the text of the last message in the thread."""
        messages = self.values.get("messages") or []
        return message_text(messages[-1]) if messages else ""


def message_text(message: dict[str, Any]) -> str:
    """Return the text of a message as the API serializes it (string or content blocks).

    Args:
        message: A serialized message (``{"type": ..., "content": ...}``).

    Returns:
        The concatenated text.
    """
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block if isinstance(block, str) else str(block.get("text", ""))
            for block in content
            if isinstance(block, str | dict)
        )
    return ""


def user_input(query: str) -> dict[str, Any]:
    """Return the run input for one user message.

    Args:
        query: The user's text.

    Returns:
        ``{"messages": [{"role": "user", "content": query}]}``.
    """
    return {"messages": [{"role": "user", "content": query}]}


def candidate_urls(explicit: str | None) -> list[tuple[str, str]]:
    """Return the server URLs to try, in order, each with where it came from.

    Args:
        explicit: The ``--url`` flag's value, if given.

    Returns:
        ``[(url, source), ...]``: ``--url`` alone, else ``LANGGRAPH_URL`` alone, else the URLs
        ``make dev`` and ``make prod`` wrote (where their files exist) and then the default.
    """
    if explicit:
        return [(explicit, "--url")]
    if os.environ.get(URL_ENV):
        return [(os.environ[URL_ENV], URL_ENV)]
    tried: list[tuple[str, str]] = []
    for command, file in (("make dev", DEV_URL_FILE), ("make prod", PROD_URL_FILE)):
        try:
            written = file.read_text("utf-8").strip()
        except OSError:
            continue
        if written and written not in (url for url, _ in tried):
            tried.append((written, f"written by {command} to {file.relative_to(PROJECT)}"))
    if DEFAULT_URL not in (url for url, _ in tried):
        tried.append((DEFAULT_URL, "the default"))
    return tried


def starting_dev_server() -> tuple[str, int] | None:
    """Return the URL and pid of a ``make dev`` whose launcher lives, from its URL file.

    Returns:
        ``(url, pid)`` when :data:`DEV_PID_FILE` names a launcher that is still running (its
        server may still be starting); None when a file is missing or the launcher is gone
        (files left by a launcher that was killed).
    """
    try:
        url = DEV_URL_FILE.read_text("utf-8").strip()
        pid = int(DEV_PID_FILE.read_text("utf-8").strip())
    except (OSError, ValueError):
        return None
    if not url:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's
    return url, pid


async def _wait_for_dev_server(http: httpx.AsyncClient, url: str, pid: int) -> bool:
    """Wait for the server ``make dev`` (launcher ``pid``) is starting at ``url`` to answer.

    Returns:
        True once ``/ok`` answers; False when the launcher ends or :data:`DEV_START_WAIT`
        passes first.
    """
    import httpx

    print(f"waiting for the server make dev is starting at {url}", file=sys.stderr, flush=True)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEV_START_WAIT
    while loop.time() < deadline and starting_dev_server() == (url, pid):
        try:
            await http.get(f"{url.rstrip('/')}/ok")
        except httpx.TransportError:
            await asyncio.sleep(0.25)
        else:
            return True
    return False


def source_label(source: str) -> str:
    """Return how the ``server:`` line names where a URL came from: ``make dev``, ``--url``..."""
    return source.removeprefix("written by ").split(" to ", 1)[0]


async def find_server(explicit: str | None, timeout: float = 5.0) -> tuple[str, str]:
    """Return the first candidate URL (:func:`candidate_urls`) where a server answers.

    Any HTTP answer counts (even 401 or 404): only a failed connection, a broken answer or
    a timeout does not. A URL ``make dev`` wrote, whose launcher still runs, is waited for
    (up to :data:`DEV_START_WAIT` seconds, said in one line on standard error): its server is
    starting.

    Args:
        explicit: The ``--url`` flag's value, if given.
        timeout: Seconds to wait for each answer.

    Returns:
        The server's base URL and where it came from (:func:`source_label`).

    Raises:
        ServerUnreachableError: If no candidate answers; the message names each URL, where
            it came from and why it failed, and what to do, in one line.
    """
    import httpx

    failures = []
    async with httpx.AsyncClient(timeout=timeout) as http:
        for url, source in candidate_urls(explicit):
            try:
                await http.get(f"{url.rstrip('/')}/ok")
            except httpx.TransportError as exc:
                starting = starting_dev_server() if source_label(source) == "make dev" else None
                if starting and starting[0] == url and await _wait_for_dev_server(http, *starting):
                    return url, source_label(source)
                failures.append(f"{url} ({source}: {type(exc).__name__})")
            else:
                return url, source_label(source)
    msg = (
        f"no LangGraph server answered; tried {', then '.join(failures)}. "
        "Start one with `make dev` or `make prod` (each prints where it serves), "
        f"or pass --url / set {URL_ENV}."
    )
    raise ServerUnreachableError(msg)


def refusal_text(exc: httpx.HTTPStatusError) -> str:
    """Say in one line why the server refused a request.

    A validation refusal (``{"detail": "..."}``, or FastAPI's list of
    ``{"loc": [...], "msg": "..."}``) reads as its field messages joined, not as JSON.

    Args:
        exc: The refusal ``langgraph_sdk`` raised.

    Returns:
        ``the server refused the run (422): context.max_retries: Input should be ...``.
    """
    response = exc.response
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, list):
        text = "; ".join(_field_message(item) for item in detail)
    elif isinstance(detail, str | int | float):
        text = str(detail)
    else:
        text = response.text
    text = _one_line(text) or response.reason_phrase
    return f"the server refused the run ({response.status_code}): {text}"


def _field_message(item: object) -> str:
    if not isinstance(item, dict):
        return str(item)
    where = ".".join(str(part) for part in item.get("loc") or [] if part != "body")
    message = str(item.get("msg") or item.get("message") or "invalid")
    return f"{where}: {message}" if where else message


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _refusal(exc: httpx.HTTPStatusError) -> RunFailedError:
    return RunFailedError(refusal_text(exc))


def run_error_text(error: object) -> str:
    """Say in one sentence how a run failed, from the server's error event.

    Args:
        error: ``{"error": "ModelLoadError", "message": "..."}`` (or a bare message).

    Returns:
        ``run failed (ModelLoadError): model could not be loaded ...``, on one line.
    """
    fields = error if isinstance(error, dict) else {"message": error}
    kind = _one_line(str(fields.get("error") or "error"))
    message = _one_line(str(fields.get("message") or "")).rstrip(".")
    return f"run failed ({kind}): {message}" if message else f"run failed ({kind})"


DecisionHook = Callable[[dict[str, Any], Mapping[str, dict[str, Any]]], None]
"""Called with a ``stop_decision`` event and the artifacts of the calls streamed so far."""


def _artifacts_of(update: object) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(tool_call_id, artifact)`` for each serialized ToolMessage in one node's update."""
    messages = update.get("messages") if isinstance(update, dict) else None
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict) or message.get("type") != "tool":
            continue
        artifact = message.get("artifact")
        inner = artifact.get("structured_content") if isinstance(artifact, dict) else None
        artifact = inner if isinstance(inner, dict) else artifact  # an MCP tool's artifact
        if isinstance(artifact, dict) and message.get("tool_call_id"):
            yield str(message["tool_call_id"]), artifact


def _read(part: Any, seen: Observation, held: list[dict[str, Any]]) -> str | None:
    """Take one streamed part into the observation; return an error event's text.

    A decision is held in ``held`` until the next ``updates`` part: in ``legacy`` it is
    streamed just before the ``tools`` update that carries its calls' artifacts.
    """
    data = part.data
    if part.event == "updates" and isinstance(data, dict):
        seen.path.extend(str(node) for node in data)
        for update in data.values():
            seen.take(update.get("messages") if isinstance(update, dict) else None)
    elif part.event == "custom" and isinstance(data, dict) and "stop_decision" in data:
        seen.decisions.append(data["stop_decision"])
        held.append(data["stop_decision"])
    elif part.event == "error":
        return run_error_text(data)
    return None


def _release(held: list[dict[str, Any]], seen: Observation, hook: DecisionHook | None) -> None:
    """Hand the held decisions to ``hook``, one call at a time (:func:`per_call`)."""
    if hook is not None:
        for decision in held:
            for call in per_call(decision, seen):
                hook(call, seen.artifacts)
    held.clear()


def per_call(decision: dict[str, Any], seen: Observation) -> list[dict[str, Any]]:
    """Split a step's decision into one view per call of the step that has a result.

    A decision names the one call that decided (``tool_call_id``); the step's other calls
    had outcomes of their own. Each view keeps the step's ``action`` and ``rule`` and takes
    its call's own ``tool``, ``reason`` (its artifact's; the deciding call keeps the
    decision's) and ``approval``/``policy`` (its artifact's: the library's decision carries
    the turn's first approval when its deciding call had none). ``answer_from`` is the call
    when the decision answers from it, ``unsettled`` likewise.

    Args:
        decision: A streamed ``stop_decision``.
        seen: The run so far: the steps and results streamed (or read from the thread).

    Returns:
        The views in the step's call order; the decision alone when its step is unknown.
    """
    deciding = decision.get("tool_call_id")
    step = seen.steps.get(str(deciding)) if deciding else None
    calls = [c for c in step or [] if c == deciding or c in seen.tools]
    if not calls:
        return [decision]
    views = []
    for call in calls:
        artifact = seen.artifacts.get(call)
        view = {key: value for key, value in decision.items() if key not in ("approval", "policy")}
        view["tool_call_id"] = call
        view["tool"] = seen.tools.get(call) or (decision.get("tool") if call == deciding else None)
        if call != deciding:
            view["reason"] = artifact.get("reason") if artifact is not None else None
        asked = artifact.get("approval") if artifact is not None else None
        if artifact is None and call == deciding:
            asked = decision.get("approval")  # no artifact read: the decision's own
        if isinstance(asked, str):
            view["approval"] = asked
            policy = artifact.get("policy") if artifact is not None else decision.get("policy")
            if isinstance(policy, str):
                view["policy"] = policy
        for listed in ("answer_from", "unsettled"):
            if isinstance(decision.get(listed), list):
                view[listed] = [call] if call in decision[listed] else []
        views.append(view)
    return views


def _raise_if_failed(joined: object, run: Any) -> None:
    """Raise :class:`RunFailedError` for a finished run that failed, with the server's error."""
    error = joined.get("__error__") if isinstance(joined, dict) else None
    status = run.get("status") if isinstance(run, dict) else None
    if error is None and status not in ("error", "timeout"):
        return
    error = error if isinstance(error, dict) else {"error": status or "error"}
    raise RunFailedError(run_error_text(error))


async def stream_run(
    client: LangGraphClient,
    graph: str,
    query: str,
    context: dict[str, Any] | None = None,
    *,
    thread_id: str | None = None,
    on_decision: DecisionHook | None = None,
    replay: bool = False,
    resume: object = None,
    seen: Observation | None = None,
) -> Observation:
    """Stream one run on a thread and return what it showed.

    Args:
        client: An async ``langgraph_sdk`` client.
        graph: Graph id or assistant id.
        query: The user message (ignored when ``resume`` is given).
        context: The run's context (any :class:`agent.context.Context` fields).
        thread_id: Continue this thread; a new thread when None.
        on_decision: Called with each ``stop_decision`` event as it arrives (once the
            update that follows it, which carries its calls' artifacts, is read), and the
            artifacts by tool-call id.
        resume: Resume the thread's pending interrupt with this value
            (``command={"resume": resume}``) instead of sending ``query``.
        seen: An observation to continue (its path and decisions grow); a new one when
            None.
        replay: Start the run in the background, wait for it, then replay its whole
            stored stream. A stream attached as a run starts can miss the run's first
            events on a server whose workers start runs before the stream is subscribed
            (Aegra, under load); a finished run's stored stream cannot.

    Returns:
        The observation, with the thread's state after the run.

    Raises:
        RunFailedError: If the server refused the run or the run failed.
    """
    import httpx

    try:
        if thread_id is None:
            thread_id = str((await client.threads.create())["thread_id"])
        if seen is None:
            seen = Observation(graph=graph, thread_id=thread_id)
        request: dict[str, Any] = {"context": context, "stream_mode": STREAM_MODES}
        if resume is None:
            request["input"] = user_input(query)
        else:
            request["command"] = {"resume": resume}
        if replay:
            run = await client.runs.create(thread_id, graph, stream_resumable=True, **request)
            joined = await client.runs.join(thread_id, run["run_id"])
            _raise_if_failed(joined, await client.runs.get(thread_id, run["run_id"]))
            parts = client.runs.join_stream(thread_id, run["run_id"], last_event_id="-1")
        else:
            parts = client.runs.stream(thread_id, graph, **request)
        failed: str | None = None
        held: list[dict[str, Any]] = []
        # Read the stream to its end even after an error event: leaving the SDK's stream
        # open makes its generator's cleanup print a traceback at exit.
        async for part in parts:
            failed = _read(part, seen, held) or failed
            if part.event == "updates":
                _release(held, seen, on_decision)
        _release(held, seen, on_decision)
        if failed is not None:
            raise RunFailedError(failed)
        state = await client.threads.get_state(thread_id)
    except httpx.HTTPStatusError as exc:
        raise _refusal(exc) from exc
    values = state["values"]
    seen.values = dict(values) if isinstance(values, dict) else {}
    seen.pending = [dict(interrupt) for interrupt in state.get("interrupts") or []]
    seen.take(_this_turn(seen.values.get("messages")))
    return seen


async def pending_approval(client: LangGraphClient, graph: str, thread_id: str) -> Observation:
    """Return a thread's state as an observation, to show and answer its pending request.

    Args:
        client: An async ``langgraph_sdk`` client.
        graph: The graph the thread runs.
        thread_id: The paused thread.

    Returns:
        The observation; its :attr:`Observation.approval` is None when nothing is pending.

    Raises:
        RunFailedError: If the server refused (no such thread, or not this identity's).
    """
    import httpx

    try:
        state = await client.threads.get_state(thread_id)
    except httpx.HTTPStatusError as exc:
        raise _refusal(exc) from exc
    values = state["values"]
    seen = Observation(
        graph=graph,
        thread_id=thread_id,
        values=dict(values) if isinstance(values, dict) else {},
        pending=[dict(interrupt) for interrupt in state.get("interrupts") or []],
    )
    turn = _this_turn(seen.values.get("messages"))
    seen.take(turn)
    if seen.approval is not None:  # a paused turn: each model reply so far was a model call
        seen.earlier_model_calls = sum(1 for m in turn if m.get("type") == "ai")
    return seen


def _this_turn(messages: object) -> list[dict[str, Any]]:
    """Return the serialized messages after the last user message (the current turn's)."""
    listed = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
    starts = [i for i, m in enumerate(listed) if m.get("type") == "human"]
    return listed[starts[-1] + 1 :] if starts else listed


def describe_approval(request: dict[str, Any]) -> str:
    """Render a pending approval request for a terminal: one numbered action per line.

    Args:
        request: ``{"action_requests": [...], "review_configs": [...]}``.

    Returns:
        Plain text: each action's description (as :func:`client.terminal.plain_text`
        writes it: the escapes that keep caller text from adding markup undone) and the
        decisions it allows.
    """
    lines = ["approval needed:"]
    configs = request.get("review_configs") or []
    for index, action in enumerate(request.get("action_requests") or [], start=1):
        config = configs[index - 1] if index - 1 < len(configs) else {}
        allowed = "/".join(config.get("allowed_decisions") or ["approve", "reject"])
        description = terminal.plain_text(str(action.get("description")))
        lines.append(f"  {index}. {action.get('name')} ({allowed}): {description}")
    return "\n".join(lines)


def decisions_for(
    request: dict[str, Any], approve: bool, reject: str | None
) -> dict[str, list[dict[str, Any]]]:
    """Return the resume answering every action of ``request`` alike.

    Args:
        request: The pending approval request.
        approve: Approve every action.
        reject: Reject every action with this reason (empty: no reason).

    Returns:
        ``{"decisions": [...]}``, one per action (langchain's ``HITLResponse``).
    """
    count = len(request.get("action_requests") or [])
    if approve:
        return {"decisions": [{"type": "approve"}] * count}
    decision: dict[str, Any] = {"type": "reject"}
    if reject:
        decision["message"] = reject
    return {"decisions": [dict(decision) for _ in range(count)]}


APPROVE_WORDS = ("a", "approve", "y", "yes")
"""What the approval prompt reads as approve (any case, spaces trimmed)."""
REJECT_WORDS = ("r", "reject", "n", "no")
"""What the approval prompt reads as reject (any case, spaces trimmed)."""


def read_choice(answer: str) -> Literal["approve", "reject"] | None:
    """Read one answer to the approval prompt.

    Args:
        answer: What the person typed.

    Returns:
        ``approve`` or ``reject``; None for anything else (the prompt asks again).
    """
    word = answer.strip().lower()
    if word in APPROVE_WORDS:
        return "approve"
    if word in REJECT_WORDS:
        return "reject"
    return None


def prompt_decisions(
    request: dict[str, Any], ask: Callable[[str], str] = input
) -> dict[str, list[dict[str, Any]]]:
    """Ask a person about each action at the terminal.

    Args:
        request: The pending approval request.
        ask: Reads one answer (``input`` by default).

    Returns:
        ``{"decisions": [...]}``: ``a``/``approve``/``y``/``yes`` approves, ``r``/``reject``/
        ``n``/``no`` rejects, with the reason asked next (empty for none); anything else is
        asked again.

    Raises:
        EOFError: If the input ends before every action is answered.
    """
    decisions: list[dict[str, Any]] = []
    for index, _ in enumerate(request.get("action_requests") or [], start=1):
        prompt = f"action {index}: approve or reject? [a/r] "
        while (choice := read_choice(ask(prompt))) is None:
            prompt = f"action {index}: type a (approve, y, yes) or r (reject, n, no): "
        if choice == "approve":
            decisions.append({"type": "approve"})
            continue
        reason = ask("reason (optional): ").strip()
        decisions.append({"type": "reject", **({"message": reason} if reason else {})})
    return {"decisions": decisions}


# ---------------------------------------------------------------------------------------
# check: the forced-outcome matrix against any server.


@dataclass(frozen=True)
class RunSummary:
    """The part of a run that ``check`` compares."""

    action: str | None
    rule: str | None
    path: tuple[str, ...]
    model_calls: int
    answer_parts: int = 0
    """How many tool results make up the answer (``len(answer_from)``)."""
    unsettled_parts: int = 0
    """How many parts the answer names as not done (``len(unsettled)``)."""

    @property
    def decision(self) -> str:
        """Return ``action/rule`` (``-`` when no tool ran)."""
        return f"{self.action}/{self.rule}" if self.action else "-"


@dataclass(frozen=True)
class CheckRow:
    """One scenario on one graph: what was expected and what the server did."""

    graph: str
    scenario: str
    expected: RunSummary
    observed: RunSummary | None
    compare: Compare
    error: str | None = None

    @property
    def decision_ok(self) -> bool:
        """Whether the decision's action and rule match."""
        return self.observed is not None and (
            (self.observed.action, self.observed.rule) == (self.expected.action, self.expected.rule)
        )

    @property
    def path_ok(self) -> bool:
        """Whether the node path matches."""
        return self.observed is not None and self.observed.path == self.expected.path

    @property
    def calls_ok(self) -> bool:
        """Whether the model-call count matches."""
        return self.observed is not None and self.observed.model_calls == self.expected.model_calls

    @property
    def ok(self) -> bool:
        """Whether everything this row compares matches."""
        if self.compare == "decision":
            return self.decision_ok
        answer_ok = self.observed is not None and (
            (self.observed.answer_parts, self.observed.unsettled_parts)
            == (self.expected.answer_parts, self.expected.unsettled_parts)
        )
        return self.decision_ok and self.path_ok and self.calls_ok and answer_ok


def expected_summary(scenario: Scenario, graph: str) -> RunSummary:
    """Return what ``scenario`` must show on ``graph``, read from the scenario table.

    Args:
        scenario: A row of :data:`client.scenarios.SCENARIOS`.
        graph: ``legacy`` or ``middleware``.

    Returns:
        The expected decision, path and model calls.
    """
    return RunSummary(
        scenario.action,
        scenario.rule,
        tuple(scenario.path(graph)),
        scenario.model_calls,
        len(scenario.answer_parts),
        len(scenario.unsettled),
    )


def summarize(observation: Observation) -> RunSummary:
    """Return the comparable part of an observation.

    Args:
        observation: A streamed run.

    Returns:
        Its decision, path and model calls.
    """
    decision = observation.decision or {}
    return RunSummary(
        decision.get("action"),
        decision.get("rule"),
        tuple(observation.path),
        observation.model_calls,
        len(decision.get("answer_from") or ()),
        len(decision.get("unsettled") or ()),
    )


async def check(
    client: LangGraphClient,
    graphs: Sequence[str] = GRAPHS,
    scenarios: Sequence[Scenario] = SCENARIOS,
    *,
    model: str | None = None,
    compare: Compare = "full",
    concurrency: int = 8,
) -> list[CheckRow]:
    """Run every scenario on every graph and compare with the scenario table.

    Each run gets its own thread. A run that fails is a mismatch with its error kept.

    Args:
        client: An async ``langgraph_sdk`` client.
        graphs: Graph ids to check.
        scenarios: Scenarios to run.
        model: A ``model`` for every run's context; the server's default when None.
        compare: ``full`` (decision, path, model calls, answer parts) or ``decision``.
        concurrency: Runs in flight at once.

    Returns:
        One row per graph and scenario, graphs first, in scenario order.
    """
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(graph: str, scenario: Scenario) -> CheckRow:
        context = dict(scenario.context)
        if model is not None:
            context["model"] = model
        want = expected_summary(scenario, graph)
        async with gate:
            try:
                seen = await stream_run(client, graph, scenario.query, context, replay=True)
            except RunFailedError as exc:
                return CheckRow(graph, scenario.name, want, None, compare, error=str(exc))
        return CheckRow(graph, scenario.name, want, summarize(seen), compare)

    return list(
        await asyncio.gather(*(one(graph, scenario) for graph in graphs for scenario in scenarios))
    )


def _compact(path: Iterable[str]) -> str:
    return ">".join(path) or "-"


def render(rows: Sequence[CheckRow]) -> str:
    """Render check rows as a table per graph, then the mismatches in full.

    Args:
        rows: What :func:`check` returned.

    Returns:
        Plain text, one table per graph.
    """
    if not rows:
        return "no scenarios selected\n"
    width = max(len(row.scenario) for row in rows)
    lines: list[str] = [
        f"compared: {COMPARED[rows[0].compare]}",
        "calls: expected/observed model calls; path: the node path from stream_mode='updates'",
        "",
    ]
    for graph in dict.fromkeys(row.graph for row in rows):
        mine = [row for row in rows if row.graph == graph]
        lines.append(f"graph {graph}")
        lines.append(
            f"  {'scenario':<{width}}  {'expected decision':<26} {'observed decision':<26} "
            f"{'calls':<7} {'path':<8} result"
        )
        for row in mine:
            got = row.observed
            calls = f"{row.expected.model_calls}/{got.model_calls if got else '-'}"
            path = "same" if row.path_ok else "differs"
            lines.append(
                f"  {row.scenario:<{width}}  {row.expected.decision:<26} "
                f"{(got.decision if got else 'ERROR'):<26} {calls:<7} {path:<8} "
                f"{'ok' if row.ok else 'MISMATCH'}"
            )
        passed = sum(row.ok for row in mine)
        lines.append(f"  {passed}/{len(mine)} scenarios match on {graph}")
        lines.append("")
    bad = [row for row in rows if not row.ok]
    for row in bad:
        lines.append(f"MISMATCH {row.graph} {row.scenario}")
        if row.error:
            lines.append(f"  error:    {row.error}")
        lines.append(f"  expected: {row.expected.decision}  path {_compact(row.expected.path)}")
        if row.observed:
            lines.append(f"  observed: {row.observed.decision}  path {_compact(row.observed.path)}")
    lines.append(f"{len(rows) - len(bad)}/{len(rows)} rows match")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# Command line.


def _outcomes(text: str) -> list[str]:
    values = [part.strip() for part in text.split(",") if part.strip()]
    allowed = OUTCOMES
    for index, value in enumerate(values, start=1):
        if value not in allowed:
            # Named by position, never quoted: the value came from the caller.
            msg = f"outcome {index} is not one of {', '.join(allowed)}"
            raise argparse.ArgumentTypeError(msg)
    if not values:
        msg = f"expected one or more of {', '.join(allowed)}, comma-separated"
        raise argparse.ArgumentTypeError(msg)
    return values


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and a hint, not the whole usage."""

    def error(self, message: str) -> NoReturn:
        """Print ``error: <message>`` and where help is, then exit with status 2."""
        self.exit(EXIT_USAGE, f"error: {_unquoted(message)}\nsee {self.prog} --help\n")


_BAD_VALUE = re.compile(r"(argument [^:]+: invalid \w+ value): ")


def _unquoted(message: str) -> str:
    """Drop the caller's value that argparse quotes in a bad choice or a bad number."""
    flag, bad_choice, _ = message.partition(": invalid choice: ")
    if bad_choice:
        return f"{flag}: invalid choice{message[message.rfind(' (choose from') :]}"
    bad_value = _BAD_VALUE.match(message)
    return bad_value.group(1) if bad_value else message


def _add_url_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url",
        default=None,
        help=(
            f"server URL (default: ${URL_ENV}, else the first that answers of the URLs "
            f"`make dev` and `make prod` wrote to {DEV_URL_FILE.relative_to(PROJECT)} and "
            f"{PROD_URL_FILE.relative_to(PROJECT)}, and {DEFAULT_URL}; the server: line "
            "says which)"
        ),
    )


COMMANDS = ("ask", "check", "answer", "report")
"""The subcommands; a first argument that is none of them (nor a help flag) means ``ask``."""


def parser() -> argparse.ArgumentParser:
    """Return the parser of ``python -m client [ask|check] ...``."""
    top = _Parser(
        prog=INVOCATION,
        description=(
            "Talk to a running LangGraph server: the one `make dev` or `make prod` started "
            "(found as --url says), or --url. `ask` (the default: the first argument may be "
            "the question itself) sends a question; `answer` answers a paused approval; "
            "`check` runs the forced-outcome matrix; `report` adds up what the stops saved, "
            "over the server's threads (the default, no key needed) or a LangSmith project "
            "(--project)."
        ),
    )
    commands = top.add_subparsers(dest="command", required=True)
    ask = commands.add_parser(
        "ask",
        help="send one question and watch its stop decisions (the default subcommand)",
        description=(
            "Send one question to a running LangGraph server (its `server:` line goes to "
            "standard error), print each stop decision as it streams in with how its outcome "
            "came about, then the answer, node path and model-call count. A context flag "
            "not given sends nothing: the run gets the default shown."
        ),
    )
    ask.add_argument("query", help="the user message")
    _add_url_flag(ask)
    ask.add_argument(
        "--graph", choices=GRAPHS, default="legacy", help="the graph (default: %(default)s)"
    )
    ask.add_argument("--thread-id", help="continue this thread (default: a new one)")
    _add_context_flags(ask)
    _add_answer_flags(ask)
    answer = commands.add_parser(
        "answer",
        help="show a thread's pending approval and answer it",
        description=(
            "Show the approval a paused thread waits for and answer it: --approve, "
            "--reject REASON, or a prompt per action when stdin is a terminal."
        ),
    )
    _add_url_flag(answer)
    answer.add_argument(
        "--graph", choices=GRAPHS, default="legacy", help="the graph (default: %(default)s)"
    )
    answer.add_argument("--thread-id", required=True, help="the paused thread (required)")
    _add_answer_flags(answer)
    check = commands.add_parser(
        "check",
        help="run the forced-outcome matrix against the server",
        description=(
            "Run the forced-outcome matrix (client/scenarios.py) against a server and "
            "print expected versus observed per graph. Exits 1 on any mismatch."
        ),
    )
    _add_check_flags(check)
    report.add_flags(
        commands.add_parser(
            "report",
            help=(
                "add up what the stops saved: over the running server's threads by default, "
                "or a LangSmith project (--project)"
            ),
            description=(
                "Add up what the stops saved over a period (client/report.py): by default "
                "over the threads of the server python -m client finds (no key needed); with "
                "--project or $LANGSMITH_PROJECT, over that LangSmith project's traced runs "
                "(needs LANGSMITH_API_KEY)."
            ),
        )
    )
    return top


def _add_answer_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--approve`` / ``--reject REASON``: how to answer a pending approval."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--approve",
        action="store_true",
        help=f"approve every action of a pending approval (default: {_NO_ANSWER})",
    )
    group.add_argument(
        "--reject",
        metavar="REASON",
        help=(
            "reject every action of a pending approval, with this reason ('' for none) "
            f"(default: {_NO_ANSWER})"
        ),
    )


_NO_ANSWER = "neither: a prompt per action at a terminal, else the command that answers later"
"""What a pending approval gets without ``--approve`` or ``--reject``."""


def _add_context_flags(parser: argparse.ArgumentParser) -> None:
    """Add one flag per ``Context`` field (:data:`client.context_flags.FIELDS`).

    Each help ends with the field's default, the value a run gets when the flag is not
    given: the client then sends nothing for it and the server's ``Context`` default holds.
    """
    kinds: dict[str, Callable[[str], Any]] = {"int": int, "float": float, "str": str}
    for flag in FIELDS:
        # "%" is argparse's format character in a help text.
        default = f"(default: {flag.default})".replace("%", "%%")
        if flag.kind == "outcomes":
            mix = ", ".join(f"{share:.0%} {name}" for name, share in DEFAULT_WEIGHTS.items())
            mix = mix.replace("%", "%%")
            parser.add_argument(
                flag.flag,
                type=_outcomes,
                action="append",
                metavar="OUTCOME[,OUTCOME...]",
                help="force tool outcomes in call order (repeatable or comma list): success, "
                "transient (retryable is the same), fatal (default: none: each drawn at random, "
                f"{mix}, seeded by --seed)",
            )
        elif flag.kind == "bool":
            parser.add_argument(
                flag.flag, action="store_true", default=None, help=f"{flag.help} {default}"
            )
        else:
            parser.add_argument(
                flag.flag,
                type=kinds[flag.kind],
                choices=flag.choices,
                help=f"{flag.help} {default}",
            )


def _add_check_flags(parser: argparse.ArgumentParser) -> None:
    """Add the flags of ``python -m client check``."""
    _add_url_flag(parser)
    parser.add_argument(
        "--graph", choices=GRAPHS, action="append", help="repeatable (default: every graph)"
    )
    parser.add_argument("--model", help="context model for every run (default: the server's)")
    parser.add_argument(
        "--scenario",
        action="append",
        choices=[s.name for s in SCENARIOS],
        metavar="NAME",
        help="run only this scenario, repeatable (default: all)",
    )
    parser.add_argument(
        "--compare",
        choices=get_args(Compare),
        default="full",
        help=(
            "full: decision, path, model calls and answer parts; decision: action and rule "
            "(default: %(default)s)"
        ),
    )
    parser.add_argument(
        "--concurrency", type=int, default=8, help="runs in flight at once (default: %(default)s)"
    )


def context_from(args: argparse.Namespace) -> dict[str, Any]:
    """Return the run context the flags ask for (only the flags given).

    Args:
        args: Parsed ``ask`` arguments (see :func:`parser`).

    Returns:
        Context fields; ``force_outcome`` is a string for one outcome, a list for several.
    """
    context: dict[str, Any] = {}
    if args.force_outcome:
        outcomes = [value for group in args.force_outcome for value in group]
        context["force_outcome"] = outcomes[0] if len(outcomes) == 1 else outcomes
    for flag in FIELDS:
        value = getattr(args, flag.name)
        if flag.kind != "outcomes" and value is not None:
            context[flag.name] = value
    return context


def _describe(decision: dict[str, Any]) -> str:
    tool = decision.get("tool") or "-"
    call = decision.get("tool_call_id") or "-"
    line = (
        f"stop decision: {decision.get('action', '?'):<8} rule={decision.get('rule')} "
        f"reason={decision.get('reason')} tool={tool} call={call}"
    )
    if decision.get("approval"):
        line += f" approval={decision['approval']} policy={decision.get('policy')}"
    return line


def _print_result(seen: Observation, out: TextIO) -> None:
    if not seen.decisions:
        print("stop decision: none (no tool ran)", file=out)
    print("answer:", file=out)
    terminal.show(seen.answer, out)
    print(f"path: {' -> '.join(seen.path)}", file=out)
    print(f"model calls: {seen.model_calls}", file=out)
    print(f"graph: {seen.graph}  thread: {seen.thread_id}", file=out)


def _answer_for(
    args: argparse.Namespace, request: dict[str, Any], stdin: TextIO
) -> dict[str, list[dict[str, Any]]] | None:
    if args.approve or args.reject is not None:
        return decisions_for(request, args.approve, args.reject)
    if stdin.isatty():
        return prompt_decisions(request, _reader(stdin))
    return None


def _reader(stdin: TextIO) -> Callable[[str], str]:
    if stdin is sys.stdin:
        return input  # line editing at a real terminal

    def ask(prompt: str) -> str:
        print(prompt, end="", flush=True)
        line = stdin.readline()
        if not line:
            raise EOFError  # as ``input`` does at the end of its input
        return line

    return ask


def _turn_context(seen: Observation, asked: dict[str, Any]) -> dict[str, Any]:
    """Return the context the thread's turn started with (what the run goes on under)."""
    kept = seen.values.get("turn_context")
    return dict(kept) if isinstance(kept, dict) else asked


def answer_command(seen: Observation, url: str) -> str:
    """Return the command that answers ``seen``'s pending approval later, from anywhere.

    Args:
        seen: The paused run.
        url: The server it paused on; named with ``--url`` unless it is the default.

    Returns:
        ``.venv/bin/python -m client answer --graph G --thread-id T [--url U] --approve``.
    """
    where = f" --url {url}" if url != DEFAULT_URL else ""
    return f"{INVOCATION} answer --graph {seen.graph} --thread-id {seen.thread_id}{where} --approve"


def _still_paused(seen: Observation, url: str) -> str:
    return f"the run stays paused: answer it later with: {answer_command(seen, url)}"


@contextmanager
def _interruptible() -> Iterator[None]:
    """Let Ctrl-C stop a prompt at once.

    ``asyncio.run`` answers the first Ctrl-C by cancelling its task, which a blocking
    ``input`` never sees: Python's default handler, while the prompt waits, raises
    :class:`KeyboardInterrupt` inside it instead.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


async def _settle(
    client: LangGraphClient,
    args: argparse.Namespace,
    seen: Observation,
    out: TextIO,
    stdin: TextIO,
    url: str,
) -> int:
    """Show a pending approval, answer it if told how, and print where the run ended.

    The answer is sent with no context: the run goes on under the context its turn
    started with, kept by the server with the thread.
    """
    context = _turn_context(seen, context_from(args) if args.command == "ask" else {})

    def say(decision: dict[str, Any], artifacts: Mapping[str, dict[str, Any]]) -> None:
        print(_describe(decision), file=out)
        print(outcome_note(decision, context, artifacts), file=out, flush=True)

    while (request := seen.approval) is not None:
        print(describe_approval(request), file=out, flush=True)
        try:
            with _interruptible():
                resume = _answer_for(args, request, stdin)
        except EOFError:
            print(file=out, flush=True)  # end the prompt's line
            print(f"error: no answer (end of input); {_still_paused(seen, url)}", file=sys.stderr)
            return EXIT_PAUSED
        except KeyboardInterrupt:
            print(file=out, flush=True)
            print(f"interrupted; {_still_paused(seen, url)}", file=sys.stderr)
            return EXIT_INTERRUPTED
        if resume is None:
            print(
                "paused: awaiting approval; answer with the line below (for a reject, "
                "--reject REASON in place of --approve):",
                answer_command(seen, url),
                sep="\n",
                file=out,
            )
            return EXIT_PAUSED
        kinds = ", ".join(d["type"] for d in resume["decisions"])
        print(f"answered: {kinds}", file=out, flush=True)
        seen = await stream_run(
            client,
            seen.graph,
            "",
            None,  # a resume needs no context: the turn's own holds
            thread_id=seen.thread_id,
            on_decision=say,
            resume=resume,
            seen=seen,
        )
    _print_result(seen, out)
    return EXIT_OK


MISS_HELP = (
    "ask about a topic it has, as in “How does a checkpointer work?” "
    "(its topics: agent/tools/data/knowledge_base.json)"
)
"""What helps after a knowledge-base miss: a question that names one of its topics."""


def _misses(decision: dict[str, Any], artifacts: Mapping[str, dict[str, Any]]) -> int:
    """How many of the calls the decision answers from found no page (``cause: no_match``)."""
    calls = decision.get("answer_from") or [decision.get("tool_call_id")]
    return sum(1 for call in calls if (artifacts.get(str(call)) or {}).get("cause") == "no_match")


def _drawn_failures(decision: dict[str, Any], artifacts: Mapping[str, dict[str, Any]]) -> bool:
    """Whether a call the decision answers from failed by its draw (not by a miss)."""
    calls = [*(decision.get("answer_from") or [decision.get("tool_call_id")])]
    calls += decision.get("unsettled") or []
    for call in calls:
        artifact = artifacts.get(str(call)) or {}
        if artifact.get("reason") in ("fatal", "transient") and artifact.get("cause") != "no_match":
            return True
    return False


def outcome_note(
    decision: dict[str, Any],
    context: dict[str, Any],
    artifacts: Mapping[str, dict[str, Any]] | None = None,
) -> str:
    """Say how the outcome behind a decision came about, and what would change it.

    A knowledge-base miss (a search whose artifact says ``cause: no_match``) is named as one,
    with what helps (a question naming a topic the knowledge base has): forcing an outcome
    or another seed cannot turn a miss into a page, so ``--force-outcome success`` is offered
    only when a call failed by its draw.

    Args:
        decision: A streamed ``stop_decision``.
        context: The run context the client sent.
        artifacts: The run's artifacts by tool-call id, as streamed; None when unknown
            (a miss is then inferred only from a forced success that ended fatal).

    Returns:
        An indented line for under the decision.
    """
    if decision.get("approval") == "rejected":
        return "  outcome: rejected by the person asked to approve it (nothing charged)"
    if decision.get("reason") == "policy_block":
        return "  outcome: refused by the spend-cap policy before the tool ran (nothing drawn)"
    misses = 0 if artifacts is None else _misses(decision, artifacts)
    miss = ""
    if misses:
        which = "the search" if misses == 1 else f"{misses} searches"
        miss = (
            f"; {which} found no page in the knowledge base (a knowledge-base miss: no "
            f"--force-outcome or --seed changes that); {MISS_HELP}"
        )
    forced = context.get("force_outcome")
    if forced is not None:
        shown = forced if isinstance(forced, str) else ",".join(forced)
        if miss:
            return f"  outcome: forced by --force-outcome {shown}{miss}"
        missed = decision.get("reason") == "fatal" and "fatal" not in shown.split(",")
        why = " (the lookup ran and found no page: a miss is fatal)" if missed else ""
        return f"  outcome: forced by --force-outcome {shown}{why}"
    mix = ", ".join(f"{share:.0%} {name}" for name, share in DEFAULT_WEIGHTS.items())
    seed = context.get("seed", DEFAULT_SEED)
    drawn = f"  outcome: drawn at random ({mix}; seed {seed})"
    if not miss:
        return drawn + "; force one with --force-outcome success"
    if _drawn_failures(decision, artifacts or {}):
        return drawn + miss + "; force the other calls' outcomes with --force-outcome success"
    return drawn + miss


def connect(url: str) -> LangGraphClient:
    """Return an async ``langgraph_sdk`` client for ``url``.

    Imported here, not at the top: the SDK loads in about half a second, which ``--help``
    and a bad flag need not pay (see ``python -m bench.client_start``).

    Args:
        url: The server, as :func:`find_server` found it.

    Returns:
        The client; the caller closes it.
    """
    from langgraph_sdk import get_client

    return get_client(url=url)


async def _run(args: argparse.Namespace, out: TextIO, stdin: TextIO) -> int:
    url, source = await find_server(args.url)
    # On standard error: standard output is the run and its answer, piped or compared.
    print(f"server: {url} ({source})", file=sys.stderr, flush=True)
    graph = str(args.graph)
    client = connect(url)
    context = context_from(args)

    def show(decision: dict[str, Any], artifacts: Mapping[str, dict[str, Any]]) -> None:
        print(_describe(decision), file=out)
        print(outcome_note(decision, context, artifacts), file=out, flush=True)

    try:
        seen = await stream_run(
            client,
            graph,
            args.query,
            context,
            thread_id=args.thread_id,
            on_decision=show,
        )
        return await _settle(client, args, seen, out, stdin, url)
    finally:
        await client.aclose()


async def _answer(args: argparse.Namespace, out: TextIO, stdin: TextIO) -> int:
    url, source = await find_server(args.url)
    client = connect(url)
    print(f"server: {url} ({source})", file=out, flush=True)
    try:
        seen = await pending_approval(client, str(args.graph), str(args.thread_id))
        if seen.approval is None:
            print(f"nothing to answer: thread {seen.thread_id} has no pending approval", file=out)
            return EXIT_FAILED
        return await _settle(client, args, seen, out, stdin, url)
    finally:
        await client.aclose()


async def _check(args: argparse.Namespace, out: TextIO) -> int:
    url, source = await find_server(args.url)
    chosen = set(args.scenario or [])
    scenarios = [s for s in SCENARIOS if not chosen or s.name in chosen]
    client = connect(url)
    try:
        rows = await check(
            client,
            args.graph or GRAPHS,
            scenarios,
            model=args.model,
            compare=args.compare,
            concurrency=args.concurrency,
        )
    finally:
        await client.aclose()
    print(f"server: {url} ({source})", file=out)
    out.write(render(rows))
    return EXIT_OK if all(row.ok for row in rows) else EXIT_FAILED


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, stdin: TextIO | None = None
) -> int:
    """Run the command line.

    Args:
        argv: Arguments without the program name; ``sys.argv[1:]`` when None.
        out: Where to print; standard output when None.
        stdin: Where a prompt reads answers from; standard input when None.

    Returns:
        The exit status (see the module docstring).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in (*COMMANDS, "-h", "--help"):
        argv = ["ask", *argv]  # `python -m client "question"` is `ask "question"`
    stream = out or sys.stdout
    try:
        args = parser().parse_args(argv)
        if args.command == "ask" and not args.query.strip():
            print("error: argument query: the question is empty; nothing was sent", file=sys.stderr)
            return EXIT_USAGE
        return _dispatch(args, stream, stdin or sys.stdin)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _drop_stdout(stream)
        return EXIT_BROKEN_PIPE


def _dispatch(args: argparse.Namespace, out: TextIO, stdin: TextIO) -> int:
    try:
        if args.command == "check":
            return asyncio.run(_check(args, out))
        if args.command == "answer":
            return asyncio.run(_answer(args, out, stdin))
        if args.command == "report":
            return report.run(args, out)
        return asyncio.run(_run(args, out, stdin))
    except ServerUnreachableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except RunFailedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED


def _drop_stdout(stream: TextIO) -> None:
    """Point standard output at devnull once its reader is gone.

    Python's documented recipe for SIGPIPE: the interpreter flushes standard output at
    exit, and a flush into the closed pipe would raise again, with a traceback.
    """
    if stream is not sys.stdout:
        return
    try:
        fileno = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a file (a replaced stream): nothing is flushed into the pipe
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fileno)
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
