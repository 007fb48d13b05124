"""Every face shows each declared operation with the same parameters and the same rights.

The checks are derived from ``noema.operations.OPERATIONS``: an operation added
there is checked here on every face without a line of this file changing.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from concepts import RecallFilters
from concepts.episodes import Episode
from noema import ManualClock, Mind
from noema.access import NOBODY, Caller, acting_as, serving
from noema.async_mind import AsyncMind
from noema.cli import build_parser
from noema.cli._derived import dest, option_name
from noema.errors import Forbidden, InvalidInput
from noema.http.auth import Tokens
from noema.http.openapi import build_document, openapi_path
from noema.http.routes import ENDPOINTS, MIND
from noema.mcp.server import build_server
from noema.operations import BY_NAME, OPERATIONS, Operation, answer
from tests.test_access import TOKEN_BOTH, Server
from tests.test_http import Api

#: The field an operation is about (or the batch it writes), which the Python method
#: takes first, by position.
SUBJECTS = ("id", "name", "key", "path", "memories")
#: What an operator's operation takes besides its ``Mind`` method's arguments: the file
#: it opens for the method, and the confirmation (or dry run) of what cannot be undone.
OPERATOR_FIELDS = {"file", "dry_run", "yes"}
#: The operations made of other calls than one ``Mind`` method of their name.
COMPOSED = {"mind_info", "memory_events", "verify_against", "export_file", "import_file"}
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
        assert operation.route is not None or operation.mcp or operation.cli, operation.name


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.name)
def test_the_python_door_takes_every_field(operation: Operation) -> None:
    method = getattr(Mind, operation.name, None)
    if method is None:  # an answer made of other calls (mind_info, memory_events)
        assert operation.name in COMPOSED
        return
    parameters = list(inspect.signature(method).parameters.values())[1:]
    names = {p.name for p in parameters}
    taken = set(names)
    for parameter, model in WHOLE.items():
        if parameter in names:
            taken |= set(model.model_fields)
    if any(p.kind is p.VAR_KEYWORD for p in parameters) and operation.name == "recall":
        taken |= set(RecallFilters.model_fields)
    if operation.needs == "operator":
        taken |= OPERATOR_FIELDS
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


WIDER = [op for op in OPERATIONS if op.cli is not None and op.cli.request is not None]


@pytest.mark.parametrize("operation", WIDER, ids=lambda op: op.name)
def test_the_operators_wider_request_is_a_subclass_of_the_operations(operation: Operation) -> None:
    """The operation runs it as it is (``request_of``); a remote face never sees it."""
    assert operation.cli is not None and operation.cli.request is not None
    assert issubclass(operation.cli.request, operation.request)
    assert set(operation.cli.request.model_fields) >= _fields(operation)


# ---------------------------------------------------------------- the same rights on every face

#: A request of each operation that needs the right to federate.
SAMPLES: dict[str, dict[str, Any]] = {"federate": {"name": "b", "mind": "bob"}}
NEEDING = [op for op in OPERATIONS if op.needs == "federation"]


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


# ---------------------------------------------------------------- the operator's operations

OPERATOR = [op for op in OPERATIONS if op.needs == "operator"]


def test_no_server_offers_an_operator_operation() -> None:
    names = {op.name for op in OPERATOR}
    assert {"decay", "embed_missing", "reindex", "checkpoint", "import_file", "forget"} <= names
    assert "import_chat" in names
    for operation in OPERATOR:
        assert operation.route is None and not operation.mcp, operation.name
        assert operation.cli is not None, operation.name
    assert not names & {endpoint.name for endpoint in ENDPOINTS}


def _chat_export(path: Path) -> str:
    """A chat history in the generic JSONL format, written to ``path``."""
    path.write_text(
        '{"role": "user", "content": "the vault code changes on Mondays", "time": 1}\n'
        '{"role": "assistant", "content": "noted", "time": 2}\n',
        encoding="utf-8",
    )
    return str(path)


def _operator_samples(tmp_path: Path, memory_id: str, chats: str) -> dict[str, dict[str, Any]]:
    """A request of each operator operation, in an order that runs them all on one mind."""
    head, dump = str(tmp_path / "head.json"), str(tmp_path / "dump.jsonl")  # not written yet
    return {
        "decay": {},
        "embed_missing": {},
        "reindex": {},
        "consolidate": {"min_group": 2},
        "checkpoint": {"file": head},
        "verify_against": {"against": head},
        "export_file": {"file": dump},
        "import_file": {"file": dump},  # into another, empty mind
        "import_chat": {"file": chats},  # into a third
        "forget": {"ids": [memory_id], "yes": True},
    }


@pytest.mark.parametrize(
    "caller", [serving(allow_federation=True), NOBODY], ids=["served", "nobody"]
)
def test_a_servers_caller_is_refused_every_operator_operation(
    open_mind: Callable[..., Mind], tmp_path: Path, caller: Caller
) -> None:
    mind = open_mind(embedder="hash:16")
    kept = mind.remember("the vault code changes on Mondays")
    files = tmp_path / "files"
    files.mkdir()
    samples = _operator_samples(files, kept.id, _chat_export(tmp_path / "chats.jsonl"))
    assert set(samples) == {op.name for op in OPERATOR}
    before = mind.events()
    for operation in OPERATOR:
        with acting_as(caller), pytest.raises(Forbidden, match=f"^{operation.name}: "):
            answer(mind, operation, samples[operation.name], via="mcp")
    mind.caller = caller  # a mind a server binds to its caller: refused without acting_as
    with pytest.raises(Forbidden, match=r"^forget: "):
        answer(mind, BY_NAME["forget"], samples["forget"], via="http")
    assert mind.events() == before and mind.get(kept.id).id == kept.id
    assert list(files.iterdir()) == []  # no file was written


def test_the_operator_runs_every_operator_operation(
    open_mind: Callable[..., Mind], tmp_path: Path
) -> None:
    mind = open_mind(embedder="hash:16")
    kept = mind.remember("the vault code changes on Mondays")
    samples = _operator_samples(tmp_path, kept.id, _chat_export(tmp_path / "chats.jsonl"))
    copy, chats = open_mind("copy"), open_mind("chats")
    for name, fields in samples.items():
        operation = BY_NAME[name]
        target = {"import_file": copy, "import_chat": chats}.get(name, mind)
        reply = answer(target, operation, fields)
        assert operation.result is not None
        operation.result.model_validate(reply)
    assert copy.stats()["total"] == 1 and copy.verify().ok
    assert chats.stats()["total"] == 2 and chats.verify().ok
    assert mind.stats()["total"] == 0 and mind.verify().ok
    with pytest.raises(InvalidInput, match="pass --yes"):
        answer(copy, BY_NAME["forget"], {"ids": [kept.id]})
    planned = answer(copy, BY_NAME["forget"], {"ids": [kept.id], "dry_run": True})
    assert [m["id"] for m in planned["memories"]] == [kept.id]
    assert copy.stats()["total"] == 1  # a dry run removes nothing
