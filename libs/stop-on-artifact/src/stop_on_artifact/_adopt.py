"""Adopt an existing tool: text on success and exceptions on failure become artifacts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as as_tool

from stop_on_artifact import _artifact

TRANSIENT_CONTENT = "The service did not answer this time. Trying again may work."
FATAL_CONTENT = "This request could not be completed, and trying again will not help."
Errors = tuple[type[Exception], ...]
_HANDLERS = ("handle_tool_error", "handle_validation_error")
_COPIED = ("name", "description", "tags", "metadata", *_HANDLERS)


class _AdoptedTool(BaseTool):  # see adopt()
    inner: BaseTool
    transient: tuple[Errors, str]  # the exception types and the content they give
    fatal: tuple[Errors, str]
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    def _outcome(self, error: Exception) -> tuple[Any, dict[str, Any]]:
        (transient, transient_content), (fatal, fatal_content) = self.transient, self.fatal
        if isinstance(error, transient):
            return transient_content, _artifact.transient(error=type(error).__name__)
        if isinstance(error, fatal):
            return fatal_content, _artifact.fatal(error=type(error).__name__)
        raise error

    def _run(
        self, *args: Any, run_manager: CallbackManagerForToolRun | None = None, **kwargs: Any
    ) -> tuple[Any, dict[str, Any]]:
        callbacks = run_manager.get_child() if run_manager else None
        try:
            content = self.inner.invoke(kwargs, config={"callbacks": callbacks})
        except Exception as error:
            return self._outcome(error)
        return content, _artifact.completed()

    async def _arun(
        self, *args: Any, run_manager: AsyncCallbackManagerForToolRun | None = None, **kwargs: Any
    ) -> tuple[Any, dict[str, Any]]:
        callbacks = run_manager.get_child() if run_manager else None
        try:
            content = await self.inner.ainvoke(kwargs, config={"callbacks": callbacks})
        except Exception as error:
            return self._outcome(error)
        return content, _artifact.completed()


def _errors(name: str, value: type[Exception] | Errors) -> Errors:
    errors = value if isinstance(value, tuple) else (value,)
    if all(isinstance(error, type) and issubclass(error, Exception) for error in errors):
        return errors
    raise TypeError(f"{name} must be Exception subclasses (a class or a tuple of classes)")


def adopt(
    tool: BaseTool | Callable[..., Any],
    *,
    transient: type[Exception] | Errors = (),
    fatal: type[Exception] | Errors = (),
    transient_content: str = TRANSIENT_CONTENT,
    fatal_content: str = FATAL_CONTENT,
) -> BaseTool:
    """Turn a tool that returns text and raises on failure into a ``content_and_artifact`` one.

    ``tool`` is a ``BaseTool`` (``@tool`` included) or a plain function with a docstring; the
    new tool keeps its name, description, arguments and error handling. A return is
    ``completed``, the text as content. An exception of a ``transient`` type (a timeout, a 503)
    or a ``fatal`` one (not found) gives that reason, ``error=<its type's name>`` and
    ``transient_content`` (for the model) or ``fatal_content`` (a hard stop's answer), never the
    exception's text (a URL, a key, a customer's data). Others are raised as before, through
    the tool's ``handle_tool_error`` / ``handle_validation_error`` (then ``ToolNode`` or
    ``ToolErrorMiddleware`` make them rule ``tool_error``). A tool that takes an
    ``InjectedToolCallId`` cannot be adopted.

    Raises:
        TypeError: If ``tool`` already returns ``(content, artifact)`` or a type is no Exception.
        ValueError: If an exception type is listed as both transient and fatal.
    """
    wrapped = tool if isinstance(tool, BaseTool) else as_tool(tool)
    if wrapped.response_format == "content_and_artifact":
        msg = "tool already returns (content, artifact): adopt a tool that returns content"
        raise TypeError(msg)
    transient_errors, fatal_errors = _errors("transient", transient), _errors("fatal", fatal)
    if set(transient_errors) & set(fatal_errors):
        raise ValueError("an exception type is listed as both transient and fatal")
    return _AdoptedTool(
        **{field: getattr(wrapped, field) for field in _COPIED},
        args_schema=wrapped.get_input_schema(),
        inner=wrapped.model_copy(update=dict.fromkeys(_HANDLERS, False)),  # raises; handled here
        transient=(transient_errors, transient_content),
        fatal=(fatal_errors, fatal_content),
    )
