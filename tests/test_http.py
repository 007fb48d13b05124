"""The HTTP API (``noema serve``) against a real uvicorn server on loopback, on every backend.

Each test starts the application on a socket bound to 127.0.0.1 port 0, in a
thread, and talks to it with httpx (MCP: with the SDK's streamable HTTP client);
every successful reply is checked against the OpenAPI document's schema of its
route and status, and every error is one line of JSON naming its field.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.routing import Route

from noema import ManualClock, Mind, UsageError, errors
from noema.http.app import REQUEST_TIMEOUT, create_app, http_server, listen, status_of
from noema.http.auth import Tokens, add_token, is_loopback, read_tokens
from noema.http.openapi import MCP_PATH, openapi_path
from noema.http.routes import ENDPOINTS

NOEMA = str(Path(sys.executable).parent / "noema")
TOKEN_A = "token-for-ada-only-0123456789"
TOKEN_B = "token-for-bob-only-0123456789"
TOKEN_AB = "token-for-ada-and-bob-0123456"
BY_NAME = {op.name: op for op in ENDPOINTS}


class Live:
    """A uvicorn server in a thread over an app serving ``ada`` and ``bob``."""

    def __init__(
        self,
        minds: dict[str, Mind],
        tokens: Tokens | None,
        *,
        allow_hosts: Iterable[str] = (),
        request_timeout: float = REQUEST_TIMEOUT,
        allow_federation: bool = True,
        **flags: Any,
    ) -> None:
        self.app = create_app(
            minds,
            tokens=tokens,
            allow_hosts=allow_hosts,
            on_ready=self._ready,
            allow_federation=allow_federation,
            **flags,
        )
        self.started = threading.Event()
        self.sock = listen("127.0.0.1", 0)
        self.port: int = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = http_server(self.app, request_timeout=request_timeout)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        assert self.started.wait(30), "the server did not start"
        self.doc: dict[str, Any] = httpx.get(f"{self.url}/openapi.json").json()
        self.covered: set[str] = set()
        self.clients: list[httpx.Client] = []

    def _ready(self) -> None:
        self.started.set()

    def client(self, token: str | None) -> httpx.Client:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        client = httpx.Client(base_url=self.url, headers=headers, timeout=30)
        self.clients.append(client)
        return client

    def stop(self) -> None:
        for client in self.clients:
            client.close()
        self.server.should_exit = True
        self.thread.join(30)
        assert not self.thread.is_alive(), "the server did not stop"
        self.sock.close()


def path_of(name: str, /, **params: str) -> str:
    """The path of operation ``name`` with its parameters filled in (quoted)."""
    operation = BY_NAME[name]

    def fill(match: re.Match[str]) -> str:
        value = params[match.group(1)]
        return quote(value, safe="/" if match.group(2) == ":path" else "")

    return re.sub(r"\{(\w+)(:\w+)?\}", fill, operation.path)


def validator(doc: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator({**schema, "components": doc["components"]})


def check_reply(doc: dict[str, Any], method: str, path: str, reply: httpx.Response) -> None:
    """The reply matches the document: its status is listed, a JSON body fits its schema."""
    entry = doc["paths"][path][method.lower()]
    assert str(reply.status_code) in entry["responses"], (path, reply.status_code, reply.text)
    content = entry["responses"][str(reply.status_code)]["content"]
    if "application/json" in content:
        validator(doc, content["application/json"]["schema"]).validate(reply.json())
    if reply.status_code >= 400:
        assert_one_line_error(reply)


def assert_one_line_error(reply: httpx.Response) -> None:
    assert 400 <= reply.status_code < 500, (reply.status_code, reply.text)
    assert reply.headers["content-type"].startswith("application/json")
    body = reply.json()
    assert set(body) == {"error", "field"}, body
    assert isinstance(body["error"], str) and body["error"]
    assert "\n" not in body["error"] and "Traceback" not in body["error"]
    assert body["field"] is None or isinstance(body["field"], str)


class Api:
    """Calls operations by name, checks each reply against the document, records coverage."""

    def __init__(self, live: Live, token: str | None) -> None:
        self.live = live
        self.http = live.client(token)

    def send(self, name: str, /, *, params: dict[str, Any] | None = None, **where: Any) -> Any:
        operation = BY_NAME[name]
        body = where.pop("json", None)
        kwargs: dict[str, Any] = {"params": params}
        if body is not None:
            kwargs["json"] = body
        reply = self.http.request(operation.method, path_of(name, **where), **kwargs)
        check_reply(self.live.doc, operation.method, openapi_path(operation.path), reply)
        return reply

    def ok(self, name: str, /, **kwargs: Any) -> Any:
        reply = self.send(name, **kwargs)
        assert reply.status_code == BY_NAME[name].status, (name, reply.status_code, reply.text)
        self.live.covered.add(name)
        return reply.json() if BY_NAME[name].response is not None else reply.text

    def error(self, name: str, status: int, /, **kwargs: Any) -> dict[str, Any]:
        reply = self.send(name, **kwargs)
        assert reply.status_code == status, (name, reply.status_code, reply.text)
        return dict(reply.json())


@pytest.fixture
def live(store_url: str, clock: ManualClock) -> Iterator[Live]:
    minds = {name: Mind.open(store_url, name, clock=clock) for name in ("ada", "bob")}
    tokens = Tokens({TOKEN_A: ["ada"], TOKEN_B: ["bob"], TOKEN_AB: ["ada", "bob"]})
    server = Live(minds, tokens)
    yield server
    server.stop()


def counts(api: Api, mind: str) -> tuple[int, int]:
    """The mind's memories and events (reads that write nothing)."""
    total = api.ok("stats", mind=mind)["total"]
    events = api.ok("events", mind=mind, params={"limit": 10_000})["events"]
    return total, len(events)


# ---------------------------------------------------------------- every route


def test_every_route_answers_as_its_document_says(live: Live, clock: ManualClock) -> None:
    api, both, nobody = Api(live, TOKEN_A), Api(live, TOKEN_AB), Api(live, None)
    assert nobody.ok("server_health")["status"] == "ok"
    assert api.ok("list_minds") == {"minds": ["ada"]}
    assert both.ok("list_minds") == {"minds": ["ada", "bob"]}
    assert api.ok("mind_info", mind="ada")["name"] == "ada"

    lisbon = api.ok(
        "remember",
        mind="ada",
        json={
            "content": "Ada lives in Lisbon",
            "key": "user.home_city",
            "epistemic": "fact",
            "tags": ["home"],
            "payload": {"source": "chat", "turn": 3},
            "world": "personal/places",
        },
    )
    assert lisbon["world"] == "personal/places" and lisbon["channel"] == "tool"
    assert api.ok("fact", mind="ada", key="user.home_city")["id"] == lisbon["id"]
    tea = api.ok("remember", mind="ada", json={"content": "Ada drinks green tea"})
    coffee = api.ok(
        "remember",
        mind="ada",
        json={
            "content": "Ada drinks coffee before standup",
            "kind": "episodic",
            "links": [{"relation": "related_to", "target": tea["id"]}],
        },
    )
    clock.advance(seconds=60)

    recalled = api.ok("recall", mind="ada", json={"query": "where does Ada live", "limit": 3})
    assert recalled["results"][0]["id"] == lisbon["id"]
    assert recalled["results"][0]["world"] == "personal/places"
    assert recalled["warnings"] == []
    scoped = api.ok(
        "recall",
        mind="ada",
        json={"query": "Ada", "world": "personal", "peek": True, "kinds": ["semantic"]},
    )
    assert [r["id"] for r in scoped["results"]] == [lisbon["id"]]
    listed = api.ok("timeline", mind="ada", params={"kinds": ["episodic"], "limit": 5})
    assert [m["id"] for m in listed["memories"]] == [coffee["id"]]

    detail = api.ok("get", mind="ada", id=coffee["id"])
    assert [e["relation"] for e in detail["relationships"]] == ["related_to"]
    when = {"known_at": coffee["recorded_at"]}
    then = api.ok("get", mind="ada", id=coffee["id"], params=when)
    assert then["recorded_at"] == coffee["recorded_at"] and len(then["relationships"]) == 1
    kinds = [e["kind"] for e in api.ok("memory_events", mind="ada", id=lisbon["id"])["events"]]
    assert kinds[0] == "memory_created" and "memory_retrieved" in kinds

    rated = api.ok("feedback", mind="ada", id=tea["id"], json={"value": 1.0, "note": "true"})
    assert rated["feedback_count"] == 1
    porto = api.ok("supersede", mind="ada", id=lisbon["id"], json={"content": "Ada lives in Porto"})
    assert porto["key"] == "user.home_city" and porto["world"] == "personal/places"
    assert api.ok("get", mind="ada", id=lisbon["id"])["status"] == "superseded"
    assert api.ok("verify_memory", mind="ada", id=porto["id"], json={})["lifecycle"] == "verified"
    rejected = api.ok("reject_memory", mind="ada", id=tea["id"], json={"reason": "she quit tea"})
    assert rejected["lifecycle"] == "rejected"
    back = api.ok("reinstate_memory", mind="ada", id=tea["id"], json={"reason": "she is back"})
    assert back["lifecycle"] != "rejected"
    retracted = api.ok("retract", mind="ada", id=coffee["id"], json={"reason": "never happened"})
    assert retracted["status"] == "retracted"

    below = {"content": "Ada might like mint", "confidence": 0.1, "force": True}
    assert "force" in api.error("remember", 422, mind="ada", json=below)["error"]  # the operator's
    duplicate = api.ok("remember", mind="ada", json={"content": "Ada likes green tea a lot"})
    proposal = api.ok(
        "relate",
        mind="ada",
        json={"src": duplicate["id"], "relation": "same_as", "dst": tea["id"]},
    )
    assert proposal["status"] == "proposed" and proposal["source"] == "http"
    pending = api.ok("proposals", mind="ada")["proposals"]
    assert [p["id"] for p in pending] == [proposal["id"]]
    assert pending[0]["dst_content"] == "Ada drinks green tea"
    assert api.ok("reject", mind="ada", id=proposal["id"])["status"] == "rejected"
    other = api.ok("remember", mind="ada", json={"content": "Ada enjoys green tea daily"})
    again = api.ok(
        "relate",
        mind="ada",
        json={"src": other["id"], "relation": "same_as", "dst": tea["id"], "confidence": 0.9},
    )
    assert api.ok("approve", mind="ada", id=again["id"], json={})["status"] == "active"

    assert api.ok("create_world", mind="ada", json={"path": "work/alpha"})["path"] == "work/alpha"
    api.ok("create_world", mind="ada", json={"path": "work/beta"})
    renamed = api.ok("rename_world", mind="ada", json={"path": "work/beta", "name": "gamma"})
    assert renamed["path"] == "work/gamma"
    moved = api.ok("move_world", mind="ada", json={"path": "work/gamma", "parent": "personal"})
    assert moved["path"] == "personal/gamma"
    linked = api.ok("link_worlds", mind="ada", json={"src": "work/alpha", "dst": "personal/gamma"})
    assert linked["links"] == ["personal/gamma"]
    unlinked = api.ok(
        "unlink_worlds", mind="ada", json={"src": "work/alpha", "dst": "personal/gamma"}
    )
    assert unlinked["links"] == []
    paths = [w["path"] for w in api.ok("worlds", mind="ada")["worlds"]]
    assert paths[0] == "" and "personal/places" in paths
    assert api.ok("world", mind="ada", path="personal/places")["memories"] == 1

    events = api.ok("events", mind="ada", params={"kinds": ["memory_created"], "limit": 2})
    assert [e["kind"] for e in events["events"]] == ["memory_created"] * 2
    created = {"kinds": ["memory_created"], "limit": 10_000}
    every = api.ok("events", mind="ada", params=created)["events"]
    assert events["events"] == every[-2:]  # the newest, oldest first
    first = api.ok("events", mind="ada", params={**created, "limit": 2, "after_seq": 0})
    assert first["events"] == every[:2]  # after a position: the first after it
    later = api.ok("events", mind="ada", params={"after_seq": events["events"][-1]["seq"]})
    assert all(e["seq"] > events["events"][-1]["seq"] for e in later["events"])
    report = api.ok("health", mind="ada", params={"rules": ["duplicate"], "limit": 5})
    assert report["mind"] == "ada" and set(report["scanned"]) == {"duplicate"}
    assert api.ok("verify", mind="ada")["ok"] is True
    lines = [json.loads(line) for line in api.ok("export", mind="ada").splitlines()]
    assert lines[0]["type"] == "header" and any(r.get("id") == porto["id"] for r in lines)
    only = api.ok("export", mind="ada", params={"world": "work"}).splitlines()
    assert len(only) < len(lines)
    stats = api.ok("stats", mind="ada")
    assert stats["mind"] == "ada" and stats["total"] == 6

    run = {
        "task": "Fix the flaky deploy",
        "outcome": "success",
        "role": "ops",
        "agent": "bot-1",
        "approach": "retry with backoff",
        "actions": [{"tool": "shell", "arguments": "deploy.sh", "result": "ok", "duration_ms": 9}],
        "learnings": ["retry twice"],
        "rating": 0.9,
        "world": "work/alpha",
        "tags": ["deploy"],
    }
    episode = api.ok("record_episode", mind="ada", json=run)
    assert episode["outcome"] == "success" and episode["world"] == "work/alpha"
    failed = {"task": "Fix the deploy once more", "outcome": "failure", "role": "ops"}
    api.ok("record_episode", mind="ada", json=failed)
    listed = api.ok("episodes", mind="ada", params={"outcome": "success"})
    assert [e["id"] for e in listed["episodes"]] == [episode["id"]]
    assert api.ok("episode", mind="ada", id=episode["id"])["task"] == "Fix the flaky deploy"
    asked = {"query": "flaky deploy", "role": "ops", "outcome": "success"}
    found = api.ok("recall_episodes", mind="ada", json=asked)["results"]
    assert [r["id"] for r in found] == [episode["id"]]
    assert found[0]["episode"]["outcome"] == "success" and found[0]["world"] == "work/alpha"
    both_runs = api.ok("recall_episodes", mind="ada", json={"query": "deploy", "peek": True})
    assert len(both_runs["results"]) == 2
    assert api.ok("episode_stats", mind="ada", params={"role": "ops"})["episodes"] == 2
    runs = [{"task": "Rotate the staging keys", "outcome": "partial", "channel": "user"}]
    [rotated] = api.ok("record_episodes", mind="ada", json={"episodes": runs})["episodes"]
    assert api.ok("get", mind="ada", id=rotated["id"])["channel"] == "user"
    batch = [{"content": "Ada plays the cello"}, {"content": "Ada sings bass", "tags": ["music"]}]
    written = api.ok("remember_many", mind="ada", json={"memories": batch})["memories"]
    assert [m["content"] for m in written] == ["Ada plays the cello", "Ada sings bass"]

    both.ok("remember", mind="bob", json={"content": "Bob keeps the Lisbon office keys"})
    peer = both.ok("federate", mind="ada", json={"name": "bob", "mind": "bob"})
    assert peer["mind"] == "bob" and peer["url"] is None
    assert [p["name"] for p in api.ok("peers", mind="ada")["peers"]] == ["bob"]
    federated = api.ok("recall", mind="ada", json={"query": "Lisbon office keys"})
    assert any(r["peer"] == "bob" for r in federated["results"])
    trusted = api.ok("peer_feedback", mind="ada", name="bob", json={"value": 1.0})
    assert trusted["alpha"] > peer["alpha"]
    assert api.ok("unfederate", mind="ada", name="bob")["name"] == "bob"
    assert api.ok("peers", mind="ada")["peers"] == []

    assert live.covered == set(BY_NAME), sorted(set(BY_NAME) - live.covered)


# ---------------------------------------------------------------- auth


def _sample_call(name: str, ids: dict[str, str]) -> dict[str, Any]:
    """Plausible arguments for every operation, for the scoping checks."""
    bodies: dict[str, Any] = {
        "remember": {"content": "a secret of ada's"},
        "recall": {"query": "secret"},
        "retract": {"reason": "r"},
        "reject_memory": {"reason": "r"},
        "supersede": {"content": "new"},
        "feedback": {"value": 0.5},
        "relate": {"src": ids["memory"], "relation": "supports", "dst": ids["memory"]},
        "create_world": {"path": "w"},
        "rename_world": {"path": "w", "name": "v"},
        "move_world": {"path": "w", "parent": ""},
        "link_worlds": {"src": "w", "dst": "w"},
        "unlink_worlds": {"src": "w", "dst": "w"},
        "federate": {"name": "p", "mind": "bob"},
        "record_episode": {"task": "t", "outcome": "success"},
        "peer_feedback": {"value": 1.0},
    }
    operation = BY_NAME[name]
    where: dict[str, Any] = {
        "mind": "ada",
        "id": ids["memory"],
        "path": "w",
        "name": "p",
        "key": "k",
    }
    params = re.findall(r"\{(\w+)", operation.path)
    call: dict[str, Any] = {k: v for k, v in where.items() if k in params}
    if operation.body is not None:
        call["json"] = bodies.get(name, {})
    return call


def test_a_token_opens_its_minds_and_no_other(live: Live) -> None:
    ada, bob, both, nobody = (Api(live, t) for t in (TOKEN_A, TOKEN_B, TOKEN_AB, None))
    stranger = Api(live, "token-that-nobody-ever-granted-42")
    memory = ada.ok("remember", mind="ada", json={"content": "Ada's door code is in the safe"})
    before = counts(ada, "ada")
    per_mind = [op.name for op in ENDPOINTS if "{mind}" in op.path]
    for name in per_mind:
        call = _sample_call(name, {"memory": memory["id"]})
        assert "token does not open mind 'ada'" in bob.error(name, 403, **call)["error"]
        assert nobody.error(name, 401, **call)["error"].startswith("authorization:")
        assert stranger.error(name, 401, **call)["error"] == "authorization: the token is not known"
        assert both.error(name, 404, **{**call, "mind": "zed"})["field"] == "mind"
    assert counts(ada, "ada") == before
    unknown = bob.http.get("/v1/minds/ada/stats", headers={"Authorization": "Basic abc"})
    assert unknown.status_code == 401 and unknown.headers["www-authenticate"].startswith("Bearer")
    assert nobody.error("list_minds", 401)["field"] is None

    # ada may not subscribe to bob with a token that cannot read bob: recall would leak him.
    refused = ada.error("federate", 403, mind="ada", json={"name": "b", "mind": "bob"})
    assert refused["field"] == "mind"
    assert ada.ok("peers", mind="ada")["peers"] == []
    # An id of ada's memory is not bob's, even with a token that opens both.
    assert both.error("get", 404, mind="bob", id=memory["id"])["error"]
    mcp = bob.http.post("/v1/minds/ada/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert mcp.status_code == 403
    assert_one_line_error(mcp)
    assert nobody.http.post("/v1/minds/ada/mcp", json={}).status_code == 401


def test_the_tokens_file_is_read_at_run_time(tmp_path: Path) -> None:
    file = tmp_path / "tokens"
    first = add_token(file, "ada")
    second = add_token(file, "team notes")
    assert oct(file.stat().st_mode & 0o777) == "0o600"
    tokens = read_tokens(file)
    assert tokens.minds == ["ada", "team notes"]
    grant = tokens.grant(first)
    assert grant is not None and grant.allows("ada") and not grant.allows("team notes")
    assert tokens.grant(second) is not None and tokens.grant(first[:-1]) is None
    assert tokens.grant(None) is None and tokens.grant("") is None
    file.write_text("# comment\n\nada short\n", encoding="utf-8")
    with pytest.raises(UsageError, match="line 3: a token is 16 to 512"):
        read_tokens(file)
    file.write_text("justonefield\n", encoding="utf-8")
    with pytest.raises(UsageError, match="line 1: not a grant"):
        read_tokens(file)
    with pytest.raises(UsageError, match="cannot read"):
        read_tokens(tmp_path / "missing")


def test_without_tokens_only_loopback_is_served(store_url: str, clock: ManualClock) -> None:
    mind = Mind.open(store_url, "ada", clock=clock)
    try:
        with pytest.raises(UsageError, match="without auth"):
            create_app({"ada": mind}, tokens=None, host="0.0.0.0")
    except BaseException:
        mind.close()
        raise
    server = Live({"ada": mind}, None)
    try:
        api = Api(server, None)
        assert api.ok("list_minds") == {"minds": ["ada"]}
        api.ok("remember", mind="ada", json={"content": "served without auth on loopback"})
        rebound = api.http.get("/v1/minds/ada/stats", headers={"Host": "evil.example:80"})
        assert rebound.status_code == 421
        assert_one_line_error(rebound)
    finally:
        server.stop()


# ---------------------------------------------------------------- Host, Origin, connections

#: Hosts a rebinding page (or a confused proxy) may send: never answered ({port}: the server's).
REFUSED_HOSTS = [
    "127.rebind.example:{port}",
    "127.0.0.1:{port}@evil.example",
    "localhost.evil.example:{port}",
    "127.0.0.1.nip.io:{port}",
    "[::1]@x",
    "[::1]@x:{port}",
    "evil.example:{port}",
    "127.0.0.1:{wrong}",
    "localhost",
    "127.0.0.2:{port}",
]
ANSWERED_HOSTS = ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "LocalHost:{port}"]
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-03-26",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def raw_exchange(port: int, data: bytes, *, wait: float = 30.0) -> bytes:
    """Send ``data`` on a new connection and read until the server closes it (``wait`` at most)."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as conn:
        conn.sendall(data)
        chunks = []
        while chunk := conn.recv(65_536):
            chunks.append(chunk)
    return b"".join(chunks)


def status_line(reply: bytes) -> str:
    return reply.split(b"\r\n", 1)[0].decode("latin-1")


def assert_refused(http: httpx.Client, host: str, status: int = 421, **headers: str) -> None:
    """A write, the OpenAPI document, the MCP endpoint and an unknown path all answer ``status``."""
    sent = {"Host": host, **headers}
    replies = [
        http.post("/v1/minds/ada/memories", json={"content": f"via {host}"}, headers=sent),
        http.get("/openapi.json", headers=sent),
        http.get("/v1/health", headers=sent),
        http.post("/v1/minds/ada/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **sent}),
        http.get("/no/such/path", headers=sent),
    ]
    for reply in replies:
        assert reply.status_code == status, (host, reply.request.url, reply.text)
        assert_one_line_error(reply)


def test_only_exact_hosts_are_answered(store_url: str, clock: ManualClock) -> None:
    server = Live({"ada": Mind.open(store_url, "ada", clock=clock)}, None)
    try:
        api = Api(server, None)
        fill = {"port": str(server.port), "wrong": str(server.port % 60_000 + 1)}
        for host in REFUSED_HOSTS:
            assert_refused(api.http, host.format(**fill))
        without_host = [  # HTTP/1.0 may leave Host out; the server may not answer it
            b"GET /openapi.json HTTP/1.0\r\n\r\n",
            b"POST /v1/minds/ada/mcp HTTP/1.0\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: 2\r\n\r\n{}",
            b"POST /v1/minds/ada/memories HTTP/1.0\r\nContent-Type: application/json\r\n"
            b'Content-Length: 15\r\n\r\n{"content":"x"}',
        ]
        for request in without_host:
            reply = raw_exchange(server.port, request)
            assert status_line(reply) == "HTTP/1.1 421 Misdirected Request", reply
            assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"].startswith("host: ")
        twice = b"Host: 127.0.0.1:%d\r\nHost: evil.example\r\n" % server.port
        for head in (b"", twice):  # HTTP/1.1 without Host, or with two: h11 answers 400 itself
            request = b"GET /v1/health HTTP/1.1\r\n" + head + b"Connection: close\r\n\r\n"
            assert status_line(raw_exchange(server.port, request)).startswith("HTTP/1.1 400")
        origin = f"http://127.0.0.1:{server.port}"
        assert_refused(api.http, f"127.0.0.1:{server.port}", 403, Origin="http://evil.example")
        assert_refused(api.http, f"127.0.0.1:{server.port}", 403, Origin="null")
        assert api.ok("stats", mind="ada")["total"] == 0  # nothing refused was written
        for host in ANSWERED_HOSTS:
            sent = {"Host": host.format(**fill)}
            wrote = api.http.post("/v1/minds/ada/memories", json={"content": host}, headers=sent)
            assert wrote.status_code == 201, (host, wrote.text)
            assert api.http.get("/openapi.json", headers=sent).status_code == 200
            mcp = api.http.post(
                "/v1/minds/ada/mcp", json=INITIALIZE, headers={**MCP_HEADERS, **sent}
            )
            assert mcp.status_code == 200, (host, mcp.text)
        same = api.http.get("/v1/health", headers={"Origin": origin})
        assert same.status_code == 200
        assert api.ok("stats", mind="ada")["total"] == len(ANSWERED_HOSTS)
    finally:
        server.stop()


def test_hosts_are_checked_with_tokens_too_and_the_operator_adds_names(
    store_url: str, clock: ManualClock
) -> None:
    minds = {"ada": Mind.open(store_url, "ada", clock=clock)}
    extra = ["Noema.Example", "proxy.example:8443", "[::1]:9"]
    server = Live(minds, Tokens({TOKEN_A: ["ada"]}), allow_hosts=extra)
    try:
        api = Api(server, TOKEN_A)
        port = server.port
        for host in [h.format(port=port, wrong=port % 60_000 + 1) for h in REFUSED_HOSTS] + [
            f"proxy.example:{port}",
            "proxy.example",
            f"noema.example.evil:{port}",
            "[::1]:10",
        ]:
            assert_refused(api.http, host)
        assert api.ok("stats", mind="ada")["total"] == 0
        for host in ["noema.example", f"NOEMA.example:{port}", "proxy.example:8443", "[::1]:9"]:
            wrote = api.http.post(
                "/v1/minds/ada/memories", json={"content": host}, headers={"Host": host}
            )
            assert wrote.status_code == 201, (host, wrote.text)
        refused = api.http.get("/v1/minds/ada/stats", headers={"Authorization": "Bearer no"})
        assert refused.status_code == 401  # the Host passed; the token is still needed
    finally:
        server.stop()
    for bad in ["a/b", "[::1", "::1", "x:0", "x:65536", "x:８０", "", "127.0.0.1:80@evil", "a b"]:
        with pytest.raises(errors.ConfigError, match="--allow-host"):
            create_app({}, tokens=None, allow_hosts=[bad])


def test_a_bind_address_is_loopback_by_its_address_not_its_spelling() -> None:
    for host in ["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "[::1]", "localhost"]:
        assert is_loopback(host), host
    for host in ["127.rebind.example", "127.0.0.1.nip.io", "0.0.0.0", "::", "10.0.0.1", "x"]:
        assert not is_loopback(host), host
    with pytest.raises(UsageError, match="without auth"):
        create_app({}, tokens=None, host="127.rebind.example")


def test_a_client_gone_mid_body_leaves_no_traceback(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'noema.db'}"
    env = {**os.environ, "NOEMA_EMBEDDER": "none"}
    process = subprocess.Popen(
        [NOEMA, "--db", db, "serve", "--port", "0", "--mind", "ada"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        match = re.search(r"on http://127\.0\.0\.1:(\d+)", process.stdout.readline())
        assert match
        port = int(match.group(1))
        for path in ("/v1/minds/ada/memories", "/v1/minds/ada/mcp", "/v1/minds/ada/recall"):
            head = (
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                "Content-Length: 400\r\n\r\n"
            )
            for _ in range(3):
                with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
                    conn.sendall(head.encode() + b'{"content": "half a bo')
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            assert http.get("/v1/minds/ada/stats").json()["total"] == 0
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)  # a stop waits for every request under way
    assert process.returncode == 0, err
    assert "Traceback" not in err and len(err.splitlines()) <= 1, err


def test_a_request_that_never_arrives_whole_is_closed(store_url: str, clock: ManualClock) -> None:
    server = Live({"ada": Mind.open(store_url, "ada", clock=clock)}, None, request_timeout=2)
    try:
        head = f"POST /v1/minds/ada/memories HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        starts = [
            b"",
            b"GE",
            head.encode(),
            (head + "Content-Type: application/json\r\nContent-Length: 50\r\n\r\n{").encode(),
        ]
        conns = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(40)]
        try:
            for number, conn in enumerate(conns):
                conn.sendall(starts[number % len(starts)])
            # A kept-alive connection that begins a second request and stops.
            health = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % server.port
            kept = socket.create_connection(("127.0.0.1", server.port), timeout=60)
            conns.append(kept)
            kept.sendall(health)
            reply = b""
            while not reply.endswith(b"}"):  # the whole of the first reply
                reply += kept.recv(65_536)
            assert reply.startswith(b"HTTP/1.1 200"), reply
            kept.sendall(health[:20])
            for conn in conns:
                conn.settimeout(60)  # closed two seconds in; a minute is the bound
                try:
                    reply = conn.recv(65_536)
                except ConnectionResetError:
                    reply = b""
                assert reply == b"", reply
        finally:
            for conn in conns:
                conn.close()
        api = Api(server, None)  # the server still answers, and nothing was written
        assert api.ok("stats", mind="ada")["total"] == 0
    finally:
        server.stop()


def test_the_tokens_file_is_kept_to_its_owner(tmp_path: Path) -> None:
    file = tmp_path / "tokens"
    file.write_text(f"ada {TOKEN_A}\n", encoding="utf-8")
    file.chmod(0o644)  # written by hand, or by an older noema
    token = add_token(file, "bob")
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    tokens = read_tokens(file)
    assert tokens.minds == ["ada", "bob"] and tokens.grant(token) is not None
    file.chmod(0o644)
    with pytest.raises(errors.ConfigError, match=r"open to other users \(mode 0644\).*chmod 600"):
        read_tokens(file)
    file.chmod(0o620)
    with pytest.raises(errors.ConfigError, match="mode 0620"):
        read_tokens(file)
    env = {**os.environ, "NOEMA_EMBEDDER": "none"}
    db = f"sqlite:///{tmp_path / 'noema.db'}"
    refused = subprocess.run(
        [NOEMA, "--db", db, "serve", "--tokens", str(file), "--port", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert refused.returncode == 2, refused
    assert refused.stderr.strip().count("\n") == 0 and "chmod 600" in refused.stderr


# ---------------------------------------------------------------- errors


BAD_REQUESTS: list[tuple[str, dict[str, Any], int, str | None]] = [
    # (operation, arguments, status, field)
    ("remember", {"json": {}}, 422, "content"),
    ("remember", {"json": {"content": ""}}, 422, "content"),
    ("remember", {"json": {"content": 42}}, 422, "content"),
    ("remember", {"json": {"content": "x", "importance": 2}}, 422, "importance"),
    ("remember", {"json": {"content": "x", "importance": "0.5"}}, 422, "importance"),
    ("remember", {"json": {"content": "x", "channel": "operator"}}, 422, "channel"),
    ("remember", {"json": {"content": "x", "kind": "dream"}}, 422, "kind"),
    ("remember", {"json": {"content": "x", "surprise": 1}}, 422, "surprise"),
    ("remember", {"json": {"content": "x", "tags": "one"}}, 422, "tags"),
    ("remember", {"json": {"content": "x" * 100_001}}, 422, "content"),
    ("remember", {"json": {"content": "x", "world": "../up"}}, 422, "world"),
    ("remember", {"json": {"content": "x", "valid_from": "yesterday-ish"}}, 422, "valid_from"),
    ("remember", {"json": {"content": "x", "valid_from": "1767268800"}}, 422, "valid_from"),
    ("remember", {"json": {"content": "x", "valid_from": "2026-01-01T10:00"}}, 422, "valid_from"),
    ("remember", {"json": {"content": " \u3000 "}}, 422, "content"),
    ("remember", {"json": {"content": "x", "tags": ["bell\x07"]}}, 422, "tags.0"),
    ("remember", {"json": {"content": "x", "payload": {"a": ["\x00"]}}}, 422, None),
    (
        "remember",
        {"json": {"content": "x", "links": [{"relation": "supports", "target": "no"}]}},
        404,
        None,
    ),
    ("remember", {"json": {"content": "my password is hunter2"}}, 422, None),
    ("remember", {"json": ["content"]}, 422, None),
    ("recall", {"json": {"query": "x", "limit": 0}}, 422, "limit"),
    ("recall", {"json": {"query": "x", "limit": 10**30}}, 422, "limit"),
    ("recall", {"json": {"query": "x", "as_of": "not a time"}}, 422, None),
    ("recall", {"json": {"query": "x", "statuses": ["gone"]}}, 422, "statuses.0"),
    ("recall", {"json": {"query": "x", "peek": "yes"}}, 422, "peek"),
    ("recall", {"json": {"query": "x", "min_feedback": 3}}, 422, "min_feedback"),
    ("get", {"id": "no-such-memory"}, 404, None),
    ("get", {"id": "x", "params": {"known_at": "soon"}}, 422, "known_at"),
    ("get", {"id": "x", "params": {"known_at": ""}}, 422, "known_at"),
    ("get", {"id": "x", "params": {"verbose": "1"}}, 422, "verbose"),
    ("retract", {"id": "no-such-memory", "json": {"reason": "r"}}, 404, None),
    ("retract", {"id": "x", "json": {}}, 422, "reason"),
    ("retract", {"id": "x", "json": {"reason": "\v"}}, 422, "reason"),
    ("feedback", {"id": "x", "json": {"value": 2}}, 422, "value"),
    ("relate", {"json": {"src": "a", "relation": "likes", "dst": "b"}}, 422, "relation"),
    ("relate", {"json": {"src": "a", "relation": "supports", "dst": "b"}}, 404, None),
    ("approve", {"id": "no-such-edge", "json": {}}, 404, None),
    ("approve", {"id": "x", "json": {"now": True}}, 422, "now"),
    ("memory_events", {"id": "x", "params": {"limit": "0"}}, 422, "limit"),
    ("timeline", {"params": {"limit": ["1", "2"]}}, 422, "limit"),
    ("health", {"params": {"rules": ["no_such_rule"]}}, 422, "rules"),
    ("world", {"path": "nowhere"}, 404, None),
    ("create_world", {"json": {"path": "a/" * 20}}, 422, None),
    ("rename_world", {"json": {"path": "nowhere", "name": "x"}}, 404, None),
    ("rename_world", {"json": {"path": "/", "name": "x"}}, 422, "path"),
    ("move_world", {"json": {"path": "", "parent": "a"}}, 422, "path"),
    ("peer_feedback", {"name": "nobody", "json": {"value": 1.0}}, 404, None),
    ("unfederate", {"name": "nobody"}, 404, None),
    ("federate", {"json": {"name": "b", "mind": "bob", "url": "sqlite:////etc/x"}}, 403, "url"),
    ("export", {"params": {"world": "no such world!"}}, 422, None),
    ("record_episode", {"json": {"task": "x"}}, 422, "outcome"),
    ("record_episode", {"json": {"task": "x", "outcome": "meh"}}, 422, "outcome"),
    ("record_episode", {"json": {"task": "x", "outcome": "success", "world": "a b"}}, 422, None),
    ("episode", {}, 404, None),  # the kept memory is not an episode
    ("recall_episodes", {"json": {"limit": 0}}, 422, "limit"),
    ("episodes", {"params": {"outcome": "meh"}}, 422, "outcome"),
]


def test_bad_input_is_a_one_line_4xx_and_writes_nothing(live: Live) -> None:
    api = Api(live, TOKEN_AB)
    kept = api.ok("remember", mind="ada", json={"content": "Ada lives in Lisbon"})
    before = counts(api, "ada")
    for name, arguments, status, field in BAD_REQUESTS:
        where = {"mind": "ada", **arguments}
        if "{id}" in BY_NAME[name].path and "id" not in where:
            where["id"] = kept["id"]
        if BY_NAME[name].body is not None and "json" not in where:
            where["json"] = {}
        error = api.error(name, status, **where)
        if field is not None:
            assert error["field"] == field, (name, arguments, error)
    raw = api.http
    url = path_of("recall", mind="ada")
    for content, kind, status in (
        (b'{"query": "x"', "application/json", 400),
        (b" \n", "application/json", 400),
        (b"\xff\xfe not utf-8", "application/json", 400),
        (b"[" * 10_000 + b"]" * 10_000, "application/json", 400),
        (b'{"query": "x", "min_confidence": NaN}', "application/json", 422),
        (b'{"query": "x"}', "text/plain", 415),
        (b"query=x", "application/x-www-form-urlencoded", 415),
        (b'{"query": "' + b"x" * 1_100_000 + b'"}', "application/json", 413),
    ):
        reply = raw.post(url, content=content, headers={"Content-Type": kind})
        assert reply.status_code == status, (content[:40], reply.text)
        assert_one_line_error(reply)
    for method, path, status in (
        ("GET", "/v1/minds/ada/nothing-here", 404),
        ("PUT", path_of("stats", mind="ada"), 405),
        ("GET", path_of("stats", mind="ada") + "?x=1", 422),
    ):
        reply = raw.request(method, path)
        assert reply.status_code == status, (path, reply.text)
        assert_one_line_error(reply)
    assert counts(api, "ada") == before
    assert api.ok("verify", mind="ada")["ok"] is True


def test_a_change_the_state_forbids_is_a_409(live: Live) -> None:
    api = Api(live, TOKEN_A)
    kept = api.ok("remember", mind="ada", json={"content": "Ada lives in Lisbon"})
    api.ok("verify_memory", mind="ada", id=kept["id"], json={})
    api.error("verify_memory", 409, mind="ada", id=kept["id"], json={})
    api.ok("retract", mind="ada", id=kept["id"], json={"reason": "she moved"})
    again = api.error("retract", 409, mind="ada", id=kept["id"], json={"reason": "again"})
    assert "already retracted" in again["error"]
    api.error("supersede", 409, mind="ada", id=kept["id"], json={"content": "Ada lives in Porto"})


def test_a_batch_writes_every_item_or_none(live: Live) -> None:
    api = Api(live, TOKEN_A)
    three = [{"content": f"Ada visited city number {n}", "kind": "episodic"} for n in (1, 2, 3)]
    written = api.ok("remember_many", mind="ada", json={"memories": three})["memories"]
    assert [m["content"] for m in written] == [m["content"] for m in three]
    assert {m["channel"] for m in written} == {"tool"}
    assert counts(api, "ada")[0] == 3
    assert api.error("get", 404, mind="ada", id="batch")["error"]  # a GET is still `get`

    before = counts(api, "ada")
    credential = [{"content": "Ada likes jazz"}, {"content": "my password is hunter2"}]
    too_long = [{"content": "Ada likes jazz"}, {"content": "x" * 100_001}]
    refused = api.error("remember_many", 422, mind="ada", json={"memories": credential})
    assert refused["error"].startswith("item 2: content: the text holds a credential"), refused
    for memories, field in (
        (too_long, "memories.1.content"),
        ([{"content": "Ada likes jazz", "force": True}], "memories.0.force"),
        ([{"content": "Ada likes jazz", "at": "2026-01-01"}], "memories.0.at"),
        ([], "memories"),
        ([{"content": "Ada likes jazz"}] * 1_001, "memories"),
    ):
        error = api.error("remember_many", 422, mind="ada", json={"memories": memories})
        assert error["field"] == field, error
    episodes = [
        {"task": "Ship the release", "outcome": "success"},
        {"task": "Ship it again", "outcome": "maybe"},
    ]
    error = api.error("record_episodes", 422, mind="ada", json={"episodes": episodes})
    assert error["field"] == "episodes.1.outcome", error
    assert counts(api, "ada") == before

    recorded = api.ok("record_episodes", mind="ada", json={"episodes": episodes[:1] * 2})
    assert [e["task"] for e in recorded["episodes"]] == ["Ship the release"] * 2
    assert counts(api, "ada")[0] == before[0] + 1  # the same run twice is reinforced


def test_what_json_and_http_allow_is_taken(live: Live) -> None:
    api = Api(live, TOKEN_A)
    api.ok(
        "remember", mind="ada", json={"content": "Ada lives in Lisbon", "valid_from": "2026-01-01"}
    )
    found = api.ok("recall", mind="ada", json={"query": "Lisbon", "limit": 5.0, "seed": 7.0})
    assert len(found["results"]) == 1
    api.error("recall", 422, mind="ada", json={"query": "Lisbon", "limit": 5.5})
    for name, methods in (("timeline", {"GET", "POST"}), ("worlds", {"GET", "POST"})):
        reply = api.http.request("OPTIONS", path_of(name, mind="ada"))
        assert reply.status_code == 405, reply.text
        assert methods <= {m.strip() for m in reply.headers["allow"].split(",")}
        assert_one_line_error(reply)


def test_noemas_errors_map_to_statuses() -> None:
    expected = {
        errors.NotFound("x"): 404,
        errors.TemporalOrderError("x"): 409,
        errors.Conflict("x"): 409,
        errors.InvalidInput("x"): 422,
        errors.PolicyViolation("x"): 422,
        errors.CrossMindError("x"): 422,
        errors.ConfigError("x"): 422,
        errors.UsageError("x"): 400,
        errors.StorageError("x"): 503,
        errors.IntegrityError("x"): 500,
        errors.MigrationError("x"): 500,
    }
    assert {type(e).__name__: status_of(e) for e in expected} == {
        type(e).__name__: status for e, status in expected.items()
    }


# ---------------------------------------------------------------- the document


def test_the_openapi_document_is_valid_and_lists_every_route(live: Live) -> None:
    doc = live.doc
    assert doc["openapi"] == "3.1.0" and doc["info"]["version"]
    for schema in doc["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)
    refs = set(re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', json.dumps(doc)))
    assert refs <= set(doc["components"]["schemas"])
    routes = {
        (openapi_path(route.path), method.lower())
        for route in live.app.routes
        if isinstance(route, Route) and route.path != "/openapi.json"
        for method in route.methods or ()
        if method != "HEAD"
    }
    listed = {(path, method) for path, entry in doc["paths"].items() for method in entry}
    assert routes == listed
    ids = [e["operationId"] for entry in doc["paths"].values() for e in entry.values()]
    assert len(ids) == len(set(ids)) == len(ENDPOINTS) + 3
    for path, entry in doc["paths"].items():
        for method, operation in entry.items():
            declared = {p["name"] for p in operation["parameters"] if p["in"] == "path"}
            assert declared == set(re.findall(r"\{(\w+)\}", path)), (path, method)
            assert all(
                Draft202012Validator.check_schema(p["schema"]) is None
                for p in operation["parameters"]
            )
            security = operation.get("security", doc["security"])
            assert (security == []) == (path == "/v1/health"), path
    assert MCP_PATH in doc["paths"]
    remember = doc["paths"]["/v1/minds/{mind}/memories"]["post"]
    body = remember["requestBody"]["content"]["application/json"]["schema"]
    schema = doc["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
    assert schema["additionalProperties"] is False and schema["required"] == ["content"]
    assert set(schema["properties"]["channel"]["enum"]) == {"user", "tool", "source", "low"}


# ---------------------------------------------------------------- MCP


def test_mcp_over_streamable_http_per_mind(live: Live) -> None:
    ada = Api(live, TOKEN_A)
    ada.ok("remember", mind="ada", json={"content": "Ada's bike is blue"})

    async def session(token: str, mind: str) -> tuple[set[str], dict[str, Any], dict[str, Any]]:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(
                streamable_http_client(f"{live.url}/v1/minds/{mind}/mcp", http_client=http)
            ) as client,
        ):
            tools = {tool.name for tool in (await client.list_tools()).tools}
            wrote = await client.call_tool("remember", {"content": f"{mind} wrote this over MCP"})
            found = await client.call_tool("recall", {"query": "bike blue"})
            assert not wrote.is_error and not found.is_error
            assert isinstance(wrote.structured_content, dict)
            assert isinstance(found.structured_content, dict)
            return tools, wrote.structured_content, found.structured_content

    tools, wrote, found = asyncio.run(session(TOKEN_A, "ada"))
    assert {"recall", "remember", "get", "retract", "supersede", "health"} <= tools
    assert [r["content"] for r in found["results"]][:1] == ["Ada's bike is blue"]
    assert ada.ok("get", mind="ada", id=wrote["id"])["content"] == "ada wrote this over MCP"
    _, _, bobs = asyncio.run(session(TOKEN_AB, "bob"))
    assert bobs["results"] == []  # bob's MCP endpoint sees bob's memories only


# ---------------------------------------------------------------- the command


def test_noema_serve_runs_until_sigterm(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'noema.db'}"
    tokens = tmp_path / "tokens"
    env = {**os.environ, "NOEMA_EMBEDDER": "none"}
    made = subprocess.run(
        [NOEMA, "serve", "--tokens", str(tokens), "--new-token", "ada"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    token = made.stdout.strip()
    open_host = subprocess.run(
        [NOEMA, "--db", db, "serve", "--host", "0.0.0.0"], capture_output=True, text=True, env=env
    )
    assert open_host.returncode == 2
    assert open_host.stderr.strip().count("\n") == 0 and "without auth" in open_host.stderr
    for bad in (["--host", "127.rebind.example"], ["--allow-host", "127.0.0.1:1@evil"]):
        refused = subprocess.run(
            [NOEMA, "--db", db, "serve", "--port", "0", *bad],
            capture_output=True,
            text=True,
            env=env,
        )
        assert refused.returncode == 2, refused
        assert refused.stderr.strip().count("\n") == 0, refused.stderr
    process = subprocess.Popen(
        [
            *(NOEMA, "--db", db, "serve", "--tokens", str(tokens), "--port", "0"),
            *("--mind", "bob", "--allow-host", "noema.test"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"serving bob, ada on (http://127\.0\.0\.1:\d+)", line)
        assert match, line
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=match.group(1), headers=headers, timeout=30) as http:
            wrote = http.post("/v1/minds/ada/memories", json={"content": "served by noema serve"})
            assert wrote.status_code == 201, wrote.text
            assert http.get("/v1/minds/bob/stats").status_code == 403
            named = http.get("/v1/minds/ada/stats", headers={"Host": "noema.test"})
            assert named.status_code == 200, named.text
            rebound = http.get("/v1/health", headers={"Host": "noema.test.evil.example"})
            assert rebound.status_code == 421
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    with Mind.open(db, "ada") as mind:
        assert mind.stats()["total"] == 1


# ---------------------------------------------------------------- generated requests


def _from_schema(schema: dict[str, Any], components: dict[str, Any], depth: int = 0) -> Any:
    """A strategy for values of ``schema`` (the subset pydantic writes), often out of bounds."""
    if "$ref" in schema:
        return _from_schema(components[schema["$ref"].rsplit("/", 1)[1]], components, depth)
    if "anyOf" in schema:
        return st.one_of([_from_schema(s, components, depth) for s in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"]) | st.text(max_size=8)
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    if kind == "string":
        return st.text(max_size=min(schema.get("maxLength", 40), 40))
    if kind == "integer":
        low, high = schema.get("minimum", -5), schema.get("maximum", 10**6)
        return st.integers(low - 1, min(high, 10**6) + 1) | st.integers()
    if kind == "number":
        return st.floats(schema.get("minimum", -2) - 1, schema.get("maximum", 2) + 1)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array" and depth < 3:
        items = _from_schema(schema.get("items", {}), components, depth + 1)
        return st.lists(items, max_size=4)
    if kind == "object" and depth < 3 and "properties" in schema:
        properties = {
            name: _from_schema(sub, components, depth + 1)
            for name, sub in schema["properties"].items()
        }
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {k: v for k, v in properties.items() if k in required},
            optional={k: v for k, v in properties.items() if k not in required},
        )
    return JSON


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)


def test_generated_requests_never_get_a_server_error(
    backend: str, request: pytest.FixtureRequest
) -> None:
    if backend != "sqlite":
        pytest.skip("the generated run is on SQLite only (every backend has the suites above)")
    live: Live = request.getfixturevalue("live")
    api = Api(live, TOKEN_AB)
    seed = api.ok("remember", mind="ada", json={"content": "Ada lives in Lisbon", "world": "w"})
    ids = [seed["id"], "x", "", "../../etc", "ö" * 70, "01a22a92-0750-7819-a8f0-d4647350f53a"]
    doc, components = live.doc, live.doc["components"]["schemas"]
    operations = [
        (path, method, entry)
        for path, methods in doc["paths"].items()
        for method, entry in methods.items()
        if path != MCP_PATH
    ]
    http = live.client(None)
    tally = {"requests": 0, "2xx": 0}

    def body_of(entry: dict[str, Any]) -> st.SearchStrategy[Any]:
        if "requestBody" not in entry:
            return st.none()
        schema = entry["requestBody"]["content"]["application/json"]["schema"]
        return _from_schema(schema, components) | JSON

    @st.composite
    def requests(draw: st.DrawFn) -> tuple[str, str, dict[str, Any]]:
        path, method, entry = draw(st.sampled_from(operations))
        values = {
            "mind": draw(st.sampled_from(["ada", "ada", "ada", "bob", "zed", "a b", ""])),
            "id": draw(st.sampled_from(ids) | st.text(max_size=10)),
            "path": draw(st.sampled_from(["w", "", "w/x", "nowhere"]) | st.text(max_size=10)),
            "name": draw(st.sampled_from(["bob", "nobody"]) | st.text(max_size=10)),
            "key": draw(st.sampled_from(["ada.city", "a/b", " "]) | st.text(max_size=10)),
        }
        url = re.sub(r"\{(\w+)\}", lambda m: quote(values[m.group(1)], safe=""), path)
        params: dict[str, Any] = {}
        for parameter in entry["parameters"]:
            if parameter["in"] == "query" and draw(st.booleans()):
                params[parameter["name"]] = draw(_from_schema(parameter["schema"], components))
        if draw(st.integers(0, 9)) == 0:
            params[draw(st.text(min_size=1, max_size=5))] = draw(st.text(max_size=5))
        token = draw(st.sampled_from([TOKEN_AB, TOKEN_AB, TOKEN_A, TOKEN_B, "nope-nope-nope-1"]))
        headers = {"Authorization": f"Bearer {token}"}
        kwargs: dict[str, Any] = {"params": _plain_params(params), "headers": headers}
        shape = draw(st.integers(0, 9))
        if shape == 0:
            kwargs["content"] = draw(st.binary(max_size=64))
            headers["Content-Type"] = draw(st.sampled_from(["application/json", "text/plain"]))
        elif shape == 1:
            kwargs["content"] = json.dumps(draw(JSON))
            headers["Content-Type"] = "application/json"
        elif "requestBody" in entry:
            kwargs["json"] = draw(body_of(entry))
        return method.upper(), url, kwargs

    @settings(
        max_examples=1_000,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    @given(requests())
    def one(request: tuple[str, str, dict[str, Any]]) -> None:
        method, url, kwargs = request
        reply = http.request(method, url, **kwargs)
        tally["requests"] += 1
        assert reply.status_code < 500, (method, url, kwargs, reply.text)
        if reply.status_code < 300:
            tally["2xx"] += 1
        else:
            assert_one_line_error(reply)

    one()
    assert tally["requests"] >= 1_000 and tally["2xx"] > 50, tally
    assert api.ok("verify", mind="ada")["ok"] is True


def _plain_params(params: dict[str, Any]) -> dict[str, Any]:
    """Query values as strings (lists as repeated parameters)."""

    def text(value: Any) -> str:
        return json.dumps(value) if isinstance(value, dict | list) or value is None else str(value)

    return {
        key: [text(v) for v in value] if isinstance(value, list) else text(value)
        for key, value in params.items()
    }
