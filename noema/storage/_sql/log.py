"""The shared handlers of a mind's event log and of the audit chain that hashes it."""

from __future__ import annotations

from typing import Any

from concepts import AuditEntry, Event
from noema.storage import ops
from noema.storage._dialect import chunks
from noema.storage._rows import (
    AUDIT_COLUMNS,
    AUDIT_INSERT_COLUMNS,
    EVENT_COLUMNS,
    EVENT_INSERT_COLUMNS,
    audit_from_row,
    audit_row,
    event_from_row,
    event_row,
    to_json,
)
from noema.storage._sql.session import SqlSession, optional


def append_events(s: SqlSession, op: ops.AppendEvents) -> None:
    if not op.events:
        return
    if op.payloads is None:
        rows = [event_row(e) for e in op.events]
    else:
        rows = [event_row(e, p) for e, p in zip(op.events, op.payloads, strict=True)]
    s.append("events", EVENT_INSERT_COLUMNS, rows)


def list_events(s: SqlSession, op: ops.ListEvents) -> list[Event]:
    dialect = s.dialect
    params: list[Any] = [op.mind_id]
    query = f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE mind_id = {dialect.mark}"
    query += optional(s, " AND memory_id =", op.memory_id, params)
    if op.kinds:
        query += " AND " + dialect.any_of("kind", op.kinds, params)
    if op.ids is not None:
        query += " AND " + dialect.any_of("id", op.ids, params)
    query += optional(s, " AND seq >", op.after_seq, params)
    query += " ORDER BY seq DESC" if op.newest_first else " ORDER BY seq"
    query += optional(s, " LIMIT", op.limit, params)
    return [event_from_row(r) for r in s.all(query, params)]


def tombstone_events(s: SqlSession, op: ops.TombstoneEvents) -> None:
    payload = to_json(dict(op.payload))
    for chunk in chunks(list(op.ids)):
        params: list[Any] = [payload, op.mind_id]
        among = s.dialect.any_of("id", chunk, params)
        s.execute(
            f"UPDATE events SET payload = {s.dialect.mark} "
            f"WHERE mind_id = {s.dialect.mark} AND {among}",
            params,
        )


_AUDIT_SELECT = f"SELECT {', '.join(AUDIT_COLUMNS)} FROM audit"


def audit_head(s: SqlSession, op: ops.AuditHead) -> AuditEntry | None:
    row = s.one(
        f"{_AUDIT_SELECT} WHERE mind_id = {s.dialect.mark} ORDER BY seq DESC LIMIT 1",
        (op.mind_id,),
    )
    return None if row is None else audit_from_row(row)


def get_audit_entry(s: SqlSession, op: ops.GetAuditEntry) -> AuditEntry | None:
    mark = s.dialect.mark
    row = s.one(
        f"{_AUDIT_SELECT} WHERE mind_id = {mark} AND event_id = {mark} ORDER BY seq LIMIT 1",
        (op.mind_id, op.event_id),
    )
    return None if row is None else audit_from_row(row)


def append_audit(s: SqlSession, op: ops.AppendAudit) -> None:
    if op.entries:
        s.append("audit", AUDIT_INSERT_COLUMNS, [audit_row(op.mind_id, a) for a in op.entries])


def list_audit(s: SqlSession, op: ops.ListAudit) -> list[AuditEntry]:
    mark = s.dialect.mark
    rows = s.all(
        f"{_AUDIT_SELECT} WHERE mind_id = {mark} AND seq > {mark} ORDER BY seq LIMIT {mark}",
        (op.mind_id, op.after_seq, op.limit),
    )
    return [audit_from_row(r) for r in rows]
