"""An MCP server over one mind (``noema mcp``): memory tools for external agents.

Built on the official ``mcp`` SDK (``MCPServer``). Every tool goes through the
``Mind`` API of the one mind the server was built for, which scopes every read
and write to that mind: an id of another mind is simply not found. A tool that
reaches past it (``federate_add``) is authorised by ``noema.access``, as the
mind's caller: the one ``noema mcp`` binds, or over HTTP the caller of the
request that carried the call (the SDK runs each call in its request's context). Inputs are
validated by the SDK against each tool's signature, then by Noema's models;
a problem comes back as a tool error with one line naming it, and nothing is
written. Database calls go through an ``AsyncMind`` over the mind, on its
worker threads (in parallel on PostgreSQL), so the server keeps answering.

Over stdio every line gets a reply: one that is not a JSON-RPC message gets
the error the JSON-RPC spec names (-32700 for JSON that cannot be parsed,
-32600 for anything else, a batch included: MCP has none), where the SDK's
transport would drop it and leave the client waiting.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import io
import json
import sys
import typing
from collections.abc import Awaitable, Callable, Iterator
from types import TracebackType
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    CallToolResult,
    ErrorData,
    InputRequiredResult,
    JSONRPCError,
)
from pydantic import BeforeValidator, Field, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from noema._arguments import argument_error
from noema.async_mind import AsyncMind
from noema.errors import NoemaError
from noema.mind import Mind
from noema.operations import OPERATIONS, Operation, answer
from noema.operations.fields import Request

__all__ = ["NoemaServer", "build_server"]

T = TypeVar("T")

INSTRUCTIONS = """\
Long-term memory of one Noema mind. `recall` before answering from memory: each
result says why it ranked (text, vector, recency, activation, importance,
credibility, status) and how far to trust it (`lifecycle`, confidence `tier`).
`remember` what is worth keeping, with its epistemic kind (fact, observation,
claim, belief, ...), in a `world` (a path such as `work/project-x`) when it
belongs to one; `recall` with `world` looks inside it, and with `known_at` asks
what the mind knew at that time. Correct with `supersede` (a new version), `retract`
(inaccurate, with a reason) or `reject_memory` (not knowledge, with a reason);
confirm with `verify_memory`. `health` lists what to review; `proposals` what
waits for a decision. After a task, `record_episode` what you did and how it
went; before one, `recall_episodes` what worked (or failed) last time. Nothing
is silently deleted.
"""


@contextlib.contextmanager
def _tool_errors() -> Iterator[None]:
    """Noema's errors as tool errors, with their one-line messages."""
    try:
        yield
    except NoemaError as exc:
        raise ToolError(str(exc)) from None


class NoemaServer(MCPServer[Any]):
    """``MCPServer`` with one-line argument errors, answering every line on stdio."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Call a tool; a wrong argument or a Noema error is a one-line tool error."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError):
                raise
            if isinstance(cause, ValidationError):
                # The SDK would quote pydantic's report: several lines, with the values.
                message = f"Error executing tool {name}: {argument_error(cause)}"
                raise ToolError(message) from cause
            one_line = " ".join(str(exc).split())  # e.g. an unknown tool's name, as sent
            if one_line == str(exc):
                raise
            raise ToolError(one_line) from cause

    async def run_stdio_async(self) -> None:
        """Serve MCP on stdin and stdout, answering every line, even a malformed one."""
        # Lines end at "\n" only: JSON may hold a raw CR, which the SDK's default
        # (universal newlines) would take for the end of a line.
        stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace", newline="\n")
        async with stdio_server(stdin=_Lines(anyio.wrap_file(stdin))) as (  # type: ignore[arg-type]
            read_stream,
            write_stream,
        ):
            server = self._lowlevel_server
            await server.run(
                _Answering(read_stream, write_stream),
                write_stream,
                server.create_initialization_options(),
            )


#: What an id that JSON-RPC forbids (null, a fraction, a bool, an object) is read
#: as: not a message, so the server answers -32600. Read as it was sent, the SDK
#: would take it for a notification and answer nothing.
_NOT_A_MESSAGE = '{"jsonrpc": "not 2.0: its id is neither a string nor an integer"}'


class _Lines:
    """Lines of stdin, each request whose id JSON-RPC forbids made an invalid message."""

    def __init__(self, inner: Any) -> None:
        self._lines = inner.__aiter__()

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line: str = await self._lines.__anext__()
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):  # the SDK answers these with -32700
            return line
        if isinstance(data, dict) and "id" in data:
            ident = data["id"]
            if isinstance(ident, bool) or not isinstance(ident, int | str):
                return _NOT_A_MESSAGE
        return line


class _Answering:
    """A transport's read stream that answers the lines it could not read.

    The transport puts an exception on the stream for such a line, which the
    server drops; here it becomes an error reply, and the next line is read.
    """

    def __init__(self, inner: Any, replies: Any) -> None:
        self._inner = inner
        self._replies = replies

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last message (read by the SDK's dispatcher)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item: SessionMessage | Exception = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            # Closed when the server is shutting down: nobody to answer.
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self._replies.send(SessionMessage(_error_reply(item)))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _Answering:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Answering:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


def _error_reply(exc: Exception) -> JSONRPCError:
    """The JSON-RPC error for a line the transport could not read as a message."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if not errors or any(e["type"] == "json_invalid" for e in errors):
        # Invalid JSON, or JSON past the parser's limits (depth, a 5,000-digit number).
        detail = " ".join(str(errors[0]["msg"] if errors else exc).split())
        return _error(None, PARSE_ERROR, f"Parse error: {detail}")
    # The whole message is the input of an error about it, not about one of its fields.
    whole = [
        e["input"]
        for e in errors
        if len(e["loc"]) == 1 or (len(e["loc"]) == 2 and e["type"] == "missing")
    ]
    data = whole[0] if whole else None
    if isinstance(data, list):
        return _error(None, INVALID_REQUEST, "Invalid Request: batches are not supported")
    ident = data.get("id") if isinstance(data, dict) else None
    if isinstance(ident, bool) or not isinstance(ident, int | str):
        ident = None
    return _error(ident, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")


def _error(ident: int | str | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=ident, error=ErrorData(code=code, message=message))


def build_server(mind: Mind) -> NoemaServer:
    """An MCP server whose tools read and write ``mind`` and nothing else.

    One tool per operation of ``noema.operations`` that is an MCP tool: its name,
    its description and its input schema are the operation's. The tools call
    ``mind`` through an ``AsyncMind`` over it, which leaves the mind open:
    closing it is its owner's. The ``AsyncMind``'s idle worker threads end with
    the server (or at exit).
    """
    server = NoemaServer(name=f"noema:{mind.name}", instructions=INSTRUCTIONS, log_level="WARNING")
    amind = AsyncMind(mind, owns_mind=False)
    for operation in OPERATIONS:
        if operation.mcp:
            server.add_tool(
                _tool(amind, operation), name=operation.name, description=operation.text
            )
    return server


def _tool(amind: AsyncMind, operation: Operation) -> Callable[..., Awaitable[Any]]:
    """The tool of ``operation``: its request's fields as keyword arguments, its JSON back."""

    async def tool(**arguments: Any) -> dict[str, Any]:
        with _tool_errors():
            reply: dict[str, Any] = await amind.call(
                answer, amind.mind, operation, arguments, via="mcp"
            )
        return reply

    tool.__name__ = operation.name
    tool.__doc__ = operation.text
    tool.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [_parameter(name, info) for name, info in operation.request.model_fields.items()],
        return_annotation=dict[str, Any],
    )
    return tool


def _parameter(name: str, info: FieldInfo) -> inspect.Parameter:
    """A request field as a keyword parameter: its type, bounds, description and default."""
    annotation: Any = Annotated[
        (info.annotation, *info.metadata, Field(description=info.description))
    ]
    if _holds_request(info.annotation):
        annotation = Annotated[annotation, BeforeValidator(_as_json(annotation))]
    default = (
        inspect.Parameter.empty
        if info.is_required()
        else info.get_default(call_default_factory=True)
    )
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


def _holds_request(annotation: Any) -> bool:
    """Whether ``annotation`` is, or holds, a request model (a remember's links, a batch)."""
    if isinstance(annotation, type) and issubclass(annotation, Request):
        return True
    return any(_holds_request(argument) for argument in typing.get_args(annotation))


def _as_json(annotation: Any) -> Callable[[Any], Any]:
    """What checks a tool argument that holds request models as REST checks its JSON.

    The SDK checks arguments as Python values, where a strict model takes no
    string for an enum (``"success"`` for an ``Outcome``); read as the JSON it
    came as, it does, and the models come out checked.
    """
    adapter: TypeAdapter[Any] = TypeAdapter(annotation)

    def check(value: Any) -> Any:
        try:
            return adapter.validate_json(json.dumps(value))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            raise PydanticCustomError(
                "request", "{where}: {msg}", {"where": where, "msg": error["msg"]}
            ) from None

    return check
