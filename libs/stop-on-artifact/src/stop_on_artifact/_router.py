"""The stop decision in a hand-built ``StateGraph``: decide after tools, route, finalize.

::

    START -> agent -> tools_condition -> tools | END
             tools -> route_after_tools -> agent | finalize
             finalize -> END

Needs only langgraph (0.6 included).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable

from stop_on_artifact._core import StopCore, ToolT
from stop_on_artifact._decision import StopDecision, is_hard_stop

StateT = TypeVar("StateT", bound=Mapping[str, Any])


class StopRouter(StopCore):
    """The model's tools, the tools-step decision, the route after tools and ``finalize``.

    In the ``agent`` node, bind the model with :meth:`bind_model` and return
    :meth:`turn_update` with the reply; end the tools node with :meth:`after_tools`; route
    with :meth:`route_after_tools`; add :meth:`finalize` as the ``finalize`` node. The state
    inherits :class:`~stop_on_artifact.StopState`. Takes the arguments of
    :class:`~stop_on_artifact.StopOnArtifactMiddleware` but ``on_model_call``.

    Example:
        ```python
        from langgraph.graph import END, START, StateGraph
        from langgraph.prebuilt import ToolNode, tools_condition

        from stop_on_artifact import StopRouter, StopState
        from stop_on_artifact.testing import ScriptedChatModel, call_then_answer, forced_tool

        tools = [forced_tool("search", "success")]
        chat_model = ScriptedChatModel(script=call_then_answer("search"))
        router = StopRouter(stop_mode="polish", max_retries=1)


        def agent(state: StopState) -> dict[str, object]:
            reply = router.bind_model(chat_model, tools, state).invoke(state["messages"])
            return {"messages": [reply], **router.turn_update(state["messages"])}


        def run_tools(state: StopState) -> dict[str, object]:
            new = ToolNode(tools).invoke(state)["messages"]
            return {"messages": new, **router.after_tools(state, new)}


        builder = StateGraph(StopState)
        builder.add_node("agent", agent)
        builder.add_node("tools", run_tools)
        builder.add_node("finalize", router.finalize)
        builder.add_edge(START, "agent")
        builder.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
        builder.add_conditional_edges(
            "tools", router.route_after_tools, {"agent": "agent", "finalize": "finalize"}
        )
        builder.add_edge("finalize", END)
        result = builder.compile().invoke({"messages": [{"role": "user", "content": "store"}]})
        assert result["stop_decision"]["rule"] == "completed"  # then one polish call, no tools
        ```
    """

    def tools_for(self, state: Mapping[str, Any], tools: Sequence[ToolT]) -> list[ToolT]:
        """Return the tools the next model call may use: none for the polish call."""
        return [] if self.polishing(state) else list(tools)

    def bind_model(
        self, model: BaseChatModel, tools: Sequence[Any], state: Mapping[str, Any]
    ) -> Runnable[LanguageModelInput, Any]:
        """Return ``model.bind_tools(tools)``, or ``model`` itself for the polish call."""
        allowed = self.tools_for(state, tools)
        return model.bind_tools(allowed) if allowed else model

    def after_tools(
        self, state: Mapping[str, Any], new: Sequence[BaseMessage]
    ) -> dict[str, StopDecision]:
        """Decide the tool step ``new`` ends, under the turn's settings; stream it.

        Args:
            state: The graph state before the step.
            new: The step's ToolMessages, as the tools node returns them.

        Returns:
            ``{"stop_decision": decision}``, to return from the tools node.

        Raises:
            TypeError: If ``state`` is not a mapping (0.2 passed the messages).
            StateSchemaError: If the state holds no record of the turn.
        """
        if not isinstance(state, Mapping):
            msg = (
                "after_tools takes the graph state and the step's new messages: "
                "router.after_tools(state, new_messages)"
            )
            raise TypeError(msg)
        return self.decide_step(state, new, self.turn_settings(state))

    def is_hard(self, state: Mapping[str, Any]) -> bool:
        """Return whether the state's latest decision ends the run without the model."""
        decision = state.get("stop_decision")
        return decision is not None and is_hard_stop(decision, self.turn_settings(state))

    def route_after_tools(self, state: Mapping[str, Any]) -> Literal["agent", "finalize"]:
        """Go to ``finalize`` on a hard stop; otherwise (continue, or polish) to ``agent``."""
        return "finalize" if self.is_hard(state) else "agent"

    def finalize(self, state: StateT) -> dict[str, list[AIMessage]]:
        """Answer with the settled tools' content verbatim; no model call.

        Raises:
            RuntimeError: If the state holds no stop decision.
        """
        decision = state.get("stop_decision")
        if decision is None or decision["action"] != "stop":
            msg = "finalize reached without a stop decision in 'stop_decision'"
            raise RuntimeError(msg)
        return {"messages": [AIMessage(content=self.answer(decision, state["messages"]))]}
