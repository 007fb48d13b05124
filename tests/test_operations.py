"""Every face shows each declared operation with the same parameters and the same rights.

The checks are derived from ``noema.operations.OPERATIONS``: an operation added
there is checked here on every face without a line of this file changing.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest
from mcp import Client

from concepts import RecallFilters
from concepts.episodes import Episode
from noema import ManualClock, Mind
from noema.access import NOBODY, acting_as, serving
from noema.async_mind import AsyncMind
from noema.cli import build_parser
from noema.cli._derived import dest, option_name
from noema.errors import Forbidden
from noema.http.auth import Tokens
from noema.http.openapi import build_document, openapi_path
from noema.http.routes import ENDPOINTS, MIND
from noema.mcp.server import build_server
from noema.operations import BY_NAME, OPERATIONS, Operation, answer
from noema.operations.requests import OPERATOR
from tests.test_access import TOKEN_BOTH, Server
from tests.test_http import Api

#: The field an operation is about, which the Python method takes first, by position.
SUBJECTS = ("id", "name", "key", "path")
#: The models a Python method takes whole, by parameter (their fields are its fields).
WHOLE = {"filters": RecallFilters, "episode": Episode}


def _fields(operation: Operation) -> set[str]:
    return set(operation.request.model_fields)


def _required(operation: Operation) -> set[str]:
    return {n for n, f in operation.request.model_fields.items() if f.is_required()}


def test_every_operation_has_one_name_and_a_request_and_a_face() -> None:
    names = [operation.name for operation in OPERATIONS]
    assert len(names) == len(set(names)) > 30
    for operation in OPERATIONS:
        assert operation.summary and "\n" not in operation.summary, operation.name
        assert operation.route is not None or operation.mcp, operation.name


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.name)
def test_the_python_door_takes_every_field(operation: Operation) -> None:
    method = getattr(Mind, operation.name, None)
    if method is None:  # an answer made of other calls (mind_info, memory_events)
        assert operation.name in {"mind_info", "memory_events"}
        return
    parameters = list(inspect.signature(method).parameters.values())[1:]
    names = {p.name for p in parameters}
    taken = set(names)
    for parameter, model in WHOLE.items():
        if parameter in names:
            taken |= set(model.model_fields)
    if any(p.kind is p.VAR_KEYWORD for p in parameters) and operation.name == "recall":
        taken |= set(RecallFilters.model_fields)
    for field in _fields(operation) - taken:
        assert field in SUBJECTS, f"Mind.{operation.name} does not take {field}"
        first = parameters[0]
        assert first.kind is first.POSITIONAL_OR_KEYWORD, f"Mind.{operation.name}: {field}"
    assert inspect.iscoroutinefunction(getattr(AsyncMind, operation.name))


@pytest.mark.parametrize("operation", [op for op in OPERATIONS if op.route], ids=lambda op: op.name)
def test_rest_takes_the_request_in_its_path_and_body_or_query(operation: Operation) -> None:
    assert operation.route is not None
    [endpoint] = [e for e in ENDPOINTS if e.name == operation.name]
    assert (endpoint.method, endpoint.path) == (
        operation.route.method,
        f"{MIND}{operation.route.path}",
    )
    document = build_document(ENDPOINTS, version="test")
    entry = document["paths"][openapi_path(endpoint.path)][endpoint.method.lower()]
    taken = {p["name"] for p in entry["parameters"]} - {"mind"}
    required = {p["name"] for p in entry["parameters"] if p["required"]} - {"mind"}
    if "requestBody" in entry:
        ref = entry["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        body = document["components"]["schemas"][ref.rsplit("/", 1)[1]]
        taken |= set(body.get("properties", {}))
        required |= set(body.get("required", []))
    assert taken == _fields(operation)
    assert required == _required(operation)
    assert entry["operationId"] == operation.name and entry["summary"] == operation.summary


def test_mcp_lists_one_tool_per_operation_with_the_request_as_its_input(mind: Mind) -> None:
    async def tools() -> dict[str, Any]:
        async with Client(build_server(mind)) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    listed = asyncio.run(tools())
    assert set(listed) == {op.name for op in OPERATIONS if op.mcp}
    for operation in OPERATIONS:
        if operation.mcp:
            schema = listed[operation.name].input_schema
            assert set(schema.get("properties", {})) == _fields(operation), operation.name
            assert set(schema.get("required", [])) == _required(operation), operation.name
            assert listed[operation.name].description == operation.text


@pytest.mark.parametrize("operation", [op for op in OPERATIONS if op.cli], ids=lambda op: op.name)
def test_the_cli_command_takes_every_field(operation: Operation) -> None:
    assert operation.cli is not None
    parser = build_parser()
    for word in operation.cli.words:
        [sub] = [
            a for a in parser._actions if hasattr(a, "choices") and isinstance(a.choices, dict)
        ]
        parser = sub.choices[word]
    parser.format_help()  # the options are added when the command is used
    dests = {a.dest for a in parser._actions}
    assert {dest(f) for f in _fields(operation)} <= dests, operation.name
    flags = {s for a in parser._actions for s in a.option_strings}
    for name, info in operation.request.model_fields.items():
        if name not in operation.cli.positional and info.annotation is not bool:
            assert option_name(name, info.annotation) in flags, name


@pytest.mark.parametrize("name", sorted(OPERATOR))
def test_the_operators_wider_request_is_a_subclass_of_the_operations(name: str) -> None:
    """The operation runs it as it is (``request_of``); a remote face never sees it."""
    assert issubclass(OPERATOR[name], BY_NAME[name].request)
    assert set(OPERATOR[name].model_fields) >= _fields(BY_NAME[name])


# ---------------------------------------------------------------- the same rights on every face

#: A request of each operation that needs more than opening the mind.
SAMPLES: dict[str, dict[str, Any]] = {"federate": {"name": "b", "mind": "bob"}}
NEEDING = [op for op in OPERATIONS if op.needs != "mind"]


def test_every_operation_that_needs_a_right_has_a_sample() -> None:
    assert {op.name for op in NEEDING} == set(SAMPLES)


@pytest.mark.parametrize("operation", NEEDING, ids=lambda op: op.name)
def test_every_face_refuses_it_with_the_same_line(
    operation: Operation, store_url: str, clock: ManualClock
) -> None:
    if not store_url.startswith("sqlite"):
        pytest.skip("the rule is decided above the store: its faces are walked on SQLite only")
    fields = SAMPLES[operation.name]
    lines: dict[str, str] = {}
    with Mind.open(store_url, "alice", clock=clock) as alice:
        Mind.open(store_url, "bob", clock=clock).close()
        with acting_as(NOBODY), pytest.raises(Forbidden) as refused:
            answer(alice, operation, fields)
        lines["operations"] = str(refused.value)
        alice.caller = serving()

        async def mcp() -> str:
            async with Client(build_server(alice)) as client:
                result = await client.call_tool(operation.name, fields)
                assert result.is_error
                return str(result.content[0].text)  # type: ignore[union-attr]

        lines["mcp"] = asyncio.run(mcp()).removeprefix(f"Error executing tool {operation.name}: ")
    if operation.route is not None:
        minds = {name: Mind.open(store_url, name, clock=clock) for name in ("alice", "bob")}
        server = Server(minds, Tokens({TOKEN_BOTH: ["alice", "bob"]}))
        try:
            api = Api(server, TOKEN_BOTH)
            lines["rest"] = api.error(operation.name, 403, mind="alice", json=fields)["error"]
        finally:
            server.stop()
    assert len(set(lines.values())) == 1, lines
