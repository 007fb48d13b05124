"""Rows as every backend stores them: column lists and codecs shared by SQL backends.

Times are exact integer microseconds since the Unix epoch (UTC); tags and
payloads are compact, key-sorted JSON text; enums are stored by value.

A row edited outside Noema may hold a value no codec reads (an unknown status,
text that is not JSON, a time that is not a number). Decoding such a row raises
``IntegrityError`` naming the table's row, the column and the value
("memory <id>: status 'bogus' is not a valid value"), never a bare
``KeyError`` or ``ValueError``; verify reports it as a finding.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

import numpy as np
from pydantic import ValidationError

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
    Relation,
    Relationship,
    RelationStatus,
    Status,
    trusted,
)
from concepts.federation import Peer
from concepts.worlds import World
from noema.errors import IntegrityError

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
    "thread",
    "position",
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
        m.thread,
        m.position,
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
    try:
        return MindInfo(id=row[0], name=row[1], created_at=from_micros(row[2]))
    except (TypeError, ValueError) as exc:
        raise _unreadable(f"mind {row[0]}", _MIND_COLUMNS, row, _MIND_CHECKS, exc) from None


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
    again, and a row only is checked column by column when it cannot be read.

    Raises:
        IntegrityError: a column holds a value no memory can have.
        ValueError: the row is not as wide as ``MEMORY_COLUMNS`` (a bug, not the data).
    """
    if len(row) != len(MEMORY_COLUMNS):
        raise ValueError(f"a memory row has {len(MEMORY_COLUMNS)} columns, not {len(row)}")
    try:
        return _memory_from_row(row)
    except (KeyError, TypeError, ValueError) as exc:
        raise _unreadable(f"memory {row[0]}", MEMORY_COLUMNS, row, _MEMORY_CHECKS, exc) from None


def _memory_from_row(row: Sequence[Any]) -> Memory:
    """``memory_from_row`` unchecked.

    Recall builds about a hundred memories a query, so the columns are unpacked
    by name rather than zipped and patched; a memory's times are mostly the
    instant it was recorded, converted once.
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
        thread,
        position,
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
        "thread": thread,
        "position": position,
    }
    return trusted(Memory, data)


def relationship_from_row(row: Sequence[Any]) -> Relationship:
    """The relationship of a row of ``REL_COLUMNS``; ``IntegrityError`` when it cannot be."""
    try:
        data = dict(zip(REL_COLUMNS, row, strict=True))
        data["created_at"] = from_micros(data["created_at"])
        data["decided_at"] = opt_time(data["decided_at"])
        data["evidence"] = json.loads(data["evidence"]) if data["evidence"] != "{}" else {}
        return Relationship.model_validate(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise _unreadable(f"relationship {row[0]}", REL_COLUMNS, row, _REL_CHECKS, exc) from None


def event_from_row(row: Sequence[Any]) -> Event:
    """The event of a row of ``EVENT_COLUMNS``; ``IntegrityError`` when it cannot be."""
    try:
        data = dict(zip(EVENT_COLUMNS, row, strict=True))
        data["at"] = from_micros(data["at"])
        data["payload"] = json.loads(data["payload"])
        return Event.model_validate(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise _unreadable(f"event {row[1]}", EVENT_COLUMNS, row, _EVENT_CHECKS, exc) from None


def audit_from_row(row: Sequence[Any]) -> AuditEntry:
    """The audit entry of a row of ``AUDIT_COLUMNS``; ``IntegrityError`` when it cannot be."""
    try:
        data = dict(zip(AUDIT_COLUMNS, row, strict=True))
        data["at"] = from_micros(data["at"])
        return AuditEntry.model_validate(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise _unreadable(f"audit entry {row[0]}", AUDIT_COLUMNS, row, _AUDIT_CHECKS, exc) from None


#: The columns of ``worlds`` that ``world_from_row`` reads, in order.
WORLD_COLUMNS = ("mind_id", "id", "parent_id", "name", "created_at")
#: The columns of ``world_links`` that ``link_from_row`` reads, in order.
LINK_COLUMNS = ("src", "dst", "created_at")
#: The columns of ``memory_history`` that ``span_from_row`` reads, in order.
HISTORY_COLUMNS = ("memory_id", "sys_from", "sys_to", "status", "lifecycle", "valid_to")
#: The columns of ``peers`` that ``peer_from_row`` reads, in order.
PEER_COLUMNS = ("name", "url", "peer_mind", "alpha", "beta", "created_at")


def world_from_row(row: Sequence[Any]) -> World:
    """The world of a row of ``WORLD_COLUMNS``; ``IntegrityError`` when it cannot be."""
    _check(f"world {row[1]}", WORLD_COLUMNS, row, _WORLD_CHECKS)
    mind_id, id_, parent_id, name, created_at = row
    return trusted(
        World,
        dict(
            mind_id=mind_id,
            id=id_,
            parent_id=parent_id,
            name=name,
            created_at=from_micros(created_at),
        ),
    )


def link_from_row(row: Sequence[Any]) -> tuple[str, str, datetime]:
    """A world link ``(src, dst, created_at)`` of a row of ``LINK_COLUMNS``."""
    _check(f"world link {row[0]} -> {row[1]}", LINK_COLUMNS, row, _LINK_CHECKS)
    return (str(row[0]), str(row[1]), from_micros(row[2]))


def span_from_row(
    row: Sequence[Any],
) -> tuple[str, datetime, datetime, Status, Lifecycle, datetime | None]:
    """A history span of a row of ``HISTORY_COLUMNS``; ``IntegrityError`` when it cannot be."""
    _check(f"history of memory {row[0]}", HISTORY_COLUMNS, row, _HISTORY_CHECKS)
    memory_id, since, until, status, lifecycle, valid_to = row
    return (
        str(memory_id),
        from_micros(since),
        from_micros(until),
        _STATUS[status],
        _LIFECYCLE[lifecycle],
        opt_time(valid_to),
    )


def peer_from_row(row: Sequence[Any]) -> Peer:
    """The subscription of a row of ``PEER_COLUMNS``; ``IntegrityError`` when it cannot be."""
    _check(f"peer {row[0]}", PEER_COLUMNS, row, _PEER_CHECKS)
    name, url, mind, alpha, beta, created = row
    return trusted(
        Peer,
        dict(
            name=str(name),
            url=None if url is None else str(url),
            mind=str(mind),
            alpha=float(alpha),
            beta=float(beta),
            created_at=from_micros(created),
        ),
    )


# ---------------------------------------------------------------- values no codec reads


def corrupt(row: str, column: str, value: Any) -> IntegrityError:
    """The error of a stored ``value`` of ``column`` that no codec reads, for ``row``."""
    shown = repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return IntegrityError(f"{row}: {column} {shown} is not a valid value")


def _check(row_name: str, columns: Sequence[str], row: Sequence[Any], checks: _Checks) -> None:
    """Raise ``corrupt`` for the first column of ``row`` its check in ``checks`` refuses."""
    for column, value in zip(columns, row, strict=False):
        check = checks.get(column)
        if check is not None and not check(value):
            raise corrupt(row_name, column, value)


def _unreadable(
    row_name: str, columns: Sequence[str], row: Sequence[Any], checks: _Checks, exc: Exception
) -> IntegrityError:
    """Why a row could not be read: the column its check refuses, else the one ``exc`` names."""
    _check(row_name, columns, row, checks)
    column = "a column"
    if isinstance(exc, ValidationError) and (loc := exc.errors()[0]["loc"]):
        column = str(loc[0])
    value = dict(zip(columns, row, strict=False)).get(column)
    return corrupt(row_name, column, value)


def _time(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _opt_time(value: Any) -> bool:
    return value is None or _time(value)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _json(kind: type[Any]) -> Any:
    def check(value: Any) -> bool:
        try:
            loaded = json.loads(value)
        except (TypeError, ValueError):
            return False
        if kind is list:
            return isinstance(loaded, list) and all(isinstance(t, str) for t in loaded)
        return isinstance(loaded, kind)

    return check


def _one_of(values: Mapping[Any, Any] | type[Any]) -> Any:
    known = frozenset(m.value for m in values) if isinstance(values, type) else frozenset(values)
    return lambda value: value in known


_Checks = Mapping[str, Any]
_MIND_COLUMNS = ("id", "name", "created_at")
_MIND_CHECKS: _Checks = {"id": _text, "name": _text, "created_at": _time}
_MEMORY_CHECKS: _Checks = {
    "kind": _one_of(_KIND),
    "epistemic": _one_of(_EPISTEMIC),
    "channel": _one_of(_CHANNEL),
    "status": _one_of(_STATUS),
    "decay": _one_of(_DECAY),
    "lifecycle": _one_of(_LIFECYCLE),
    "tags": _json(list),
    "payload": _json(dict),
    **dict.fromkeys(("activation_at", "valid_from", "recorded_at"), _time),
    **dict.fromkeys(("valid_to", "last_accessed", "changed_at"), _opt_time),
    "thread": _text,
    "position": _opt_time,  # an integer or NULL, as an optional time is
    **dict.fromkeys(
        ("confidence", "alpha", "beta", "importance", "salience", "trust", "credibility"),
        _number,
    ),
    **dict.fromkeys(("activation", "feedback_mean", "access_count", "feedback_count"), _number),
}
_REL_CHECKS: _Checks = {
    "relation": _one_of(Relation),
    "status": _one_of(RelationStatus),
    "confidence": _number,
    "created_at": _time,
    "decided_at": _opt_time,
    "evidence": _json(dict),
}
_EVENT_CHECKS: _Checks = {"kind": _text, "at": _time, "payload": _json(dict)}
_AUDIT_CHECKS: _Checks = {"seq": _time, "at": _time}
_WORLD_CHECKS: _Checks = {"parent_id": _text, "name": _text, "created_at": _time}
_LINK_CHECKS: _Checks = {"created_at": _time}
_HISTORY_CHECKS: _Checks = {
    "sys_from": _time,
    "sys_to": _time,
    "status": _one_of(_STATUS),
    "lifecycle": _one_of(_LIFECYCLE),
    "valid_to": _opt_time,
}
_PEER_CHECKS: _Checks = {
    "url": lambda value: value is None or _text(value),
    "peer_mind": _text,
    "alpha": _number,
    "beta": _number,
    "created_at": _time,
}


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
