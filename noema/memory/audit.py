"""The hash-chained audit log and its verification (ADR 0003).

Every event gets one audit entry. An entry's ``digest`` is the sha256 of the
event's canonical JSON; its ``hash`` covers the previous entry's hash, its own
position, the event id, action, time and digest. Verification recomputes all of
it, checks events line up with entries, that every memory's content still
hashes to the value its ``memory_created`` event recorded, that no logged memory
is missing, and that each memory's status is the one its events lead to.

A purge (``noema forget``) deletes memories and replaces the payloads of the
events that quoted them with a tombstone naming the purge's own
``memory_purged`` event. Such an event no longer matches its digest; it verifies
when that later, audited purge event lists it, and the memories the purge lists
are no longer expected to exist.

A hash chain cannot show that its newest entries were cut off together with
what they logged; anchoring the head hash outside the database would.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from concepts import AuditEntry, Event, EventKind, Memory, Status, trusted
from noema.ids import content_hash

__all__ = [
    "GENESIS",
    "TOMBSTONE_KEY",
    "VerifyReport",
    "chain",
    "event_digest",
    "iso",
    "tombstone",
    "verify_records",
]

GENESIS = "0" * 64

#: The one key of a purged event's payload; its value is the purge event's id.
TOMBSTONE_KEY = "purged_by"


def tombstone(purge_event_id: str) -> dict[str, str]:
    """The payload that replaces a purged event's: nothing of what it said."""
    return {TOMBSTONE_KEY: purge_event_id}


def _tombstoned(event: Event) -> str | None:
    """The purge event named by a tombstoned event's payload, if it is one."""
    value = event.payload.get(TOMBSTONE_KEY)
    return value if len(event.payload) == 1 and isinstance(value, str) else None


@functools.lru_cache(maxsize=4096)  # a batch's events share one time
def iso(value: datetime) -> str:
    """Canonical text of a time: UTC, microseconds, ``Z``."""
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    return value.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def event_record(event: Event) -> dict[str, Any]:
    """An event as exported and hashed: no mind, no storage position."""
    return {
        "id": event.id,
        "kind": event.kind,
        "at": iso(event.at),
        "memory_id": event.memory_id,
        "origin_event": event.origin_event,
        "payload": event.payload,
    }


# Fields are joined with the unit separator (0x1F), which none of them can hold:
# ids, kinds and times are plain text and the payload is escaped JSON.
_SEP = "\x1f"


def event_digest(event: Event) -> str:
    """sha256 of what an export says of an event: id, kind, time, links, payload."""
    text = _SEP.join(
        (
            event.id,
            event.kind,
            iso(event.at),
            event.memory_id or "",
            event.origin_event or "",
            canonical(event.payload),
        )
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def entry_hash(
    seq: int, prev_hash: str, event_id: str, action: str, at: datetime, digest: str
) -> str:
    text = _SEP.join((str(seq), prev_hash, event_id, action, iso(at), digest))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chain(head: AuditEntry | None, events: Sequence[Event]) -> list[AuditEntry]:
    """The audit entries that append ``events`` after ``head``."""
    seq = head.seq if head else 0
    prev = head.hash if head else GENESIS
    entries: list[AuditEntry] = []
    for event in events:
        seq += 1
        digest = event_digest(event)
        h = entry_hash(seq, prev, event.id, event.kind, event.at, digest)
        entries.append(
            trusted(
                AuditEntry,
                dict(
                    seq=seq,
                    at=event.at,
                    event_id=event.id,
                    action=event.kind,
                    digest=digest,
                    prev_hash=prev,
                    hash=h,
                ),
            )
        )
        prev = h
    return entries


@dataclass
class VerifyReport:
    """What verification checked and the first thing that did not hold."""

    ok: bool = True
    entries: int = 0
    events: int = 0
    memories: int = 0
    problem: str | None = None
    problems: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.ok = False
        if self.problem is None:
            self.problem = message
        if len(self.problems) < 20:
            self.problems.append(message)


def verify_records(
    entries: Iterable[AuditEntry], events: Iterable[Event], memories: Iterable[Memory]
) -> VerifyReport:
    """Check a mind's audit chain, its events and its memories' content hashes.

    ``entries`` and ``events`` come in append order; all three may be streamed.
    """
    report = VerifyReport()
    created_hash: dict[str, str] = {}
    status: dict[str, str] = {}  # what the events say each memory's status is
    tombstones: dict[str, tuple[int, str]] = {}  # purged event -> (its entry, its purge)
    prev = GENESIS
    event_iter: Iterator[Event] = iter(events)
    for entry in entries:
        report.entries += 1
        expected_seq = report.entries
        if entry.seq != expected_seq:
            report.fail(f"audit entry {entry.seq}: expected position {expected_seq}")
            return report
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
            purge = _tombstoned(event)
            if purge is None:
                report.fail(f"audit entry {entry.seq}: event {event.id} was altered")
            else:
                tombstones[event.id] = (entry.seq, purge)
        if event.kind == EventKind.MEMORY_PURGED:
            _replay_purge(event, tombstones, created_hash, status)
        _replay(event, created_hash, status)
    for event in event_iter:
        report.events += 1
        report.fail(f"event {event.id} has no audit entry")
    for event_id, (seq, _) in tombstones.items():
        report.fail(f"audit entry {seq}: event {event_id} was altered (no purge lists it)")
    seen: set[str] = set()
    for memory in memories:
        report.memories += 1
        seen.add(memory.id)
        if content_hash(memory.kind, memory.content, memory.key) != memory.content_hash:
            report.fail(f"memory {memory.id}: content does not match its content hash")
        elif created_hash.get(memory.id) != memory.content_hash:
            report.fail(f"memory {memory.id}: content hash differs from its memory_created event")
        elif status.get(memory.id) != memory.status:
            report.fail(
                f"memory {memory.id}: status {memory.status.value} differs from its events "
                f"({status.get(memory.id)})"
            )
    for memory_id in created_hash.keys() - seen:
        report.fail(f"memory {memory_id}: missing, though its memory_created event is logged")
    return report


def _replay_purge(
    event: Event,
    tombstones: dict[str, tuple[int, str]],
    created_hash: dict[str, str],
    status: dict[str, str],
) -> None:
    """A purge vouches for the tombstones it lists; its memories are gone on purpose."""
    for event_id in event.payload.get("events", ()):
        if tombstones.get(event_id, (0, ""))[1] == event.id:
            del tombstones[event_id]
    for memory_id in event.payload.get("memories", ()):
        created_hash.pop(memory_id, None)
        status.pop(memory_id, None)


def _replay(event: Event, created_hash: dict[str, str], status: dict[str, str]) -> None:
    """Follow the events that set a memory's content hash or status."""
    target = event.memory_id
    if target is None:
        return
    if event.kind == EventKind.MEMORY_CREATED:
        created_hash[target] = str(event.payload.get("content_hash", ""))
        status[target] = Status.ACTIVE
    elif event.kind == EventKind.MEMORY_SUPERSEDED:
        status[target] = Status.SUPERSEDED
    elif event.kind == EventKind.MEMORY_RETRACTED:
        status[target] = Status.RETRACTED
    elif event.kind == EventKind.MEMORY_MERGED:
        merged = str(event.payload.get("merged", ""))
        if status.get(merged) == Status.ACTIVE:
            status[merged] = Status.ARCHIVED
