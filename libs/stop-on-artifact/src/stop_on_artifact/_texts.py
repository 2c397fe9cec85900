"""The texts a person reads when a hard stop ends the run, with English defaults.

:class:`StopTexts` holds every line the library writes itself into an answer: the closing
line of a spent retry budget, of the model-call cap, and the generic line that names a
part as not done. Give your own to :class:`~stop_on_artifact.StopSettings` (``texts=``) for
an agent, or per run the way the other settings are set (see
:meth:`~stop_on_artifact.StopSettings.for_run`)::

    StopSettings(texts=StopTexts(retry_budget="El servicio sigue sin responder."))

A tool's own ``not_done`` line (see :func:`stop_on_artifact.transient`) is used as it is.
"""

from __future__ import annotations

from string import Formatter

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

__all__ = ["MAX_TEXT_CHARS", "MODEL_CALL_LIMIT_MESSAGE", "RETRY_BUDGET_MESSAGE", "StopTexts"]

RETRY_BUDGET_MESSAGE = (
    "The service is still unavailable after several attempts, so I stopped retrying. "
    "Please try again in a few minutes."
)
"""The default answer when the retry budget is spent."""

MODEL_CALL_LIMIT_MESSAGE = (
    "I could not finish this request within the allowed number of steps, so I stopped "
    "here. Please narrow the question and try again."
)
"""The default answer when the model-call cap ends a run."""

MAX_TEXT_CHARS = 500
"""Longest text accepted in a :class:`StopTexts` field."""

_PLACEHOLDERS: dict[str, frozenset[str]] = {
    "not_done": frozenset({"where", "tool", "why"}),
    "not_done_part": frozenset({"number", "count"}),
}
"""The placeholders each template may use; every other field is plain text."""


def _text(description: str, default: str) -> str:
    return Field(
        default=default,
        min_length=1,
        max_length=MAX_TEXT_CHARS,
        strict=True,
        description=description,
    )


class StopTexts(BaseModel):
    """The user-facing texts of a hard stop; today's English by default.

    Frozen and strict, like :class:`~stop_on_artifact.StopSettings`: each field is a
    non-empty string of at most :data:`MAX_TEXT_CHARS` characters, and a template may use
    only its own placeholders. A :class:`pydantic.ValidationError` names the field and
    never quotes the value.

    Example:
        .. code-block:: python

            from stop_on_artifact import StopRouter, StopSettings, StopTexts

            spanish = StopTexts(
                retry_budget="El servicio sigue sin responder; inténtalo más tarde.",
                model_call_limit="No pude terminar en los pasos permitidos.",
                not_done="**Sin hacer: {where} (`{tool}`)**: {why}. Pídelo de nuevo.",
                not_done_part="parte {number} de {count}",
                not_done_whole="esta petición",
                why_transient="falló por un motivo pasajero",
                why_tool_error="la herramienta terminó con un error",
                why_unconfirmed="no se pudo confirmar su resultado",
                why_missing="no devolvió ningún resultado",
            )
            router = StopRouter(settings=StopSettings(texts=spanish))
    """

    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    retry_budget: str = _text(
        "Closing line when the retry budget is spent (rule 'retry_budget').",
        RETRY_BUDGET_MESSAGE,
    )
    model_call_limit: str = _text(
        "Closing line when the model-call cap ends the run (rule 'model_call_limit').",
        MODEL_CALL_LIMIT_MESSAGE,
    )
    not_done: str = _text(
        "The line for a part left undone whose tool wrote no 'not_done' line. Placeholders: "
        "{where} (not_done_part or not_done_whole), {tool} (the tool's name), {why}.",
        "**Not done: {where} (`{tool}`)**: {why}, so it was not completed. Ask again to retry.",
    )
    not_done_part: str = _text(
        "{where} in a question of several parts. Placeholders: {number}, {count}.",
        "part {number} of {count}",
    )
    not_done_whole: str = _text("{where} in a question of one part.", "this request")
    why_transient: str = _text(
        "{why} for a transient failure.",
        "it failed for a reason that may pass (a timeout or a busy service)",
    )
    why_tool_error: str = _text("{why} for a tool error.", "the tool stopped with an error")
    why_unconfirmed: str = _text(
        "{why} for a result without a valid artifact.", "its result could not be confirmed"
    )
    why_missing: str = _text("{why} for a call with no result.", "it returned no result")

    @field_validator("not_done", "not_done_part")
    @classmethod
    def _known_placeholders(cls, value: str, info: ValidationInfo) -> str:
        allowed = _PLACEHOLDERS[str(info.field_name)]
        try:
            fields = [(name, spec, conv) for _, name, spec, conv in Formatter().parse(value)]
        except ValueError:
            msg = f"{info.field_name} has unbalanced braces (write a literal brace as {{{{ or }}}})"
            raise ValueError(msg) from None
        for name, spec, conversion in fields:
            if name is not None and (name not in allowed or spec or conversion):
                msg = f"{info.field_name} may use only the placeholders {sorted(allowed)}"
                raise ValueError(msg)
        return value
