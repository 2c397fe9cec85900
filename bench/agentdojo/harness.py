"""Run tasks under configurations, let AgentDojo judge them, and read what each run did.

:func:`ground_truth_utility` scores a task with AgentDojo's own ``GroundTruthPipeline``;
:func:`run_task` scores one configuration's run of it the same way
(``suite.run_task_with_pipeline``) and reads the run: model calls and tokens, whether it ended
before its ground truth finished, whether its answer names a part "Not done" that did not
fail, and, for a loss, its cause. :func:`no_loss_mapping`, :func:`oracle_marks` and
:func:`oracle_step_marks` derive the mapping that loses no task and the calls a perfect model
would mark, by replaying.

With a real model (``run_task(..., model=...)``) the run is the model's: no oracle marks, and
a provider error or a malformed call (arguments that are not JSON, an unknown tool) is the
model's error on that task (utility False, cause ``"model error: ..."``), never a crash; a
run that raised is ``errored``, with the requests and calls it made before it raised;
:func:`model_mark` and :func:`judge_mark` read which call the model marked against the oracle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from stop_on_artifact import MARK_ARGUMENT, InvalidArtifactError, parse_artifact

from bench.agentdojo.configs import Config
from bench.agentdojo.mappings import ToolMapping
from bench.agentdojo.parallel import steps
from bench.agentdojo.pipeline import AgentPipeline, Run
from bench.agentdojo.replay import MARK_TOOL, failed
from bench.agentdojo.suites import Task, environment, suite, user_task
from bench.agentdojo.tools import Faults
from bench.latency import Profile

PROVIDER_ERROR = "model error: provider: "
"""How the cause of a run the provider failed (after its retries) begins."""
PROVIDER_MODULES = frozenset(
    {"openai", "groq", "httpx", "httpcore", "anthropic", "langchain_openai", "langchain_groq"}
)
"""Where a provider's errors come from (the client, its SDK, its HTTP layer)."""
REFUSED = (401, 403)
"""Provider statuses that end the whole run: the key is missing, wrong or not allowed."""
MALFORMED = "model error: malformed call to "
UNKNOWN_TOOL = "model error: call to an unknown tool "
"""How the causes of a run that answered but made a malformed call begin (:func:`model_error`)."""
NOT_DONE = "Not done"
"""What the library's default line for a part left undone begins with."""


@dataclass(frozen=True)
class Outcome:
    """One task under one configuration, as judged and as measured."""

    task: str
    suite: str
    config: str
    faults: bool
    utility: bool
    """AgentDojo's verdict on this run."""
    expected: bool
    """AgentDojo's verdict on its own ``GroundTruthPipeline``."""
    model_calls: int
    input_tokens: int
    output_tokens: int
    dollars: float
    model_s: float
    """The model calls' time under the latency profile (not slept)."""
    wall_s: float
    """The run's measured wall time: the graph, the tools and the replay, no model wait."""
    calls: int
    """Ground-truth calls that ran to success."""
    ground_truth: int
    ended_after: str | None
    """``"<n>/<m> <tool>"`` when the run ended before its ground truth finished."""
    false_not_done: bool
    """The answer names a part "Not done" whose call did not fail."""
    rule: str | None
    """The stop decision's rule when the middleware stopped the run."""
    timeouts: int
    in_place_retries: int
    invalid_artifacts: int
    """Tool results whose artifact the library's own parser refuses."""
    cause: str | None
    """Why the run lost, when it did (``utility`` False)."""
    marked: tuple[int, str] | None = None
    """With a real model: the call it marked, as (successful calls before it, tool name)."""
    errored: bool = False
    """With a real model: the run raised (``cause`` says what) before it answered; its
    figures are the requests answered and the calls made until then. Run again on resume."""

    def as_dict(self) -> dict[str, Any]:
        """Return the outcome for the result document."""
        return asdict(self)


_GROUND_TRUTH: dict[str, bool] = {}


def ground_truth_utility(task: Task) -> bool:
    """Return AgentDojo's utility for its own ``GroundTruthPipeline`` on ``task`` (cached)."""
    if task.key not in _GROUND_TRUTH:
        own = user_task(task)
        utility, _ = suite(task.suite).run_task_with_pipeline(
            GroundTruthPipeline(own), own, None, {}, environment=environment(task.suite)
        )
        _GROUND_TRUTH[task.key] = bool(utility)
    return _GROUND_TRUTH[task.key]


def _usage(messages: Sequence[BaseMessage]) -> list[tuple[int, int]]:
    return [
        (m.usage_metadata["input_tokens"], m.usage_metadata["output_tokens"])
        for m in messages
        if isinstance(m, AIMessage) and m.usage_metadata
    ]


def _results(messages: Sequence[BaseMessage]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


def _invalid(message: BaseMessage) -> bool:
    artifact = message.artifact if isinstance(message, ToolMessage) else None
    if not isinstance(artifact, dict) or not {"stop", "reason"} & set(artifact):
        return False  # no contract (``mark="shared"``'s plain success): a plain result
    try:
        parse_artifact(message)
    except InvalidArtifactError:
        return True
    return False


def false_not_done(run: Run) -> bool:
    """Return whether a hard stop's answer named as not done a part whose call succeeded."""
    decision = run.state.get("stop_decision") or {}
    answer = run.messages[-1]
    if not (isinstance(answer, AIMessage) and NOT_DONE in answer.text):
        return False
    results = _results(run.messages)
    return any(
        call_id in results and not failed(results[call_id])
        for call_id in decision.get("unsettled", [])
    )


def _cause(
    task: Task, run: Run, ended_after: str | None, rule: str | None, *, replay: bool = True
) -> str:
    answer = run.messages[-1]
    if isinstance(answer, ToolMessage) and answer.status == "error":
        return (
            f"`{answer.name}` (return_direct) timed out and its error text became the answer; "
            f"{len(task.calls) - len(run.log.done)} call(s) never ran"
        )
    if ended_after is not None:
        left = len(task.calls) - len(run.log.done)
        by = f" (rule `{rule}`)" if rule else ""
        return f"ended after call {ended_after}{by}: the last {left} call(s) never ran"
    if rule in ("retry_budget", "model_call_limit"):
        return f"stopped by rule `{rule}`"
    if isinstance(answer, AIMessage) and answer.usage_metadata:
        if not replay:
            return "the model's own answer lost"
        return "the replay's own answer lost (a harness error)"
    source = answer.name if isinstance(answer, ToolMessage) else run.log.done[-1]
    return (
        f"answered with `{source}`'s content, not the model's answer: the task's utility "
        "checks the answer's text"
    )


def model_error(run: Run) -> str | None:
    """Return the model's first malformed call in ``run``, as a cause, or None.

    A call whose arguments are not JSON (``invalid_tool_calls``) or that names a tool the
    agent does not have.
    """
    for message in run.messages:
        if not isinstance(message, AIMessage):
            continue
        for bad in message.invalid_tool_calls:
            why = " ".join(str(bad.get("error") or "").split())
            if "JSON" in why or not why:
                why = "its arguments are not JSON"
            return f"{MALFORMED}{bad.get('name')!r}: {why}"
        for call in message.tool_calls:
            if run.tools and call["name"] not in run.tools:
                return f"{UNKNOWN_TOOL}{call['name']!r}"
    return None


def errored(row: Mapping[str, Any]) -> bool:
    """Return whether a journal's row is a run that raised (see ``Outcome.errored``).

    Rows written before the field existed: a model error that is not a malformed call.
    """
    if "errored" in row:
        return bool(row["errored"])
    cause = str(row.get("cause") or "")
    return cause.startswith("model error: ") and not cause.startswith((MALFORMED, UNKNOWN_TOOL))


def model_mark(messages: Sequence[BaseMessage]) -> tuple[int, str] | None:
    """Return the call the model marked, or None.

    A call is marked by its own `MARK_ARGUMENT` set true, or by the shared mark
    (`mark_tool`) called in the same reply. The first marked call that succeeded (the one a
    stop follows), else the first marked; as `(successful calls before it, tool name)`, the
    mark's own results not counted.
    """
    results = _results(messages)
    found: list[tuple[int, str, bool]] = []
    before = 0
    for message in messages:
        if isinstance(message, ToolMessage) and not failed(message) and message.name != MARK_TOOL:
            before += 1
        if not isinstance(message, AIMessage):
            continue
        shared = any(call["name"] == MARK_TOOL for call in message.tool_calls)
        for call in message.tool_calls:
            if call["name"] != MARK_TOOL and (shared or call["args"].get(MARK_ARGUMENT) is True):
                result = results.get(str(call["id"]))
                found.append((before, call["name"], result is not None and not failed(result)))
    chosen = next((f for f in found if f[2]), found[0] if found else None)
    return None if chosen is None else (chosen[0], chosen[1])


Verdict = Literal["right", "too early", "missed", "spurious", "none"]


def judge_mark(task: Task, oracle: int | None, marked: tuple[int, str] | None) -> Verdict:
    """Return how the model's mark compares with the oracle's (:func:`oracle_marks`).

    ``right``: the model marked the oracle's call (its tool, after at least as many
    successful calls); ``too early``: it marked another call, so a stop there cuts the
    request short; ``missed``: the oracle marks a call and the model none; ``spurious``: the
    oracle marks none and the model one; ``none``: neither marks.
    """
    if marked is None:
        return "none" if oracle is None else "missed"
    if oracle is None:
        return "spurious"
    before, name = marked
    right = name == task.calls[oracle].function and before >= oracle
    return "right" if right else "too early"


def _failed_run(
    config: Config,
    task: Task,
    faults: Faults,
    cause: str,
    profile: Profile,
    pipeline: AgentPipeline,
) -> Outcome:
    """Return a run that raised: what it made before (every answered request, every call)."""
    usage = pipeline.requests.usage
    log = pipeline.log
    return Outcome(
        task=task.key,
        suite=task.suite,
        config=config.name,
        faults=faults.rate > 0,
        utility=False,
        expected=ground_truth_utility(task),
        model_calls=len(usage),
        input_tokens=sum(i for i, _ in usage),
        output_tokens=sum(o for _, o in usage),
        dollars=sum(profile.dollars(i, o) for i, o in usage),
        model_s=sum(profile.seconds(i, o) for i, o in usage),
        wall_s=0.0,
        calls=len(log.done) if log else 0,
        ground_truth=len(task.calls),
        ended_after=None,
        false_not_done=False,
        rule=None,
        timeouts=len(log.timed_out) if log else 0,
        in_place_retries=0,
        invalid_artifacts=0,
        cause=cause,
        errored=True,
    )


def run_task(
    config: Config,
    task: Task,
    faults: Faults,
    profile: Profile,
    *,
    mark: int | tuple[int, ...] | None = None,
    model: BaseChatModel | None = None,
) -> Outcome:
    """Run ``task`` under ``config``, judged by AgentDojo, and read the run.

    ``mark`` is the ground-truth call(s) the replay marks (``MARK_ARGUMENT``), if any.
    ``model`` runs the agent on that model instead of the replay (``mark`` is then unused).
    """
    pipeline = AgentPipeline(
        config,
        task,
        faults,
        mark=None if model else mark,
        mark_argument=MARK_ARGUMENT,
        model=model,
    )
    own = user_task(task)
    try:
        utility, _ = suite(task.suite).run_task_with_pipeline(
            pipeline, own, None, {}, environment=environment(task.suite)
        )
    except Exception as error:
        if model is None or getattr(error, "status_code", None) in REFUSED:
            raise  # a harness bug, or a key the provider refuses: no task can run
        text = " ".join(str(error).split())[:300]
        # the provider's failure, or the run's own (a loop past the recursion limit, an
        # answer that cannot be parsed): the run is errored, and runs again on resume
        origin = type(error).__module__.split(".")[0]
        provider = hasattr(error, "status_code") or origin in PROVIDER_MODULES
        prefix = PROVIDER_ERROR if provider else "model error: "
        cause = f"{prefix}{type(error).__name__}: {text}"
        return _failed_run(config, task, faults, cause, profile, pipeline)
    run = pipeline.run
    if run is None:
        msg = f"{task.key}: the pipeline did not run"
        raise RuntimeError(msg)
    error_cause = model_error(run) if model is not None else None
    if error_cause is not None:
        utility = False
    usage = [u for earlier in pipeline.earlier for u in _usage(earlier.messages)]
    usage += _usage(run.messages)
    decision = run.state.get("stop_decision") or {}
    rule = decision.get("rule") if decision.get("action") == "stop" else None
    done = len(run.log.done)
    ended_after = None
    if done < len(task.calls):
        last = run.log.done[-1] if run.log.done else "none"
        ended_after = f"{done}/{len(task.calls)} {last}"
    return Outcome(
        task=task.key,
        suite=task.suite,
        config=config.name,
        faults=faults.rate > 0,
        utility=bool(utility),
        expected=ground_truth_utility(task),
        model_calls=len(usage),
        input_tokens=sum(i for i, _ in usage),
        output_tokens=sum(o for _, o in usage),
        dollars=sum(profile.dollars(i, o) for i, o in usage),
        model_s=sum(profile.seconds(i, o) for i, o in usage),
        wall_s=run.wall_s,
        calls=done,
        ground_truth=len(task.calls),
        ended_after=ended_after,
        false_not_done=false_not_done(run),
        rule=rule,
        timeouts=len(run.log.timed_out),
        in_place_retries=int(decision.get("in_place_retries", 0)),
        invalid_artifacts=sum(map(_invalid, run.messages)),
        cause=error_cause
        or (None if utility else _cause(task, run, ended_after, rule, replay=model is None)),
        marked=model_mark(run.messages) if model is not None and config.marks else None,
    )


def no_loss_mapping(
    tasks: Sequence[Task], candidates: Mapping[str, frozenset[str]], profile: Profile
) -> tuple[ToolMapping, list[dict[str, str]]]:
    """Return the mapping that loses no task, and the tools dropped on the way, with why.

    Start from ``candidates``; replay every task with them stopping (the stop middleware,
    no faults); drop the tool that ended each task that lost; repeat until nothing is lost.
    """
    stops = {name: set(tools) for name, tools in candidates.items()}
    dropped: list[dict[str, str]] = []
    while True:
        mapping = ToolMapping(name="no-loss", rule="", stops=_frozen(stops))
        config = Config(
            name="derive", description="", mapping=mapping, stopping="stops", middleware=True
        )
        lost = [
            (task, outcome)
            for task in tasks
            if not (outcome := run_task(config, task, Faults(), profile)).utility
        ]
        before = len(dropped)
        for task, outcome in lost:
            tool = task.calls[outcome.calls - 1].function if outcome.calls else ""
            if tool in stops.get(task.suite, set()):
                stops[task.suite].discard(tool)
                dropped.append({"suite": task.suite, "tool": tool, "task": task.key})
        if len(dropped) == before:  # nothing lost, or nothing left to drop
            break
    rule = (
        "a tool stops when some task of its suite ends with it and no task calls it before "
        "another call; then every task is replayed with those tools stopping, and a tool that "
        "ended a task that lost is dropped, until none is lost"
    )
    return ToolMapping(name="no-loss", rule=rule, stops=_frozen(stops)), dropped


def oracle_marks(tasks: Sequence[Task], config: Config, profile: Profile) -> dict[str, int | None]:
    """Return, per task, the call a perfect model marks under ``config``, or None.

    The mark goes on the task's last ground-truth call when a run that stops there (its
    content the answer, no model call after it) keeps the task's utility; else no call is
    marked and the replay writes its answer. Never earlier: the calls after it are what the
    request needs, even where the checker would pass without them.
    """
    marks: dict[str, int | None] = {}
    for task in tasks:
        last = len(task.calls) - 1
        kept = last >= 0 and run_task(config, task, Faults(), profile, mark=last).utility
        marks[task.key] = last if kept else None
    return marks


def oracle_step_marks(
    tasks: Sequence[Task], config: Config, profile: Profile
) -> dict[str, tuple[int, ...] | None]:
    """Return, per task, the calls a perfect model marks when it issues calls together.

    Every call of the task's last step (:func:`bench.agentdojo.parallel.steps`) is marked when
    a run that stops there keeps the task's utility, else none: the library stops a step only
    when every call of it stops (``parallel_policy="all"``), and an unmarked call beside a
    marked one is a plain result, which always goes back to the model.
    """
    marks: dict[str, tuple[int, ...] | None] = {}
    for task in tasks:
        last = steps(task)[-1] if task.calls else ()
        kept = bool(last) and run_task(config, task, Faults(), profile, mark=last).utility
        marks[task.key] = last if kept else None
    return marks


def _frozen(stops: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    return {name: frozenset(tools) for name, tools in sorted(stops.items())}
