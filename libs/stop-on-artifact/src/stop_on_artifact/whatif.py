"""What a stop would have saved on recorded traces, decided by the library's own rules.

`python -m stop_on_artifact.whatif SOURCE --stops pay,book` (or `--mapping module:function`):
SOURCE a JSONL file, `langsmith:PROJECT` (the `[whatif]` extra) or a LangGraph server's URL.
A turn's first stop saves the model calls recorded after it; a tool call after it is cut.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import importlib
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import pairwise
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, convert_to_messages
from langchain_core.messages.ai import UsageMetadata

from stop_on_artifact._artifact import completed
from stop_on_artifact._decision import ALWAYS_HARD, decide_turn, final_text
from stop_on_artifact._saving import estimate_saving
from stop_on_artifact._settings import StopSettings
from stop_on_artifact._turn import asks, message_text, scan_turn, tool_calls, turn_start

__all__ = ["Conversation", "stops", "whatif"]

Mapping = Callable[[ToolMessage], "dict[str, Any] | None"]  # a result to its tool's artifact
_PER_TOOL = ("ended", "model_calls_saved", "dollars_saved", "cut")
_BAR = ("saved", "cut")
_SETTINGS = ("stop_mode", "parallel_policy", "max_retries", "max_model_calls")


@dataclass
class Conversation:
    """One recorded conversation: its id and its messages, usage on the model's replies."""

    id: str
    messages: list[BaseMessage]


@dataclass
class TurnOutcome:
    """What the stop would have done to one turn (a user message and the run it started)."""

    trace: str
    turn: int
    model_calls: int
    model_calls_saved: int = 0
    input_tokens_saved: int = 0
    output_tokens_saved: int = 0
    dollars_saved: float = 0.0
    rule: str | None = None  # the stopping decision's rule, None when no step stopped
    tool: str | None = None
    cut: list[str] = field(default_factory=list)  # the tools called after the stopping step
    answer: str | None = None  # a hard stop's answer (`final_text`)


@dataclass
class Report:
    """The outcomes of every turn, the cut turns first, and their totals."""

    outcomes: list[TurnOutcome]
    traces: int

    def as_dict(self) -> dict[str, Any]:
        """Return the report as one JSON-ready object (`--json`)."""
        done = self.outcomes
        tools: dict[str, dict[str, Any]] = {}
        for o in (o for o in done if o.tool is not None):
            row = tools.setdefault(str(o.tool), dict.fromkeys(_PER_TOOL, 0))
            adds = (1, o.model_calls_saved, o.dollars_saved, bool(o.cut))
            row.update({k: round(row[k] + add, 6) for k, add in zip(_PER_TOOL, adds, strict=True)})
        return {
            "traces": self.traces,
            "turns": len(done),
            "model_calls": sum(o.model_calls for o in done),
            "model_calls_saved": sum(o.model_calls_saved for o in done),
            "input_tokens_saved": sum(o.input_tokens_saved for o in done),
            "output_tokens_saved": sum(o.output_tokens_saved for o in done),
            "dollars_saved": round(sum(o.dollars_saved for o in done), 6),
            "cut": list(dict.fromkeys(o.trace for o in done if o.cut)),
            "tools": tools,
            "per_turn": [asdict(o) for o in done],
        }  # fmt: skip


def stops(names: Iterable[str]) -> Mapping:
    """Return the mapping `adopt(tool)` gives `names`: a success is `completed`, else plain.

    Args:
        names: The tools that stop when they succeed.

    Example:
        >>> from langchain_core.messages import ToolMessage
        >>> from stop_on_artifact.whatif import stops
        >>> stops(["pay"])(ToolMessage("Paid.", tool_call_id="c1", name="pay"))["reason"]
        'completed'
    """
    chosen = frozenset(names)
    return lambda m: completed() if m.name in chosen and m.status != "error" else None


def _tokens(usage: Any) -> UsageMetadata | None:
    read = int(usage.get("input_tokens", usage.get("prompt_tokens")) or 0) if usage else 0
    wrote = int(usage.get("output_tokens", usage.get("completion_tokens")) or 0) if usage else 0
    done = UsageMetadata(input_tokens=read, output_tokens=wrote, total_tokens=read + wrote)
    return done if read or wrote else None


def to_messages(raw: Sequence[Any]) -> list[BaseMessage]:
    """Convert OpenAI chat or LangChain message dicts to messages, usage and names kept.

    Raises `ValueError`/`TypeError`/`KeyError` on a malformed message.
    """
    messages, names = list[BaseMessage](), dict[str, str]()
    for item in raw:
        one = {**item, "content": item.get("content") or ""} if isinstance(item, dict) else item
        usage = isinstance(one, dict) and (one.pop("usage_metadata", 0) or one.pop("usage", 0))
        [message] = convert_to_messages([one])
        if isinstance(message, AIMessage):
            names.update((str(c["id"]), c["name"]) for c in message.tool_calls)
            message.usage_metadata = _tokens(usage) or message.usage_metadata
        if isinstance(message, ToolMessage):  # langchain-core 0.3 drops a dict's status
            message.name = message.name or names.get(message.tool_call_id)
            if isinstance(one, dict) and one.get("status") == "error":
                message.status = "error"
        messages.append(message)
    return messages


def read_jsonl(path: str) -> list[Conversation]:
    """Read lines `{"id": ..., "messages": [...]}`; a malformed one is named and skipped."""
    found: list[Conversation] = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                record = json.loads(line) if line.strip() else {"messages": []}
                messages = to_messages(record["messages"])
                found += [Conversation(str(record.get("id", number)), messages)] if messages else []
            except (ValueError, TypeError, KeyError, AttributeError) as error:
                print(f"{path}: line {number} skipped: {type(error).__name__}", file=sys.stderr)
    return found


def read_langsmith(project: str, client: Any = None) -> list[Conversation]:
    """Read a project's traces (`client`: else `langsmith.Client()`): a trace is a turn."""

    def load(value: Any) -> Any:  # a serialized message's fields: no object built from them
        return value["kwargs"] if isinstance(value, dict) and value.get("lc") == 1 else value

    client = client or importlib.import_module("langsmith").Client()
    traces: dict[str, list[Any]] = {}
    for run in client.list_runs(project_name=project):
        traces.setdefault(str(run.trace_id), []).append(run)
    found = []
    for trace, runs in traces.items():
        runs.sort(key=lambda r: str(r.dotted_order or r.start_time))
        llms = [r for r in runs if r.run_type == "llm"]
        sent = ((llms[0].inputs or {}).get("messages") or [[]]) if llms else [[]]
        sent = to_messages([load(m) for m in (sent[0] if isinstance(sent[0], list) else sent)])
        messages = sent[max(turn_start(sent) - 1, 0) :]  # the trace's turn; before it, context
        for run in (r for r in runs if r.run_type in ("llm", "tool")):
            out = run.outputs or {}
            if run.run_type == "llm" and (got := (out.get("generations") or [[{}]])[0][0]):
                messages += to_messages([load(got["message"])])
                usage = {"input_tokens": run.prompt_tokens, "output_tokens": run.completion_tokens}
                messages[-1].usage_metadata = _tokens(usage) or messages[-1].usage_metadata  # type: ignore[attr-defined]
            elif run.run_type == "tool" and isinstance(got := out.get("output"), dict):
                messages += to_messages([load(got)])
            elif run.run_type == "tool":  # a plain output: the next unanswered call of its name
                done = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
                ids = [c["id"] for m in messages for c in tool_calls(m) if c["name"] == run.name]
                call = next((i for i in ids if i not in done), "")
                status = "error" if run.error else "success"
                text = str(got or run.error)
                messages.append(ToolMessage(text, tool_call_id=call, name=run.name, status=status))
        found += [Conversation(trace, messages)] if llms else []
    return found


def read_threads(url: str) -> list[Conversation]:
    """Read a LangGraph server's threads (their `values["messages"]`) with `langgraph_sdk`."""
    from langgraph_sdk import get_sync_client  # noqa: PLC0415

    client, found = get_sync_client(url=url), list[Conversation]()
    while page := client.threads.search(limit=100, offset=len(found)):
        found += [thread_conversation(str(t["thread_id"]), t.get("values")) for t in page]
        if len(page) < 100:
            break
    return [c for c in found if c.messages]


def thread_conversation(thread_id: str, values: object) -> Conversation:
    """Convert one thread's `values` (its state, LangChain message dicts) to a conversation."""
    raw = values.get("messages") if isinstance(values, dict) else None
    return Conversation(thread_id, to_messages(raw) if isinstance(raw, list) else [])


def _turn(trace: str, number: int, turn: list[BaseMessage], head: list[BaseMessage],
          settings: StopSettings, price: tuple[float, float]) -> TurnOutcome:  # fmt: skip
    outcome = TurnOutcome(trace, number, sum(isinstance(m, AIMessage) for m in turn))
    for index in (i for i, m in enumerate(turn) if tool_calls(m)):
        after = (j for j in range(index + 1, len(turn)) if not isinstance(turn[j], ToolMessage))
        end = next(after, len(turn))
        seen = [*head, *turn[:end]]
        decision = decide_turn(scan_turn(seen), settings)
        if decision["action"] != "stop":
            continue
        hard = settings.stop_mode != "polish" or decision["rule"] in ALWAYS_HARD
        later = [m for m in turn[end:] if isinstance(m, AIMessage)]
        skipped = later if hard else later[1:]  # polish: its phrasing call is still made
        outcome.rule, outcome.tool = decision["rule"], decision["tool"]
        with contextlib.suppress(LookupError):
            outcome.answer = final_text(decision, seen) if hard else None
        first = later[0] if later else None  # a stop's answer: its text, no usage recorded
        if first and not first.usage_metadata and message_text(first) == outcome.answer:
            outcome.model_calls -= 1  # the trace stopped here: its answer is no model call
            spent = decision["rule"] in ("retry_budget", "model_call_limit", "step_limit")
            saving = estimate_saving(seen, outcome.answer, [] if spent else decision["unsettled"])
            read, wrote, later = saving["input_tokens"], saving["output_tokens"], later[1:]
            outcome.model_calls_saved = saving["model_calls"]  # as the stop itself records
        else:
            usage = [m.usage_metadata for m in skipped if m.usage_metadata]
            read, wrote = (sum(u[k] for u in usage) for k in ("input_tokens", "output_tokens"))
            outcome.model_calls_saved = len(skipped)
        outcome.input_tokens_saved, outcome.output_tokens_saved = read, wrote
        outcome.dollars_saved = round((read * price[0] + wrote * price[1]) / 1e6, 6)
        outcome.cut = [c["name"] for m in later for c in m.tool_calls]
        break
    return outcome


def whatif(
    conversations: Iterable[Conversation],
    mapping: Mapping,
    settings: StopSettings | None = None,
    price: tuple[float, float] = (0.0, 0.0),
) -> Report:
    """Decide every turn of `conversations` with `mapping`'s artifacts and the library's rules.

    Args:
        conversations: The recorded conversations.
        mapping: A tool result to its artifact (`stops(...)` or your own function).
        settings: The stop settings (default `StopSettings()`).
        price: Dollars per million input and output tokens.

    Returns:
        The report, the turns a stop would have cut listed first.
    """
    settings, outcomes, read = settings or StopSettings(), list[TurnOutcome](), 0
    for read, one in enumerate(conversations, 1):  # noqa: B007
        results = [m for m in one.messages if isinstance(m, ToolMessage)]
        mapped = iter([m.model_copy(update={"artifact": mapping(m)}) for m in results])
        messages = [next(mapped) if isinstance(m, ToolMessage) else m for m in one.messages]
        starts = [i for i in range(len(messages)) if asks(messages, i)] or [0]
        for number, (start, stop) in enumerate(pairwise([*starts, len(messages)])):
            head, turn = messages[: start + 1], messages[start + 1 : stop]
            outcomes.append(_turn(one.id, number, turn, head, settings, price))
    return Report(sorted(outcomes, key=lambda o: not o.cut), read)


def table(report: Report) -> str:
    """Return the report as a plain-text table: cut turns first, then totals and tools."""
    data = report.as_dict()
    lines = [f"{'trace':<16} turn calls saved   $ saved  stop / cut"]
    for o in report.outcomes:
        what = (f"{o.rule} by {o.tool}" if o.rule else "-") + "".join(f"  CUT {c}" for c in o.cut)
        numbers = f"{o.turn:>4} {o.model_calls:>5} {o.model_calls_saved:>5} {o.dollars_saved:>9.4f}"
        lines.append(f"{o.trace[:16]:<16} {numbers}  {what}")
        lines += [f"{'':>23}answer: {' '.join(o.answer.split())[:60]}"] if o.answer else []
    saved, made, cut = data["model_calls_saved"], data["model_calls"], len(data["cut"])
    tokens = f"{data['input_tokens_saved']} in, {data['output_tokens_saved']} out"
    lines.append(f"{data['traces']} traces, {data['turns']} turns: {saved} of {made} model calls")
    lines.append(f"saved ({tokens} tokens, ${data['dollars_saved']:.4f}); traces with a cut: {cut}")
    for name, row in sorted(data["tools"].items()):
        ended, saved, cut = row["ended"], row["model_calls_saved"], row["cut"]
        lines.append(f"  {name}: ended {ended} turns, saved {saved} calls, cut {cut}")
    return "\n".join(lines)


def chart(report: Report) -> str:
    """Return an SVG bar chart: per tool, the model calls saved (green) and turns cut (red)."""
    tools = report.as_dict()["tools"]
    top = max([1, *(max(r["model_calls_saved"], r["cut"]) for r in tools.values())])
    bars = []
    for n, (name, row) in enumerate(sorted(tools.items())):
        bars.append(f'<text x="8" y="{42 + n * 40}">{html.escape(name)}</text>')
        for k, (key, colour) in enumerate((("model_calls_saved", "#2e7d32"), ("cut", "#c62828"))):
            y, width = 30 + n * 40 + k * 16, 260 * row[key] / top
            bars.append(f'<rect x="150" y="{y}" width="{width:.1f}" height="14" fill="{colour}"/>')
            bars.append(f'<text x="{154 + width:.1f}" y="{y + 12}">{row[key]} {_BAR[k]}</text>')
    head = f'width="520" height="{40 + 40 * len(tools)}" font-family="sans-serif" font-size="12"'
    title = "Model calls a stop would save (green) and turns it would cut (red), per tool"
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" {head}><text x="8" y="16">{title}</text>'
    return svg + "".join(bars) + "</svg>\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return its exit status (2 on a usage error, named on stderr)."""
    parser = argparse.ArgumentParser("python -m stop_on_artifact.whatif")
    parser.add_argument("source", help="a JSONL path, langsmith:PROJECT or a server URL")
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--stops", help="the tools that stop when they succeed: pay,book")
    how.add_argument("--mapping", help="module:function, a tool result to its artifact")
    parser.add_argument("--stop-mode", choices=["hard", "polish", "never"], default="hard")
    parser.add_argument("--parallel-policy", choices=["all", "priority", "any"], default="all")
    parser.add_argument("--max-retries", type=int, default=2)
    parser.add_argument("--max-model-calls", type=int, default=6)
    parser.add_argument("--price", default="0,0", help="dollars per million tokens: IN,OUT")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--chart", metavar="PATH", help="write an SVG bar chart")
    args = parser.parse_args(argv)
    try:
        price_in, price_out = (float(p) for p in args.price.split(","))
        settings = StopSettings(**{k: getattr(args, k) for k in _SETTINGS})
        if args.source.startswith("langsmith:"):
            conversations = read_langsmith(args.source.removeprefix("langsmith:"))
        elif args.source.startswith(("http://", "https://")):
            conversations = read_threads(args.source)
        else:
            conversations = read_jsonl(args.source)
    except Exception as error:  # noqa: BLE001  a reader's failure is named, never a traceback
        parser.error(f"{args.source}: {error.strerror if isinstance(error, OSError) else error}")
    if args.stops is not None:
        names = [n.strip() for n in args.stops.split(",") if n.strip()]
        seen = {c["name"] for v in conversations for m in v.messages for c in tool_calls(m)}
        if unknown := [n for n in names if n not in seen]:
            parser.error(f"--stops names tools no trace calls: {', '.join(unknown)}")
        mapping = stops(names)
    else:
        module, _, function = args.mapping.partition(":")
        try:
            mapping = getattr(importlib.import_module(module), function)
        except (ImportError, AttributeError, ValueError) as error:
            parser.error(f"--mapping {args.mapping}: {type(error).__name__}")
    report = whatif(conversations, mapping, settings, (price_in, price_out))
    print(json.dumps(report.as_dict(), indent=2) if args.json else table(report))
    if args.chart:
        with open(args.chart, "w", encoding="utf-8") as out:
            out.write(chart(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
