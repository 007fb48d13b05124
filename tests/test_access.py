"""Who may do what (ADR 0033): one rule for subscribing to peers, on every face.

A subscription makes a mind's recall return the peer's memories, so it is an
operator's action: the Python API and the local CLI may (they are the
operator); ``noema serve`` and ``noema mcp`` may only with ``--allow-federation``,
and then only to minds the caller opens and to stores at ``--peer-url``. The
servers are real (uvicorn on loopback, ``noema mcp`` and ``noema serve``
processes) and so are the clients (httpx, the MCP SDK's).

A peer store is opened existing-only and read-only: whatever a URL names that is
not a Noema store at this Noema's schema gets one message, and nothing is
created, migrated or written there (SQLite files and PostgreSQL databases).
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import signal
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import psycopg
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from noema import ManualClock, Mind
from noema.access import NOBODY, OPERATOR, acting_as, serving
from noema.async_mind import AsyncMind
from noema.errors import ConfigError, Forbidden, PolicyViolation
from noema.http.app import create_app
from noema.http.auth import Tokens
from noema.mcp.server import build_server
from tests.conftest import PostgresServer
from tests.test_http import NOEMA, Api, Live, assert_one_line_error

TOKEN_ALICE = "token-for-alice-only-012345678"
TOKEN_BOTH = "token-for-alice-and-bob-012345"
BOBS_SECRET = "Bob's safe opens with 4-8-15-16"
OFF = "mind: subscribing to peers is off here"


class Server(Live):
    """``noema serve``'s application over ``alice`` and ``bob``, on loopback, with its flags."""

    def __init__(self, minds: dict[str, Mind], tokens: Tokens | None, **flags: Any) -> None:
        super().__init__(minds, tokens, **{"allow_federation": False, **flags})


Serve = Callable[..., Server]


@pytest.fixture
def serve(store_url: str, clock: ManualClock) -> Iterator[Serve]:
    """Start a server over ``alice`` and ``bob`` (bob holding a secret) with the given flags."""
    started: list[Server] = []

    def start(**flags: Any) -> Server:
        minds = {name: Mind.open(store_url, name, clock=clock) for name in ("alice", "bob")}
        minds["bob"].remember(BOBS_SECRET)
        tokens = Tokens({TOKEN_ALICE: ["alice"], TOKEN_BOTH: ["alice", "bob"]})
        server = Server(minds, tokens, **flags)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


async def _mcp_calls(
    server: Server, token: str, mind: str, calls: list[tuple[str, dict[str, Any]]]
) -> list[tuple[bool, Any]]:
    """Call tools on ``mind``'s MCP endpoint with ``token``: (is_error, structured or text)."""
    headers = {"Authorization": f"Bearer {token}"}
    replies: list[tuple[bool, Any]] = []
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(
            streamable_http_client(f"{server.url}/v1/minds/{mind}/mcp", http_client=http)
        ) as client,
    ):
        for tool, arguments in calls:
            result = await client.call_tool(tool, arguments)
            if result.is_error:
                replies.append((True, result.content[0].text))  # type: ignore[union-attr]
            else:
                replies.append((False, result.structured_content))
    return replies


def _mcp(server: Server, token: str, mind: str, *calls: tuple[str, dict[str, Any]]) -> Any:
    return asyncio.run(_mcp_calls(server, token, mind, list(calls)))


def _contents(recalled: dict[str, Any]) -> list[str]:
    return [r["content"] for r in recalled["results"]]


def _a_peer_store(tmp_path: Path, name: str = "far") -> str:
    """A Noema store in another SQLite file, holding the mind ``far`` with one memory."""
    url = f"sqlite:///{tmp_path / name}.db"
    with Mind.open(url, "far", embedder="none") as far:
        far.remember("The far store keeps the lighthouse log")
    return url


# ---------------------------------------------------------------- a token and its minds


def test_a_token_cannot_read_another_mind_through_a_peer_over_mcp(serve: Serve) -> None:
    """Defect: alice's token subscribed alice to bob over MCP, then recalled bob's memories."""
    for flags in ({}, {"allow_federation": True}):
        server = serve(**flags)
        added, listed, recalled = _mcp(
            server,
            TOKEN_ALICE,
            "alice",
            ("federate", {"name": "x", "mind": "bob"}),
            ("peers", {}),
            ("recall", {"query": "Bob safe opens"}),
        )
        assert added[0], added
        assert added[1].startswith("Error executing tool federate: mind: ")
        assert "\n" not in added[1]
        assert listed == (False, {"peers": []})
        assert BOBS_SECRET not in _contents(recalled[1])
        alice = Api(server, TOKEN_ALICE)
        refused = alice.error("federate", 403, mind="alice", json={"name": "x", "mind": "bob"})
        assert refused["field"] == "mind" and refused["error"].startswith("mind: ")
        assert alice.ok("peers", mind="alice")["peers"] == []


def test_with_allow_federation_a_token_subscribes_only_where_it_may(
    serve: Serve, tmp_path: Path
) -> None:
    listed_url = _a_peer_store(tmp_path, "listed")
    other_url = _a_peer_store(tmp_path, "other")
    server = serve(allow_federation=True, peer_urls=[listed_url])
    alice, both = Api(server, TOKEN_ALICE), Api(server, TOKEN_BOTH)

    # REST: a mind the token opens, and no other; a store only on the --peer-url list.
    refused = alice.error("federate", 403, mind="alice", json={"name": "b", "mind": "bob"})
    assert refused["field"] == "mind" and refused["error"].startswith("mind: ")
    assert both.ok("federate", mind="alice", json={"name": "b", "mind": "bob"})["mind"] == "bob"
    elsewhere = {"name": "o", "mind": "far", "url": other_url}
    assert alice.error("federate", 403, mind="alice", json=elsewhere)["field"] == "url"

    # MCP over HTTP: the same rule, through the token of the request that calls the tool.
    replies = _mcp(
        server,
        TOKEN_ALICE,
        "alice",
        ("federate", {"name": "b2", "mind": "bob"}),
        ("federate", {"name": "o", "mind": "far", "url": other_url}),
        ("federate", {"name": "f", "mind": "far", "url": listed_url}),
        ("peers", {}),
    )
    assert replies[0][0] and ": mind: " in replies[0][1]
    assert replies[1][0] and ": url: " in replies[1][1]
    assert not replies[2][0] and replies[2][1]["url"] == listed_url
    assert [p["name"] for p in replies[3][1]["peers"]] == ["b", "f"]
    recalled = both.ok("recall", mind="alice", json={"query": "Bob safe lighthouse log"})
    assert {r["peer"] for r in recalled["results"]} == {"b", "f"}
    assert both.ok("unfederate", mind="alice", name="b")["name"] == "b"
    assert BOBS_SECRET not in _contents(both.ok("recall", mind="alice", json={"query": "Bob safe"}))
    [(failed, added)] = _mcp(
        server, TOKEN_BOTH, "alice", ("federate", {"name": "b", "mind": "bob"})
    )
    assert not failed and added["mind"] == "bob"
    assert BOBS_SECRET in _contents(both.ok("recall", mind="alice", json={"query": "Bob safe"}))


def test_a_served_mind_fails_closed_when_a_call_does_not_say_who_asks(
    store_url: str, clock: ManualClock
) -> None:
    minds = {name: Mind.open(store_url, name, clock=clock) for name in ("alice", "bob")}
    app = create_app(minds, tokens=None, allow_federation=True)
    try:
        assert minds["alice"].caller == NOBODY
        with pytest.raises(Forbidden, match="off here") as refused:
            minds["alice"].federate("b", mind="bob")  # no request said who asks
        assert refused.value.field == "mind"
        amind = AsyncMind(minds["alice"], owns_mind=False)
        with pytest.raises(Forbidden, match="off here"):
            asyncio.run(amind.federate("b", mind="bob"))
        with acting_as(serving(allow_federation=True)):  # what a request says
            assert asyncio.run(amind.federate("b", mind="bob")).mind == "bob"
        assert minds["alice"].peers()[0].name == "b"
    finally:
        app.state.minds.close()


# ---------------------------------------------------------------- the same rule on every face


def test_every_face_refuses_the_same_subscription_with_the_same_line(
    store_url: str, clock: ManualClock, tmp_path: Path, serve: Serve
) -> None:
    if not store_url.startswith("sqlite"):
        pytest.skip("the rule is decided above the store: its faces are walked on SQLite only")
    lines: dict[str, str] = {}

    # Python, as a server binds it: acting as nobody, then as a server without the flag.
    with Mind.open(store_url, "alice", clock=clock) as alice:
        Mind.open(store_url, "bob", clock=clock).close()
        with acting_as(NOBODY), pytest.raises(Forbidden) as refused:
            alice.federate("b", mind="bob")
        lines["python"] = str(refused.value)
        alice.caller = serving()
        with pytest.raises(Forbidden) as refused:
            alice.federate("b", mind="bob")
        assert str(refused.value) == lines["python"]

        # MCP, in-process, over the mind bound to a server's caller.
        async def in_process() -> str:
            async with Client(build_server(alice)) as client:
                result = await client.call_tool("federate", {"name": "b", "mind": "bob"})
                assert result.is_error
                return str(result.content[0].text)  # type: ignore[union-attr]

        lines["mcp"] = asyncio.run(in_process()).removeprefix("Error executing tool federate: ")
        assert alice.peers() == []

    # MCP over stdio: `noema mcp` without --allow-federation.
    async def stdio(*flags: str) -> tuple[bool, Any]:
        params = StdioServerParameters(
            command=NOEMA,
            args=["--db", store_url, "--mind", "alice", "--embedder", "none", "mcp", *flags],
            env=dict(os.environ),  # the SDK passes on only a few variables by default
        )
        async with Client(params) as client:
            result = await client.call_tool("federate", {"name": "b", "mind": "bob"})
            if result.is_error:
                return True, result.content[0].text  # type: ignore[union-attr]
            return False, result.structured_content

    failed, text = asyncio.run(stdio())
    assert failed
    lines["stdio"] = str(text).removeprefix("Error executing tool federate: ")

    # REST and MCP over HTTP: `noema serve`'s application without --allow-federation.
    server = serve()
    refused_rest = Api(server, TOKEN_BOTH).error(
        "federate", 403, mind="alice", json={"name": "b", "mind": "bob"}
    )
    assert refused_rest["field"] == "mind"
    lines["rest"] = refused_rest["error"]
    [(failed, text)] = _mcp(server, TOKEN_BOTH, "alice", ("federate", {"name": "b", "mind": "bob"}))
    assert failed
    lines["mcp-http"] = str(text).removeprefix("Error executing tool federate: ")

    assert set(lines.values()) == {lines["python"]}, lines
    assert lines["python"].startswith(OFF) and "\n" not in lines["python"]

    # With --allow-federation, `noema mcp` subscribes to a mind of its store.
    failed, added = asyncio.run(stdio("--allow-federation"))
    assert not failed and added["mind"] == "bob"


def test_the_operator_federates_and_the_flags_are_checked(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'noema.db'}"
    env = {**os.environ, "NOEMA_EMBEDDER": "none"}
    for name in ("alice", "bob"):
        with Mind.open(db, name, embedder="none"):
            pass
    assert OPERATOR.federate and OPERATOR.minds is None and OPERATOR.peer_urls is None
    added = subprocess.run(
        [NOEMA, "--db", db, "--mind", "alice", "federate", "add", "b", "--mind", "bob"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert added.returncode == 0 and added.stdout.startswith("subscribed b"), added.stderr
    for command in (["serve", "--port", "0"], ["mcp"]):
        bad = subprocess.run(
            [NOEMA, "--db", db, *command, "--peer-url", "sqlite:////elsewhere.db"],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        assert bad.returncode == 2, bad.stderr
        assert bad.stderr.strip().count("\n") == 0 and "--peer-url needs --allow-federation" in (
            bad.stderr
        )


def test_noema_serve_allows_federation_only_with_its_flag(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'noema.db'}"
    listed = _a_peer_store(tmp_path, "listed")
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {TOKEN_ALICE}\nalice {TOKEN_BOTH}\nbob {TOKEN_BOTH}\n")
    tokens.chmod(0o600)
    env = {**os.environ, "NOEMA_EMBEDDER": "none"}
    asks = {
        "bob": (TOKEN_BOTH, {"name": "b", "mind": "bob"}),
        "bob-alice-token": (TOKEN_ALICE, {"name": "b", "mind": "bob"}),
        "listed": (TOKEN_ALICE, {"name": "f", "mind": "far", "url": listed}),
        "unlisted": (TOKEN_ALICE, {"name": "u", "mind": "x", "url": "/etc/passwd"}),
    }

    async def subscribe(url: str, token: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(f"{url}/v1/minds/alice/mcp", http_client=http)) as mcp,
        ):
            added = await mcp.call_tool("federate", arguments)
            if added.is_error:
                return True, added.content[0].text  # type: ignore[union-attr]
            await mcp.call_tool("unfederate", {"name": arguments["name"]})
            return False, added.structured_content

    def run(*flags: str) -> dict[str, str]:
        """What each ask got from a `noema serve` started with ``flags``: ok, or the field."""
        process = subprocess.Popen(
            [NOEMA, "--db", db, "serve", "--tokens", str(tokens), "--port", "0", *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        got: dict[str, str] = {}
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            match = re.search(r"on (http://127\.0\.0\.1:\d+)", line)
            assert match, line
            for what, (token, arguments) in asks.items():
                failed, reply = asyncio.run(subscribe(match.group(1), token, arguments))
                got[what] = str(reply).split(": ")[1] if failed else "ok"
            headers = {"Authorization": f"Bearer {TOKEN_BOTH}"}
            with httpx.Client(base_url=match.group(1), headers=headers, timeout=30) as http:
                reply = http.post("/v1/minds/alice/peers", json=asks["bob"][1])
                assert reply.status_code in {201, 403}, reply.text
                if reply.status_code == 403:
                    assert_one_line_error(reply)
                got["rest"] = "ok" if reply.status_code == 201 else reply.json()["field"]
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=30)
        assert process.returncode == 0, err
        return got

    assert run() == {
        "bob": "mind",
        "bob-alice-token": "mind",
        "listed": "url",
        "unlisted": "url",
        "rest": "mind",
    }
    assert run("--allow-federation", "--peer-url", listed) == {
        "bob": "ok",
        "bob-alice-token": "mind",
        "listed": "ok",
        "unlisted": "url",
        "rest": "ok",
    }


# ---------------------------------------------------------------- peer stores are only read


def _not_stores(tmp_path: Path) -> dict[str, Path]:
    """Paths that are not a Noema store: each kind a URL might name."""
    where = tmp_path / "things"
    where.mkdir()
    other = where / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE accounts (name TEXT, secret TEXT)")
        conn.execute("INSERT INTO accounts VALUES ('root', 'hunter2')")
    conn.close()
    (where / "empty.db").write_bytes(b"")
    (where / "notes.txt").write_text("not a database\n" * 50)
    (where / "directory.db").mkdir()
    found = {
        "another SQLite database": other,
        "an empty file": where / "empty.db",
        "a text file": where / "notes.txt",
        "a directory": where / "directory.db",
        "a missing file": where / "missing.db",
        "a missing directory": where / "gone" / "missing.db",
    }
    if os.geteuid() != 0:  # root reads any file
        locked = where / "locked.db"
        locked.write_bytes(other.read_bytes())
        locked.chmod(0)
        found["an unreadable file"] = locked
    return found


def _snapshot(root: Path) -> dict[str, tuple[bytes, int] | None]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) if p.is_file() else None
        for p in sorted(root.rglob("*"))
    }


def test_a_url_that_is_not_a_noema_store_is_one_message_and_nothing_is_written(
    tmp_path: Path, clock: ManualClock
) -> None:
    """Defect: federation opened (and migrated) whatever SQLite file a URL named."""
    with Mind.open(f"sqlite:///{tmp_path / 'own.db'}", "alice", clock=clock) as alice:
        things = _not_stores(tmp_path)
        before = _snapshot(tmp_path / "things")
        messages: dict[str, str] = {}
        for kind, path in things.items():
            for url in (f"sqlite:///{path}", str(path)):
                with pytest.raises(ConfigError) as refused:
                    alice.federate("x", mind="x", url=url)
                assert refused.value.field == "url"
                messages[f"{kind} ({url[:9]})"] = str(refused.value).replace(url, "URL")
        assert set(messages.values()) == {"no Noema store at URL"}, messages
        assert _snapshot(tmp_path / "things") == before  # same bytes, same times, no new file
        assert alice.peers() == []
    with sqlite3.connect(things["another SQLite database"]) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
    conn.close()
    assert tables == ["accounts"]


def test_a_noema_store_at_another_schema_is_refused_and_left_as_it_is(
    tmp_path: Path, clock: ManualClock
) -> None:
    peer_url = _a_peer_store(tmp_path, "peer")
    peer_file = tmp_path / "peer.db"
    with sqlite3.connect(peer_file) as conn:
        newest = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
    conn.close()
    with Mind.open(f"sqlite:///{tmp_path / 'own.db'}", "alice", clock=clock) as alice:
        for change, word in (
            (f"DELETE FROM schema_migrations WHERE version = {newest}", "older"),
            (f"INSERT INTO schema_migrations VALUES ({newest}, 'back', '')", None),
            ("INSERT INTO schema_migrations VALUES (9999, 'future', '')", "newer"),
        ):
            with sqlite3.connect(peer_file) as conn:
                conn.execute(change)
            conn.close()
            if word is None:
                continue
            before = peer_file.read_bytes(), peer_file.stat().st_mtime_ns
            with pytest.raises(ConfigError, match=f"schema version .*, {word} than") as refused:
                alice.federate("p", mind="far", url=peer_url)
            assert "\n" not in str(refused.value)
            assert (peer_file.read_bytes(), peer_file.stat().st_mtime_ns) == before
        with sqlite3.connect(peer_file) as conn:
            conn.execute("DELETE FROM schema_migrations WHERE version = 9999")
        conn.close()
        assert alice.federate("p", mind="far", url=peer_url).mind == "far"
        assert [r.peer for r in alice.recall("lighthouse log")] == ["p"]


def test_a_postgres_database_without_noemas_tables_gets_none(
    postgres_server: PostgresServer, clock: ManualClock, tmp_path: Path
) -> None:
    """Defect: a subscription to postgresql://.../postgres wrote Noema's tables into it."""
    if postgres_server.problem:
        pytest.skip(postgres_server.problem)
    name = f"noema_test_{os.getpid()}_access_{secrets.token_hex(3)}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = f"{postgres_server.base}/{name}"
    try:
        with Mind.open(f"sqlite:///{tmp_path / 'own.db'}", "alice", clock=clock) as alice:
            with pytest.raises(ConfigError) as refused:
                alice.federate("pg", mind="x", url=url)
            assert str(refused.value) == f"no Noema store at {url}"
            assert alice.peers() == []
        with psycopg.connect(url, autocommit=True) as conn:
            tables = conn.execute(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') "
                "AND n.nspname NOT LIKE 'pg_toast%'"
            ).fetchone()
            extensions = conn.execute("SELECT extname FROM pg_extension").fetchall()
        assert tables == (0,)
        assert extensions == [("plpgsql",)]
    finally:
        with psycopg.connect(postgres_server.url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_a_peer_name_that_is_a_credential_is_refused(open_mind: Callable[..., Mind]) -> None:
    alice, _ = open_mind("alice"), open_mind("bob")
    key = "sk-proj-" + secrets.token_hex(20)
    with pytest.raises(PolicyViolation) as refused:
        alice.federate(key, mind="bob")
    assert refused.value.field == "name" and key not in str(refused.value)
    assert alice.peers() == []
    assert key not in str([e.payload for e in alice.events()])
