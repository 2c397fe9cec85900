"""A real model for the AgentDojo benchmark: which one, what it costs, where its rows go.

``--model`` names it in one of two ways (:func:`spec`):

- an ``init_chat_model`` string, ``provider:model`` (``groq:llama-3.3-70b-versatile``); the
  provider's package and key (``GROQ_API_KEY``) must be there;
- an OpenAI-compatible server's base URL (a local vLLM or Ollama), the model named by
  ``--model-name`` or after a ``#``: ``http://127.0.0.1:8000/v1#llama3``. It is built with
  ``langchain_openai.ChatOpenAI``; the key is ``OPENAI_API_KEY`` when set, else a
  placeholder (local servers ignore it).

Either way the model runs at temperature 0 with :data:`MAX_RETRIES` retries (6: 7 tries in
all, the request and its retries): the provider's
SDK (``openai`` and ``groq`` alike) retries HTTP 429 and 5xx itself, waiting what
``Retry-After`` says (up to two minutes; a longer wait is not retried) or else an
exponential backoff from half a second to eight.

Before anything is called, :func:`estimate` gives the tokens and dollars the run should
take: the replay's own counts for the chosen tasks and configurations, read from the
committed ``bench/results/agentdojo.json`` (its per-task rows when it has them, else its
per-suite rows scaled to the chosen tasks), times the model's price per million tokens
(:data:`PRICES`, or ``--price IN,OUT``). The replay makes only the ground truth's calls and
writes the ground truth's answer, so a real model that explores or writes more costs more.

Each finished task is appended to a JSONL file (:class:`Journal`); a rerun with the same
options skips the tasks already there.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

MAX_RETRIES = 6
"""Retries per model request (HTTP 429, 5xx, timeouts), done by the provider's SDK."""
TIMEOUT_S = 120.0
"""Seconds one model request may take."""
PRICES_AS_OF = "2025-12"
"""When :data:`PRICES` were read from the providers' price lists."""
PRICES: dict[str, tuple[float, float]] = {
    "groq:llama-3.3-70b-versatile": (0.59, 0.79),
    "groq:llama-3.1-8b-instant": (0.05, 0.08),
    "groq:openai/gpt-oss-120b": (0.15, 0.75),
    "groq:openai/gpt-oss-20b": (0.10, 0.50),
    "openai:gpt-4o": (2.50, 10.00),
    "openai:gpt-4o-mini": (0.15, 0.60),
    "openai:gpt-4.1": (2.00, 8.00),
    "openai:gpt-4.1-mini": (0.40, 1.60),
}
"""Dollars per million input and output tokens, as listed in :data:`PRICES_AS_OF`."""


@dataclass(frozen=True)
class ModelSpec:
    """A model as ``--model`` names it: a provider string, or a base URL and a model."""

    name: str
    """The ``init_chat_model`` string, or the model's name on the server."""
    base_url: str | None = None
    """The OpenAI-compatible server's base URL (``.../v1``), when there is one."""

    @property
    def label(self) -> str:
        """How results name the model: the string, or ``<model> at <base URL>``."""
        return self.name if self.base_url is None else f"{self.name} at {self.base_url}"

    @property
    def slug(self) -> str:
        """The model's part of a results file's name: lower case, ``[a-z0-9.-]`` only."""
        text = self.name if self.base_url is None else f"{self.name}-{self.base_url}"
        text = re.sub(r"https?://", "", text.lower())
        return re.sub(r"[^a-z0-9.]+", "-", text).strip("-.") or "model"

    def build(self) -> BaseChatModel:
        """Return the chat model: temperature 0, :data:`MAX_RETRIES` retries."""
        if self.base_url is not None:
            from langchain_openai import ChatOpenAI  # only a base URL needs it

            key = os.environ.get("OPENAI_API_KEY") or "not-needed"
            return ChatOpenAI(
                model=self.name,
                base_url=self.base_url,
                api_key=key,  # type: ignore[arg-type]  # a str is accepted and wrapped
                temperature=0,
                max_retries=MAX_RETRIES,
                timeout=TIMEOUT_S,
            )
        from langchain.chat_models import init_chat_model

        return init_chat_model(self.name, temperature=0, max_retries=MAX_RETRIES, timeout=TIMEOUT_S)


def spec(model: str, model_name: str | None = None) -> ModelSpec:
    """Return the model ``--model`` (and ``--model-name``) name.

    Args:
        model: ``provider:model``, or a base URL, optionally ``URL#model``.
        model_name: The model's name on the server, for a base URL without ``#``.

    Returns:
        The model's spec.

    Raises:
        ValueError: A base URL with no model name, or a string that is neither form.
    """
    if re.match(r"^https?://", model):
        url, _, named = model.partition("#")
        name = model_name or named
        if not name:
            msg = f"name the model served at {url}: --model-name NAME or --model '{url}#NAME'"
            raise ValueError(msg)
        return ModelSpec(name=name, base_url=url.rstrip("/"))
    if ":" not in model:
        msg = f"--model {model!r}: expected provider:model (groq:...) or a base URL (http://...)"
        raise ValueError(msg)
    return ModelSpec(name=model)


def price(model: ModelSpec, override: tuple[float, float] | None) -> tuple[float, float] | None:
    """Return the dollars per million input and output tokens, or None when unknown."""
    if override is not None:
        return override
    return PRICES.get(model.name) if model.base_url is None else None


def parse_price(text: str) -> tuple[float, float]:
    """Return ``IN,OUT`` (dollars per million tokens) as two non-negative floats."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2:  # noqa: PLR2004  (in and out)
        msg = f"expected IN,OUT dollars per million tokens, got {text!r}"
        raise ValueError(msg)
    first, second = float(parts[0]), float(parts[1])
    if first < 0 or second < 0:
        msg = f"prices must not be negative, got {text!r}"
        raise ValueError(msg)
    return first, second


def dollars_at(sent: int, written: int, prices: tuple[float, float] | None) -> float | None:
    """Return the dollars of `sent` input and `written` output tokens, None when unpriced."""
    return None if prices is None else (sent * prices[0] + written * prices[1]) / 1e6


def cost_line(sent: int, written: int, prices: tuple[float, float] | None) -> str:
    """Return the estimate's dollars: `sent` and `written` tokens at `prices`, or unknown."""
    dollars = dollars_at(sent, written, prices)
    if prices is None or dollars is None:
        return "price unknown (pass --price IN,OUT in dollars per million tokens)"
    return (
        f"${dollars:.2f} at ${prices[0]} in / ${prices[1]} out per million tokens"
        f" (prices as of {PRICES_AS_OF} unless --price)"
    )


def confirmed(yes: bool) -> bool | None:
    """Return whether to go on: True with `--yes`, the answer on a terminal, else None."""
    if yes:
        return True
    if not sys.stdin.isatty():
        return None
    return input("Proceed? [y/N] ").strip().lower() in ("y", "yes")


@dataclass(frozen=True)
class Estimate:
    """What a run should take: model calls and tokens (the replay's), and dollars."""

    tasks: int
    configs: int
    runs: int
    """Task runs: tasks times configurations times the two fault settings."""
    model_calls: int
    input_tokens: int
    output_tokens: int
    dollars: float | None
    """None when the model's price is unknown."""
    how: str
    """Where the token counts come from."""

    def lines(self, model: ModelSpec, prices: tuple[float, float] | None) -> list[str]:
        """Return the estimate as printed before any model call."""
        head = (
            f"estimate for {model.label}: {self.runs} task runs ({self.tasks} tasks x "
            f"{self.configs} configurations x 2 fault settings), {self.model_calls} model "
            f"calls, {self.input_tokens:,} input and {self.output_tokens:,} output tokens"
        )
        cost = cost_line(self.input_tokens, self.output_tokens, prices)
        return [head, f"  {cost}", f"  tokens: {self.how}"]


def estimate(
    committed: Mapping[str, Any],
    chosen: Sequence[tuple[str, str]],
    configs: Iterable[str],
    prices: tuple[float, float] | None,
) -> Estimate:
    """Return the estimate for ``chosen`` ``(suite, task key)`` under ``configs``.

    Args:
        committed: The committed replay result (``bench/results/agentdojo.json``).
        chosen: The tasks to run, as ``(suite, key)``.
        configs: The configurations' names.
        prices: Dollars per million input and output tokens, or None.

    Returns:
        The replay's model calls and tokens for those runs, and their dollars.
    """
    names = set(configs)
    keys = {key for _, key in chosen}
    per_task = committed.get("tasks")
    if per_task:
        rows = [r for r in per_task if r["config"] in names and r["task"] in keys]
        calls = sum(r["model_calls"] for r in rows)
        sent = sum(r["input_tokens"] for r in rows)
        written = sum(r["output_tokens"] for r in rows)
        how = "the replay's own counts for these tasks (bench/results/agentdojo.json, per task)"
    else:
        counts: dict[str, int] = {}
        for suite_name, _ in chosen:
            counts[suite_name] = counts.get(suite_name, 0) + 1
        calls = sent = written = 0
        for row in committed.get("rows", []):
            share = counts.get(row["suite"], 0) / row["tasks"] if row["tasks"] else 0
            if row["config"] in names and share:
                calls += round(row["model_calls"] * share)
                sent += round(row["input_tokens"] * share)
                written += round(row["output_tokens"] * share)
        how = (
            "the replay's counts per suite (bench/results/agentdojo.json), scaled to the chosen "
            "tasks; the replay makes only the ground truth's calls, a real model may make more"
        )
    return Estimate(
        tasks=len(keys),
        configs=len(names),
        runs=len(keys) * len(names) * 2,
        model_calls=calls,
        input_tokens=sent,
        output_tokens=written,
        dollars=dollars_at(sent, written, prices),
        how=how,
    )


class Journal:
    """The JSONL file of a model's finished tasks: appended as they finish, read to resume.

    A row is one task under one configuration and fault setting; rows written under other
    options (fault rate, seed, model) are kept but not reused.
    """

    def __init__(self, path: Path, options: Mapping[str, Any], *, fresh: bool = False) -> None:
        """Open ``path``; ``fresh`` empties it first."""
        self.path = path
        self.options = dict(options)
        path.parent.mkdir(parents=True, exist_ok=True)
        if fresh and path.exists():
            path.unlink()
        self.rows: dict[tuple[str, bool, str], dict[str, Any]] = {}
        if path.exists():
            for line in path.read_text("utf-8").splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by an interrupted run: that task runs again
                if isinstance(row, dict) and row.get("options") == self.options:
                    self.rows[(row["config"], row["faults"], row["task"])] = row

    def get(self, config: str, faults: bool, task: str) -> dict[str, Any] | None:
        """Return the row already written for this run, if any."""
        return self.rows.get((config, faults, task))

    def add(self, row: Mapping[str, Any]) -> None:
        """Append ``row`` (with the options) and flush it to disk."""
        full = {**row, "options": self.options}
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(full, sort_keys=True) + "\n")
        self.rows[(full["config"], full["faults"], full["task"])] = full
