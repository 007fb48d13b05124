"""Purge for privacy (``Mind.forget``, ``noema forget``): the only path that deletes."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from concepts import EventKind, Link, Observation, Relation, Status, WorkspaceSnapshot
from noema import ManualClock, Mind
from noema.errors import InvalidInput, NotFound
from noema.memory.records.audit import TOMBSTONE_KEY, tombstone
from noema.storage import ops

NOEMA = str(Path(sys.executable).parent / "noema")

#: Distinctive words that appear nowhere else, to look for after the purge.
SECRET = "Quixotelabyrinth Zanzibarquux lives at 42 Xylophonestreet"
WORDS = ("quixotelabyrinth", "zanzibarquux", "xylophonestreet", "xylophon", "zanzibar")
KEY_WORDS = ("keyoldmarmalade", "keynewquagmire", "keyoldmarmalad", "keynewquagmir")


def _vectors(mind: Mind) -> int:
    assert mind.embedder is not None
    with mind.storage.transaction(write=False) as session:
        have, _ = session.run(ops.CountVectors(mind.id, mind.embedder.model, mind.embedder.dims))
    return have


def _seed(mind: Mind, clock: ManualClock) -> dict[str, str]:
    """A secret spread over memories, a derived summary, events, edges and the workspace."""
    clock.advance(minutes=1)
    keep = mind.remember("Ada likes tea in the afternoon", tags=["people"])

    async def observe() -> None:
        workspace = mind.workspace()
        await workspace.step([Observation(content=SECRET, salience=0.95)])
        await workspace.stop()

    asyncio.run(observe())
    secret = next(m for m in mind.recall("Zanzibarquux", peek=True) if m.memory.content == SECRET)
    clock.advance(minutes=1)
    summary = mind.remember(
        "Summary: Zanzibarquux has an address on file",
        links=[Link(relation=Relation.DERIVED_FROM, target=secret.memory.id)],
    )
    mind.relate(keep.id, Relation.RELATED_TO, secret.memory.id)
    mind.recall("where does Zanzibarquux live")  # a memory_retrieved event quoting the query
    mind.feedback(secret.memory.id, 0.5, note="Zanzibarquux confirmed it")
    return {"keep": keep.id, "secret": secret.memory.id, "summary": summary.id}


@pytest.fixture
def seeded(open_mind: Callable[..., Mind], clock: ManualClock) -> tuple[Mind, dict[str, str]]:
    mind = open_mind("private", embedder="hash")
    return mind, _seed(mind, clock)


def test_forget_removes_the_memory_what_derives_from_it_and_every_quote(
    seeded: tuple[Mind, dict[str, str]],
) -> None:
    mind, ids = seeded
    vectors_before = _vectors(mind)
    report = mind.forget([ids["secret"]])
    assert sorted(report.memories) == sorted([ids["secret"], ids["summary"]])
    assert report.derived == [ids["summary"]]
    for gone in (ids["secret"], ids["summary"]):
        with pytest.raises(NotFound):
            mind.get(gone)
    assert mind.get(ids["keep"]).status == Status.ACTIVE
    assert mind.relationships(ids["keep"]) == []
    assert _vectors(mind) == vectors_before - 2
    found = mind.recall("Zanzibarquux Xylophonestreet", peek=True, statuses=list(Status))
    assert all("Zanzibarquux" not in r.memory.content for r in found)
    # No event quotes it any more; the purge itself is content-free.
    for event in mind.events():
        assert SECRET.casefold() not in json.dumps(event.payload).casefold()
        assert "address on file" not in json.dumps(event.payload)
    purged = mind.events(kinds=[EventKind.MEMORY_PURGED])
    assert len(purged) == 1 and purged[0].id == report.event_id
    assert sorted(purged[0].payload["memories"]) == sorted(report.memories)
    tombstoned = [e for e in mind.events() if e.payload == tombstone(purged[0].id)]
    assert len(tombstoned) == report.events >= 5  # observation, created x2, retrieved, feedback
    kinds = {e.kind for e in tombstoned}
    assert {"observation_received", "memory_created", "feedback_given"} <= kinds
    with mind.storage.transaction(write=False) as session:
        saved = session.run(ops.LoadSnapshot(mind.id))
    assert saved is not None and "zanzibar" not in saved[1].casefold()
    WorkspaceSnapshot.model_validate_json(saved[1])
    report_verify = mind.verify()
    assert report_verify.ok, report_verify.problem


def test_forget_by_key_removes_every_version(open_mind: Callable[..., Mind]) -> None:
    mind = open_mind()
    old = mind.remember("Ada lives in Lisbon", key="user.home_city", valid_from="2024-01-01")
    new = mind.remember("Ada lives in Porto", key="user.home_city", valid_from="2025-01-01")
    other = mind.remember("Ada lives near the sea", key="user.home_area")
    assert mind.get(old.id).status == Status.SUPERSEDED
    assert [m.id for m in mind.plan_forget(other.id).memories] == [other.id]  # one id
    report = mind.forget(key="user.home_city")
    assert sorted(report.memories) == sorted([old.id, new.id])
    assert mind.get(other.id).status == Status.ACTIVE
    assert mind.recall("Ada lives", peek=True, statuses=["active", "superseded"])[0].memory.id == (
        other.id
    )
    assert mind.verify().ok


def test_forget_by_filter_and_by_text(open_mind: Callable[..., Mind]) -> None:
    mind = open_mind()
    a = mind.remember("Card ending 4242 on file", tags=["billing", "pii"])
    b = mind.remember("Billing runs nightly", tags=["billing"])
    c = mind.remember("The PIN is kept by Omar", tags=["ops"])
    assert {m.id for m in mind.plan_forget(filters={"tags": ["pii"]}).memories} == {a.id}
    mind.retract(c.id, reason="wrong")
    # Filters reach every status unless they name some.
    assert mind.forget(containing="the pin is").memories == [c.id]
    assert mind.forget(filters={"tags": ["pii"]}).memories == [a.id]
    assert [m.id for m in mind.plan_forget(filters={"tags": ["billing"]}).memories] == [b.id]
    assert mind.verify().ok


def test_forget_refuses_what_it_cannot_find_and_writes_nothing(
    open_mind: Callable[..., Mind],
) -> None:
    mind = open_mind()
    kept = mind.remember("Nothing to hide here")
    events = len(mind.events())
    with pytest.raises(InvalidInput, match="name memories"):
        mind.forget()
    with pytest.raises(NotFound):
        mind.forget([kept.id, "019a0000-0000-7000-8000-000000000000"])
    with pytest.raises(InvalidInput, match="filters:"):
        mind.forget(filters={"kinds": ["dream"]})
    assert mind.get(kept.id).status == Status.ACTIVE and len(mind.events()) == events


def test_a_tombstone_without_its_purge_is_tampering(seeded: tuple[Mind, dict[str, str]]) -> None:
    mind, ids = seeded
    victim = mind.events(memory_id=ids["keep"])[0]
    with mind.storage.transaction() as session:
        session.run(ops.TombstoneEvents(mind.id, [victim.id], tombstone("made-up")))
    report = mind.verify()
    assert not report.ok and f"event {victim.id} was altered" in str(report.problem)


def test_a_purged_mind_exports_and_imports_and_still_verifies(
    seeded: tuple[Mind, dict[str, str]], open_mind: Callable[..., Mind]
) -> None:
    mind, _ = seeded
    mind.forget(containing="zanzibarquux")  # also every event that names it
    buffer = io.StringIO()
    mind.export(buffer)
    assert "zanzibar" not in buffer.getvalue().casefold()
    assert TOMBSTONE_KEY in buffer.getvalue()
    copy = open_mind("copy")
    copy.import_(io.StringIO(buffer.getvalue()))
    assert copy.verify().ok and copy.stats()["total"] == mind.stats()["total"]


def test_nothing_of_the_purged_text_remains_in_the_sqlite_files(
    tmp_path: Path, clock: ManualClock
) -> None:
    """The database file, its write-ahead log and the vector index files, byte by byte."""
    url = f"sqlite:///{tmp_path / 'private.db'}"
    mind = Mind.open(url, "private", clock=clock, embedder="hash")
    for n in range(300):  # enough rows for several pages and full-text segments
        mind.remember(f"Ordinary note number {n} about the garden and the weather")
    ids = _seed(mind, clock)
    # Derived keys of the secret, rebuilt once: neither version may survive the purge.
    for keys in ("Keyoldmarmalade", "Keynewquagmire"):
        with mind.storage.transaction() as session:
            session.run(ops.UpdateMemories(mind.id, [(ids["secret"], {"keys": keys})]))
    mind.recall("garden weather")  # build and keep the vector index
    mind.close()  # saves the vector index files beside the database
    mind = Mind.open(url, "private", clock=clock, embedder="hash")
    files = [p for p in tmp_path.rglob("*") if p.is_file()]

    def found() -> set[str]:
        return {
            word
            for path in tmp_path.rglob("*")
            if path.is_file()
            for word in (*WORDS, *KEY_WORDS)
            if word.encode() in path.read_bytes().lower()
        }

    assert set(WORDS) | {"keynewquagmire"} <= found()
    assert any(p.suffix == ".usearch" for p in files)
    report = mind.forget(containing="Zanzibarquux")
    assert sorted(report.memories) == sorted([ids["secret"], ids["summary"]])
    assert found() == set()
    assert mind.verify().ok
    assert len(mind.recall("garden weather", limit=5)) == 5  # the index rebuilds
    mind.close()
    assert found() == set()


def test_noema_forget_on_the_command_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"

    def noema(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [NOEMA, "--db", url, "--embedder", "none", *args],
            capture_output=True,
            text=True,
            check=False,
        )

    made = json.loads(noema("remember", SECRET, "--tag", "pii", "--json").stdout)
    noema("remember", "Keep this one")
    refused = noema("forget", made["id"])
    assert refused.returncode == 2 and "pass --yes" in refused.stderr
    assert len(refused.stderr.splitlines()) == 1
    dry = noema("forget", "--tag", "pii", "--dry-run", "--json")
    assert [m["id"] for m in json.loads(dry.stdout)["memories"]] == [made["id"]]
    assert noema("memory", "show", made["id"]).returncode == 0  # a dry run removes nothing
    done = noema("forget", "--tag", "pii", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["memories"] == [made["id"]] and result["verified"] is True
    missing = noema("memory", "show", made["id"])
    assert missing.returncode == 2 and "no memory" in missing.stderr
    nothing = noema("forget", "--yes")
    assert nothing.returncode == 2 and "name memories" in nothing.stderr
    assert noema("verify").returncode == 0


def test_forget_containing_matches_every_field_and_every_event(
    open_mind: Callable[..., Mind], store_url: str
) -> None:
    """Summary, payload keys and values, tags, key and the text of events: none survives."""
    mind = open_mind("private", embedder="hash")
    for n in range(50):
        mind.remember(f"Ordinary clinic note number {n} about the weather")
    mind.remember("clinic note", summary="about Zelda Quixote")
    mind.remember("an address card", payload={"name": "Zelda Quixote"})
    mind.remember("a second card", payload={"Quixote family": "yes"})
    mind.remember("a third card", tags=["quixote"])
    mind.remember("a fourth card", key="patient.quixote")
    kept = mind.remember("Ada likes tea in the afternoon")
    mind.recall("hunter7 Quixote address")  # the query is logged in memory_retrieved events
    mind.feedback(kept.id, 0.5, note="checked with Quixote's file")
    report = mind.forget(containing="quixote")
    assert len(report.memories) == 5 and kept.id not in report.memories
    assert mind.get(kept.id).content == "Ada likes tea in the afternoon"
    everything = json.dumps([e.payload for e in mind.events()]).casefold()
    assert "quixote" not in everything
    assert all("quixote" not in m.memory.content.casefold() for m in mind.recall("card"))
    assert mind.verify().ok
    if store_url.startswith("sqlite:///"):
        mind.close()
        files = [p for p in Path(store_url.removeprefix("sqlite:///")).parent.rglob("*")]
        assert not [p for p in files if p.is_file() and b"quixote" in p.read_bytes().lower()]


def test_filters_that_pass_every_memory_are_refused(open_mind: Callable[..., Mind]) -> None:
    mind = open_mind()
    mind.remember("Nothing to hide here")
    for everything in ({}, {"statuses": [s.value for s in Status]}):
        with pytest.raises(InvalidInput, match="pass every memory"):
            mind.forget(filters=everything)
    assert mind.stats()["total"] == 1
    assert mind.plan_forget(filters={"statuses": ["retracted"]}).memories == []
