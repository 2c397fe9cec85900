"""The run context's fields as ``python -m client`` makes flags of them, without the agent.

:class:`agent.context.Context` extends the library's settings, and importing either loads
``langgraph`` (seconds): a question, or ``--help``, would wait for it before anything is
sent. The CLI builds its ``ask`` flags from :data:`FIELDS` instead, a copy of what
:func:`flags_of` reads from ``Context``; a unit test fails when the two differ, and its
diff is the new entry to paste here. :data:`OUTCOMES`, :data:`DEFAULT_SEED` and
:data:`DEFAULT_WEIGHTS` are copies the same test holds against the agent's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args, get_origin

if TYPE_CHECKING:
    from pydantic import BaseModel

Kind = Literal["bool", "int", "float", "str", "outcomes"]


@dataclass(frozen=True)
class ContextFlag:
    """One context field's flag: ``--<name with dashes>``.

    Attributes:
        name: The field's name.
        kind: How the flag reads its value (``outcomes``: a comma list, repeatable).
        help: The first sentence of the field's description.
        choices: The allowed values of a ``Literal`` field; None for any.
        default: The field's default as ``--help`` shows it (:func:`default_text`): what a
            run gets when the flag is not given (the client then sends no value).
    """

    name: str
    kind: Kind
    help: str
    choices: tuple[str, ...] | None = None
    default: str = ""

    @property
    def flag(self) -> str:
        """Return ``--stop-mode`` for ``stop_mode``."""
        return "--" + self.name.replace("_", "-")


_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)\.(?:\s|$)")
"""A full stop ending a sentence: not the one inside ``e.g.`` or ``i.e.``."""


def first_sentence(text: str) -> str:
    """Return a description's first sentence, without its full stop (a flag's help).

    Args:
        text: A ``Context`` field description.

    Returns:
        The text up to the first full stop followed by a space (or the end), ``e.g.`` and
        ``i.e.`` not counting as one.
    """
    end = _SENTENCE_END.search(text)
    return (text[: end.start()] if end else text).strip()


_SAYS_DEFAULT = re.compile(r"(?:^|\s)Default: ([^.]*)\.")
"""A description's own ``Default: ....`` sentence (for a default computed when a run starts)."""


def default_text(default: object, description: str = "") -> str:
    """Return a field's default as a flag's help shows it.

    Args:
        default: The field's default value; ``...`` (Ellipsis) for one computed per run, which
            the description's ``Default: ...`` sentence then says.
        description: The field's description.

    Returns:
        ``hard``, ``500``, ``2``, ``off`` or ``on`` for a flag, ``none`` for None, or the
        description's ``Default:`` sentence (``'offline', or the Groq default when
        GROQ_API_KEY is set``).
    """
    if default is Ellipsis:
        said = _SAYS_DEFAULT.search(description)
        return said.group(1).strip() if said else "set by the server"
    if default is None:
        return "none"
    if isinstance(default, bool):
        return "on" if default else "off"
    if isinstance(default, float):
        return f"{default:g}"
    return str(default)


OUTCOME_FIELD = "force_outcome"
"""The one field that is a list of outcomes: a comma list, repeatable."""
NO_FLAG: frozenset[str] = frozenset()
"""Context fields with no flag (none today: every field is a scalar or a list of outcomes)."""


def flags_of(model: type[BaseModel]) -> tuple[ContextFlag, ...]:
    """Return the flags of a context schema's fields, in field order.

    Args:
        model: The context schema (:class:`agent.context.Context`).

    Returns:
        One flag per field not in :data:`NO_FLAG`.
    """
    flags = []
    for name, info in model.model_fields.items():
        if name in NO_FLAG:
            continue
        annotation = info.annotation
        kind: Kind = "str"
        if name == OUTCOME_FIELD:
            kind = "outcomes"
        elif annotation in (bool, int, float):
            kind = "bool" if annotation is bool else "int" if annotation is int else "float"
        choices = get_args(annotation) if get_origin(annotation) is Literal else None
        help_text = first_sentence(info.description or "")
        default = Ellipsis if info.default_factory is not None else info.default
        shown = default_text(default, info.description or "")
        flags.append(ContextFlag(name, kind, help_text, choices, shown))
    return tuple(flags)


FIELDS: tuple[ContextFlag, ...] = (
    ContextFlag(
        "stop_mode",
        "str",
        "What a stop artifact does",
        ("hard", "polish", "never"),
        default="hard",
    ),
    ContextFlag(
        "parallel_policy",
        "str",
        "Several tool calls in one model turn",
        ("all", "priority", "any"),
        default="all",
    ),
    ContextFlag(
        "max_retries",
        "int",
        (
            "Transient outcomes allowed since the last user message; one more stops the run with "
            "rule 'retry_budget' and a user-safe message"
        ),
        default="2",
    ),
    ContextFlag(
        "max_model_calls",
        "int",
        (
            "Model calls allowed per user message; a tool step that would send the run back to "
            "the model past it stops with rule 'model_call_limit'; the run's recursion_limit is a "
            "budget too (rule 'step_limit')"
        ),
        default="6",
    ),
    ContextFlag(
        "retry_in_place",
        "bool",
        (
            "Retry a transient call in place first: the same call runs again after initial_delay "
            "(times backoff_factor per retry, at most max_delay), while max_retries allows; only "
            "a result still transient goes back to the model"
        ),
        default="off",
    ),
    ContextFlag(
        "initial_delay",
        "float",
        "Seconds before the first in-place retry",
        default="0",
    ),
    ContextFlag(
        "backoff_factor",
        "float",
        "Multiplier of the delay per in-place retry",
        default="2",
    ),
    ContextFlag(
        "max_delay",
        "float",
        "Longest in-place wait, at most 5 s",
        default="5",
    ),
    ContextFlag(
        "model",
        "str",
        (
            "Chat model: 'offline' (deterministic, no network) or a 'provider:model' string for "
            "init_chat_model, e.g. 'groq:llama-3.3-70b-versatile'"
        ),
        default="'offline', or the Groq default when GROQ_API_KEY is set",
    ),
    ContextFlag(
        "force_outcome",
        "outcomes",
        (
            "Force tool outcomes: None (drawn from weights with a seeded RNG), one of 'success' |"
            " 'transient' | 'fatal' for every call ('retryable' is the same as 'transient'), or a"
            " list applied to this turn's tool calls in the order the model issued them, the last"
            " element repeating (['transient', 'success']: the first call fails, the retry "
            "succeeds)"
        ),
        default="none",
    ),
    ContextFlag(
        "seed",
        "int",
        "Seed for the outcome RNG when force_outcome is None",
        default="0",
    ),
    ContextFlag(
        "spend_cap",
        "float",
        "Largest checkout amount allowed",
        default="500",
    ),
    ContextFlag(
        "on_policy_block",
        "str",
        "What a checkout above spend_cap does",
        ("refuse", "ask"),
        default="refuse",
    ),
)
"""``flags_of(Context)``, copied (a unit test compares)."""

OUTCOMES: tuple[str, ...] = ("success", "transient", "retryable", "fatal")
"""``get_args(agent.context.ForcedOutcome)``."""
DEFAULT_SEED = 0
"""``Context``'s default ``seed``."""
DEFAULT_WEIGHTS: Mapping[str, float] = {"success": 0.6, "transient": 0.25, "fatal": 0.15}
"""The outcome mix when nothing is forced (``agent.tools.outcomes.DEFAULT_WEIGHTS``)."""
