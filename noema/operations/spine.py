"""The operation record, and the one call every face makes to run one.

An :class:`Operation` says once what an operation is: its name, its one-line
summary and longer description, its request model (``noema.operations.requests``),
its result model (``noema.operations.results``), whether it writes, what the
caller needs beyond opening the mind (:data:`Needs`: which right, and where it
is checked), and how each face shows it (a REST :class:`Route`, an MCP tool, a
CLI command). Its ``run`` does the work through the ``Mind`` API, and its
``reply`` makes of the result the JSON every face replies with.

:func:`answer` is that one call: it checks the request against the model,
then answers as the caller under way. The faces only find
the operation, turn their input into the request's fields and hand the JSON
back in their own way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError

from noema import access
from noema.errors import Forbidden, from_validation
from noema.operations.fields import Request

if TYPE_CHECKING:
    from noema._mind.base import Progress
    from noema.mind import Mind

__all__ = [
    "Cli",
    "Needs",
    "Operation",
    "Reply",
    "Route",
    "Run",
    "answer",
    "as_is",
    "face",
    "perform",
    "progress",
    "request_of",
]

#: An operation's work: the mind and the checked request in, its result out.
Run = Callable[["Mind", Any], Any]
#: An operation's result as the JSON every face replies with.
Reply = Callable[["Mind", Any], Any]
#: What a caller needs besides opening the mind, and where each right is checked:
#:
#: - ``mind``: nothing more; opening the mind is the face's check (a server's token).
#: - ``federation``: the right to subscribe the mind to the peer the request names;
#:   ``noema.access.check_subscribe`` checks it inside ``Mind.federate``, where the
#:   peer's mind and URL are resolved, so every face and the Python door meet it.
#: - ``operator``: the operator's right (``noema.access.Caller.operates``): the
#:   operation opens files the caller names or changes the whole mind. :func:`perform`
#:   checks it before the operation runs; no server offers such an operation (it
#:   has no route and is no MCP tool), and a server's caller is refused it anyway.
Needs = Literal["mind", "federation", "operator"]


def as_is(mind: Mind, result: Any) -> Any:
    """The reply of an operation whose ``run`` returns JSON already."""
    return result


@dataclass(frozen=True)
class Route:
    """How REST shows an operation.

    Attributes:
        method: ``GET``, ``POST`` or ``DELETE``; a ``GET`` reads its request from
            the query string, the others from a JSON body.
        path: below ``/v1/minds/{mind}`` (``""``: the mind itself); a ``{field}``
            of it is the request's field of that name (``{path:path}``: a world path).
        status: the status of a success.
        tag: the OpenAPI document's group.
        media_type: the type of a success's body.
    """

    method: Literal["GET", "POST", "DELETE"]
    path: str
    tag: str
    status: int = 200
    media_type: str = "application/json"


@dataclass(frozen=True)
class Cli:
    """How the CLI shows an operation.

    Attributes:
        words: its command words (``("memory", "retract")``).
        positional: the request's fields that are positional arguments, in order.
        request: the operator's wider request, where the local CLI takes more than
            a remote client (``remember`` at any time, on any channel); a subclass
            of the operation's, which runs it as it is. ``None``: the operation's.
    """

    words: tuple[str, ...]
    positional: tuple[str, ...] = ()
    request: type[Request] | None = None


@dataclass(frozen=True)
class Operation:
    """One public operation of a mind, declared once.

    Attributes:
        name: its one name: the MCP tool's, the REST ``operationId``, and the
            ``Mind`` method's where there is one.
        summary: one line saying what it does.
        request: the model of its input.
        result: the model of its JSON answer (``None``: not JSON, e.g. JSONL).
        run: the work (see :data:`Run`), through the ``Mind`` API.
        reply: its result as JSON (see :data:`Reply`); ``as_is`` when ``run``
            returns JSON already.
        writes: whether it changes the mind.
        needs: what the caller needs besides opening the mind (:data:`Needs`).
        route: how REST shows it (``None``: not over REST).
        mcp: whether it is an MCP tool.
        cli: how the CLI shows it (``None``: a command of its own, or none).
        description: the longer text an MCP tool and the OpenAPI document show.
    """

    name: str
    summary: str
    request: type[Request]
    result: type[BaseModel] | None
    run: Run
    writes: bool
    route: Route | None
    needs: Needs = "mind"
    mcp: bool = True
    cli: Cli | None = None
    description: str = ""
    reply: Reply = as_is

    @property
    def text(self) -> str:
        """The summary, and the description under it when there is one."""
        return f"{self.summary}\n\n{self.description}".strip()


def request_of(operation: Operation, fields: Mapping[str, Any] | BaseModel) -> Request:
    """The request of ``operation`` from ``fields``, checked.

    Raises:
        InvalidInput: a field is missing, unknown or wrong; the error names it.
    """
    if isinstance(fields, operation.request):
        return fields
    data = fields.model_dump() if isinstance(fields, BaseModel) else dict(fields)
    try:  # Python values (enums, numbers) as given; JSON faces check the JSON at their edge
        return operation.request.model_validate(data, strict=False)
    except ValidationError as exc:
        raise from_validation(exc) from None


_FACE: ContextVar[str] = ContextVar("noema_face", default="api")
_PROGRESS: ContextVar[Progress | None] = ContextVar("noema_progress", default=None)


def face() -> str:
    """The face whose call is under way (``mcp``, ``http``, ``cli``): who asserts what it adds."""
    return _FACE.get()


def progress() -> Progress | None:
    """What follows the long operation under way (``progress(done, total)``), if anyone does."""
    return _PROGRESS.get()


def answer(
    mind: Mind, operation: Operation, fields: Mapping[str, Any] | BaseModel, *, via: str = "api"
) -> Any:
    """Run ``operation`` on ``mind`` as the caller under way; its JSON answer.

    ``via`` names the face that calls (``mcp``, ``http``, ``cli``): the source of
    the edges the operation adds.

    What the caller may do beyond opening the mind is ``Operation.needs``; where
    each right is checked is told at :data:`Needs`.

    Raises:
        InvalidInput: the request is wrong (nothing is done).
        Forbidden: the caller may not run the operation (nothing is done).
        NoemaError: what the operation raises.
    """
    return operation.reply(mind, perform(mind, operation, fields, via=via))


def perform(
    mind: Mind,
    operation: Operation,
    fields: Mapping[str, Any] | BaseModel,
    *,
    via: str = "api",
    follow: Progress | None = None,
) -> Any:
    """Run ``operation`` on ``mind``; its result before it is JSON (what ``answer`` replies with).

    ``follow`` is told how a long operation (``embed_missing``, ``reindex``) goes.
    An operator's operation (``needs="operator"``) is refused here to a caller
    who does not operate, whichever face asks.

    Raises:
        InvalidInput: the request is wrong (nothing is done).
        Forbidden: the caller may not run the operation (nothing is done).
        NoemaError: what the operation raises.
    """
    if operation.needs == "operator" and not access.current(mind.caller).operates:
        raise Forbidden(f"{operation.name}: only the operator may run it (never a server's client)")
    request = request_of(operation, fields)
    token, following = _FACE.set(via), _PROGRESS.set(follow)
    try:
        return operation.run(mind, request)
    finally:
        _PROGRESS.reset(following)
        _FACE.reset(token)
