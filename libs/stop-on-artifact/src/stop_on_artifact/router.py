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

from stop_on_artifact.decision import StopDecision, decide, final_text, is_hard_stop
from stop_on_artifact.settings import ParallelPolicy, StopMode, StopSettings
from stop_on_artifact.stream import DecisionHook, emit


class StopRouter:
    """The tools-step decision, the router after tools and the ``finalize`` node.

    Configured like :class:`~stop_on_artifact.middleware.StopOnArtifactMiddleware`: the
    constructor sets the defaults, and a run's context overrides each setting through a
    field of the same name (see :meth:`StopSettings.for_run`).

    Args:
        stop_mode: See :data:`~stop_on_artifact.settings.StopMode`.
        parallel_policy: See :data:`~stop_on_artifact.settings.ParallelPolicy`.
        max_retries: Transient outcomes allowed per user message.
        max_model_calls: Model calls allowed per user message.
        on_decision: Called with every decision, after it is streamed.

    Raises:
        ValueError: If a setting is outside its allowed values (named, never quoted).
    """

    def __init__(
        self,
        *,
        stop_mode: StopMode = "hard",
        parallel_policy: ParallelPolicy = "all",
        max_retries: int = 2,
        max_model_calls: int = 6,
        on_decision: DecisionHook | None = None,
    ) -> None:
        """Validate and keep the settings."""
        self.settings = StopSettings(
            stop_mode=stop_mode,
            parallel_policy=parallel_policy,
            max_retries=max_retries,
            max_model_calls=max_model_calls,
        )
        self.on_decision = on_decision

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
        decision = decide(messages, self.settings.for_run(context))
        emit(decision, messages, self.on_decision)
        return {"stop_decision": decision}

    def is_hard(self, state: Mapping[str, Any], context: object = None) -> bool:
        """Return whether the state's latest decision ends the run without the model."""
        decision = state.get("stop_decision")
        return decision is not None and is_hard_stop(decision, self.settings.for_run(context))

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

    @staticmethod
    def finalize(state: Mapping[str, Any]) -> dict[str, list[AIMessage]]:
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
        return {"messages": [AIMessage(content=final_text(decision, state["messages"]))]}
