"""The shared handlers of the edges between memories: relationships and co-occurrence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from concepts import Relationship
from noema.storage import ops
from noema.storage._rows import (
    REL_COLUMNS,
    from_micros,
    relationship_from_row,
    relationship_row,
    to_micros,
)
from noema.storage._sql.session import SqlSession, optional, select_among


def insert_relationships(s: SqlSession, op: ops.InsertRelationships) -> None:
    if op.relationships:
        s.many(
            f"INSERT INTO relationships ({', '.join(REL_COLUMNS)}) "
            f"VALUES ({s.dialect.marks(len(REL_COLUMNS))})",
            [relationship_row(r) for r in op.relationships],
        )


def set_relationship_status(s: SqlSession, op: ops.SetRelationshipStatus) -> None:
    mark = s.dialect.mark
    s.execute(
        f"UPDATE relationships SET status = {mark}, decided_at = {mark} "
        f"WHERE mind_id = {mark} AND id = {mark}",
        (op.status.value, to_micros(op.decided_at), op.mind_id, op.id),
    )


def find_relationships(s: SqlSession, op: ops.FindRelationships) -> list[Relationship]:
    dialect = s.dialect
    params: list[Any] = [op.mind_id]
    query = f"SELECT {', '.join(REL_COLUMNS)} FROM relationships WHERE mind_id = {dialect.mark}"
    if op.ids is not None:
        query += " AND " + dialect.any_of("id", op.ids, params)
    if op.memory_ids is not None:
        # Either end, each by its own index (an OR of the two is a scan of the mind's edges).
        ends = []
        for end in ("src", "dst"):
            params.append(op.mind_id)
            among = dialect.any_of(end, op.memory_ids, params)
            ends.append(f"SELECT id FROM relationships WHERE mind_id = {dialect.mark} AND {among}")
        query += f" AND id IN ({' UNION ALL '.join(ends)})"
    if op.relations:
        query += " AND " + dialect.any_of("relation", [r.value for r in op.relations], params)
    if op.statuses:
        query += " AND " + dialect.any_of("status", [st.value for st in op.statuses], params)
    query += optional(s, " AND id >", op.after_id, params)
    query += " ORDER BY id" + optional(s, " LIMIT", op.limit, params)
    return [relationship_from_row(r) for r in s.all(query, params)]


_CO_SELECT = "SELECT a, b, weight, updated_at FROM cooccurrence"


def _co_edges(rows: Sequence[Sequence[Any]]) -> list[ops.CoEdge]:
    return [(str(a), str(b), float(w), from_micros(int(t))) for a, b, w, t in rows]


def get_cooccurrence(s: SqlSession, op: ops.GetCooccurrence) -> list[ops.CoEdge]:
    ids = sorted(set(op.ids))
    if len(ids) < 2:
        return []
    params: list[Any] = [op.mind_id]
    among = s.dialect.any_of("b", ids, params)
    rows = select_among(
        s, f"{_CO_SELECT} WHERE mind_id = {s.dialect.mark} AND {among} AND ", params, "a", ids
    )
    return sorted(_co_edges(rows), key=lambda edge: (edge[0], edge[1]))


def put_cooccurrence(s: SqlSession, op: ops.PutCooccurrence) -> None:
    rows = []
    for a, b, weight, at in op.edges:
        if not a < b:
            raise ValueError(f"PutCooccurrence: an edge is (a, b) with a < b, got ({a}, {b})")
        rows.append((op.mind_id, a, b, weight, to_micros(at)))
    if rows:
        s.many(
            "INSERT INTO cooccurrence (mind_id, a, b, weight, updated_at) "
            f"VALUES ({s.dialect.marks(5)}) ON CONFLICT (mind_id, a, b) DO UPDATE SET "
            "weight = excluded.weight, updated_at = excluded.updated_at",
            rows,
        )


def scan_cooccurrence(s: SqlSession, op: ops.ScanCooccurrence) -> list[ops.CoEdge]:
    mark = s.dialect.mark
    params: list[Any] = [op.mind_id, op.min_weight]
    query = f"{_CO_SELECT} WHERE mind_id = {mark} AND weight >= {mark}"
    if op.after is not None:
        query += f" AND (a > {mark} OR (a = {mark} AND b > {mark}))"
        params += [op.after[0], op.after[0], op.after[1]]
    bytewise = s.dialect.bytewise
    query += f" ORDER BY a{bytewise}, b{bytewise}" + optional(s, " LIMIT", op.limit, params)
    return _co_edges(s.all(query, params))
