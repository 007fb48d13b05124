"""Verify covers every stored field that decides trust, ranking, validity or meaning.

Each column of ``memories`` and ``relationships`` is changed behind Noema's back,
one at a time, on every backend; verify must fail and name the row (and, for a
memory, the field). The few columns it does not check are listed with the reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from concepts import EventKind
from noema import ManualClock, Mind
from noema.errors import InvalidInput
from noema.memory.verify import Checkpoint
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
FOR_EMPTY = {"summary": "forged", "key": "forged.key"}


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


def _tamper_each_column(db: RawDatabase, mind: Mind, table: str, row_id: str) -> dict[str, str]:
    """Change every checked column of one row in turn; what verify said for each.

    A change the database itself refuses (a foreign key) is reported as such.
    """
    said: dict[str, str] = {}
    other_mind = "019a0000-0000-7000-8000-0000000000aa"
    db.execute("INSERT INTO minds (id, name, created_at) VALUES (?, 'other', 0)", (other_mind,))
    for column in _columns(db, table):
        if column in UNCHECKED[table]:
            continue
        [value] = db.fetchone(
            f"SELECT {column} FROM {table} WHERE mind_id = ? AND id = ?", (mind.id, row_id)
        )
        if column == "mind_id":
            changed = other_mind
        elif (table, column) == ("relationships", "status"):
            changed = "rejected"  # relationships are active, proposed or rejected
        else:
            changed = _other(column, value)
        mind_after = changed if column == "mind_id" else mind.id
        id_after = changed if column == "id" else row_id
        update = f"UPDATE {table} SET {column} = ? WHERE mind_id = ? AND id = ?"
        try:
            db.execute(update, (changed, mind.id, row_id))
        except Exception as exc:  # either driver's integrity error
            said[column] = f"refused by the database: {type(exc).__name__}"
            continue
        try:
            report = mind.verify()
            said[column] = "" if report.ok else str(report.problem)
        finally:
            db.execute(update, (value, mind_after, id_after))
        assert mind.verify().ok, f"undoing {column} did not restore the row"
    db.execute("DELETE FROM minds WHERE id = ?", (other_mind,))
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
