"""Verify covers every stored field that decides trust, ranking, validity or meaning.

Each column of ``memories``, ``relationships``, ``worlds``, ``world_links``,
``memory_history``, ``peers`` and ``minds`` is changed behind Noema's back, one
at a time, on every backend; verify must fail and name the row (and the field).
The few columns it does not check are listed with the reason. A value no codec
reads (an unknown status, text that is not JSON) is a finding, never a traceback.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from concepts import EventKind
from noema import ManualClock, Mind
from noema.errors import InvalidInput
from noema.memory.upkeep.verify import Checkpoint
from tests.test_invariants import RawDatabase, mixed_history

NOEMA = str(Path(sys.executable).parent / "noema")

#: Columns verify does not check, and why.
UNCHECKED = {
    "memories": {
        "rowid": "SQLite's row number: the key of the full-text and vector indexes",
        "seq": "PostgreSQL's row number (generated): the key of the vector index",
        "keys": "derived expansion text, rebuilt by `noema reindex`",
    },
    "relationships": {},
    "worlds": {},
    "world_links": {},
    "memory_history": {},
    "peers": {},
    "minds": {"text_index": "SQLite's number of the mind's full-text tables: an index key"},
}

#: The tables whose every row verify checks: a table added to the store joins this list.
VERIFIED_TABLES = set(UNCHECKED)
#: Tables of runtime state, caches and bookkeeping, which verify leaves alone.
NOT_VERIFIED = {
    "schema_migrations": "the migration ledger",
    "events": "the audit chain vouches for each (tests/test_invariants.py)",
    "audit": "the audit chain itself",
    "entity_refs": "derived from content, rebuilt by `noema reindex`",
    "cooccurrence": "derived recall statistics",
    "world_vectors": "derived: the sum of the members' vectors",
    "workspace_snapshots": "runtime state",
    "job_leases": "runtime state",
    "text_stats": "derived text statistics",
    "vectors": "derived embeddings, rebuilt by `noema embed-missing`",
    "sqlite_sequence": "SQLite's own counters",
}

#: A different valid value for columns holding one of a few words.
OTHER_WORD = {
    "kind": "episodic",
    "epistemic": "fact",
    "channel": "operator",
    "status": "archived",
    "decay": "ephemeral",
    "lifecycle": "verified",
    "relation": "contradicts",
    "source": "operator",
}

#: A value for a column that is empty on the victim row.
FOR_EMPTY = {"summary": "forged", "key": "forged.key", "url": "sqlite:///forged.db"}


def _columns(db: RawDatabase, table: str) -> list[str]:
    if db.url.startswith("sqlite"):
        return [row[1] for row in db.fetchall(f"PRAGMA table_info({table})")]
    rows = db.fetchall(
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_name = ? AND table_schema = current_schema() ORDER BY ordinal_position",
        (table,),
    )
    return [row[0] for row in rows]


def _other(column: str, value: Any) -> Any:
    """A value for ``column`` that differs from ``value`` and still loads."""
    if value is None:
        return FOR_EMPTY.get(column, 1_767_300_000_000_000)  # a time, in microseconds
    if value == "":
        return FOR_EMPTY.get(column, "forged")
    if column in OTHER_WORD:
        return OTHER_WORD[column] if value != OTHER_WORD[column] else "semantic"
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1_000_000 if value > 1_000_000 else value + 1
    if isinstance(value, float):
        return value + 0.125 if value + 0.125 <= 1.0 else value - 0.125
    if value.startswith("["):
        return json.dumps([*json.loads(value), "forged"])
    if value.startswith("{"):
        return json.dumps({**json.loads(value), "forged": 1})
    return value[:-1] + ("0" if value[-1] != "0" else "1")


def _tamper_each_column(
    db: RawDatabase, mind: Mind, table: str, key: str | dict[str, Any]
) -> dict[str, str]:
    """Change every checked column of one row in turn; what verify said for each.

    ``key``: the row's id, or its key columns and their values. A change the
    database itself refuses (a foreign key) is reported as such.
    """
    said: dict[str, str] = {}
    where = key if isinstance(key, dict) else {"mind_id": mind.id, "id": key}
    other_mind = "019a0000-0000-7000-8000-0000000000aa"
    db.execute("INSERT INTO minds (id, name, created_at) VALUES (?, 'other', 0)", (other_mind,))
    condition = " AND ".join(f"{column} = ?" for column in where)
    for column in _columns(db, table):
        if column in UNCHECKED[table]:
            continue
        [value] = db.fetchone(f"SELECT {column} FROM {table} WHERE {condition}", (*where.values(),))
        if column == "mind_id":
            changed = other_mind
        elif (table, column) == ("relationships", "status"):
            changed = "rejected"  # relationships are active, proposed or rejected
        else:
            changed = _other(column, value)
        after = {**where, column: changed} if column in where else where
        update = f"UPDATE {table} SET {column} = ? WHERE {condition}"
        try:
            db.execute(update, (changed, *where.values()))
        except Exception as exc:  # either driver's integrity error
            said[column] = f"refused by the database: {type(exc).__name__}"
            continue
        try:
            report = mind.verify()
            said[column] = "" if report.ok else str(report.problem)
        finally:
            db.execute(update, (value, *after.values()))
        assert mind.verify().ok, f"undoing {column} did not restore the row"
    db.execute("DELETE FROM minds WHERE id = ?", (other_mind,))
    refused = sum(problem.startswith("refused by the database") for problem in said.values())
    detected = sum(bool(problem) for problem in said.values()) - refused
    # The tamper table (``pytest -rP``): columns edited, found by verify, refused by the database.
    print(f"tamper {table}: {len(said)} columns edited, {detected} detected, {refused} refused")
    return said


def test_every_memory_column_that_matters_is_verified(
    mind: Mind, clock: ManualClock, store_url: str
) -> None:
    mixed_history(mind, clock)
    assert mind.verify().ok
    db = RawDatabase(store_url)
    # A memory with feedback, recalls, a decayed activation and an empty valid_to.
    victim = next(
        m
        for m in mind.recall("fact number 10 about gardens", peek=True, limit=50)
        if m.memory.content == "fact number 10 about gardens"
    ).memory
    assert victim.feedback_count == 2 and victim.valid_to is None
    said = _tamper_each_column(db, mind, "memories", victim.id)
    missed = [column for column, problem in said.items() if not problem]
    assert missed == [], f"verify did not notice a change of {missed}"
    for column, problem in said.items():
        assert (
            victim.id in problem
            or column in ("id", "mind_id")
            or problem.startswith("refused by the database")
        ), (column, problem)
    replayed = {
        "confidence",
        "alpha",
        "beta",
        "feedback_count",
        "feedback_mean",
        "valid_to",
        "access_count",
        "last_accessed",
        "activation",
        "activation_at",
    }
    for column in replayed:
        assert f"{column} differs from its events" in said[column], (column, said[column])
    fixed = ("channel", "credibility", "importance", "tags", "payload", "valid_from", "summary")
    for column in (*fixed, "epistemic", "trust", "salience", "recorded_at", "decay", "lifecycle"):
        assert f"{column} differs from its events" in said[column], (column, said[column])


def test_every_relationship_column_that_matters_is_verified(
    mind: Mind, clock: ManualClock, store_url: str
) -> None:
    mixed_history(mind, clock)
    db = RawDatabase(store_url)
    [approved] = db.fetchone(
        "SELECT id FROM relationships WHERE mind_id = ? AND decided_at IS NOT NULL "
        "AND status = 'active'",
        (mind.id,),
    )
    said = _tamper_each_column(db, mind, "relationships", approved)
    missed = [column for column, problem in said.items() if not problem]
    assert missed == [], f"verify did not notice a change of {missed}"
    assert "confidence differs from its events" in said["confidence"]
    assert "decided_at differs from its events" in said["decided_at"]
    assert "evidence differs from its events" in said["evidence"]


def test_a_relationship_added_behind_noemas_back_is_found(
    mind: Mind, clock: ManualClock, store_url: str
) -> None:
    a = mind.remember("Ada writes the billing job")
    b = mind.remember("The billing job runs nightly")
    db = RawDatabase(store_url)
    db.execute(
        "INSERT INTO relationships (id, mind_id, src, relation, dst, confidence, source, "
        "status, created_at) VALUES (?, ?, ?, 'supports', ?, 1.0, 'operator', 'active', 0)",
        ("019a0000-0000-7000-8000-00000000beef", mind.id, a.id, b.id),
    )
    report = mind.verify()
    assert not report.ok
    assert report.problem == (
        "relationship 019a0000-0000-7000-8000-00000000beef: no relationship_created event logs it"
    )


# ---------------------------------------------------------------- worlds, history, peers, minds


def worlds_and_peers(mind: Mind, clock: ManualClock, open_mind: Any) -> None:
    """Worlds created, renamed, moved and linked; a peer with feedback; a changed memory."""
    open_mind("bee").remember("bees keep the orchard")
    open_mind("wasp").remember("wasps keep nothing")
    mind.create_world("work/alpha")
    mind.create_world("home")
    clock.advance(hours=1)
    mind.rename_world("work/alpha", "beta")
    mind.move_world("home", "work")
    mind.link_worlds("work/beta", "work/home")
    mind.link_worlds("work", "work/home")
    mind.unlink_worlds("work", "work/home")
    mind.federate("bee", mind="bee")
    mind.federate("wasp", mind="wasp")
    mind.unfederate("wasp")
    clock.advance(hours=1)
    mind.peer_feedback("bee", 0.5)
    mind.remember("the orchard opens at nine", key="orchard.hours", world="work/beta")
    clock.advance(hours=1)
    mind.remember("the orchard opens at ten", key="orchard.hours", world="work/beta")
    clock.advance(hours=1)
    mind.reject_memory(mind.remember("the orchard is closed", world="work/beta").id, reason="no")


def test_every_column_of_worlds_links_history_peers_and_the_mind_is_verified(
    mind: Mind, clock: ManualClock, store_url: str, open_mind: Any
) -> None:
    worlds_and_peers(mind, clock, open_mind)
    assert mind.verify().ok, mind.verify().problems
    db = RawDatabase(store_url)
    [world] = db.fetchone("SELECT id FROM worlds WHERE mind_id = ? AND name = 'beta'", (mind.id,))
    [home] = db.fetchone("SELECT id FROM worlds WHERE mind_id = ? AND name = 'home'", (mind.id,))
    [superseded] = db.fetchone(
        "SELECT id FROM memories WHERE mind_id = ? AND status = 'superseded'", (mind.id,)
    )
    rows = {
        "worlds": {"mind_id": mind.id, "id": home},
        "world_links": {"mind_id": mind.id, "src": world, "dst": home},
        "memory_history": {"mind_id": mind.id, "memory_id": superseded},
        "peers": {"mind_id": mind.id, "name": "bee"},
        "minds": {"id": mind.id},
    }
    said = {table: _tamper_each_column(db, mind, table, key) for table, key in rows.items()}
    for table, found in said.items():
        missed = [column for column, problem in found.items() if not problem]
        assert missed == [], f"verify did not notice a change of {table}.{missed}"
    named = {
        "worlds": "world '",  # by its path, as the stored rows give it
        "world_links": "world link 'work/beta' -> 'work/home'",
        "memory_history": f"history of memory {superseded}",
        "peers": "peer bee",
    }
    for table, found in said.items():
        for column, problem in found.items():
            if problem.startswith("refused by the database") or column in ("mind_id", "id"):
                continue
            if table in named and column not in ("src", "dst", "name", "memory_id"):
                assert problem.startswith(named[table]), (table, column, problem)
                assert f"{column} " in problem, (table, column, problem)
    assert said["minds"]["name"] == (
        "mind 'defaul0': its name or created_at differs from its digest"
    )
    assert said["peers"]["alpha"] == "peer bee: alpha differs from its events"
    assert said["worlds"]["parent_id"] == "world 'home': parent_id differs from its events"
    assert said["worlds"]["name"] == "world 'work/hom0': name differs from its events"


def test_deleted_or_forged_rows_of_the_other_tables_are_found(
    mind: Mind, clock: ManualClock, store_url: str, open_mind: Any
) -> None:
    worlds_and_peers(mind, clock, open_mind)
    db = RawDatabase(store_url)
    for table, problem in (
        ("world_links", "world link 'work/beta' -> 'work/home': missing, though"),
        ("peers", "peer bee: missing, though its peer_added event is logged"),
        ("memory_history", "its spans are missing"),
    ):
        saved = db.fetchall(f"SELECT * FROM {table} WHERE mind_id = ?", (mind.id,))
        db.execute(f"DELETE FROM {table} WHERE mind_id = ?", (mind.id,))
        report = mind.verify()
        assert not report.ok and any(problem in p for p in report.problems), report.problems
        marks = ", ".join("?" * len(saved[0]))
        for row in saved:
            db.execute(f"INSERT INTO {table} VALUES ({marks})", row)
        assert mind.verify().ok
    db.execute(
        "INSERT INTO peers (mind_id, name, url, peer_mind, alpha, beta, created_at) "
        "VALUES (?, 'forged', NULL, 'bee', 50.0, 1.0, 0)",
        (mind.id,),
    )
    assert mind.verify().problem == "peer forged: no peer_added event logs it"


def test_every_table_of_the_store_is_verified_or_said_why_not(store_url: str, mind: Mind) -> None:
    """A table added to the store joins verify (``VERIFIED_TABLES``) or says why it does not."""
    mind.remember("a memory, so every per-mind table exists")
    db = RawDatabase(store_url)
    if store_url.startswith("sqlite"):
        rows = db.fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")
    else:
        rows = db.fetchall(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition "
            "AND n.nspname = current_schema()"
        )
    per_mind_text = re.compile(r"memories(_keys)?_fts_\d+(_\w+)?")
    tables = {name for (name,) in rows if not per_mind_text.fullmatch(name)}
    unaccounted = tables - VERIFIED_TABLES - NOT_VERIFIED.keys()
    assert unaccounted == set(), f"tables neither verified nor said why not: {unaccounted}"
    assert tables >= VERIFIED_TABLES


def test_a_store_from_before_mind_digests_still_verifies_after_upgrading(
    store_url: str, clock: ManualClock, open_mind: Any
) -> None:
    """The digest of each mind's row is written by the migration that adds it."""
    mind = open_mind("old")
    mind.remember("written before minds had digests")
    mind.close()
    db = RawDatabase(store_url)
    db.execute("ALTER TABLE minds DROP COLUMN digest")
    db.execute("DELETE FROM schema_migrations WHERE name = ?", ("a digest of each mind's row",))
    upgraded = open_mind("old")
    assert upgraded.verify().ok, upgraded.verify().problems
    assert db.fetchone("SELECT digest FROM minds WHERE name = 'old'")[0] is not None
    db.execute("UPDATE minds SET name = 'renamed' WHERE name = 'old'")
    assert "differs from its digest" in str(upgraded.verify().problem)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_worlds_links_history_and_peers_verify_in_a_restored_copy(
    mind: Mind, clock: ManualClock, open_mind: Any
) -> None:
    """A restore keeps worlds, spans and subscriptions as they were; links take the new time."""
    worlds_and_peers(mind, clock, open_mind)
    assert mind.verify().ok and mind.peers()
    clock.advance(days=1)
    copy = open_mind("copy")
    copy.import_(mind.export_lines())
    report = copy.verify()
    assert report.ok, report.problems
    assert copy.peers() == mind.peers()
    assert copy.export_lines() == mind.export_lines()


# ---------------------------------------------------------------- values no codec reads

#: ``(table, column, value)``: a value edited in that no codec reads.
CORRUPT = [
    ("memories", "status", "bogus"),
    ("memories", "decay", "bogus"),
    ("memories", "kind", "bogus"),
    ("memories", "lifecycle", "bogus"),
    ("relationships", "relation", "bogus"),
    ("memories", "tags", "not json"),
    ("memories", "payload", "not json"),
    ("events", "payload", "not json"),
    ("memories", "valid_from", "abc"),
    ("memories", "epistemic", "bogus"),
    ("memories", "channel", "bogus"),
    ("memories", "importance", "abc"),
    ("relationships", "status", "bogus"),
    ("relationships", "evidence", "not json"),
    ("memory_history", "status", "bogus"),
    ("memory_history", "sys_from", "abc"),
    ("worlds", "created_at", "abc"),
    ("world_links", "created_at", "abc"),
    ("peers", "alpha", "abc"),
    ("audit", "at", "abc"),
]


def _victim(db: RawDatabase, mind: Mind, table: str) -> tuple[str, str, str]:
    """A row of ``table``: its key column, its key, and how a finding names it."""
    if table == "memories":
        [key] = db.fetchone(
            "SELECT id FROM memories WHERE mind_id = ? AND status = 'superseded'", (mind.id,)
        )
        return "id", key, f"memory {key}"
    if table == "relationships":
        [key] = db.fetchone("SELECT id FROM relationships WHERE mind_id = ?", (mind.id,))
        return "id", key, f"relationship {key}"
    if table == "events":
        [key] = db.fetchone(
            "SELECT id FROM events WHERE mind_id = ? AND kind = 'memory_created'", (mind.id,)
        )
        return "id", key, f"event {key}"
    if table == "memory_history":
        [key] = db.fetchone("SELECT memory_id FROM memory_history WHERE mind_id = ?", (mind.id,))
        return "memory_id", key, f"history of memory {key}"
    if table in ("worlds", "world_links"):
        column = "id" if table == "worlds" else "src"
        [key] = db.fetchone(f"SELECT {column} FROM {table} WHERE mind_id = ?", (mind.id,))
        return column, key, f"world {key}" if table == "worlds" else f"world link {key} ->"
    if table == "peers":
        return "name", "bee", "peer bee"
    return "seq", 1, "audit entry 1"


@pytest.mark.parametrize(("table", "column", "value"), CORRUPT)
def test_a_value_no_codec_reads_is_a_finding_never_a_traceback(
    mind: Mind,
    clock: ManualClock,
    store_url: str,
    open_mind: Any,
    table: str,
    column: str,
    value: str,
) -> None:
    worlds_and_peers(mind, clock, open_mind)
    db = RawDatabase(store_url)
    key_column, key, named = _victim(db, mind, table)
    try:
        db.execute(
            f"UPDATE {table} SET {column} = ? WHERE mind_id = ? AND {key_column} = ?",
            (value, mind.id, key),
        )
    except Exception as exc:  # PostgreSQL's types refuse text in a number column
        assert not store_url.startswith("sqlite"), exc
        assert type(exc).__name__ in ("InvalidTextRepresentation", "DataError"), exc
        print(f"corrupt {table}.{column} = {value!r}: refused by the database")
        return
    report = mind.verify()
    expected = f"{column} {value!r} is not a valid value"
    assert not report.ok
    assert any(p.startswith(named) and expected in p for p in report.problems), report.problems
    print(f"corrupt {table}.{column} = {value!r}: {report.problem}")
    cli = subprocess.run(
        [NOEMA, "--db", store_url, "--mind", mind.name, "verify"],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 1, cli.stderr
    assert "Traceback" not in cli.stderr and len(cli.stderr.strip().splitlines()) == 1
    assert expected in cli.stderr or "audit chain broken" in cli.stderr, cli.stderr


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_legitimate_changes_verify_after_export_and_import(
    mind: Mind, clock: ManualClock, open_mind: Any
) -> None:
    """Feedback, recall, supersession, merges and decay replay exactly, also in a copy."""
    mixed_history(mind, clock)
    clock.advance(days=3)
    mind.decay()
    report = mind.verify()
    assert report.ok and report.unrecorded == 0 and report.relationships >= 5
    copy = open_mind("copy")
    lines = mind.export_lines()
    copy.import_(lines)
    assert copy.verify().ok


# ---------------------------------------------------------------- an anchored head


def test_a_checkpoint_shows_a_cut_tail_and_a_rewritten_history(
    mind: Mind, clock: ManualClock, store_url: str, open_mind: Any
) -> None:
    for n in range(5):
        mind.remember(f"note {n} about the harbour")
    checkpoint = mind.checkpoint()
    assert checkpoint.seq == len(mind.events()) == 5
    mind.remember("a later note")
    assert mind.verify(against=checkpoint).ok  # the chain grew past it: fine
    db = RawDatabase(store_url)
    # Cut the newest two entries together with what they logged: the chain alone still verifies.
    newest = db.fetchall(
        "SELECT event_id FROM audit WHERE mind_id = ? ORDER BY seq DESC LIMIT 2", (mind.id,)
    )
    for (event_id,) in newest:
        [memory_id] = db.fetchone("SELECT memory_id FROM events WHERE id = ?", (event_id,))
        db.execute("DELETE FROM audit WHERE event_id = ?", (event_id,))
        db.execute("DELETE FROM events WHERE id = ?", (event_id,))
        db.execute("DELETE FROM entity_refs WHERE memory_id = ?", (memory_id,))
        db.execute("DELETE FROM memories WHERE id = ?", (memory_id,))
    assert mind.verify().ok
    report = mind.verify(against=checkpoint)
    assert not report.ok
    assert report.problem == (
        f"the audit chain ends at entry 4, but the checkpoint of {checkpoint.at} names entry 5: "
        "its newest entries were cut off"
    )
    # Another mind's checkpoint is refused.
    with pytest.raises(InvalidInput, match="another mind"):
        open_mind("other").verify(against=checkpoint)


def test_checkpoint_and_verify_against_on_the_command_line(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    run = [NOEMA, "--db", db, "--mind", "m"]
    subprocess.run([*run, "remember", "the harbour opens at six"], check=True)
    saved = tmp_path / "head.json"
    subprocess.run([*run, "checkpoint", str(saved)], check=True, capture_output=True)
    assert Checkpoint.from_json(saved.read_text()).seq == 1
    ok = subprocess.run([*run, "verify", "--against", str(saved)], capture_output=True, text=True)
    assert ok.returncode == 0 and "and the checkpoint's entry" in ok.stdout
    forged = json.loads(saved.read_text()) | {"hash": "f" * 64}
    saved.write_text(json.dumps(forged))
    bad = subprocess.run([*run, "verify", "--against", str(saved)], capture_output=True, text=True)
    assert bad.returncode == 1
    assert bad.stderr.strip().endswith("the history before it was rewritten")
    saved.write_text("not json")
    wrong = subprocess.run(
        [*run, "verify", "--against", str(saved)], capture_output=True, text=True
    )
    assert wrong.returncode == 2 and len(wrong.stderr.strip().splitlines()) == 1
    assert "not a Noema checkpoint" in wrong.stderr


def test_observing_a_text_again_keeps_every_reinforcement(mind: Mind) -> None:
    """An admitted peek was reinforced from its stale row, undoing the re-remember's."""
    for _ in range(3):
        mind.observe("the deploy key is in the vault")
    [memory] = [r.memory for r in mind.recall("deploy vault", peek=True)]
    kinds = [EventKind.MEMORY_REINFORCED, EventKind.MEMORY_RETRIEVED]
    accesses = mind.events(memory_id=memory.id, kinds=kinds)
    assert memory.access_count == len(accesses) >= 3  # each one counted: none lost
    report = mind.verify()
    assert report.ok, report.problem
