"""The hash-chained audit log (ADRs 0003 and 0014).

Every event gets one audit entry. An entry's ``digest`` is the sha256 of the
event's canonical JSON; its ``hash`` covers the previous entry's hash, its own
position, the event id, action, time and digest (``chain``). A memory's
``memory_created`` event records its content hash, every field fixed at write
time (``FIXED_FIELDS`` as they are, ``DIGESTED_FIELDS`` as sha256, and
``THREAD_FIELDS`` when it was written in a thread) and the
starting values of the ones that change (``created_payload``), so that
verification (``noema.memory.upkeep.verify``) can replay what every memory must hold.

A purge (``noema forget``) deletes memories and replaces the payloads of the
events that quoted them with a tombstone naming the purge's own
``memory_purged`` event (``tombstone``). Such an event no longer matches its
digest; it verifies when that later, audited purge event lists it.

``Checkpoint``, ``checkpoint_of``, ``VerifyReport`` and ``verify_records`` live
in ``noema.memory.upkeep.verify`` and stay importable from here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from concepts import AuditEntry, Event, Memory, trusted
from noema.clock import iso

__all__ = [
    "DIGESTED_FIELDS",
    "FIXED_FIELDS",
    "GENESIS",
    "THREAD_FIELDS",
    "TOMBSTONE_KEY",
    "canonical",
    "chain",
    "created_payload",
    "entry_hash",
    "event_digest",
    "event_record",
    "fixed_record",
    "purged_by",
    "tombstone",
]

GENESIS = "0" * 64

#: The one key of a purged event's payload; its value is the purge event's id.
TOMBSTONE_KEY = "purged_by"


def tombstone(purge_event_id: str) -> dict[str, str]:
    """The payload that replaces a purged event's: nothing of what it said."""
    return {TOMBSTONE_KEY: purge_event_id}


def purged_by(event: Event) -> str | None:
    """The purge event named by a tombstoned event's payload, if it is one."""
    value = event.payload.get(TOMBSTONE_KEY)
    return value if len(event.payload) == 1 and isinstance(value, str) else None


def canonical(value: Any) -> str:
    """``value`` as compact JSON with sorted keys: one text for one value."""
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


def event_digest(event: Event, payload: str | None = None) -> str:
    """sha256 of what an export says of an event: id, kind, time, links, payload.

    ``payload``: ``canonical(event.payload)``, when the caller has it.
    """
    text = _SEP.join(
        (
            event.id,
            event.kind,
            iso(event.at),
            event.memory_id or "",
            event.origin_event or "",
            canonical(event.payload) if payload is None else payload,
        )
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def entry_hash(
    seq: int, prev_hash: str, event_id: str, action: str, at: datetime, digest: str
) -> str:
    """sha256 of an audit entry: its position, the previous hash, its event and digest."""
    text = _SEP.join((str(seq), prev_hash, event_id, action, iso(at), digest))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chain(
    head: AuditEntry | None, events: Sequence[Event], payloads: Sequence[str] | None = None
) -> list[AuditEntry]:
    """The audit entries that append ``events`` after ``head``.

    ``payloads``: each event's ``canonical`` payload, when the caller has them.
    """
    seq = head.seq if head else 0
    prev = head.hash if head else GENESIS
    entries: list[AuditEntry] = []
    texts = payloads if payloads is not None else [None] * len(events)
    for event, payload in zip(events, texts, strict=True):
        seq += 1
        digest = event_digest(event, payload)
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


#: Fields of a memory fixed when it is written, recorded as they are in its
#: ``memory_created`` event (kind and key are in its content hash).
FIXED_FIELDS = (
    "epistemic",
    "channel",
    "importance",
    "salience",
    "trust",
    "credibility",
    "valid_from",
    "recorded_at",
    "decay",
)
#: Fixed fields of any length, recorded as a sha256 when not empty.
DIGESTED_FIELDS = ("summary", "tags", "payload")
#: Fixed fields of a memory written in a thread, recorded only then.
THREAD_FIELDS = ("thread", "position")
#: Every other field changes only through events that verification replays
#: (``noema.memory.upkeep.verify``), except ``keys`` and the vectors: derived text and
#: embeddings that ``noema reindex`` and ``embed-missing`` rebuild.


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, tuple):
        return list(value)
    return getattr(value, "value", value)


def _sha256(value: Any) -> str:
    return hashlib.sha256(canonical(_plain(value)).encode("utf-8")).hexdigest()


def fixed_record(memory: Memory) -> dict[str, Any]:
    """The fixed fields of ``memory`` as its ``memory_created`` event records them."""
    record = {name: _plain(getattr(memory, name)) for name in FIXED_FIELDS}
    for name in DIGESTED_FIELDS:
        value = getattr(memory, name)
        if value:
            record[name] = _sha256(value)
    if memory.thread:
        record.update({name: getattr(memory, name) for name in THREAD_FIELDS})
    return record


def created_payload(memory: Memory) -> dict[str, Any]:
    """What a ``memory_created`` event records beyond kind, channel and key.

    ``activation_at`` only when the activation starts before the memory was
    recorded (at the ``at`` its writer gave: when it happened or was said).
    ``history``: the store keeps every earlier state of this memory as a history
    span from its recording on, so verify requires them (memories written before
    history was kept, ADR 0018, have some of theirs only).
    """
    payload: dict[str, Any] = {
        "record": fixed_record(memory),
        "alpha": memory.alpha,
        "beta": memory.beta,
        "confidence": memory.confidence,
        "activation": memory.activation,
        "lifecycle": memory.lifecycle.value,
        "history": True,
    }
    if memory.activation_at != memory.recorded_at:
        payload["activation_at"] = iso(memory.activation_at)
    return payload
