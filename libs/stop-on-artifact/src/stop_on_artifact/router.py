"""The stop decision in a hand-built ``StateGraph``: decide after tools, route, finalize.

Any graph whose state has ``messages`` (with the ``add_messages`` reducer) and a
``stop_decision`` key can use it::

    START -> agent -> tools_condition -> tools | END
             tools -> route_after_tools -> agent | finalize
             finalize -> END

Call :meth:`StopRouter.after_tools` at the end of your tools node (it decides, streams the
decision and returns the ``stop_decision`` update), route with
:meth:`StopRouter.route_after_tools`, and add :meth:`StopRouter.finalize` as the
``finalize`` node. ``finalize`` makes no model call: it relays the settled tools' content.
Nothing here needs ``langchain`` or langgraph 1.x: it runs on langgraph 0.6 as well.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.runtime import get_runtime

from stop_on_artifact.decision import StopDecision, decide, final_text, is_hard_stop
from stop_on_artifact.settings import SettingsFromContext, StopSettings, resolve_settings
from stop_on_artifact.stream import DecisionHook, emit


class StopRouter:
    """The tools-step decision, the router after tools and the ``finalize`` node.

    Configured like :class:`~stop_on_artifact.middleware.StopOnArtifactMiddleware`: the
    constructor's settings hold unless the run's context set a same-named field (see
    :meth:`StopSettings.for_run`), or, when given, ``settings_from_context`` decides.

    Args:
        settings: The settings; ``StopSettings()`` (the defaults) when None.
        settings_from_context: Your own rule from the run's context to its settings; it
            replaces the same-named-field rule entirely.
        on_decision: Called with every decision, after it is streamed.
    """

    def __init__(
        self,
        *,
        settings: StopSettings | None = None,
        settings_from_context: SettingsFromContext | None = None,
        on_decision: DecisionHook | None = None,
    ) -> None:
        """Keep the settings."""
        self.settings = StopSettings() if settings is None else settings
        if not isinstance(self.settings, StopSettings):
            msg = "settings must be a StopSettings"
            raise TypeError(msg)
        self.settings_from_context = settings_from_context
        self.on_decision = on_decision

    def settings_for(self, context: object) -> StopSettings:
        """Return the settings of the run whose context is ``context``."""
        return resolve_settings(self.settings, context, self.settings_from_context)

    def after_tools(
        self, messages: Sequence[BaseMessage], context: object = None
    ) -> dict[str, StopDecision]:
        """Decide about the tool step that ends ``messages``; stream and return the decision.

        Args:
            messages: The thread's messages including the step's ToolMessages.
            context: The run's context (``runtime.context``), for per-run overrides.

        Returns:
            ``{"stop_decision": decision}``, the state update to return from the tools node.
        """
        decision = decide(messages, self.settings_for(context))
        emit(decision, messages, self.on_decision)
        return {"stop_decision": decision}

    def is_hard(self, state: Mapping[str, Any], context: object = None) -> bool:
        """Return whether the state's latest decision ends the run without the model."""
        decision = state.get("stop_decision")
        return decision is not None and is_hard_stop(decision, self.settings_for(context))

    def route_after_tools(
        self, state: Mapping[str, Any], context: object = None
    ) -> Literal["agent", "finalize"]:
        """Go to ``finalize`` on a hard stop; otherwise (continue, or polish) to ``agent``.

        Args:
            state: The graph state, holding ``stop_decision``.
            context: The run's context, for per-run overrides.

        Returns:
            The next node's name.
        """
        return "finalize" if self.is_hard(state, context) else "agent"

    def finalize(self, state: Mapping[str, Any]) -> dict[str, list[AIMessage]]:
        """Answer with the settled tools' content verbatim. No model call.

        Args:
            state: The graph state, holding ``messages`` and a stop ``stop_decision``.

        Returns:
            ``{"messages": [AIMessage(answer)]}``.

        Raises:
            RuntimeError: If the state holds no stop decision.
        """
        decision = state.get("stop_decision")
        if decision is None or decision["action"] != "stop":
            msg = "finalize reached without a stop decision in 'stop_decision'"
            raise RuntimeError(msg)
        texts = self.settings_for(_run_context()).texts  # the run's own texts, if it set them
        return {"messages": [AIMessage(content=final_text(decision, state["messages"], texts))]}


def _run_context() -> object:
    """Return the running graph's context, or None outside a run."""
    try:
        return get_runtime().context
    except RuntimeError:  # called outside a graph run
        return None
