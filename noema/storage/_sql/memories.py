"""The shared handlers of minds and their memories: rows, scans, counts, what refers to them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from concepts import Memory, MindInfo
from noema.storage import ops
from noema.storage._dialect import chunks, filter_sql
from noema.storage._rows import (
    MEMORY_COLUMNS,
    MEMORY_SELECT,
    from_micros,
    memory_from_row,
    memory_row,
    mind_from_row,
)
from noema.storage._sql.session import SqlSession, optional


def list_minds(s: SqlSession, op: ops.ListMinds) -> list[MindInfo]:
    return [mind_from_row(r) for r in s.all("SELECT id, name, created_at FROM minds ORDER BY name")]


def is_empty(s: SqlSession, op: ops.IsEmpty) -> bool:
    tables = ("memories", "relationships", "events", "audit")
    tests = [f"EXISTS (SELECT 1 FROM {t} WHERE mind_id = {s.dialect.mark})" for t in tables]
    row = s.one("SELECT " + " OR ".join(tests), (op.mind_id,) * len(tables))
    return not (row and row[0])


def insert_memory_rows(s: SqlSession, memories: Sequence[Memory]) -> None:
    s.append("memories", MEMORY_COLUMNS, [memory_row(m) for m in memories])


def set_memory_columns(
    s: SqlSession, groups: Mapping[tuple[str, ...], Sequence[tuple[Any, ...]]]
) -> None:
    """Apply ``update_groups``' rows: one statement per set of columns changed."""
    mark = s.dialect.mark
    for columns, rows in groups.items():
        assignments = ", ".join(f"{c} = {mark}" for c in columns)
        s.many(f"UPDATE memories SET {assignments} WHERE mind_id = {mark} AND id = {mark}", rows)


def get_memories(s: SqlSession, op: ops.GetMemories) -> list[Memory]:
    return s.memories_where(op.mind_id, "id", op.ids, active=False)


def find_by_hash(s: SqlSession, op: ops.FindActiveByHash) -> list[Memory]:
    return s.memories_where(op.mind_id, "content_hash", op.hashes, active=True)


def find_by_key(s: SqlSession, op: ops.FindActiveByKey) -> list[Memory]:
    return s.memories_where(op.mind_id, "key", op.keys, active=True)


_SCAN_ORDER = {
    "id": " ORDER BY m.id",
    "recent": " ORDER BY m.valid_from DESC, m.id DESC",
    "recorded": " ORDER BY m.recorded_at DESC, m.id DESC",
}


def scan_memories(s: SqlSession, op: ops.ScanMemories) -> list[Memory]:
    params: list[Any] = [op.mind_id]
    query = f"SELECT {MEMORY_SELECT} FROM memories m WHERE m.mind_id = {s.dialect.mark}"
    query += optional(s, " AND m.id >", op.after_id, params)
    query += " " + filter_sql(s.dialect, op.filters, op.as_of, params)
    query += _SCAN_ORDER[op.order] + optional(s, " LIMIT", op.limit, params)
    return [memory_from_row(r) for r in s.all(query, params)]


def scan_activation(
    s: SqlSession, op: ops.ScanActivation
) -> list[tuple[str, float, datetime, float]]:
    mark = s.dialect.mark
    rows = s.all(
        "SELECT id, activation, activation_at, importance FROM memories "
        f"WHERE mind_id = {mark} AND id > {mark} ORDER BY id LIMIT {mark}",
        (op.mind_id, op.after_id or "", op.limit),
    )
    return [(r[0], r[1], from_micros(r[2]), r[3]) for r in rows]


def count_memories(s: SqlSession, op: ops.CountMemories) -> list[tuple[str, str, int]]:
    bytewise = s.dialect.bytewise
    rows = s.all(
        f"SELECT kind, status, count(*) FROM memories WHERE mind_id = {s.dialect.mark} "
        f"GROUP BY kind, status ORDER BY kind{bytewise}, status{bytewise}",
        (op.mind_id,),
    )
    return [(r[0], r[1], int(r[2])) for r in rows]


def missing_vectors(s: SqlSession, op: ops.MissingVectors) -> list[tuple[str, str, datetime]]:
    mark = s.dialect.mark
    rows = s.all(
        "SELECT m.id, m.content, m.valid_from FROM memories m "
        f"WHERE m.mind_id = {mark} AND m.id > {mark} "
        "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.mind_id = m.mind_id "
        f"AND v.model = {mark} AND v.dims = {mark} AND v.memory_id = m.id) "
        f"ORDER BY m.id LIMIT {mark}",
        (op.mind_id, op.after_id or "", op.model, op.dims, op.limit),
    )
    return [(r[0], r[1], from_micros(r[2])) for r in rows]


def count_vectors(s: SqlSession, op: ops.CountVectors) -> tuple[int, int]:
    mark = s.dialect.mark
    row = s.one(
        "SELECT (SELECT count(*) FROM vectors "
        f"WHERE mind_id = {mark} AND model = {mark} AND dims = {mark}), "
        f"(SELECT count(*) FROM memories WHERE mind_id = {mark})",
        (op.mind_id, op.model, op.dims, op.mind_id),
    )
    assert row is not None
    return int(row[0]), int(row[1])


def search_entities(
    s: SqlSession, op: ops.SearchEntities, entities: Sequence[str]
) -> list[tuple[Memory, int]]:
    """``SearchEntities`` over ``entities``: the op's, less those too common to say much."""
    if not entities:
        return []
    mark = s.dialect.mark
    params: list[Any] = [op.mind_id]
    among = s.dialect.any_of("entity", entities, params)
    params.append(op.mind_id)
    where = filter_sql(s.dialect, op.filters, op.as_of, params)
    rows = s.all(
        "WITH hits AS (SELECT memory_id, count(*) AS n FROM entity_refs "
        f"WHERE mind_id = {mark} AND {among} GROUP BY memory_id) "
        f"SELECT {MEMORY_SELECT}, hits.n FROM hits "
        f"JOIN memories m ON m.mind_id = {mark} AND m.id = hits.memory_id "
        f"WHERE 1 = 1 {where} ORDER BY hits.n DESC, m.valid_from DESC, m.id DESC"
        + optional(s, " LIMIT", op.limit, params),
        params,
    )
    return [(memory_from_row(r[:-1]), int(r[-1])) for r in rows]


def delete_memory_links(s: SqlSession, mind_id: str, ids: Sequence[str]) -> None:
    """Delete what refers to the memories ``ids``: edges at either end, entity links, vectors."""
    for chunk in chunks(ids):
        for table, column in (
            ("relationships", "src"),
            ("relationships", "dst"),
            ("cooccurrence", "a"),
            ("cooccurrence", "b"),
            ("entity_refs", "memory_id"),
            ("vectors", "memory_id"),
            ("memory_history", "memory_id"),
        ):
            params: list[Any] = [mind_id]
            among = s.dialect.any_of(column, chunk, params)
            s.execute(f"DELETE FROM {table} WHERE mind_id = {s.dialect.mark} AND {among}", params)
