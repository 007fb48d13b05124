"""Rows as every backend stores them: column lists and codecs shared by SQL backends.

Times are exact integer microseconds since the Unix epoch (UTC); tags and
payloads are compact, key-sorted JSON text; enums are stored by value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

import numpy as np

from concepts import (
    AuditEntry,
    Channel,
    DecayClass,
    Epistemic,
    Event,
    Lifecycle,
    Memory,
    MemoryKind,
    MindInfo,
    Relationship,
    Status,
    trusted,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)

MEMORY_COLUMNS = (
    "id",
    "mind_id",
    "kind",
    "epistemic",
    "channel",
    "content",
    "summary",
    "key",
    "tags",
    "payload",
    "confidence",
    "alpha",
    "beta",
    "importance",
    "salience",
    "trust",
    "credibility",
    "activation",
    "activation_at",
    "status",
    "valid_from",
    "valid_to",
    "recorded_at",
    "last_accessed",
    "access_count",
    "origin_event",
    "content_hash",
    "feedback_count",
    "feedback_mean",
    "decay",
    "keys",
    "lifecycle",
    "world",
    "changed_at",
)
TIME_COLUMNS = frozenset(
    {"activation_at", "valid_from", "valid_to", "recorded_at", "last_accessed", "changed_at"}
)
REL_COLUMNS = (
    "id",
    "mind_id",
    "src",
    "relation",
    "dst",
    "confidence",
    "source",
    "status",
    "created_at",
    "decided_at",
    "evidence",
)
EVENT_COLUMNS = ("seq", "id", "mind_id", "kind", "at", "memory_id", "origin_event", "payload")
AUDIT_COLUMNS = ("seq", "at", "event_id", "action", "digest", "prev_hash", "hash")
#: What a new row names (events get their ``seq`` from the database; audit rows carry the mind).
EVENT_INSERT_COLUMNS = EVENT_COLUMNS[1:]
AUDIT_INSERT_COLUMNS = ("mind_id", *AUDIT_COLUMNS)
#: The columns of ``memories`` aliased ``m``, in ``MEMORY_COLUMNS`` order.
MEMORY_SELECT = ", ".join(f"m.{c}" for c in MEMORY_COLUMNS)


def to_micros(value: datetime) -> int:
    """An aware datetime as exact integer microseconds since the epoch."""
    return (value - _EPOCH) // _MICRO


def from_micros(value: int) -> datetime:
    """The aware datetime of ``to_micros`` (exact: a timedelta times an integer)."""
    return _EPOCH + _MICRO * value


def opt_time(value: int | None) -> datetime | None:
    return None if value is None else from_micros(value)


def opt_micros(value: datetime | None) -> int | None:
    return None if value is None else to_micros(value)


def to_json(value: Any) -> str:
    if not value:
        return "[]" if isinstance(value, list | tuple) else "{}"
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def memory_row(m: Memory) -> tuple[Any, ...]:
    return (
        m.id,
        m.mind_id,
        m.kind.value,
        m.epistemic.value,
        m.channel.value,
        m.content,
        m.summary,
        m.key,
        to_json(m.tags),
        to_json(m.payload),
        m.confidence,
        m.alpha,
        m.beta,
        m.importance,
        m.salience,
        m.trust,
        m.credibility,
        m.activation,
        to_micros(m.activation_at),
        m.status.value,
        to_micros(m.valid_from),
        opt_micros(m.valid_to),
        to_micros(m.recorded_at),
        opt_micros(m.last_accessed),
        m.access_count,
        m.origin_event,
        m.content_hash,
        m.feedback_count,
        m.feedback_mean,
        m.decay.value,
        m.keys,
        m.lifecycle.value,
        m.world,
        opt_micros(m.changed_at),
    )


def relationship_row(r: Relationship) -> tuple[Any, ...]:
    """A relationship as a row of ``REL_COLUMNS``."""
    return (
        r.id,
        r.mind_id,
        r.src,
        r.relation.value,
        r.dst,
        r.confidence,
        r.source,
        r.status.value,
        to_micros(r.created_at),
        opt_micros(r.decided_at),
        to_json(r.evidence),
    )


def event_row(e: Event, payload: str | None = None) -> tuple[Any, ...]:
    """An event as a row of ``EVENT_INSERT_COLUMNS``; ``payload``: its payload's JSON, if known."""
    return (
        e.id,
        e.mind_id,
        e.kind,
        to_micros(e.at),
        e.memory_id,
        e.origin_event,
        to_json(e.payload) if payload is None else payload,
    )


def audit_row(mind_id: str, a: AuditEntry) -> tuple[Any, ...]:
    """An audit entry of ``mind_id`` as a row of ``AUDIT_INSERT_COLUMNS``."""
    return (mind_id, a.seq, to_micros(a.at), a.event_id, a.action, a.digest, a.prev_hash, a.hash)


def mind_from_row(row: Sequence[Any]) -> MindInfo:
    """A ``(id, name, created_at)`` row as the mind it describes."""
    return MindInfo(id=row[0], name=row[1], created_at=from_micros(row[2]))


def _members(enum: type[Any]) -> dict[Any, Any]:
    """An enum's members by value: a dict look-up, where calling the enum costs a microsecond."""
    return {member.value: member for member in enum}


_KIND, _EPISTEMIC, _CHANNEL = _members(MemoryKind), _members(Epistemic), _members(Channel)
_STATUS, _DECAY, _LIFECYCLE = _members(Status), _members(DecayClass), _members(Lifecycle)


@lru_cache(maxsize=4_096)
def _tags(text: str) -> tuple[str, ...]:
    """A tags column as its tuple: few memories' tags differ, and a tuple can be shared."""
    return tuple(json.loads(text)) if text != "[]" else ()


def memory_from_row(row: Sequence[Any]) -> Memory:
    """The memory of a row of ``MEMORY_COLUMNS``, in that order.

    Rows were validated on the way in: types are rebuilt without validating
    again. Recall builds about a hundred memories a query, so the columns are
    unpacked by name rather than zipped and patched; a memory's times are
    mostly the instant it was recorded, converted once.
    """
    (
        id_,
        mind_id,
        kind,
        epistemic,
        channel,
        content,
        summary,
        key,
        tags,
        payload,
        confidence,
        alpha,
        beta,
        importance,
        salience,
        trust,
        credibility,
        activation,
        activation_at,
        status,
        valid_from,
        valid_to,
        recorded_at,
        last_accessed,
        access_count,
        origin_event,
        content_hash,
        feedback_count,
        feedback_mean,
        decay,
        keys,
        lifecycle,
        world,
        changed_at,
    ) = row
    recorded = _EPOCH + _MICRO * recorded_at
    data = {
        "id": id_,
        "mind_id": mind_id,
        "kind": _KIND[kind],
        "epistemic": _EPISTEMIC[epistemic],
        "channel": _CHANNEL[channel],
        "content": content,
        "summary": summary,
        "key": key,
        "tags": _tags(tags),
        "payload": json.loads(payload) if payload != "{}" else {},
        "confidence": confidence,
        "alpha": alpha,
        "beta": beta,
        "importance": importance,
        "salience": salience,
        "trust": trust,
        "credibility": credibility,
        "activation": activation,
        "activation_at": (
            recorded if activation_at == recorded_at else _EPOCH + _MICRO * activation_at
        ),
        "status": _STATUS[status],
        "valid_from": recorded if valid_from == recorded_at else _EPOCH + _MICRO * valid_from,
        "valid_to": None if valid_to is None else _EPOCH + _MICRO * valid_to,
        "recorded_at": recorded,
        "last_accessed": None if last_accessed is None else _EPOCH + _MICRO * last_accessed,
        "access_count": access_count,
        "origin_event": origin_event,
        "content_hash": content_hash,
        "feedback_count": feedback_count,
        "feedback_mean": feedback_mean,
        "decay": _DECAY[decay],
        "keys": keys,
        "lifecycle": _LIFECYCLE[lifecycle],
        "world": world,
        "changed_at": None if changed_at is None else _EPOCH + _MICRO * changed_at,
    }
    return trusted(Memory, data)


def relationship_from_row(row: Sequence[Any]) -> Relationship:
    data = dict(zip(REL_COLUMNS, row, strict=True))
    data["created_at"] = from_micros(data["created_at"])
    data["decided_at"] = opt_time(data["decided_at"])
    data["evidence"] = json.loads(data["evidence"]) if data["evidence"] != "{}" else {}
    return Relationship.model_validate(data)


def event_from_row(row: Sequence[Any]) -> Event:
    data = dict(zip(EVENT_COLUMNS, row, strict=True))
    data["at"] = from_micros(data["at"])
    data["payload"] = json.loads(data["payload"])
    return Event.model_validate(data)


def audit_from_row(row: Sequence[Any]) -> AuditEntry:
    data = dict(zip(AUDIT_COLUMNS, row, strict=True))
    data["at"] = from_micros(data["at"])
    return AuditEntry.model_validate(data)


def update_groups(
    mind_id: str, updates: Sequence[tuple[str, Mapping[str, Any]]], mutable: frozenset[str]
) -> dict[tuple[str, ...], list[tuple[Any, ...]]]:
    """``UpdateMemories`` as rows grouped by the columns they set.

    Each row is ``(*values, mind_id, memory_id)`` with times in microseconds and
    enums by value; a field outside ``mutable`` is refused before anything runs.
    """
    grouped: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
    for memory_id, changes in updates:
        unknown = set(changes) - mutable
        if unknown:
            raise ValueError(f"fields {sorted(unknown)} of a memory never change")
        columns = tuple(sorted(changes))
        values = tuple(_column_value(c, changes[c]) for c in columns)
        grouped.setdefault(columns, []).append((*values, mind_id, memory_id))
    return grouped


def _column_value(column: str, value: Any) -> Any:
    if column in TIME_COLUMNS:
        return opt_micros(value)
    return getattr(value, "value", value)


def vector_matrix(ids: Sequence[str], vectors: Any) -> np.ndarray:
    """``PutVectors``' vectors as contiguous float32 rows, one per id (else a ``ValueError``)."""
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != len(ids):
        raise ValueError(f"PutVectors: {len(ids)} ids but vectors of shape {matrix.shape}")
    return matrix


def unit_query(query: Any) -> np.ndarray | None:
    """A search vector as float32 of length 1, or ``None`` when it has no direction.

    Embedders give unit vectors; their bits are kept when they do, so both
    backends score the same numbers.
    """
    vector = np.asarray(query, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(vector))
    if norm == 0 or not np.isfinite(norm):
        return None
    return vector if abs(norm - 1.0) <= 1e-6 else vector / norm
