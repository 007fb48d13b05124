"""The OpenAPI 3.1 document of the HTTP API, built from the routes' own models.

Each route is an :class:`Operation`: its method and path, the models of its
query string, body and response, and its status. The application routes
requests by these same records, so the document lists every route with what it
actually accepts and returns. Schemas come from pydantic's ``model_json_schema``
(JSON Schema 2020-12, the dialect of OpenAPI 3.1), their ``$defs`` gathered
under ``components/schemas``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, get_origin

from pydantic import BaseModel

from noema.operations.fields import PAYLOAD_SCHEMA, PLAIN_JSON
from noema.operations.requests import RememberRequest
from noema.operations.results import ErrorOut

__all__ = ["MCP_PATH", "Endpoint", "build_document", "openapi_path"]

#: Where each mind's MCP endpoint (streamable HTTP) is.
MCP_PATH = "/v1/minds/{mind}/mcp"

_ERRORS: dict[str, str] = {
    "400": "not JSON, or a request that cannot be done as asked",
    "401": "no token, or one this server does not know",
    "403": "the token does not open this mind",
    "404": "no such mind, memory, proposal, world or peer",
    "409": (
        "the request contradicts what the mind holds (an ordering edge against the "
        "memories' times, a memory already retracted, a proposal already decided)"
    ),
    "413": "the body is larger than the server takes",
    "415": "a body that is not application/json",
    "421": "the request's Host is not a name this server answers to",
    "422": "a field is missing, of the wrong type, out of range or unknown",
    "503": "the database failed; try again",
}
_PUBLIC_ERRORS = ("400", "404", "422")
#: The headers of a 401: the scheme the server asks for.
_CHALLENGE = {
    "WWW-Authenticate": {
        "description": "the scheme to authenticate with",
        "required": True,
        "schema": {"type": "string", "pattern": "^Bearer "},
    }
}
#: An error of the MCP transport: a JSON-RPC error object without a request id.
_JSON_RPC_ERROR: dict[str, Any] = {
    "type": "object",
    "required": ["jsonrpc", "error"],
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {"type": ["string", "integer", "null"]},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "data": {}},
        },
    },
}


#: A JSON-RPC 2.0 message: a request (``id`` and ``method``), a notification
#: (``method``, no ``id``), a result or an error (``id``).
_JSON_RPC_MESSAGE: dict[str, Any] = {
    "type": "object",
    "required": ["jsonrpc"],
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {"type": ["string", "integer"]},
        "method": {"type": "string"},
        "params": {"type": "object"},
        "result": {"type": "object"},
        "error": _JSON_RPC_ERROR["properties"]["error"],
    },
    "oneOf": [
        {
            "required": ["id", "method"],
            "not": {"anyOf": [{"required": ["result"]}, {"required": ["error"]}]},
        },
        {
            "required": ["method"],
            "not": {
                "anyOf": [{"required": ["id"]}, {"required": ["result"]}, {"required": ["error"]}]
            },
        },
        {
            "required": ["id", "result"],
            "not": {"anyOf": [{"required": ["method"]}, {"required": ["error"]}]},
        },
        {
            "required": ["id", "error"],
            "not": {"anyOf": [{"required": ["method"]}, {"required": ["result"]}]},
        },
    ],
}


@dataclass(frozen=True)
class Endpoint:
    """One route of the API.

    Attributes:
        method: ``GET``, ``POST`` or ``DELETE``.
        path: Starlette's path (``{path:path}`` for a world path).
        name: the operation's id.
        summary: one line saying what it does.
        handler: the coroutine that answers it (see ``noema.http.routes``).
        response: the model of its successful reply; ``None`` with ``media_type``
            other than JSON.
        body: the model of its JSON body, or ``None`` (no body).
        query: the model of its query string, or ``None`` (no parameters).
        status: its success status.
        media_type: its success reply's type.
        auth: whether it needs a token (every per-mind route does).
        tags: the document's grouping of it.
        description: more than the summary, for the document.
        path_model: the model whose fields the path's parameters are.
    """

    method: str
    path: str
    name: str
    summary: str
    handler: Callable[..., Awaitable[Any]]
    response: type[BaseModel] | None
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    status: int = 200
    media_type: str = "application/json"
    auth: bool = True
    tags: tuple[str, ...] = field(default_factory=tuple)
    description: str = ""
    path_model: type[BaseModel] | None = None

    @property
    def body_required(self) -> bool:
        """Whether the body must be sent (some field has no default)."""
        return self.body is not None and any(
            f.is_required() for f in self.body.model_fields.values()
        )


def openapi_path(path: str) -> str:
    """A Starlette path as OpenAPI writes it: ``{path:path}`` becomes ``{path}``."""
    return re.sub(r"\{(\w+):\w+\}", r"{\1}", path)


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


class _Schemas:
    """``components/schemas``: each model once, with the models it refers to."""

    def __init__(self) -> None:
        self.found: dict[str, Any] = {}

    def add(self, model: type[BaseModel], mode: str = "validation") -> dict[str, str]:
        schema = model.model_json_schema(
            ref_template="#/components/schemas/{model}",
            mode="serialization" if mode == "serialization" else "validation",
        )
        for name, sub in schema.pop("$defs", {}).items():
            self.found.setdefault(name, sub)
        self.found.setdefault(model.__name__, schema)
        return _ref(model.__name__)


def _path_schema(operation: Endpoint, name: str) -> dict[str, Any]:
    """A path parameter's schema: its field's in the operation's request (else a string)."""
    model = operation.path_model
    if model is None or name not in model.model_fields:
        return {"type": "string"}
    schema = model.model_json_schema()
    found = dict(_inline(schema["properties"][name], schema.get("$defs", {})))
    found.pop("title", None)
    return found


def _parameters(operation: Endpoint) -> list[dict[str, Any]]:
    parameters: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True, "schema": _path_schema(operation, name)}
        for name in re.findall(r"\{(\w+)(?::\w+)?\}", operation.path)
    ]
    if operation.query is None:
        return parameters
    properties = operation.query.model_json_schema(ref_template="#/components/schemas/{model}")
    defs = properties.get("$defs", {})
    for name, info in operation.query.model_fields.items():
        schema = dict(properties["properties"][name])
        if "$ref" in schema:  # an enum: inline it, a parameter's schema stands alone
            schema = defs[schema["$ref"].rsplit("/", 1)[1]]
        parameter: dict[str, Any] = {
            "name": name,
            "in": "query",
            "required": info.is_required(),
            "schema": _inline(schema, defs),
        }
        if get_origin(info.annotation) is list:
            parameter.update(style="form", explode=True)
        if info.description:
            parameter["description"] = info.description
        parameters.append(parameter)
    return parameters


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    """``schema`` with every ``$ref`` to ``defs`` replaced by what it names."""
    if isinstance(schema, dict):
        if "$ref" in schema and schema["$ref"].rsplit("/", 1)[1] in defs:
            return _inline(defs[schema["$ref"].rsplit("/", 1)[1]], defs)
        return {k: _inline(v, defs) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_inline(v, defs) for v in schema]
    return schema


def _responses(operation: Endpoint, schemas: _Schemas) -> dict[str, Any]:
    error = {"application/json": {"schema": _ref(ErrorOut.__name__)}}
    content: dict[str, Any]
    if operation.response is not None:
        content = {
            operation.media_type: {"schema": schemas.add(operation.response, "serialization")}
        }
    else:
        content = {operation.media_type: {"schema": {"type": "string"}}}
    responses: dict[str, Any] = {
        str(operation.status): {"description": operation.summary, "content": content}
    }
    codes = list(_ERRORS) if operation.auth else list(_PUBLIC_ERRORS)
    if operation.body is None:
        codes = [c for c in codes if c not in ("413", "415")]
    for code in codes:
        responses[code] = {"description": _ERRORS[code], "content": error}
    if "401" in responses:
        responses["401"]["headers"] = _CHALLENGE
    return responses


def build_document(
    operations: Sequence[Endpoint], *, version: str, title: str = "Noema"
) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``operations`` (and of each mind's MCP endpoint)."""
    schemas = _Schemas()
    schemas.add(ErrorOut, "serialization")
    paths: dict[str, dict[str, Any]] = {}
    for operation in operations:
        entry: dict[str, Any] = {
            "operationId": operation.name,
            "summary": operation.summary,
            **({"description": operation.description} if operation.description else {}),
            "parameters": _parameters(operation),
            "responses": _responses(operation, schemas),
        }
        if operation.tags:
            entry["tags"] = list(operation.tags)
        if not operation.auth:
            entry["security"] = []
        if operation.body is not None:
            entry["requestBody"] = {
                "required": operation.body_required,
                "content": {"application/json": {"schema": schemas.add(operation.body)}},
            }
        paths.setdefault(openapi_path(operation.path), {})[operation.method.lower()] = entry
    paths[MCP_PATH] = _mcp_entry()
    schemas.found["JsonRpcError"] = _JSON_RPC_ERROR
    schemas.found["JsonRpcMessage"] = _JSON_RPC_MESSAGE
    schemas.found["PlainJson"] = PLAIN_JSON
    schemas.found[RememberRequest.__name__]["properties"]["payload"] = PAYLOAD_SCHEMA
    return {
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": title,
            "version": version,
            "description": (
                "Long-term memory of the minds of one Noema store. Every route under "
                "/v1/minds/{mind} needs a bearer token that opens that mind. Errors are one "
                'line of JSON: {"error": "...", "field": ...}.'
            ),
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": dict(sorted(schemas.found.items())),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


def _mcp_entry() -> dict[str, Any]:
    mind = {"name": "mind", "in": "path", "required": True, "schema": {"type": "string"}}

    def session(required: bool) -> dict[str, Any]:
        return {
            "name": "Mcp-Session-Id",
            "in": "header",
            "required": required,
            "description": "the session an initialize request opened",
            "schema": {"type": "string", "minLength": 1},
        }

    ours = {"application/json": {"schema": _ref(ErrorOut.__name__)}}
    transport = {"application/json": {"schema": _ref("JsonRpcError")}}
    described = {
        "description": "an MCP message or stream (JSON-RPC; see the MCP specification)",
        "content": {"application/json": {}, "text/event-stream": {}},
    }
    responses: dict[str, Any] = {
        "200": described,
        "400": {
            "description": "not a JSON-RPC message, or no session (only initialize opens one)",
            "content": transport,
        },
        "401": {"description": _ERRORS["401"], "content": ours, "headers": _CHALLENGE},
        "403": {"description": _ERRORS["403"], "content": ours},
        "404": {
            "description": "no such mind, or no such session (it ended or never began)",
            "content": {
                "application/json": {
                    "schema": {"anyOf": [_ref(ErrorOut.__name__), _ref("JsonRpcError")]}
                }
            },
        },
        "406": {
            "description": "Accept does not take application/json and text/event-stream",
            "content": transport,
        },
        "421": {"description": _ERRORS["421"], "content": ours},
    }
    entry: dict[str, Any] = {
        "post": {
            "operationId": "mcp_post",
            "summary": "send MCP messages (streamable HTTP): the mind's memory tools",
            "parameters": [mind, session(False)],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": _ref("JsonRpcMessage")}},
            },
            "responses": {
                **responses,
                "202": {"description": "a notification or response, taken"},
                "415": {"description": "a body that is not application/json", "content": transport},
            },
        },
        "get": {
            "operationId": "mcp_get",
            "summary": "open the MCP session's stream of server messages",
            "parameters": [mind, session(True)],
            "responses": {
                **responses,
                "409": {
                    "description": "the session's stream is open already",
                    "content": transport,
                },
            },
        },
        "delete": {
            "operationId": "mcp_delete",
            "summary": "end the MCP session",
            "parameters": [mind, session(True)],
            "responses": responses,
        },
    }
    for method in entry.values():
        method["tags"] = ["mcp"]
    return entry
