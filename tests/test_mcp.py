"""The MCP server (``noema mcp``) driven through the SDK's own client, in-process and over stdio."""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, Any

import pytest
from mcp import Client, StdioServerParameters

from concepts import MAX_NOTE_CHARS, EventKind, Lifecycle, Relation, RelationStatus, Status
from noema import ManualClock, Mind
from noema.mcp.server import build_server

NOEMA = str(Path(sys.executable).parent / "noema")

TOOLS = {
    "mind_info",
    "stats",
    "recall",
    "remember",
    "remember_many",
    "timeline",
    "get",
    "fact",
    "memory_events",
    "retract",
    "supersede",
    "feedback",
    "verify_memory",
    "reject_memory",
    "reinstate_memory",
    "relate",
    "proposals",
    "approve",
    "reject",
    "events",
    "health",
    "verify",
    "worlds",
    "create_world",
    "rename_world",
    "move_world",
    "link_worlds",
    "unlink_worlds",
    "world",
    "record_episode",
    "record_episodes",
    "episodes",
    "recall_episodes",
    "episode_stats",
    "episode",
    "peers",
    "federate",
    "unfederate",
    "peer_feedback",
}


class Session:
    """Calls tools and returns their structured result, or the error text."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        assert not result.is_error, result.content
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    async def error(self, tool: str, **arguments: Any) -> str:
        result = await self.client.call_tool(tool, arguments)
        assert result.is_error, result.structured_content
        text = result.content[0].text  # type: ignore[union-attr]
        assert text.startswith(f"Error executing tool {tool}: ")
        return str(text)


def drive(mind: Mind, script: Callable[[Session], Awaitable[None]]) -> None:
    async def main() -> None:
        async with Client(build_server(mind)) as client:
            await script(Session(client))

    asyncio.run(main())


def test_the_server_lists_every_memory_tool(mind: Mind) -> None:
    async def script(s: Session) -> None:
        listed = await s.client.list_tools()
        assert {t.name for t in listed.tools} == TOOLS
        assert all(t.description for t in listed.tools)

    drive(mind, script)


def test_remember_recall_get_and_timeline_end_to_end(mind: Mind) -> None:
    async def script(s: Session) -> None:
        made = await s.ok(
            "remember",
            content="Ada lives in Porto",
            epistemic="fact",
            key="user.home_city",
            tags=["people"],
            importance=0.7,
        )
        assert (made["channel"], made["epistemic"], made["key"]) == (
            "tool",
            "fact",
            "user.home_city",
        )
        found = await s.ok("recall", query="where does Ada live", limit=3)
        top = found["results"][0]
        assert top["id"] == made["id"] and top["rank"] == 1
        assert (top["lifecycle"], top["tier"]) == ("active", "moderate")
        assert sum(top["components"].values()) == pytest.approx(top["score"])
        got = await s.ok("get", id=made["id"])
        assert got["content"] == "Ada lives in Porto" and got["relationships"] == []
        events = (await s.ok("memory_events", id=made["id"]))["events"]
        assert [e["kind"] for e in events] == ["memory_created", "memory_retrieved"]
        peeked = await s.ok("recall", query="Ada", peek=True, tags=["people"])
        assert [r["id"] for r in peeked["results"]] == [made["id"]]
        assert len((await s.ok("memory_events", id=made["id"]))["events"]) == 2  # peek logs nothing
        deep = await s.ok("recall", query="where does Ada live", peek=True, depth="deep")
        assert deep["results"][0]["id"] == made["id"]
        assert "rerank" not in deep["results"][0]["components"]  # no reranker: the fast ranking

    drive(mind, script)
    memory = mind.recall("Ada", peek=True)[0].memory
    assert memory.access_count == 1 and memory.tags == ("people",)
    assert mind.verify().ok


def test_a_batch_tool_writes_every_item_or_none(mind: Mind) -> None:
    async def script(s: Session) -> None:
        batch = [
            {"content": "Ada plays the cello"},
            {"content": "Ada sings bass", "kind": "episodic"},
        ]
        written = (await s.ok("remember_many", memories=batch))["memories"]
        assert [(m["content"], m["kind"]) for m in written] == [
            ("Ada plays the cello", "semantic"),
            ("Ada sings bass", "episodic"),
        ]
        link = {"relation": "related_to", "target": written[0]["id"]}  # a model inside an item
        linked = {"content": "Ada tunes the cello weekly", "links": [link]}
        assert len((await s.ok("remember_many", memories=[linked]))["memories"]) == 1
        refused = [{"content": "Ada hums"}, {"content": "my password is hunter2"}]
        assert "item 2: content:" in await s.error("remember_many", memories=refused)
        runs = [{"task": "Tune the cello", "outcome": "success"}, {"task": "x", "outcome": "?"}]
        assert "record_episodes: episodes: 1.outcome: " in await s.error(
            "record_episodes", episodes=runs
        )
        recorded = (await s.ok("record_episodes", episodes=runs[:1]))["episodes"]
        assert [e["task"] for e in recorded] == ["Tune the cello"]

    drive(mind, script)
    assert mind.stats()["total"] == 4


def test_fact_reads_the_memory_a_key_holds(mind: Mind, clock: ManualClock) -> None:
    lisbon = mind.remember("Ada lives in Lisbon", key="ada.city", epistemic="fact")
    then = clock.advance(days=10).isoformat()
    clock.advance(days=10)
    porto = mind.remember("Ada lives in Porto", key="ada.city", epistemic="fact")

    async def script(s: Session) -> None:
        now = await s.ok("fact", key="ada.city")
        assert (now["id"], now["status"], now["key"]) == (porto.id, "active", "ada.city")
        assert (await s.ok("fact", key="ada.city", as_of=then))["id"] == lisbon.id
        known = await s.ok("fact", key="ada.city", known_at=then)
        assert (known["id"], known["status"]) == (lisbon.id, "active")
        missing = await s.error("fact", key="ada.job")
        assert "no memory holds key 'ada.job'" in missing and "\n" not in missing
        too_long = await s.error("fact", key="k" * 201)
        assert "key: String should have at most 200 characters" in too_long
        assert "as_of" in await s.error("fact", key="ada.city", as_of="someday")

    drive(mind, script)


def test_corrections_relations_feedback_and_proposals(mind: Mind) -> None:
    old = mind.remember("The standup is at 9:30", key="team.standup")
    a = mind.remember("Maya reviews code in the morning")
    b = mind.remember("Maya prefers morning reviews")
    c = mind.remember("Omar likes afternoon reviews")

    async def script(s: Session) -> None:
        new = await s.ok("supersede", id=old.id, content="The standup is at 10:00")
        assert new["key"] == "team.standup"
        gone = await s.ok("retract", id=c.id, reason="Omar left the team")
        assert gone["status"] == "retracted"
        rated = await s.ok("feedback", id=a.id, value=1.0, note="confirmed by Maya")
        assert rated["feedback_count"] == 1
        edge = await s.ok("relate", src=a.id, relation="supports", dst=b.id)
        assert (edge["relation"], edge["source"]) == ("supports", "mcp")
        staged = await s.ok("relate", src=b.id, relation="same_as", dst=a.id, confidence=0.9)
        assert staged["status"] == "proposed"
        pending = (await s.ok("proposals"))["proposals"]
        assert [p["id"] for p in pending] == [staged["id"]]
        assert (pending[0]["src_content"], pending[0]["dst_content"]) == (b.content, a.content)
        assert pending[0]["evidence"] == {} and pending[0]["confidence"] == 0.9
        decided = await s.ok("approve", id=staged["id"])
        assert decided["status"] == "active"
        assert (await s.ok("proposals"))["proposals"] == []
        report = await s.ok("verify")
        assert report["ok"] is True and report["problem"] is None

    drive(mind, script)
    assert mind.get(old.id).status == Status.SUPERSEDED
    assert mind.get(c.id).status == Status.RETRACTED
    assert mind.get(b.id).status == Status.ARCHIVED  # approved: merged into a
    retract = mind.events(memory_id=c.id, kinds=[EventKind.OPERATOR_ACTION])
    assert retract[0].payload["reason"] == "Omar left the team"
    edges = {(e.relation, e.status) for e in mind.relationships(a.id)}
    assert (Relation.SUPPORTS, RelationStatus.ACTIVE) in edges
    assert mind.verify().ok


def test_reject_keeps_both_memories(mind: Mind) -> None:
    a = mind.remember("Billing runs at night")
    b = mind.remember("The billing job runs nightly")
    staged = mind.relate(b.id, Relation.SAME_AS, a.id)

    async def script(s: Session) -> None:
        assert (await s.ok("reject", id=staged.id))["status"] == "rejected"

    drive(mind, script)
    assert mind.get(a.id).status == mind.get(b.id).status == Status.ACTIVE


def test_verify_reject_and_reinstate_a_memory(mind: Mind) -> None:
    memory = mind.remember("The VPN gateway is vpn2.example.org")

    async def script(s: Session) -> None:
        verified = await s.ok("verify_memory", id=memory.id, reason="checked the config")
        assert (verified["lifecycle"], verified["tier"]) == ("verified", "moderate")
        assert "reason" in await s.error("reject_memory", id=memory.id)  # required
        assert "reason" in await s.error("reject_memory", id=memory.id, reason="   ")
        rejected = await s.ok("reject_memory", id=memory.id, reason="vpn2 was retired")
        assert (rejected["id"], rejected["lifecycle"]) == (memory.id, "rejected")
        assert (await s.ok("recall", query="VPN gateway"))["results"] == []
        kept = await s.ok("recall", query="VPN gateway", lifecycles=["rejected"], peek=True)
        assert [(r["id"], r["lifecycle"]) for r in kept["results"]] == [(memory.id, "rejected")]
        back = await s.ok("reinstate_memory", id=memory.id)
        assert back["lifecycle"] == "active"
        assert "cannot reinstate" in await s.error("reinstate_memory", id=memory.id)
        got = await s.ok("get", id=memory.id)
        assert (got["lifecycle"], got["tier"]) == ("active", "moderate")

    drive(mind, script)
    assert mind.get(memory.id).lifecycle == Lifecycle.ACTIVE
    actions = mind.events(memory_id=memory.id, kinds=[EventKind.OPERATOR_ACTION])
    assert [(e.payload["action"], e.payload["reason"]) for e in actions] == [
        ("verify", "checked the config"),
        ("reject", "vpn2 was retired"),
        ("reinstate", "reinstated by the operator"),
    ]
    assert mind.verify().ok


def test_health_reports_findings_with_evidence_and_actions(mind: Mind) -> None:
    a = mind.remember("Nia leads the data team")
    b = mind.remember("The data team is led by Nia")
    staged = mind.relate(a.id, Relation.SAME_AS, b.id)
    expected = mind.health()

    async def script(s: Session) -> None:
        report = await s.ok("health")
        assert report["ok"] is False and report["mind"] == mind.name
        assert [(f["rule"], f["memory_ids"]) for f in report["findings"]] == [
            (f.rule, list(f.memory_ids)) for f in expected.findings
        ]
        [duplicate] = [f for f in report["findings"] if f["rule"] == "duplicate"]
        assert staged.id in duplicate["action"] and duplicate["evidence"]
        only = await s.ok("health", rules=["coverage_gap"], limit=5)
        assert (only["ok"], list(only["scanned"])) == (True, ["coverage_gap"])

    drive(mind, script)


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("remember", {"content": ""}, "content: String should have at least 1 character"),
        ("remember", {"content": "x", "importance": 2}, "importance"),
        ("remember", {"content": "x", "importance": "lots"}, "importance"),
        ("remember", {"content": "x", "channel": "operator"}, "channel"),
        ("remember", {"content": "x", "kind": "dream"}, "kind"),
        ("remember", {"content": "x", "valid_from": "yesterday"}, "valid_from"),
        ("remember", {"content": "x", "confidence": 0.1}, "below the write policy"),
        ("recall", {"query": "x", "limit": 0}, "limit"),
        ("recall", {"query": "x", "kinds": ["dream"]}, "kinds"),
        ("recall", {"query": "x", "as_of": "not a date"}, "as_of"),
        ("get", {"id": "0"}, "no memory 0"),
        ("get", {}, "id"),
        ("retract", {"id": "0", "reason": "because"}, "no memory 0"),
        ("memory_events", {"id": "0"}, "no memory 0"),
        ("approve", {"id": "0"}, "0"),
        ("verify_memory", {"id": "0"}, "no memory 0"),
        ("reject_memory", {"id": "0", "reason": "wrong"}, "no memory 0"),
        ("reinstate_memory", {"id": "0", "reason": "right"}, "no memory 0"),
        ("health", {"rules": ["bogus"]}, "unknown rule 'bogus'"),
        ("health", {"limit": 0}, "limit"),
        ("feedback", {"id": "0", "value": 5}, "value"),
        ("relate", {"src": "0", "relation": "likes", "dst": "1"}, "relation"),
    ],
)
def test_bad_input_is_a_clear_tool_error_and_writes_nothing(
    mind: Mind, tool: str, arguments: dict[str, Any], message: str
) -> None:
    events = len(mind.events())

    async def script(s: Session) -> None:
        assert message in await s.error(tool, **arguments)

    drive(mind, script)
    assert len(mind.events()) == events and mind.stats()["total"] == 0


def test_a_server_bound_to_one_mind_never_reads_or_writes_another(
    open_mind: Callable[..., Mind],
) -> None:
    mine, theirs = open_mind("mine"), open_mind("theirs")
    own = mine.remember("My own note about the garden")
    secret = theirs.remember("Their private note about the garden")
    other = theirs.remember("Their other note about the garden")
    proposal = theirs.relate(other.id, Relation.SAME_AS, secret.id)
    before = [e.id for e in theirs.events()]

    async def script(s: Session) -> None:
        found = await s.ok("recall", query="note about the garden", limit=10)
        assert [r["id"] for r in found["results"]] == [own.id]
        for tool, arguments in (
            ("get", {"id": secret.id}),
            ("memory_events", {"id": secret.id}),
            ("retract", {"id": secret.id, "reason": "not yours"}),
            ("supersede", {"id": secret.id, "content": "overwritten"}),
            ("feedback", {"id": secret.id, "value": -1}),
            ("relate", {"src": own.id, "relation": "related_to", "dst": secret.id}),
            ("relate", {"src": secret.id, "relation": "related_to", "dst": own.id}),
            ("approve", {"id": proposal.id}),
            ("reject", {"id": proposal.id}),
            ("verify_memory", {"id": secret.id}),
            ("reject_memory", {"id": secret.id, "reason": "not yours"}),
            ("reinstate_memory", {"id": secret.id}),
        ):
            await s.error(tool, **arguments)
        assert (await s.ok("proposals"))["proposals"] == []
        assert (await s.ok("health"))["findings"] == []  # their duplicate is theirs

    drive(mine, script)
    assert [e.id for e in theirs.events()] == before
    assert theirs.get(secret.id).status == Status.ACTIVE and theirs.proposals() != []
    assert mine.verify().ok and theirs.verify().ok


def test_noema_mcp_serves_over_stdio(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    params = StdioServerParameters(
        command=NOEMA,
        args=["--db", url, "--mind", "agent", "--embedder", "none", "mcp"],
    )

    async def main() -> None:
        async with Client(params) as client:
            s = Session(client)
            made = await s.ok("remember", content="The deploy key lives in the vault")
            found = await s.ok("recall", query="deploy key")
            assert [r["id"] for r in found["results"]] == [made["id"]]

    asyncio.run(main())
    with Mind.open(url, "agent", embedder="none") as mind:
        assert [r.memory.content for r in mind.recall("deploy", peek=True)] == [
            "The deploy key lives in the vault"
        ]
        assert mind.verify().ok


@pytest.mark.parametrize(
    ("tool", "arguments", "name"),
    [
        ("recall", {"query": "x", "limit": "ten"}, "limit"),
        ("recall", {"query": 5}, "query"),
        ("recall", {"query": "x", "kinds": "semantic"}, "kinds"),
        ("remember", {"content": ["a", "list"]}, "content"),
        ("remember", {"content": "x", "tags": [1, 2]}, "tags"),
        ("remember", {"content": "x", "kind": "dream", "importance": "lots"}, "kind"),
        ("feedback", {"id": "0", "value": "good"}, "value"),
        ("relate", {"src": "0", "relation": "likes", "dst": "1"}, "relation"),
        ("get", {}, "id"),
        ("memory_events", {"id": "0", "limit": 10**30}, "limit"),
        ("retract", {"id": "0", "reason": "r" * (MAX_NOTE_CHARS + 1)}, "reason"),
        ("feedback", {"id": "0", "value": 1, "note": "n" * 1_000_000}, "note"),
    ],
)
def test_argument_errors_are_one_line_naming_the_argument(
    mind: Mind, tool: str, arguments: dict[str, Any], name: str
) -> None:
    """Not pydantic's report: several lines, with the values and a link to its docs."""

    async def script(s: Session) -> None:
        text = await s.error(tool, **arguments)
        assert "\n" not in text, text
        assert text.startswith(f"Error executing tool {tool}: {name}: "), text
        assert "validation error" not in text and "input_value" not in text, text
        assert len(text) < 300, text

    drive(mind, script)
    assert mind.stats()["total"] == 0 and mind.events() == []


class RawServer:
    """``noema mcp`` as a subprocess, spoken to in raw JSON-RPC lines."""

    def __init__(self, url: str, log: Path) -> None:
        self.log = log.open("wb")
        self.process = subprocess.Popen(
            [NOEMA, "--db", url, "--embedder", "none", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        assert self.process.stdout is not None
        self.reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self.reader.start()

    def _read(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            self.lines.put(line)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=30)
        except queue.Empty:
            pytest.fail("no reply within 30 seconds")
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        message = json.loads(line)
        assert isinstance(message, dict)
        return message

    def request(self, ident: int, method: str, params: dict[str, Any] | None = None) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self.send(json.dumps(message).encode())
        reply = self.reply()
        assert reply.get("id") == ident and "result" in reply, reply
        return reply["result"]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self.reader.join(timeout=30)
            assert self.process.stdout is not None
            self.process.stdout.close()
            self.log.close()


PARSE_ERROR, INVALID_REQUEST = -32700, -32600
CALL = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
#: (a line no JSON-RPC message is read from, the error code, the reply's id).
HOSTILE_LINES = {
    "lone surrogate": (CALL % (2, b"remember", b'{"content":"a \\ud800 b"}'), PARSE_ERROR, None),
    "5,000-digit integer": (
        CALL % (3, b"recall", b'{"query":"x","limit":' + b"9" * 5_000 + b"}"),
        PARSE_ERROR,
        None,
    ),
    "100k-deep nesting": (
        CALL % (4, b"remember", b'{"content":"x","tags":' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        PARSE_ERROR,
        None,
    ),
    "batch": (b'[{"jsonrpc":"2.0","id":5,"method":"ping"}]', INVALID_REQUEST, None),
    "empty batch": (b"[]", INVALID_REQUEST, None),
    "not JSON": (b'{"jsonrpc":"2.0","id":6,', PARSE_ERROR, None),
    "not a message": (b'{"jsonrpc":"2.0","id":7,"method":5}', INVALID_REQUEST, 7),
    "a bare number": (b"42", INVALID_REQUEST, None),
    # Ids JSON-RPC forbids: once read as notifications, so never answered.
    "a fractional id": (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', INVALID_REQUEST, None),
    "a null id": (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', INVALID_REQUEST, None),
    "a boolean id": (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', INVALID_REQUEST, None),
    "an object id": (b'{"jsonrpc":"2.0","id":{},"method":"ping"}', INVALID_REQUEST, None),
}


def test_every_raw_json_rpc_line_gets_a_reply_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    """Each of these once got no reply at all, leaving the client waiting."""
    url = f"sqlite:///{tmp_path / 'raw.db'}"
    server = RawServer(url, tmp_path / "server.log")
    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        assert "capabilities" in server.request(1, "initialize", init)
        server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for index, (name, (line, code, ident)) in enumerate(HOSTILE_LINES.items(), start=100):
            server.send(line)
            reply = server.reply()
            assert reply.get("jsonrpc") == "2.0" and reply.get("id") == ident, (name, reply)
            assert reply["error"]["code"] == code, (name, reply)
            assert "\n" not in reply["error"]["message"], (name, reply)
            assert server.request(index, "ping") == {}, name  # still serving
        # A raw CR inside the JSON is white space, not the end of the line.
        server.send(b'{\r"jsonrpc":"2.0","id":300,"method":"ping"}')
        assert server.reply() == {"jsonrpc": "2.0", "id": 300, "result": {}}
        # An unknown tool's name is quoted in one line, whatever it holds.
        server.send(CALL % (301, b"a\\nb", b"{}"))
        unknown = server.reply()
        text = json.dumps(unknown)
        assert unknown["id"] == 301 and "\\n" not in text, unknown
        found = server.request(200, "tools/call", {"name": "recall", "arguments": {"query": "x"}})
        assert found["isError"] is False and found["structuredContent"] == {
            "results": [],
            "warnings": [],
        }
    finally:
        server.close()
    assert b"Traceback" not in (tmp_path / "server.log").read_bytes()
    with Mind.open(url, "default", embedder="none") as mind:
        # Nothing the hostile lines sent was written; the one recall logged its empty answer.
        assert mind.stats()["total"] == 0
        assert [(e.kind, e.payload) for e in mind.events()] == [("recall_empty", {"query": "x"})]
