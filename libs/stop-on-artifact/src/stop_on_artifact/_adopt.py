"""Adopt an existing tool: text on success and exceptions on failure become artifacts.

::

    @tool
    def order_status(order_id: str) -> str:
        \"\"\"Look up where an order is.\"\"\"
        return orders.lookup(order_id)  # raises TimeoutError, KeyError, ...

    order_status = adopt(order_status, transient=(TimeoutError,), fatal=(KeyError,))

The adopted tool has the same name, description and arguments, and returns
``(content, artifact)`` (``response_format="content_and_artifact"``):

- a normal return is ``completed``, the tool's own text as content;
- an exception of a ``transient`` type is ``transient`` (back to the model), one of a
  ``fatal`` type is ``fatal`` (stop); the content is ``transient_content`` or
  ``fatal_content``, user-safe, never the exception's text (which may hold a URL, a key or
  a customer's data); the artifact names the exception type only (``error="TimeoutError"``);
- any other exception is raised as before: ``ToolNode`` or ``ToolErrorMiddleware`` turns it
  into an error ToolMessage, rule ``tool_error``, and the model sees it.

The wrapped tool keeps its own ``handle_tool_error`` / ``handle_validation_error``: the
adopted tool applies them to what it raises. A tool that takes an ``InjectedToolCallId``
cannot be adopted (it must be invoked with a full tool call): return the artifact yourself.
Runs on langchain-core 0.3 and 1.x.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as as_tool

from stop_on_artifact import _artifact as builders

TRANSIENT_CONTENT = "The service did not answer this time. Trying again may work."
"""Default content of a ``transient`` outcome."""

FATAL_CONTENT = "This request could not be completed, and trying again will not help."
"""Default content of a ``fatal`` outcome."""

Errors = tuple[type[Exception], ...]


class _AdoptedTool(BaseTool):
    """A tool whose outcomes are artifacts; see :func:`adopt`."""

    inner: BaseTool
    transient_errors: Errors
    fatal_errors: Errors
    transient_content: str
    fatal_content: str
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    def _outcome(self, error: Exception) -> tuple[str, dict[str, Any]]:
        name = type(error).__name__
        if isinstance(error, self.transient_errors):
            return self.transient_content, builders.transient(error=name)
        if isinstance(error, self.fatal_errors):
            return self.fatal_content, builders.fatal(error=name)
        raise error

    def _run(
        self, *args: Any, run_manager: CallbackManagerForToolRun | None = None, **kwargs: Any
    ) -> tuple[Any, dict[str, Any]]:
        callbacks = run_manager.get_child() if run_manager else None
        try:
            content = self.inner.invoke(kwargs, config={"callbacks": callbacks})
        except Exception as error:
            return self._outcome(error)
        return content, builders.completed()

    async def _arun(
        self,
        *args: Any,
        run_manager: AsyncCallbackManagerForToolRun | None = None,
        **kwargs: Any,
    ) -> tuple[Any, dict[str, Any]]:
        callbacks = run_manager.get_child() if run_manager else None
        try:
            content = await self.inner.ainvoke(kwargs, config={"callbacks": callbacks})
        except Exception as error:
            return self._outcome(error)
        return content, builders.completed()


def _errors(name: str, value: type[Exception] | Errors) -> Errors:
    errors = value if isinstance(value, tuple) else (value,)
    for error in errors:
        if not (isinstance(error, type) and issubclass(error, Exception)):
            msg = f"{name} must be Exception subclasses (a class or a tuple of classes)"
            raise TypeError(msg)
    return errors


def adopt(
    tool: BaseTool | Callable[..., Any],
    *,
    transient: type[Exception] | Errors = (),
    fatal: type[Exception] | Errors = (),
    transient_content: str = TRANSIENT_CONTENT,
    fatal_content: str = FATAL_CONTENT,
) -> BaseTool:
    """Turn a tool that returns text and raises on failure into a ``content_and_artifact`` one.

    Args:
        tool: A ``BaseTool`` (an ``@tool`` function included), or a plain function with a
            docstring, which is made a tool first.
        transient: Exception types that mean "try again" (a timeout, a 503).
        fatal: Exception types that retrying cannot fix (not found, declined).
        transient_content: What the model, or a person, reads after a transient failure.
        fatal_content: What a person reads after a fatal one (on a hard stop, the answer).

    Returns:
        A new tool with the same name, description and arguments.

    Raises:
        TypeError: If ``tool`` already returns ``(content, artifact)``, or an exception
            type is not an ``Exception`` subclass.
        ValueError: If an exception type is listed as both transient and fatal.
    """
    wrapped = tool if isinstance(tool, BaseTool) else as_tool(tool)
    if wrapped.response_format == "content_and_artifact":
        msg = "tool already returns (content, artifact): adopt a tool that returns content"
        raise TypeError(msg)
    transient_errors = _errors("transient", transient)
    fatal_errors = _errors("fatal", fatal)
    if set(transient_errors) & set(fatal_errors):
        msg = "an exception type is listed as both transient and fatal"
        raise ValueError(msg)
    # The adopted tool applies the wrapped tool's error handling to what it raises, so the
    # inner copy raises: a handled error must not come back as a completed result.
    inner = wrapped.model_copy(
        update={"handle_tool_error": False, "handle_validation_error": False}
    )
    return _AdoptedTool(
        name=wrapped.name,
        description=wrapped.description,
        args_schema=wrapped.get_input_schema(),
        handle_tool_error=wrapped.handle_tool_error,
        handle_validation_error=wrapped.handle_validation_error,
        tags=wrapped.tags,
        metadata=wrapped.metadata,
        inner=inner,
        transient_errors=transient_errors,
        fatal_errors=fatal_errors,
        transient_content=transient_content,
        fatal_content=fatal_content,
    )
