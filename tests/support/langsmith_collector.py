"""A loopback stand-in for the LangSmith ingest API, for tests.

`LangSmithCollector` is a `tests.support.loopback.LoopbackServer` (``127.0.0.1``, a free
port, a daemon thread) that speaks just enough of the LangSmith
API for the real ``langsmith`` client to trace into it and for tests to inspect what
arrived::

    with LangSmithCollector() as collector:
        monkeypatch.setenv("LANGSMITH_ENDPOINT", collector.url)
        ...  # or langsmith.Client(api_url=collector.url, api_key="dummy")
        client.flush()
        [root] = collector.roots()

Protocol notes (checked against ``langsmith`` 0.15.1):

* The client fetches ``GET /info`` once per ``Client`` and reads
  ``batch_ingest_config``. Its tracing thread indexes ``size_limit``,
  ``scale_up_nthreads_limit`` and ``scale_up_qsize_trigger`` directly, so all of them
  are served. ``use_multipart_endpoint`` picks ``/runs/multipart`` (true) or
  ``/runs/batch`` (false). zstd compression is used only when
  ``instance_flags.zstd_compression_enabled`` is true *and*
  ``LANGSMITH_DISABLE_RUN_COMPRESSION`` is unset, so this collector reports that flag
  as false and never receives zstd from a well-behaved client.
* ``POST /runs/multipart``: ``multipart/form-data`` (random hex boundary in the
  ``Content-Type``, every part ``application/json`` with its own ``Content-Length``).
  A run arrives as a part ``post.<id>`` or ``patch.<id>`` holding the run minus its
  large fields, followed by one part per present large field:
  ``<op>.<id>.inputs|outputs|events|extra|error|serialized``. Attachments come as
  ``attachment.<id>.<name>`` and feedback as ``feedback.<id>``. A post and a patch of
  the same run queued in the same batch are combined client-side into one post.
* ``POST /runs/batch``: ``{"post": [run, ...], "patch": [run, ...]}`` with every field
  inline.
* ``POST /runs`` and ``PATCH /runs/<id>``: single runs, used when the client has no
  background tracing queue.
* ``POST /feedback`` (``Client.create_feedback`` without the tracing queue) and
  ``GET /sessions?name=...`` (``Client.read_project``: one project per name, its id derived
  from the name) are served too. With ``projects`` given, only those names and the projects
  runs arrived under exist; any other reads as an empty list, which the client raises as
  ``LangSmithNotFoundError``.
* ``POST /runs/query`` (``Client.list_runs``) and ``POST /runs/stats``
  (``Client.get_run_stats``) answer over the merged runs: ``session`` (project ids),
  ``is_root``, ``start_time`` (runs started at or after it), ``run_type``, ``select`` and
  ``filter`` / ``trace_filter`` in the trace-query syntax's ``eq``, ``neq``, ``has``,
  ``and``, ``or`` and ``not`` over ``metadata_key`` / ``metadata_value`` (paired inside an
  ``and``), ``name``, ``run_type`` and ``tags``; any other filter is refused (422, recorded
  in ``errors``). Runs come newest first, ``page_size`` per page with a ``cursors.next``.
  ``/runs/stats`` answers ``run_count`` only.
* Patches carry the whole ``extra`` again (including ``extra.metadata``) and, by
  default, *no* ``inputs`` (``LANGSMITH_EXCLUDE_INPUTS_ON_PATCH`` defaults to true).

Merging: ``runs`` maps a run id to a dict. A post creates it, a patch updates it,
``extra`` is merged key by key with ``extra.metadata`` merged dict-wise (a patch never
drops metadata a post carried), and a ``None`` never overwrites a value already set.
The client sends from a background queue, so a run's post can arrive after its patch;
such a late post only fills fields the patch did not set (the patch is the newer state).
"""

from __future__ import annotations

import copy
import gzip
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import Message
from typing import Any
from urllib.parse import parse_qs

from tests.support.loopback import LoopbackServer, Request, Response

__all__ = ["LangSmithCollector", "RecordedRequest", "project_id"]

_DEFAULT_SIZE_LIMIT = 100
_DEFAULT_SIZE_LIMIT_BYTES = 20_971_520


RecordedRequest = Request
"""One HTTP request as the collector received it (body after any gzip was removed)."""


@dataclass(frozen=True)
class _Response:
    status: int
    payload: Any


class _MultipartError(ValueError):
    """Raised when a multipart body cannot be parsed."""


def _parse_header_params(header_name: str, value: str) -> Message:
    message = Message()
    message[header_name] = value
    return message


def _parse_multipart(content_type: str, body: bytes) -> list[tuple[str, str, bytes]]:
    """Split a ``multipart/form-data`` body into ``(name, content_type, data)`` parts.

    Args:
        content_type: The request's ``Content-Type`` header (must carry a boundary).
        body: The complete request body.

    Returns:
        The parts in order.

    Raises:
        _MultipartError: If the content type has no boundary or a part has no name.
    """
    boundary = _parse_header_params("Content-Type", content_type).get_boundary()
    if not boundary:
        raise _MultipartError(f"no boundary in Content-Type {content_type!r}")
    delimiter = b"\r\n--" + boundary.encode("latin-1")
    segments = (b"\r\n" + body).split(delimiter)
    parts: list[tuple[str, str, bytes]] = []
    for segment in segments[1:]:
        if segment.startswith(b"--"):
            break  # close delimiter; anything after it is epilogue
        # Skip transport padding up to the CRLF that ends the delimiter line.
        _, _, segment = segment.partition(b"\r\n")
        raw_headers, sep, data = segment.partition(b"\r\n\r\n")
        if not sep:
            raise _MultipartError("multipart part without a header/body separator")
        headers = Message()
        for line in raw_headers.decode("latin-1").split("\r\n"):
            if ":" in line:
                key, _, value = line.partition(":")
                headers[key.strip()] = value.strip()
        disposition = headers.get("Content-Disposition")
        name = (
            _parse_header_params("Content-Disposition", disposition).get_param(
                "name", header="content-disposition"
            )
            if disposition
            else None
        )
        if not isinstance(name, str) or not name:
            raise _MultipartError("multipart part without a name")
        parts.append((name, headers.get("Content-Type", "application/octet-stream"), data))
    return parts


class LangSmithCollector(LoopbackServer):
    """Loopback LangSmith ingest server that records and merges traced runs.

    Use as a context manager; ``url`` is valid between enter and exit. All state is
    guarded by one lock; read it through `runs_snapshot`, `find`, `roots` or
    `wait_for` while the tracer may still be sending.

    Attributes:
        multipart: What ``GET /info`` reports as ``use_multipart_endpoint``. Each
            ``langsmith.Client`` reads ``/info`` once, so set it before creating one.
        size_limit: ``batch_ingest_config.size_limit`` (max runs per batch).
        size_limit_bytes: ``batch_ingest_config.size_limit_bytes``.
        runs: Merged runs keyed by run id (string). Prefer `runs_snapshot`.
        run_traffic: Every request body sent to a ``/runs*`` path, in arrival order,
            exactly as sent (after removing gzip encoding, if any).
        other_traffic: Every other request body (``/info``, ``/v1/metadata/submit``,
            ...), in arrival order.
        requests_log: Every request (method, path, headers, body) in arrival order.
        attachments: ``attachment.<run_id>.<name>`` parts, as
            ``{run_id: {name: (content_type, data)}}``.
        feedback: Parsed ``feedback.<id>`` parts and ``POST /feedback`` bodies, in arrival
            order.
        errors: Human-readable descriptions of requests the collector rejected or
            could not parse (empty in a healthy test).
    """

    def __init__(
        self,
        multipart: bool = True,
        *,
        size_limit: int = _DEFAULT_SIZE_LIMIT,
        size_limit_bytes: int = _DEFAULT_SIZE_LIMIT_BYTES,
        projects: Iterable[str] | None = None,
        page_size: int = 100,
    ) -> None:
        """Create a collector; it starts serving on `start` or ``with``.

        Args:
            multipart: Whether ``/info`` tells clients to use ``/runs/multipart``
                (``True``) or ``/runs/batch`` (``False``).
            size_limit: Maximum number of run operations per batch the client may send.
            size_limit_bytes: Maximum batch size in bytes the client may send.
            projects: The project names that exist besides those runs arrived under; every
                name exists when None.
            page_size: Runs per page of ``POST /runs/query``.
        """
        super().__init__()
        self.projects = None if projects is None else set(projects)
        self.page_size = page_size
        self.multipart = multipart
        self.size_limit = size_limit
        self.size_limit_bytes = size_limit_bytes
        self.runs: dict[str, dict[str, Any]] = {}
        self.run_traffic: list[bytes] = []
        self.other_traffic: list[bytes] = []
        self.requests_log: list[RecordedRequest] = []
        self.attachments: dict[str, dict[str, tuple[str, bytes]]] = {}
        self.feedback: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._patched: dict[str, set[str]] = {}
        self._cond = threading.Condition()

    def env(self, api_key: str = "dummy") -> dict[str, str]:
        """Environment variables that point a ``langsmith`` client at this collector.

        Args:
            api_key: The dummy API key to configure.

        Returns:
            ``LANGSMITH_ENDPOINT``, ``LANGSMITH_API_KEY``, ``LANGSMITH_TRACING`` and
            ``LANGSMITH_DISABLE_RUN_COMPRESSION``.
        """
        return {
            "LANGSMITH_ENDPOINT": self.url,
            "LANGSMITH_API_KEY": api_key,
            "LANGSMITH_TRACING": "true",
            "LANGSMITH_DISABLE_RUN_COMPRESSION": "true",
        }

    # ------------------------------------------------------------------ queries

    def runs_snapshot(self) -> dict[str, dict[str, Any]]:
        """Return a deep copy of the merged runs, keyed by run id.

        Returns:
            The runs received so far.
        """
        with self._cond:
            return copy.deepcopy(self.runs)

    def wait_for(
        self,
        predicate: Callable[[dict[str, dict[str, Any]]], bool],
        timeout: float = 10.0,
    ) -> dict[str, dict[str, Any]]:
        """Block until ``predicate(runs_snapshot())`` is true.

        The predicate is re-evaluated whenever the collector ingests something (and at
        least every 50 ms).

        Args:
            predicate: Called with a deep copy of the runs.
            timeout: Seconds to wait before giving up.

        Returns:
            The snapshot that satisfied the predicate.

        Raises:
            TimeoutError: If the predicate is still false after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                snapshot = copy.deepcopy(self.runs)
                if predicate(snapshot):
                    return snapshot
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    names = sorted(str(run.get("name")) for run in snapshot.values())
                    raise TimeoutError(
                        f"condition not met within {timeout}s; {len(snapshot)} runs: {names}; "
                        f"errors: {self.errors}"
                    )
                self._cond.wait(min(remaining, 0.05))

    def find(self, name: str | None = None, **metadata_filters: Any) -> list[dict[str, Any]]:
        """Return runs by name and/or ``extra.metadata`` values, in trace order.

        Args:
            name: If given, only runs with exactly this name.
            **metadata_filters: Each ``key=value`` requires
                ``run["extra"]["metadata"][key] == value``.

        Returns:
            Deep copies of the matching runs, sorted by ``dotted_order`` (then
            ``start_time``), so parents precede children and siblings are in start
            order.
        """
        matches = []
        for run in self.runs_snapshot().values():
            if name is not None and run.get("name") != name:
                continue
            metadata = (run.get("extra") or {}).get("metadata") or {}
            if all(
                key in metadata and metadata[key] == value
                for key, value in metadata_filters.items()
            ):
                matches.append(run)
        return sorted(matches, key=_trace_order)

    def roots(self) -> list[dict[str, Any]]:
        """Return the runs without a ``parent_run_id``, in trace order.

        Returns:
            Deep copies of the root runs.
        """
        return sorted(
            (run for run in self.runs_snapshot().values() if not run.get("parent_run_id")),
            key=_trace_order,
        )

    def clear(self) -> None:
        """Forget all runs, traffic, attachments, feedback and errors."""
        with self._cond:
            self.runs.clear()
            self.run_traffic.clear()
            self.other_traffic.clear()
            self.requests_log.clear()
            self.attachments.clear()
            self.feedback.clear()
            self.errors.clear()
            self._cond.notify_all()

    # ------------------------------------------------------------------ protocol

    def handle(self, request: Request) -> Response:
        """Record and answer one request (see `_dispatch`).

        Args:
            request: The request as received.

        Returns:
            A JSON response.
        """
        if request.method == "GET" and request.path.removeprefix("/api/v1") == "/sessions":
            return self._sessions(request.query)
        answer = self._dispatch(request.method, request.path, request.headers, request.body)
        return Response(answer.status, "application/json", json.dumps(answer.payload).encode())

    def _sessions(self, query: str) -> Response:
        """``GET /sessions?name=...``: the named project, with an id derived from its name."""
        names = parse_qs(query).get("name") or ["default"]
        with self._cond:
            known = None if self.projects is None else self.projects | self._run_projects()
        if known is not None and names[0] not in known:
            with self._cond:
                self.requests_log.append(RecordedRequest("GET", "/sessions", {}, b"", query))
            return Response(200, "application/json", b"[]")
        project = {
            "id": project_id(names[0]),
            "name": names[0],
            "tenant_id": str(uuid.UUID(int=0)),
            "start_time": "2026-01-01T00:00:00+00:00",
            "reference_dataset_id": None,
        }
        with self._cond:
            self.requests_log.append(RecordedRequest("GET", "/sessions", {}, b"", query))
        return Response(200, "application/json", json.dumps([project]).encode())

    def _info(self) -> dict[str, Any]:
        return {
            "version": "0.20.0",
            "license_expiration_time": None,
            "batch_ingest_config": {
                "use_multipart_endpoint": self.multipart,
                "size_limit": self.size_limit,
                "size_limit_bytes": self.size_limit_bytes,
                "scale_up_qsize_trigger": 1000,
                "scale_up_nthreads_limit": 16,
                "scale_down_nempty_trigger": 4,
            },
            "instance_flags": {"zstd_compression_enabled": False},
        }

    def _dispatch(self, method: str, path: str, headers: dict[str, str], body: bytes) -> _Response:
        # Tolerate an ``/api/v1`` prefix in the endpoint (as in https://.../api/v1).
        for prefix in ("/api/v1", "/api"):
            if path == prefix or path.startswith(prefix + "/"):
                path = path[len(prefix) :] or "/"
                break
        encoding = headers.get("content-encoding", "").strip().lower()
        is_run_path = path == "/runs" or path.startswith("/runs/")
        rejection: str | None = None
        if encoding == "gzip":
            try:
                body = gzip.decompress(body)
            except OSError as exc:
                rejection = f"{method} {path}: bad gzip body: {exc}"
        elif encoding not in ("", "identity"):
            rejection = (
                f"{method} {path}: Content-Encoding {encoding!r} is not supported by "
                "LangSmithCollector; set LANGSMITH_DISABLE_RUN_COMPRESSION=true"
            )
        with self._cond:
            self.requests_log.append(RecordedRequest(method, path, dict(headers), body))
            (self.run_traffic if is_run_path else self.other_traffic).append(body)
            if rejection is not None:
                self.errors.append(rejection)
                self._cond.notify_all()
                return _Response(415, {"detail": rejection})
            try:
                response = self._route(method, path, headers, body)
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                message = f"{method} {path}: {type(exc).__name__}: {exc}"
                self.errors.append(message)
                response = _Response(422, {"detail": message})
            self._cond.notify_all()
            return response

    def _route(self, method: str, path: str, headers: dict[str, str], body: bytes) -> _Response:
        if method == "GET":
            if path == "/info":
                return _Response(200, self._info())
            return _Response(404, {"detail": "Not Found"})
        if method == "POST" and path == "/runs/multipart":
            self._ingest_multipart(headers.get("content-type", ""), body)
            return _Response(202, {})
        if method == "POST" and path == "/runs/batch":
            batch = json.loads(body)
            for run in batch.get("post") or []:
                self._apply("post", str(run["id"]), run)
            for run in batch.get("patch") or []:
                self._apply("patch", str(run["id"]), run)
            return _Response(202, {})
        if method == "POST" and path == "/runs":
            run = json.loads(body)
            self._apply("post", str(run["id"]), run)
            return _Response(202, {})
        if method == "POST" and path == "/runs/query":
            return _Response(200, self._query(json.loads(body or b"{}")))
        if method == "POST" and path == "/runs/stats":
            return _Response(200, {"run_count": len(self._matching(json.loads(body or b"{}")))})
        if method == "POST" and path == "/feedback":
            self.feedback.append(json.loads(body))
            return _Response(200, {})
        if method == "PATCH" and path.startswith("/runs/") and path.count("/") == 2:
            run_id = path.rsplit("/", 1)[1]
            self._apply("patch", run_id, json.loads(body) if body else {})
            return _Response(200, {})
        # /v1/metadata/submit and anything else: accept and record only.
        return _Response(200, {})

    def _run_projects(self) -> set[str]:
        return {str(run["session_name"]) for run in self.runs.values() if run.get("session_name")}

    def _matching(self, query: dict[str, Any]) -> list[dict[str, Any]]:
        """The merged runs a ``/runs/query`` or ``/runs/stats`` body selects, newest first."""
        sessions = {str(s) for s in query.get("session") or []}
        since = _moment(query["start_time"]) if query.get("start_time") else None
        filters = [
            _parse_filter(query[key]) for key in ("filter", "trace_filter") if query.get(key)
        ]
        found = []
        for run in self.runs.values():
            if sessions and project_id(str(run.get("session_name") or "default")) not in sessions:
                continue
            if "is_root" in query and bool(query["is_root"]) == bool(run.get("parent_run_id")):
                continue
            if query.get("run_type") and run.get("run_type") != query["run_type"]:
                continue
            if since is not None and (
                not run.get("start_time") or _moment(run["start_time"]) < since
            ):
                continue
            if all(_holds(condition, run) for condition in filters):
                found.append(run)
        return sorted(found, key=lambda run: _moment(run["start_time"]), reverse=True)

    def _query(self, query: dict[str, Any]) -> dict[str, Any]:
        runs = self._matching(query)
        start = int(query.get("cursor") or 0)
        size = min(int(query.get("limit") or self.page_size), self.page_size)
        select = query.get("select")
        page = [
            copy.deepcopy({k: v for k, v in run.items() if not select or k in select or k == "id"})
            for run in runs[start : start + size]
        ]
        following = start + size if start + size < len(runs) else None
        return {"runs": page, "cursors": {"next": None if following is None else str(following)}}

    def _ingest_multipart(self, content_type: str, body: bytes) -> None:
        for name, part_type, data in _parse_multipart(content_type, body):
            kind, _, rest = name.partition(".")
            if kind in ("post", "patch"):
                run_id, _, field = rest.partition(".")
                value = json.loads(data)
                if field:
                    self._apply(kind, run_id, {field: value}, strict_none=True)
                else:
                    self._apply(kind, run_id, value)
            elif kind == "attachment":
                run_id, _, attachment_name = rest.partition(".")
                self.attachments.setdefault(run_id, {})[attachment_name] = (part_type, data)
            elif kind == "feedback":
                self.feedback.append(json.loads(data))
            else:
                self.errors.append(f"POST /runs/multipart: unexpected part {name!r}")

    def _apply(
        self, op: str, run_id: str, payload: dict[str, Any], *, strict_none: bool = False
    ) -> None:
        """Merge one post/patch payload into ``runs[run_id]``.

        Args:
            op: ``"post"`` or ``"patch"`` (both merge the same way).
            run_id: The run id.
            payload: Fields to merge.
            strict_none: Whether an explicit ``None`` may overwrite a set value (a
                dedicated multipart field part is authoritative).
        """
        if not isinstance(payload, dict):
            raise TypeError(f"{op}.{run_id}: expected a JSON object, got {type(payload)}")
        run = self.runs.setdefault(run_id, {"id": run_id})
        patched = self._patched.setdefault(run_id, set())
        for key, value in payload.items():
            if key == "id":
                continue
            if value is None and not strict_none and run.get(key) is not None:
                continue
            late_post = op == "post" and key in patched
            if key == "extra" and isinstance(value, dict):
                current = run.get("extra")
                if late_post:  # the patch's extra is newer: it wins key by key
                    run["extra"] = _merge_extra(value, current if isinstance(current, dict) else {})
                else:
                    run["extra"] = _merge_extra(current, value)
            elif not late_post:
                run[key] = value
            if op == "patch":
                patched.add(key)


def project_id(name: str) -> str:
    """Return the id the collector gives the project ``name``."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"langsmith-project:{name}"))


def _moment(text: str) -> datetime:
    moment = datetime.fromisoformat(str(text))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


_TOKEN = re.compile(
    r'\s*(?:(?P<name>[a-z_]+)|"(?P<text>[^"]*)"|(?P<number>-?\d+(?:\.\d+)?)|(?P<punct>[(),]))'
)

Condition = tuple[str, list[Any]]


def _parse_filter(text: str) -> Condition:
    """Parse a trace-query filter (``and(eq(metadata_key, "k"), ...)``) into a tree.

    Raises:
        ValueError: If the text is not a call of the functions the collector evaluates.
    """
    tokens: list[tuple[str, str]] = []
    at = 0
    while at < len(text.rstrip()):
        match = _TOKEN.match(text, at)
        if not match:
            raise ValueError(f"filter: cannot read at {at}")
        kind = match.lastgroup or ""
        tokens.append((kind, match[kind]))
        at = match.end()
    condition, rest = _call(tokens)
    if rest:
        raise ValueError("filter: text after the expression")
    return condition


def _call(tokens: list[tuple[str, str]]) -> tuple[Condition, list[tuple[str, str]]]:
    if len(tokens) < 2 or tokens[0][0] != "name" or tokens[1] != ("punct", "("):
        raise ValueError("filter: expected a function call")
    function, tokens = tokens[0][1], tokens[2:]
    args: list[Any] = []
    if function not in ("and", "or", "not", "eq", "neq", "has"):
        raise ValueError(f"filter: {function} is not evaluated by the collector")
    while tokens and tokens[0] != ("punct", ")"):
        if tokens[0][0] == "name" and len(tokens) > 1 and tokens[1] == ("punct", "("):
            arg, tokens = _call(tokens)
            args.append(arg)
        elif tokens[0][0] in ("name", "text", "number"):
            args.append(tokens[0][1])
            tokens = tokens[1:]
        else:
            raise ValueError("filter: unexpected punctuation")
        if tokens and tokens[0] == ("punct", ","):
            tokens = tokens[1:]
    if not tokens:
        raise ValueError("filter: unclosed call")
    return (function, args), tokens[1:]


def _holds(condition: Condition, run: dict[str, Any]) -> bool:
    function, args = condition
    metadata = (run.get("extra") or {}).get("metadata") or {}
    if function == "and":
        calls = [arg for arg in args if isinstance(arg, tuple)]
        keys = [a[1][1] for a in calls if a[0] == "eq" and a[1][0] == "metadata_key"]
        values = [a[1][1] for a in calls if a[0] == "eq" and a[1][0] == "metadata_value"]
        if len(keys) == 1 and len(values) == 1:  # the pair names one entry
            value = metadata.get(keys[0], _ABSENT)
            rest = [a for a in calls if a[1][0] not in ("metadata_key", "metadata_value")]
            return _text(value) == values[0] and all(_holds(a, run) for a in rest)
        return all(_holds(arg, run) for arg in calls)
    if function == "or":
        return any(_holds(arg, run) for arg in args if isinstance(arg, tuple))
    if function == "not":
        return not _holds(args[0], run)
    field, wanted = args
    if function == "has":
        if field != "tags":
            raise ValueError("filter: has() is evaluated on tags only")
        return wanted in (run.get("tags") or [])
    if field == "metadata_key":
        found = wanted in metadata
    elif field == "metadata_value":
        found = any(_text(value) == wanted for value in metadata.values())
    elif field in ("name", "run_type"):
        found = run.get(field) == wanted
    else:
        raise ValueError(f"filter: {field} is not evaluated by the collector")
    return found if function == "eq" else not found


_ABSENT = object()


def _text(value: object) -> str | None:
    """A metadata value as a filter compares it: a string as is, anything else as JSON."""
    if value is _ABSENT:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _merge_extra(current: Any, update: dict[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = dict(current) if isinstance(current, dict) else {}
    for key, value in update.items():
        if key == "metadata" and isinstance(value, dict):
            old = merged.get("metadata")
            merged["metadata"] = {**(old if isinstance(old, dict) else {}), **value}
        else:
            merged[key] = value
    return merged


def _trace_order(run: dict[str, Any]) -> tuple[str, str]:
    return (str(run.get("dotted_order") or ""), str(run.get("start_time") or ""))
