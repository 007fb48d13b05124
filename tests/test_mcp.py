"""The MCP server (``noema mcp``) driven through the SDK's own client, in-process and over stdio."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from concepts import EventKind, Relation, RelationStatus, Status
from noema import Mind
from noema.mcp.server import build_server

NOEMA = str(Path(sys.executable).parent / "noema")

TOOLS = {
    "remember",
    "recall",
    "get",
    "relate",
    "retract",
    "supersede",
    "feedback",
    "timeline",
    "proposals",
    "approve",
    "reject",
    "verify",
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
        assert sum(top["components"].values()) == pytest.approx(top["score"])
        got = await s.ok("get", id=made["id"])
        assert got["content"] == "Ada lives in Porto" and got["relationships"] == []
        events = (await s.ok("timeline", id=made["id"]))["events"]
        assert [e["kind"] for e in events] == ["memory_created", "memory_retrieved"]
        peeked = await s.ok("recall", query="Ada", peek=True, tags=["people"])
        assert [r["id"] for r in peeked["results"]] == [made["id"]]
        assert len((await s.ok("timeline", id=made["id"]))["events"]) == 2  # peek logs nothing
        deep = await s.ok("recall", query="where does Ada live", peek=True, deep=True)
        assert deep["results"][0]["id"] == made["id"]
        assert "rerank" in deep["results"][0]["components"]

    drive(mind, script)
    memory = mind.recall("Ada", peek=True)[0].memory
    assert memory.access_count == 1 and memory.tags == ("people",)
    assert mind.verify().ok


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


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("remember", {"content": ""}, "content is empty"),
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
        ("timeline", {"id": "0"}, "no memory 0"),
        ("approve", {"id": "0"}, "0"),
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
            ("timeline", {"id": secret.id}),
            ("retract", {"id": secret.id, "reason": "not yours"}),
            ("supersede", {"id": secret.id, "content": "overwritten"}),
            ("feedback", {"id": secret.id, "value": -1}),
            ("relate", {"src": own.id, "relation": "related_to", "dst": secret.id}),
            ("relate", {"src": secret.id, "relation": "related_to", "dst": own.id}),
            ("approve", {"id": proposal.id}),
            ("reject", {"id": proposal.id}),
        ):
            await s.error(tool, **arguments)
        assert (await s.ok("proposals"))["proposals"] == []

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
