"""What the stops saved over a period: ``python -m client report``.

By default it reads the threads of the LangGraph server ``python -m client`` finds (no key
needed; ``--url`` names another); with ``--project`` or ``LANGSMITH_PROJECT`` it reads a
LangSmith project instead, as below.

::

    .venv/bin/python -m client report --project stop-on-artifact --since 24h
    .venv/bin/python -m client report --project stop-on-artifact --json
    .venv/bin/python -m client report --project stop-on-artifact --chart savings.html

It reads the root runs of a LangSmith project started in the period (``--since``: ``24h``,
``7d``, ``90m`` or an ISO date or time, UTC unless it names a zone; default ``7d``) through
``langsmith.Client.list_runs(project_name=..., is_root=True, start_time=...,
filter='eq(metadata_key, "model_calls")')``: the root runs both graphs leave (see
docs/tracing.md), only their metadata fields (``select``), never their inputs or outputs. Each
figure comes from the root run's metadata: ``model_calls``, ``input_tokens`` and
``output_tokens`` made, ``stop_saved_*`` saved, ``stop_rule`` and ``stop_tool`` of the run's
final decision (``no_tool`` when no tool ran). Dollars saved are the runs' ``stop_saved_usd``;
dollars spent price the run's tokens by its ``model_name`` with ``agent/tracing/prices.py``
and the ``AGENT_MODEL_PRICES`` of the shell the report runs in. A dollar figure adds up the
runs that have one and is absent (``null``), never 0, when none has.

``--json`` prints :func:`Report.as_json` (its keys are listed there); ``--chart PATH`` writes
made versus saved per hour or day (``--bucket``; by hour up to 48 hours) as one HTML page with
inline SVG and nothing fetched (``.html``) or, with matplotlib, a PNG (``.png``). On a terminal,
a progress bar on standard error counts the runs read.

Exit status: 0 on success, 1 when the project does not exist or LangSmith refuses the key or
the request, 2 on bad flags or when ``LANGSMITH_API_KEY`` is unset, 3 when LangSmith does not
answer, 5 when the project has no runs of the graphs in the period. Every error is one line on
standard error.
"""

from __future__ import annotations

import argparse
import html
import json
import logging
import math
import os
import re
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from langsmith import Client
    from rich.console import Console

KEY_ENV = "LANGSMITH_API_KEY"
PROJECT_ENV = "LANGSMITH_PROJECT"
ENDPOINT_ENV = "LANGSMITH_ENDPOINT"
DEFAULT_ENDPOINT = "https://api.smith.langchain.com"
DEFAULT_SINCE = "7d"
RUN_FILTER = 'eq(metadata_key, "model_calls")'
"""The root runs both graphs leave: each carries ``model_calls`` (docs/tracing.md)."""
SELECT = ["id", "name", "run_type", "start_time", "trace_id", "extra"]
"""The fields read per run: what ``langsmith.schemas.Run`` needs, and the metadata."""
NO_TOOL = "no_tool"
"""The rule and tool of a run whose run made no tool call."""

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_NO_RUNS = 5

Bucket = Literal["hour", "day"]
_DURATION = re.compile(r"(\d{1,6})([mhdw])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class ReportError(Exception):
    """A failure the report names in one line, with its exit status."""

    def __init__(self, message: str, status: int) -> None:
        """Keep the message and the exit status."""
        super().__init__(message)
        self.status = status


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Add the ``report`` subcommand's flags to its parser."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--project",
        default=None,
        help=(
            f"the LangSmith project to read (default: ${PROJECT_ENV} if set, else no project: "
            "the server's threads)"
        ),
    )
    source.add_argument(
        "--url",
        default=None,
        help=(
            "read the threads of this LangGraph server (default: the server `python -m "
            "client ask` finds, when no project is named)"
        ),
    )
    parser.add_argument(
        "--since",
        default=DEFAULT_SINCE,
        help="the period: 90m, 24h, 7d, 2w, or an ISO date or time (default: %(default)s)",
    )
    parser.add_argument(
        "--bucket",
        choices=("hour", "day"),
        default=None,
        help="the chart's and the JSON's time step (default: hour up to 48 hours, else day)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the figures as JSON instead of tables (default: tables)",
    )
    parser.add_argument(
        "--chart",
        type=Path,
        default=None,
        metavar="PATH",
        help=(
            "write made versus saved over time: PATH.html (inline SVG) or PATH.png; the "
            "last line on standard error says where (default: no chart)"
        ),
    )


def parse_since(text: str, now: datetime) -> datetime:
    """Return the start of the period ``--since`` names.

    Args:
        text: A duration (``90m``, ``24h``, ``7d``, ``2w``) or an ISO date or date and time
            (UTC unless it names a zone).
        now: The end of the period.

    Returns:
        The period's start, timezone-aware.

    Raises:
        ReportError: If the text is neither, or names a time after ``now``; the message
            names the flag, not the value.
    """
    duration = _DURATION.fullmatch(text.strip())
    if duration:
        return now - timedelta(**{_UNITS[duration[2]]: int(duration[1])})
    try:
        since = datetime.fromisoformat(text.strip())
    except ValueError:
        msg = "argument --since: give a duration (90m, 24h, 7d, 2w) or an ISO date"
        raise ReportError(msg, EXIT_USAGE) from None
    since = since if since.tzinfo else since.replace(tzinfo=UTC)
    if since > now:
        raise ReportError("argument --since: the period starts in the future", EXIT_USAGE)
    return since


def _count(value: object) -> int:
    """A count from metadata: a non-negative int, else 0 (metadata can hold anything)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _dollars(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _name(value: object) -> str:
    return value if isinstance(value, str) and value else NO_TOOL


@dataclass(frozen=True)
class RunFigures:
    """What one root run made and saved, from its metadata.

    Attributes:
        start_time: When the run started (UTC).
        rule: ``stop_rule`` of its final decision, or :data:`NO_TOOL`.
        tool: ``stop_tool`` of its final decision, or :data:`NO_TOOL`.
        model_calls: Model calls it made.
        input_tokens: Input tokens its model calls read.
        output_tokens: Output tokens they wrote.
        usd: What those tokens cost, or None when its model has no price.
        saved_model_calls: Model calls its hard stop skipped (0 or 1).
        saved_input_tokens: Input tokens the skipped call would have read.
        saved_output_tokens: Output tokens it would have written.
        saved_usd: What that would have cost, or None when the model has no price.
    """

    start_time: datetime
    rule: str
    tool: str
    model_calls: int
    input_tokens: int
    output_tokens: int
    usd: float | None
    saved_model_calls: int
    saved_input_tokens: int
    saved_output_tokens: int
    saved_usd: float | None


def figures_of(metadata: Mapping[str, Any], start_time: datetime) -> RunFigures:
    """Read one root run's figures from its metadata (docs/tracing.md's keys).

    Args:
        metadata: The root run's metadata.
        start_time: When it started.

    Returns:
        The figures; a missing or malformed count reads as 0, a missing price as None.
    """
    from agent.tracing.prices import price_of, usd

    read, written = _count(metadata.get("input_tokens")), _count(metadata.get("output_tokens"))
    model = metadata.get("model_name")
    price = price_of(model) if isinstance(model, str) else None
    return RunFigures(
        start_time=start_time if start_time.tzinfo else start_time.replace(tzinfo=UTC),
        rule=_name(metadata.get("stop_rule")),
        tool=_name(metadata.get("stop_tool")),
        model_calls=_count(metadata.get("model_calls")),
        input_tokens=read,
        output_tokens=written,
        usd=usd(read, written, price) if price is not None else None,
        saved_model_calls=_count(metadata.get("stop_saved_model_calls")),
        saved_input_tokens=_count(metadata.get("stop_saved_input_tokens")),
        saved_output_tokens=_count(metadata.get("stop_saved_output_tokens")),
        saved_usd=_dollars(metadata.get("stop_saved_usd")),
    )


def _add(total: float | None, value: float | None) -> float | None:
    if value is None:
        return total
    return value if total is None else total + value


@dataclass
class Tally:
    """Figures added up over a set of runs (all, one rule, one tool or one time step).

    Attributes:
        runs: Root runs.
        ended_early: Runs whose hard stop skipped a model call.
        model_calls: Model calls made.
        model_calls_saved: Model calls the stops skipped.
        input_tokens: Input tokens read.
        input_tokens_saved: Input tokens the skipped calls would have read.
        output_tokens: Output tokens written.
        output_tokens_saved: Output tokens they would have written.
        usd: Dollars spent, over the runs whose model has a price; None when none has.
        usd_saved: Dollars saved, likewise.
    """

    runs: int = 0
    ended_early: int = 0
    model_calls: int = 0
    model_calls_saved: int = 0
    input_tokens: int = 0
    input_tokens_saved: int = 0
    output_tokens: int = 0
    output_tokens_saved: int = 0
    usd: float | None = None
    usd_saved: float | None = None

    def add(self, run: RunFigures) -> None:
        """Count one run in."""
        self.runs += 1
        self.ended_early += 1 if run.saved_model_calls > 0 else 0
        self.model_calls += run.model_calls
        self.model_calls_saved += run.saved_model_calls
        self.input_tokens += run.input_tokens
        self.input_tokens_saved += run.saved_input_tokens
        self.output_tokens += run.output_tokens
        self.output_tokens_saved += run.saved_output_tokens
        self.usd = _add(self.usd, run.usd)
        self.usd_saved = _add(self.usd_saved, run.saved_usd)

    @property
    def ended_early_share(self) -> float:
        """The share of runs that ended early (0 with no runs)."""
        return self.ended_early / self.runs if self.runs else 0.0

    def as_json(self) -> dict[str, Any]:
        """Return the figures under :data:`TALLY_KEYS`; dollars rounded to a millionth."""
        money = {
            "usd": None if self.usd is None else round(self.usd, 6),
            "usd_saved": None if self.usd_saved is None else round(self.usd_saved, 6),
        }
        return {
            "runs": self.runs,
            "ended_early": self.ended_early,
            "ended_early_share": round(self.ended_early_share, 4),
            "model_calls": self.model_calls,
            "model_calls_saved": self.model_calls_saved,
            "input_tokens": self.input_tokens,
            "input_tokens_saved": self.input_tokens_saved,
            "output_tokens": self.output_tokens,
            "output_tokens_saved": self.output_tokens_saved,
            **money,
        }


TALLY_KEYS: tuple[str, ...] = tuple(Tally().as_json())
"""The keys of every set of figures in the JSON: ``totals``, each rule, tool and step."""
REPORT_KEYS = (
    "project",
    "url",
    "since",
    "until",
    "bucket",
    "totals",
    "by_rule",
    "by_tool",
    "over_time",
)
"""The JSON's top-level keys."""


@dataclass
class Report:
    """The figures of a period, added up.

    Attributes:
        project: The LangSmith project read, or None.
        url: The LangGraph server whose threads were read, or None.
        since: The period's start.
        until: The period's end (when the report read the runs).
        bucket: The time step of :attr:`over_time`.
        totals: Every run of the period.
        by_rule: By ``stop_rule`` of the run's final decision.
        by_tool: By ``stop_tool`` of the run's final decision.
        over_time: By the hour or day a run started in (UTC), every step of the period.
    """

    project: str | None
    url: str | None
    since: datetime
    until: datetime
    bucket: Bucket
    totals: Tally = field(default_factory=Tally)
    by_rule: dict[str, Tally] = field(default_factory=dict)
    by_tool: dict[str, Tally] = field(default_factory=dict)
    over_time: dict[datetime, Tally] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """Return the report as ``--json`` prints it.

        Returns:
            :data:`REPORT_KEYS`: ``project`` or ``url`` (the other None), ``since`` and
            ``until`` (ISO, UTC), ``bucket``
            (``hour`` / ``day``), ``totals`` (:data:`TALLY_KEYS`), ``by_rule`` and ``by_tool``
            (name to :data:`TALLY_KEYS`, most calls saved first; :data:`NO_TOOL` for runs
            where no tool ran), ``over_time`` (a list of :data:`TALLY_KEYS` with ``start``,
            the step's ISO start, in time order).
        """
        return {
            "project": self.project,
            "url": self.url,
            "since": self.since.isoformat(),
            "until": self.until.isoformat(),
            "bucket": self.bucket,
            "totals": self.totals.as_json(),
            "by_rule": {name: tally.as_json() for name, tally in _ranked(self.by_rule)},
            "by_tool": {name: tally.as_json() for name, tally in _ranked(self.by_tool)},
            "over_time": [
                {"start": start.isoformat(), **tally.as_json()}
                for start, tally in sorted(self.over_time.items())
            ],
        }


def _ranked(groups: Mapping[str, Tally]) -> list[tuple[str, Tally]]:
    return sorted(groups.items(), key=lambda item: (-item[1].model_calls_saved, item[0]))


def _floor(moment: datetime, bucket: Bucket) -> datetime:
    moment = moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    return moment.replace(hour=0) if bucket == "day" else moment


def summarize(
    runs: Iterable[RunFigures],
    project: str | None,
    since: datetime,
    until: datetime,
    bucket: Bucket | None = None,
    url: str | None = None,
) -> Report:
    """Add up the runs of a period.

    Args:
        runs: The period's root runs (or threads).
        project: The LangSmith project they came from, or None.
        since: The period's start.
        until: Its end.
        bucket: The time step; by hour up to 48 hours, else by day, when None.
        url: The LangGraph server they came from, or None.

    Returns:
        The report, with a step (empty or not) for every hour or day of the period.
    """
    step: Bucket = bucket or ("hour" if until - since <= timedelta(hours=48) else "day")
    report = Report(project=project, url=url, since=since, until=until, bucket=step)
    moment, last = _floor(since, step), _floor(until, step)
    delta = timedelta(hours=1) if step == "hour" else timedelta(days=1)
    while moment <= last:
        report.over_time[moment] = Tally()
        moment += delta
    for run in runs:
        report.totals.add(run)
        report.by_rule.setdefault(run.rule, Tally()).add(run)
        report.by_tool.setdefault(run.tool, Tally()).add(run)
        report.over_time.setdefault(_floor(run.start_time, step), Tally()).add(run)
    return report


def _host(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"


def read_runs(
    client: Client, project: str, since: datetime, progress: Console | None = None
) -> list[RunFigures]:
    """Read the figures of a project's root runs started since ``since``.

    Args:
        client: A ``langsmith.Client``.
        project: The project's name.
        since: The period's start.
        progress: A terminal to show a progress bar on (its total from
            ``Client.get_run_stats``), or None for none.

    Returns:
        One :class:`RunFigures` per root run that carries the graphs' metadata.
    """
    with warnings.catch_warnings():  # deprecated in langsmith 0.15 for runs.query_v2
        warnings.filterwarnings("ignore", r"list_runs\(\) is deprecated", DeprecationWarning)
        found = client.list_runs(
            project_name=project,
            is_root=True,
            start_time=since,
            filter=RUN_FILTER,
            select=SELECT,
        )
    if progress is None:
        return [figures_of(run.metadata, run.start_time) for run in found]
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    stats = client.get_run_stats(
        project_names=[project], is_root=True, start_time=since.isoformat(), filter=RUN_FILTER
    )
    total = stats.get("run_count") if isinstance(stats, dict) else None
    columns = (TextColumn("reading runs"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=progress, transient=True) as bar:
        task = bar.add_task("runs", total=total if isinstance(total, int) else None)
        figures = []
        for run in found:
            figures.append(figures_of(run.metadata, run.start_time))
            bar.advance(task)
    return figures


def fetch(
    project: str, since: datetime, until: datetime, progress: Console | None = None
) -> list[RunFigures]:
    """Read a project's runs from the LangSmith the environment names.

    Args:
        project: The project's name.
        since: The period's start.
        until: Its end (only to say so when there are no runs).
        progress: See :func:`read_runs`.

    Returns:
        The figures of each root run, at least one.

    Raises:
        ReportError: With the exit status, when the key is unset, the project does not
            exist, LangSmith refuses or does not answer, or there are no runs.
    """
    if not os.environ.get(KEY_ENV):
        msg = f"{KEY_ENV} is not set: the report reads the project's runs from LangSmith"
        raise ReportError(msg, EXIT_USAGE)
    from langsmith import Client
    from langsmith.utils import (
        LangSmithAuthError,
        LangSmithConnectionError,
        LangSmithError,
        LangSmithNotFoundError,
        LangSmithRequestTimeout,
    )
    from urllib3.util.retry import Retry

    endpoint = _host(os.environ.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT)
    # No tracing thread (the report sends nothing); one retry on a refused connection, the
    # client's own retries on 429 and 5xx.
    retry = Retry(
        total=3,
        connect=1,
        backoff_factor=0.5,
        status_forcelist=[429, 500, 502, 503, 504, 408, 425],
        allowed_methods=None,
        raise_on_redirect=False,
        raise_on_status=False,
        respect_retry_after_header=True,
    )
    logging.getLogger("langsmith").setLevel(logging.ERROR)  # its warnings quote the key's end
    client = Client(auto_batch_tracing=False, retry_config=retry)
    try:
        runs = read_runs(client, project, since, progress)
    except LangSmithNotFoundError:
        raise ReportError("--project: LangSmith has no project by that name", EXIT_FAILED) from None
    except LangSmithAuthError:
        raise ReportError(f"LangSmith at {endpoint} refused {KEY_ENV}", EXIT_FAILED) from None
    except (LangSmithConnectionError, LangSmithRequestTimeout) as exc:
        msg = f"LangSmith did not answer at {endpoint} ({type(exc).__name__}); see ${ENDPOINT_ENV}"
        raise ReportError(msg, EXIT_UNREACHABLE) from None
    except LangSmithError as exc:
        msg = f"LangSmith at {endpoint} refused the request ({type(exc).__name__})"
        raise ReportError(msg, EXIT_FAILED) from None
    if not runs:
        msg = f"no runs of the graphs in the project since {since.isoformat(timespec='seconds')}"
        raise ReportError(msg, EXIT_NO_RUNS)
    return runs


THREAD_PAGE = 100
"""Threads per ``threads.search`` page."""


def thread_figures(values: Mapping[str, Any], updated_at: datetime) -> RunFigures | None:
    """Read a thread's latest turn's figures from its state, as its root run records them.

    The totals come from the turn's messages (:func:`agent.tracing.metadata.run_totals`) and
    the saving from its ``stop_decision`` (:func:`agent.tracing.metadata.saving_metadata`),
    the two functions that write the root run's metadata. A hard stop's relayed answer,
    which follows the tool step, is not a model call (the root run's totals are taken
    before it), so it is left out.

    Args:
        values: The thread's state values (``messages``, ``stop_decision``).
        updated_at: When the thread last changed.

    Returns:
        The figures, or None for a thread with no messages.
    """
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
    )

    from agent.tracing.metadata import run_totals, saving_metadata

    kinds: dict[str, type[BaseMessage]] = {
        "human": HumanMessage,
        "ai": AIMessage,
        "tool": ToolMessage,
        "system": SystemMessage,
    }
    raw = values.get("messages")
    messages = [
        kinds[m["type"]].model_validate(m)
        for m in (raw if isinstance(raw, list) else [])
        if isinstance(m, dict) and m.get("type") in kinds
    ]
    if not messages:
        return None
    found = values.get("stop_decision")
    decision: Any = found if isinstance(found, dict) else None
    relayed = (
        decision is not None
        and "saved" in decision
        and len(messages) > 1
        and isinstance(messages[-1], AIMessage)
        and isinstance(messages[-2], ToolMessage)
    )
    totals = run_totals(messages[:-1] if relayed else messages)
    fields = {
        "stop_rule": decision.get("rule") if decision else None,
        "stop_tool": decision.get("tool") if decision else None,
    }
    return figures_of(
        {**totals, **saving_metadata(decision, totals["model_name"]), **fields}, updated_at
    )


async def read_threads(
    url: str, since: datetime, progress: Console | None = None
) -> list[RunFigures]:
    """Read the figures of a LangGraph server's threads updated since ``since``.

    Each thread counts its latest turn: the state keeps the latest decision, not every run's.

    Args:
        url: The server's base URL.
        since: The period's start.
        progress: A terminal to show a spinner with the count on, or None.

    Returns:
        One :class:`RunFigures` per thread with messages, newest first.
    """
    from langgraph_sdk import get_client

    client = get_client(url=url)
    figures: list[RunFigures] = []
    status = None
    if progress is not None:
        status = progress.status("reading threads")
        status.start()
    try:
        offset = 0
        while True:
            page = await client.threads.search(
                limit=THREAD_PAGE,
                offset=offset,
                sort_by="updated_at",
                sort_order="desc",
                select=["thread_id", "updated_at", "values"],
            )
            for thread in page:
                updated = _moment(thread.get("updated_at"))
                if updated is None or updated < since:
                    return figures
                values = thread.get("values")
                one = thread_figures(values, updated) if isinstance(values, dict) else None
                if one is not None:
                    figures.append(one)
            if status is not None:
                status.update(f"reading threads: {len(figures):,}")
            if len(page) < THREAD_PAGE:
                return figures
            offset += THREAD_PAGE
    finally:
        if status is not None:
            status.stop()
        await client.aclose()


def _moment(value: object) -> datetime | None:
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
    else:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def fetch_threads(
    url: str | None, since: datetime, progress: Console | None = None
) -> tuple[str, list[RunFigures]]:
    """Read the threads of the server ``--url`` names or the client finds.

    Args:
        url: The ``--url`` flag's value, if given.
        since: The period's start.
        progress: See :func:`read_threads`.

    Returns:
        The server's URL and the figures of its threads, at least one.

    Raises:
        ReportError: With the exit status, when no server answers, it refuses, or no thread
            changed in the period.
    """
    import asyncio

    import httpx

    from client.cli import ServerUnreachableError, find_server, refusal_text

    found = url or ""
    try:
        found, _ = asyncio.run(find_server(url))
        runs = asyncio.run(read_threads(found, since, progress))
    except ServerUnreachableError as exc:
        raise ReportError(str(exc), EXIT_UNREACHABLE) from None
    except httpx.HTTPStatusError as exc:
        raise ReportError(
            refusal_text(exc).replace("the run", "the request"), EXIT_FAILED
        ) from None
    except httpx.TransportError as exc:
        msg = f"the server at {_host(found)} stopped answering ({type(exc).__name__})"
        raise ReportError(msg, EXIT_UNREACHABLE) from None
    if not runs:
        msg = f"no threads on the server changed since {since.isoformat(timespec='seconds')}"
        raise ReportError(msg, EXIT_NO_RUNS)
    return found, runs


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.4f}"


def _share(saved: float | None, made: float | None) -> str:
    if saved is None or made is None or saved + made == 0:
        return "-"
    return f"{saved / (saved + made):.0%}"


def render(report: Report, console: Console) -> None:
    """Print the report's tables: the totals, then by rule and by tool."""
    from rich.table import Table

    totals = report.totals
    noun = "runs" if report.project else "threads"
    console.print(
        f"{report.project or report.url}: {totals.runs:,} {noun} since "
        f"{report.since.isoformat(timespec='minutes')}, {totals.ended_early:,} "
        f"({totals.ended_early_share:.0%}) ended early"
    )
    head = Table()
    for column in ("", "made", "saved", "share saved"):
        head.add_column(column, justify="left" if not column else "right")
    rows = (
        ("model calls", totals.model_calls, totals.model_calls_saved),
        ("input tokens", totals.input_tokens, totals.input_tokens_saved),
        ("output tokens", totals.output_tokens, totals.output_tokens_saved),
    )
    for label, made, saved in rows:
        head.add_row(label, f"{made:,}", f"{saved:,}", _share(saved, made))
    head.add_row(
        "dollars", _usd(totals.usd), _usd(totals.usd_saved), _share(totals.usd_saved, totals.usd)
    )
    console.print(head)
    for title, groups in (("by stop rule", report.by_rule), ("by tool", report.by_tool)):
        table = Table(title=title, title_justify="left")
        for column in ("", "runs", "ended early", "calls saved", "tokens saved", "dollars saved"):
            table.add_column(column, justify="left" if not column else "right")
        for name, tally in _ranked(groups):
            tokens = tally.input_tokens_saved + tally.output_tokens_saved
            table.add_row(
                name,
                f"{tally.runs:,}",
                f"{tally.ended_early:,}",
                f"{tally.model_calls_saved:,}",
                f"{tokens:,}",
                _usd(tally.usd_saved),
            )
        console.print(table)


_MADE, _SAVED = "#4c78a8", "#f58518"


def _svg_bars(
    title: str, labels: Sequence[str], made: Sequence[float], saved: Sequence[float]
) -> str:
    """One bar chart as inline SVG: made and saved side by side per step."""
    width, height, left, bottom, top = max(640, 24 * len(labels) + 80), 260, 60, 40, 30
    plot_w, plot_h = width - left - 20, height - bottom - top
    peak = max([*made, *saved, 1.0])
    slot = plot_w / max(len(labels), 1)
    bar = max(slot * 0.4, 1.0)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{html.escape(title)}">',
        f'<text x="{left}" y="18" font-size="14">{html.escape(title)}</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
        'stroke="#888"/>',
        f'<text x="{left - 6}" y="{top + 4}" font-size="10" text-anchor="end">{peak:,.0f}</text>',
        f'<text x="{left - 6}" y="{top + plot_h}" font-size="10" text-anchor="end">0</text>',
    ]
    every = max(1, math.ceil(64 / slot))  # a label is about 60 px wide
    for index, label in enumerate(labels):
        x = left + index * slot + slot * 0.1
        for offset, value, color, kind in (
            (0.0, made[index], _MADE, "made"),
            (bar, saved[index], _SAVED, "saved"),
        ):
            h = plot_h * value / peak
            parts.append(
                f'<rect x="{x + offset:.1f}" y="{top + plot_h - h:.1f}" width="{bar:.1f}" '
                f'height="{h:.1f}" fill="{color}"><title>{html.escape(label)} {kind}: '
                f"{value:,.6g}</title></rect>"
            )
        if index % every == 0:
            parts.append(
                f'<text x="{x:.1f}" y="{top + plot_h + 14}" font-size="10">'
                f"{html.escape(label)}</text>"
            )
    parts.append("</svg>")
    return "\n".join(parts)


def _series(report: Report) -> tuple[list[str], list[tuple[str, list[float], list[float]]]]:
    steps = sorted(report.over_time.items())
    fmt = "%m-%d %H:00" if report.bucket == "hour" else "%Y-%m-%d"
    labels = [start.strftime(fmt) for start, _ in steps]
    charts: list[tuple[str, list[float], list[float]]] = [
        ("model calls", [t.model_calls for _, t in steps], [t.model_calls_saved for _, t in steps]),
        (
            "tokens (input + output)",
            [t.input_tokens + t.output_tokens for _, t in steps],
            [t.input_tokens_saved + t.output_tokens_saved for _, t in steps],
        ),
    ]
    if report.totals.usd is not None or report.totals.usd_saved is not None:
        charts.append(
            ("dollars", [t.usd or 0.0 for _, t in steps], [t.usd_saved or 0.0 for _, t in steps])
        )
    return labels, charts


def chart_html(report: Report) -> str:
    """Return made versus saved per step as one self-contained HTML page (inline SVG)."""
    labels, charts = _series(report)
    title = f"{report.project or report.url}: made and saved by {report.bucket}"
    since = html.escape(report.since.isoformat(timespec="minutes"))
    legend = (
        f'<p><span style="color:{_MADE}">&#9632;</span> made &nbsp; '
        f'<span style="color:{_SAVED}">&#9632;</span> saved by the stops (UTC; '
        f"{report.totals.runs} runs since {since})</p>"
    )
    svgs = "\n".join(_svg_bars(name, labels, made, saved) for name, made, saved in charts)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n"
        "<style>body{font-family:sans-serif;margin:2em}svg{display:block;margin:1em 0}</style>\n"
        f"</head>\n<body>\n<h1>{html.escape(title)}</h1>\n{legend}\n{svgs}\n</body>\n</html>\n"
    )


def write_png(report: Report, path: Path) -> None:
    """Write the same charts as a PNG with matplotlib (a dev dependency)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, charts = _series(report)
    figure, axes = plt.subplots(
        len(charts), 1, figsize=(max(8, len(labels) * 0.3), 3 * len(charts))
    )
    positions = list(range(len(labels)))
    for axis, (name, made, saved) in zip(axes, charts, strict=True):
        axis.bar([p - 0.2 for p in positions], made, width=0.4, color=_MADE, label="made")
        axis.bar([p + 0.2 for p in positions], saved, width=0.4, color=_SAVED, label="saved")
        axis.set_title(name)
        axis.set_xticks(positions[:: max(1, len(labels) // 12)])
        axis.set_xticklabels(
            labels[:: max(1, len(labels) // 12)], fontsize=7, rotation=30, ha="right"
        )
        axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, format="png")
    plt.close(figure)


def _check_chart(path: Path) -> None:
    if path.suffix.lower() not in (".html", ".htm", ".png"):
        raise ReportError("argument --chart: the path ends in .html or .png", EXIT_USAGE)


def write_chart(report: Report, path: Path) -> None:
    """Write the chart ``--chart`` names: HTML, or PNG by the path's suffix.

    Raises:
        ReportError: If the suffix is neither ``.html`` nor ``.png``, or the file cannot be
            written.
    """
    _check_chart(path)
    try:
        if path.suffix.lower() == ".png":
            write_png(report, path)
        else:
            path.write_text(chart_html(report), "utf-8")
    except OSError as exc:
        msg = f"argument --chart: the file could not be written ({type(exc).__name__})"
        raise ReportError(msg, EXIT_FAILED) from None


def run(args: argparse.Namespace, out: TextIO, err: TextIO | None = None) -> int:
    """Run ``report``: read, add up, print (tables or JSON) and write the chart.

    Args:
        args: The parsed flags (:func:`add_flags`).
        out: Where the tables or the JSON go.
        err: Where errors and the progress bar go; standard error when None.

    Returns:
        The exit status (see the module docstring).
    """
    err = err or sys.stderr
    try:
        from agent.tracing.prices import PriceError, read_prices

        try:
            read_prices()
        except PriceError as exc:
            raise ReportError(str(exc), EXIT_USAGE) from None
        project = None if args.url else args.project or os.environ.get(PROJECT_ENV)
        until = datetime.now(UTC)
        since = parse_since(args.since, until)
        if args.chart is not None:
            _check_chart(args.chart)
        progress = _terminal(err) if err.isatty() else None
        if project:
            report = summarize(
                fetch(project, since, until, progress), project, since, until, args.bucket
            )
        else:
            url, runs = fetch_threads(args.url, since, progress)
            report = summarize(runs, None, since, until, args.bucket, url=url)
        if args.chart is not None:
            write_chart(report, args.chart)
    except ReportError as exc:
        print(f"error: {exc}", file=err)
        return exc.status
    if args.json:
        json.dump(report.as_json(), out, indent=2)
        out.write("\n")
    else:
        render(report, _terminal(out))
    if args.chart is not None:
        print(f"chart: {args.chart}", file=err)
    return EXIT_OK


def _terminal(stream: TextIO) -> Console:
    from rich.console import Console

    return Console(file=stream, width=None if stream.isatty() else 100, highlight=False)
