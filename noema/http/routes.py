"""The routes of the HTTP API: one per declared operation, and two about the server.

Every operation of ``noema.operations`` with a ``route`` is a route under
``/v1/minds/{mind}``: a ``GET`` reads its request from the query string, the
others from a JSON body, and the ``{field}`` parts of its path fill the fields
of those names. One generic handler answers them all, through the mind's
``AsyncMind`` (``noema.operations.answer`` on a worker thread), with the JSON
the MCP tools and the CLI's ``--json`` return too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, create_model
from starlette.responses import Response

from noema import __version__
from noema.http._served import Served
from noema.http.auth import Grant
from noema.http.openapi import Endpoint
from noema.operations import OPERATIONS, Operation, answer
from noema.operations.fields import Query, Request
from noema.operations.results import MindsOut, ServerOut

__all__ = ["ENDPOINTS", "MIND", "Call"]

MIND = "/v1/minds/{mind}"


@dataclass(frozen=True)
class Call:
    """One request to a route, checked: the mind, the grant, and the parsed input.

    Attributes:
        served: the mind the request is for (the grant opens it).
        grant: what the request's token opens.
        params: the path's parameters besides ``mind`` (``id``, ``path``, ``name``).
        body: the body, an instance of the route's body model (or ``None``).
        query: the query string, an instance of the route's query model (or ``None``).
        minds: the names of every mind the server serves.
    """

    served: Served | None
    grant: Grant
    params: Mapping[str, str]
    body: Any
    query: Any
    minds: tuple[str, ...] = ()

    @property
    def mind(self) -> Served:
        """The mind of a per-mind route."""
        assert self.served is not None
        return self.served


async def server_health(call: Call) -> dict[str, Any]:
    """The server is up."""
    return {"status": "ok", "version": __version__}


async def list_minds(call: Call) -> dict[str, Any]:
    """The minds the token opens."""
    return {"minds": [name for name in call.minds if call.grant.allows(name)]}


def path_fields(path: str) -> tuple[str, ...]:
    """The names of a route path's parameters (``{path:path}`` is ``path``)."""
    return tuple(re.findall(r"\{(\w+)(?::\w+)?\}", path))


def _input_model(operation: Operation, base: type[BaseModel]) -> type[BaseModel]:
    """The request model without the fields the path holds, read as ``base`` reads."""
    assert operation.route is not None
    in_path = path_fields(operation.route.path)
    fields: dict[str, Any] = {
        name: (info.annotation, info)
        for name, info in operation.request.model_fields.items()
        if name not in in_path
    }
    model: type[BaseModel] = create_model(
        operation.request.__name__, __base__=base, __doc__=operation.request.__doc__, **fields
    )
    return model


def _has_input(operation: Operation) -> bool:
    """Whether the request has fields besides those the path holds."""
    assert operation.route is not None
    return bool(set(operation.request.model_fields) - set(path_fields(operation.route.path)))


def _handler(operation: Operation) -> Any:
    async def handle(call: Call) -> Any:
        given = call.body if call.body is not None else call.query
        fields = {**(given.model_dump() if given is not None else {}), **call.params}
        amind = call.mind.amind
        result = await amind.call(answer, amind.mind, operation, fields, via="http")
        if operation.result is None:  # JSON lines
            return Response(
                "".join(f"{line}\n" for line in result), media_type="application/x-ndjson"
            )
        return result

    handle.__name__ = operation.name
    handle.__doc__ = operation.summary
    return handle


def endpoint(operation: Operation) -> Endpoint:
    """The route of ``operation`` (which has a ``route``)."""
    route = operation.route
    assert route is not None
    reads = route.method == "GET"
    return Endpoint(
        method=route.method,
        path=f"{MIND}{route.path}",
        name=operation.name,
        summary=operation.summary,
        description=operation.description,
        handler=_handler(operation),
        response=operation.result,
        body=None if reads else _input_model(operation, Request),
        query=_input_model(operation, Query) if reads and _has_input(operation) else None,
        path_model=operation.request,
        status=route.status,
        media_type=route.media_type,
        tags=(route.tag,),
    )


#: Every route but each mind's MCP endpoint, in the order the document lists them.
ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "GET",
        "/v1/health",
        "server_health",
        "The server is up.",
        server_health,
        ServerOut,
        auth=False,
        tags=("server",),
    ),
    Endpoint(
        "GET",
        "/v1/minds",
        "list_minds",
        "The minds the token opens.",
        list_minds,
        MindsOut,
        tags=("server",),
    ),
    *(endpoint(operation) for operation in OPERATIONS if operation.route is not None),
)
