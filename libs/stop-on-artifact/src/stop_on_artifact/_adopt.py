"""Adopt an existing tool (an MCP one too): its text and exceptions become artifacts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, cast

from langchain_core.callbacks import AsyncCallbackManagerForToolRun, CallbackManagerForToolRun
from langchain_core.tools import BaseTool, InjectedToolCallId, ToolException
from langchain_core.tools import tool as as_tool
from pydantic import BaseModel, Field, create_model

from stop_on_artifact import _artifact
from stop_on_artifact._idempotency import InjectedIdempotencyKey, idempotency_key
from stop_on_artifact._mark import MARKABLE

TRANSIENT_CONTENT = "The service did not answer this time. Trying again may work."
FATAL_CONTENT = "This request could not be completed, and trying again will not help."
Errors = tuple[type[Exception], ...]
_HANDLERS = ("handle_tool_error", "handle_validation_error")
_COPIED = ("name", "description", "tags", "metadata", *_HANDLERS)
_MCP_MODULES = ("langchain_mcp_adapters.", "langchain.mcp.")  # the two clients' tools
_MCP_TIMEOUTS = (408, -32001)  # a timed-out request's code: mcp 1.x's client, mcp 2.x's
Stops = bool | Literal["when_marked"]
MARK_ARGUMENT = "final"
"""The optional argument `adopt(tool, stops="when_marked")` adds to the tool's schema."""
MARK_DESCRIPTION = (
    "Set true only when this call's result alone answers the user's whole request and no "
    "other call is needed after it."
)


class MCPErrorResult(Exception):
    """An MCP tool's error result (`isError`), as [adopt][stop_on_artifact.adopt] classifies it.

    Example:
        An error result, fatal by default, answers with `fatal_content`:

            >>> from stop_on_artifact import MCPErrorResult, adopt
            >>> def ask(q: str) -> str:
            ...     "Ask the server."
            ...     raise MCPErrorResult("not found")
            >>> adopt(ask, fatal=MCPErrorResult).invoke({"q": "x"})
            'This request could not be completed, and trying again will not help.'
    """


def _is_mcp(tool: BaseTool) -> bool:
    run = getattr(tool, "coroutine", None)
    return str(getattr(run, "__module__", "")).startswith(_MCP_MODULES)


def _is_timeout(error: Exception) -> bool:
    code = getattr(getattr(error, "error", None), "code", None)
    return type(error).__name__ in ("McpError", "MCPError") and code in _MCP_TIMEOUTS


class _AdoptedTool(BaseTool):  # see adopt()
    inner: BaseTool
    transient: tuple[Errors, str]  # the exception types and the content they give
    fatal: tuple[Errors, str]
    mcp: bool = False
    stops: Stops = True
    markable: bool = False  # a plain success carries MARKABLE: the shared mark may complete it
    keys: tuple[str, ...] = ()  # InjectedIdempotencyKey arguments: given the call id, then keyed
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"

    def _outcome(self, error: Exception) -> tuple[Any, dict[str, Any]]:
        (transient, transient_content), (fatal, fatal_content) = self.transient, self.fatal
        read = error
        if self.mcp and isinstance(error, ToolException):  # an isError result
            read = MCPErrorResult()
        elif self.mcp and _is_timeout(error):
            read = TimeoutError()
        if isinstance(read, transient):
            return transient_content, _artifact.transient(error=type(read).__name__)
        if isinstance(read, fatal):
            return fatal_content, _artifact.fatal(error=type(read).__name__)
        raise error

    def _success(self, content: Any, marked: object) -> tuple[Any, dict[str, Any] | None]:
        stops = self.stops is True or (self.stops == "when_marked" and marked is True)
        plain = dict(MARKABLE) if self.markable else None  # both a plain result
        return content, _artifact.completed() if stops else plain

    def _run(
        self, *args: Any, run_manager: CallbackManagerForToolRun | None = None, **kwargs: Any
    ) -> tuple[Any, dict[str, Any] | None]:
        callbacks = run_manager.get_child() if run_manager else None
        marked = kwargs.pop(MARK_ARGUMENT, None) if self.stops == "when_marked" else None
        kwargs.update({name: idempotency_key(kwargs[name]) for name in self.keys})
        try:
            content = self.inner.invoke(kwargs, config={"callbacks": callbacks})
        except Exception as error:
            return self._outcome(error)
        return self._success(content, marked)

    async def _arun(
        self, *args: Any, run_manager: AsyncCallbackManagerForToolRun | None = None, **kwargs: Any
    ) -> tuple[Any, dict[str, Any] | None]:
        callbacks = run_manager.get_child() if run_manager else None
        marked = kwargs.pop(MARK_ARGUMENT, None) if self.stops == "when_marked" else None
        kwargs.update({name: idempotency_key(kwargs[name]) for name in self.keys})
        try:
            content = await self.inner.ainvoke(kwargs, config={"callbacks": callbacks})
        except Exception as error:
            return self._outcome(error)
        return self._success(content, marked)


def _errors(name: str, value: type[Exception] | Errors) -> Errors:
    errors = value if isinstance(value, tuple) else (value,)
    if all(isinstance(error, type) and issubclass(error, Exception) for error in errors):
        return errors
    raise TypeError(f"{name} must be Exception subclasses (a class or a tuple of classes)")


def _marked(schema: Any) -> Any:
    """Return `schema` with the optional boolean `MARK_ARGUMENT`."""
    if isinstance(schema, dict):  # an MCP tool's JSON schema
        properties = dict(schema.get("properties") or {})
        taken = MARK_ARGUMENT in properties
        properties[MARK_ARGUMENT] = {"type": "boolean", "description": MARK_DESCRIPTION}
        marked: Any = {**schema, "properties": properties}
    else:
        taken = MARK_ARGUMENT in schema.model_fields
        field: Any = (bool, Field(default=False, description=MARK_DESCRIPTION))
        marked = create_model(schema.__name__, __base__=schema, **{MARK_ARGUMENT: field})
    if taken:
        msg = f"stops='when_marked' adds the argument {MARK_ARGUMENT!r}, which the tool has"
        raise ValueError(msg)
    return marked


def adopt(
    tool: BaseTool | Callable[..., Any],
    *,
    stops: Stops = True,
    transient: type[Exception] | Errors = (),
    fatal: type[Exception] | Errors = (),
    transient_content: str = TRANSIENT_CONTENT,
    fatal_content: str = FATAL_CONTENT,
    mcp_defaults: bool = True,
    mark: Literal["argument", "shared"] = "argument",
) -> BaseTool:
    """Turn a tool that returns text and raises on failure into a `content_and_artifact` one.

    `tool` is a `BaseTool` (`@tool` included) or a plain function with a docstring; the
    new tool keeps its name, description, arguments and error handling. A return is
    `completed`, the text as content. With `stops=False` it is a plain result (no
    artifact: the model reads it, a hard stop never names it); with `stops="when_marked"` the
    tool gains the optional boolean argument [MARK_ARGUMENT][stop_on_artifact.MARK_ARGUMENT]
    (`final`), by which the model says in the call itself that this result answers the
    request: completed when true, plain otherwise; with `mark="shared"` it gains no argument
    and completes when the same reply calls [mark_tool][stop_on_artifact.mark_tool]. An
    exception of a `transient` type (a timeout, a 503) or a `fatal` one (not found) gives that
    reason, `error=<its type's name>` and `transient_content` (for the model) or
    `fatal_content` (a hard stop's answer), never the exception's text (a URL, a key, a
    customer's data). Others are raised as before, through the tool's `handle_tool_error` /
    `handle_validation_error` (then `ToolNode` or `ToolErrorMiddleware` make them rule
    `tool_error`). A tool that takes an `InjectedToolCallId` cannot be adopted; an argument
    annotated [InjectedIdempotencyKey][stop_on_artifact.InjectedIdempotencyKey] receives the
    call's [idempotency_key][stop_on_artifact.idempotency_key] (invoke the tool with a tool call).

    An MCP tool from langchain-mcp-adapters or `langchain.mcp` (which know nothing of the
    contract) is adopted the same way: its content on success (its structured content is
    dropped), an error result read as [MCPErrorResult][stop_on_artifact.MCPErrorResult] and
    a request timeout (mcp 1.x's `McpError` 408, mcp 2.x's `MCPError` -32001) as
    `TimeoutError`. With `mcp_defaults` (the default), `TimeoutError` is added to `transient` and
    `MCPErrorResult` to `fatal` unless listed in the other, so an error result not known to
    be transient is fatal; list `MCPErrorResult` in `transient` to retry error results instead.

    Args:
        tool: A `BaseTool` or a plain function with a docstring.
        stops: `True` (a return completes), `False` (a plain result) or `"when_marked"`.
        transient: The exception type(s) the model may retry.
        fatal: The exception type(s) retrying cannot fix.
        transient_content: The content of a transient failure, for the model.
        fatal_content: The content of a fatal failure, a hard stop's answer.
        mcp_defaults: Add `TimeoutError` to `transient` and `MCPErrorResult` to `fatal`.
        mark: With `"when_marked"`: `"argument"` (`final`) or `"shared"` (`mark_tool`).

    Example:
        A plain function's return completes its call:

            >>> from stop_on_artifact import adopt
            >>> def lookup(order: str) -> str:
            ...     "Look an order up."
            ...     return f"Order {order} shipped."
            >>> call = {"type": "tool_call", "name": "lookup", "args": {"order": "7"}, "id": "c1"}
            >>> adopt(lookup).invoke(call).artifact
            {'stop': True, 'reason': 'completed'}

    Raises:
        TypeError: If `tool` already returns `(content, artifact)` (an MCP tool aside) or a
            type is no Exception.
        ValueError: If an exception type is listed as both transient and fatal, or `stops` is
            `"when_marked"` and the tool has an argument named
            [MARK_ARGUMENT][stop_on_artifact.MARK_ARGUMENT].
    """
    if stops not in (True, False, "when_marked"):
        raise ValueError("stops must be True, False or 'when_marked'")
    if mark not in ("argument", "shared") or (mark == "shared" and stops != "when_marked"):
        msg = "mark must be 'argument' or 'shared', and 'shared' needs stops='when_marked'"
        raise ValueError(msg)
    wrapped = tool if isinstance(tool, BaseTool) else as_tool(tool)
    mcp = _is_mcp(wrapped)
    if wrapped.response_format == "content_and_artifact" and not mcp:
        msg = "tool already returns (content, artifact): adopt a tool that returns content"
        raise TypeError(msg)
    transient_errors, fatal_errors = _errors("transient", transient), _errors("fatal", fatal)
    if mcp and mcp_defaults:
        if not issubclass(TimeoutError, (*transient_errors, *fatal_errors)):
            transient_errors = (*transient_errors, TimeoutError)
        if not issubclass(MCPErrorResult, (*transient_errors, *fatal_errors)):
            fatal_errors = (*fatal_errors, MCPErrorResult)
    if set(transient_errors) & set(fatal_errors):
        raise ValueError("an exception type is listed as both transient and fatal")
    shared = stops == "when_marked" and mark == "shared"  # then no argument: plain, markable
    schema = s if isinstance(s := wrapped.args_schema, dict) else wrapped.get_input_schema()
    fields = getattr(schema, "model_fields", {})  # an MCP tool's JSON schema has none
    marker = InjectedIdempotencyKey  # the class, or an instance of it
    keys = tuple(n for n, f in fields.items() if any(marker in (m, type(m)) for m in f.metadata))
    if keys:  # LangChain fills them with the call id (hidden from the model); _run keys it
        called: Any = (Annotated[str, InjectedToolCallId], ...)
        base = cast("type[BaseModel]", schema)
        schema = create_model(base.__name__, __base__=base, **dict.fromkeys(keys, called))
    return _AdoptedTool(
        **{field: getattr(wrapped, field) for field in _COPIED},
        args_schema=_marked(schema) if stops == "when_marked" and not shared else schema,
        stops=False if shared else stops,
        markable=shared,
        inner=wrapped.model_copy(update=dict.fromkeys(_HANDLERS, False)),  # raises; handled here
        transient=(transient_errors, transient_content),
        fatal=(fatal_errors, fatal_content),
        mcp=mcp,
        keys=keys,
    )
