"""Verification of a mind's audit log: the chain, its events, and a replay of them.

Verification recomputes every entry of the chain (``noema.memory.records.audit``),
checks events line up with entries, and replays the events to rebuild what
every memory and relationship must hold: a memory's ``memory_created`` event
records its content hash, every field fixed at write time (``FIXED_FIELDS`` as
they are, ``DIGESTED_FIELDS`` as sha256, ``THREAD_FIELDS`` when it has a thread)
and the starting values of the ones
that change; feedback, recall, reinforcement, supersession, retraction, merges
and decay runs are the only changes, each an event. A field that differs from
its replay is named.

The rows beside them replay from events too (``StoredRows``, ADR 0037): each
world's parent, name and time from ``world_created``, ``world_renamed`` and
``world_moved``; each world link from ``world_linked``/``world_unlinked``; each
peer's mind, url and trust posterior from ``peer_added``, ``peer_feedback`` and
``peer_removed``; and each history span of a memory must hold the state its
events gave it from the span's start, in a chain ending at its ``changed_at``.
The mind's own row must match its digest. A value no codec reads (an unknown
status, text that is not JSON) is a finding naming the row and the column, as
is a number column holding text.

A purged event (a tombstone) verifies when the later, audited purge event that
it names lists it, and the memories the purge lists are no longer expected to
exist.

A hash chain cannot show that its newest entries were cut off together with
what they logged; a checkpoint of its head kept elsewhere does (``Checkpoint``).

This module walks the chain and its events and holds the checkpoint;
``verify_replay`` replays the events into what each row must hold, and
``verify_checks`` compares the stored rows with that replay and keeps the report.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from concepts import AuditEntry, Event, EventKind, Memory, Relationship
from noema.clock import iso
from noema.errors import IntegrityError, InvalidInput
from noema.memory.records.audit import (
    GENESIS,
    canonical,
    entry_hash,
    event_digest,
    purged_by,
)
from noema.memory.upkeep.verify_checks import (
    VerifyReport,
    _check_memories,
    _check_relationships,
    _check_stored,
)
from noema.memory.upkeep.verify_replay import (
    _Replay,
    _replay,
    _replay_purge,
)
from noema.storage.ops import StoredRows

__all__ = ["Checkpoint", "checkpoint_of", "verify_records"]


@dataclass(frozen=True)
class Checkpoint:
    """The head of a mind's audit chain, to keep where the database cannot reach it.

    Verifying against it proves the chain still holds that entry unchanged: a
    tail cut together with what it logged, or a rewritten history, shows.
    """

    mind_id: str
    seq: int
    hash: str
    at: str

    def to_json(self) -> str:
        """The checkpoint as one line of canonical JSON."""
        return canonical(
            {"mind_id": self.mind_id, "seq": self.seq, "hash": self.hash, "at": self.at}
        )

    @classmethod
    def from_json(cls, text: str) -> Checkpoint:
        """Read a checkpoint written by ``to_json``; malformed text raises ``InvalidInput``."""
        try:
            data = json.loads(text)
            checkpoint = cls(
                str(data["mind_id"]), int(data["seq"]), str(data["hash"]), str(data["at"])
            )
        except (ValueError, KeyError, TypeError):
            raise InvalidInput(
                "checkpoint: not a Noema checkpoint (JSON with mind_id, seq, hash, at)"
            ) from None
        if checkpoint.seq < 0 or len(checkpoint.hash) != 64:
            raise InvalidInput("checkpoint: its seq or hash is malformed")
        return checkpoint


def checkpoint_of(mind_id: str, head: AuditEntry | None) -> Checkpoint:
    """The checkpoint of a chain whose newest entry is ``head`` (none: empty)."""
    if head is None:
        return Checkpoint(mind_id, 0, GENESIS, "")
    return Checkpoint(mind_id, head.seq, head.hash, iso(head.at))


def verify_records(
    entries: Iterable[AuditEntry],
    events: Iterable[Event],
    memories: Iterable[Memory],
    relationships: Iterable[Relationship] = (),
    *,
    stored: StoredRows | None = None,
    against: Checkpoint | None = None,
) -> VerifyReport:
    """Check a mind's audit chain, its events, and every memory and edge against them.

    ``entries`` and ``events`` come in append order; all four may be streamed.
    ``stored``: the mind's other rows (worlds, links, history, peers, its own), to
    check as well. ``against``: a checkpoint taken earlier, whose entry the chain
    must still hold. A stored value no codec reads is a finding, not an error.
    """
    report = VerifyReport()
    try:
        _verify(report, entries, events, memories, relationships, stored, against)
    except IntegrityError as exc:  # a row that cannot be read: the streams stop there
        report.fail(str(exc))
    return report


def _verify(
    report: VerifyReport,
    entries: Iterable[AuditEntry],
    events: Iterable[Event],
    memories: Iterable[Memory],
    relationships: Iterable[Relationship],
    stored: StoredRows | None,
    against: Checkpoint | None,
) -> None:
    replay = _Replay()
    tombstones: dict[str, tuple[int, str]] = {}  # purged event -> (its entry, its purge)
    prev = GENESIS
    event_iter: Iterator[Event] = iter(events)
    for entry in entries:
        report.entries += 1
        expected_seq = report.entries
        if entry.seq != expected_seq:
            report.fail(f"audit entry {entry.seq}: expected position {expected_seq}")
            return
        if entry.prev_hash != prev:
            report.fail(
                f"audit entry {entry.seq}: previous hash does not match entry {entry.seq - 1}"
            )
        recomputed = entry_hash(
            entry.seq, entry.prev_hash, entry.event_id, entry.action, entry.at, entry.digest
        )
        if recomputed != entry.hash:
            report.fail(f"audit entry {entry.seq}: hash does not match its contents")
        prev = entry.hash
        if against is not None and entry.seq == against.seq and entry.hash != against.hash:
            report.fail(
                f"audit entry {entry.seq} differs from the checkpoint of {against.at}: "
                "the history before it was rewritten"
            )
        event = next(event_iter, None)
        if event is None:
            report.fail(f"audit entry {entry.seq}: its event {entry.event_id} is missing")
            continue
        report.events += 1
        if event.id != entry.event_id:
            report.fail(
                f"audit entry {entry.seq}: names event {entry.event_id}, log has {event.id}"
            )
        elif event_digest(event) != entry.digest:
            purge = purged_by(event)
            if purge is None:
                report.fail(f"audit entry {entry.seq}: event {event.id} was altered")
            else:
                tombstones[event.id] = (entry.seq, purge)
        if event.kind == EventKind.MEMORY_PURGED:
            _replay_purge(event, tombstones, replay)
        replay.position = entry.seq
        _replay(event, replay)
    for event in event_iter:
        report.events += 1
        report.fail(f"event {event.id} has no audit entry")
    if against is not None and report.entries < against.seq:
        report.fail(
            f"the audit chain ends at entry {report.entries}, but the checkpoint of {against.at} "
            f"names entry {against.seq}: its newest entries were cut off"
        )
    for event_id, (seq, _) in tombstones.items():
        report.fail(f"audit entry {seq}: event {event_id} was altered (no purge lists it)")
    spanned = {span[0] for span in stored.history} if stored is not None else set()
    held = _check_memories(report, replay, memories, spanned)
    _check_relationships(report, replay, relationships)
    if stored is not None:
        _check_stored(report, replay, stored, held)


#: Number columns of a memory: SQLite keeps text written into one as text.
