"""The shared handlers of worlds: their rows, the links between them, their composed vectors."""

from __future__ import annotations

from typing import Any

import numpy as np

from concepts import World
from noema.storage import ops
from noema.storage._rows import WORLD_COLUMNS, to_micros, world_from_row
from noema.storage._sql.session import SqlSession, mind_rows


def put_worlds(s: SqlSession, op: ops.PutWorlds) -> None:
    rows = [(w.mind_id, w.id, w.parent_id, w.name, to_micros(w.created_at)) for w in op.worlds]
    if rows:
        s.many(
            "INSERT INTO worlds (mind_id, id, parent_id, name, created_at) "
            f"VALUES ({s.dialect.marks(5)}) ON CONFLICT (mind_id, id) DO UPDATE SET "
            "parent_id = excluded.parent_id, name = excluded.name",
            rows,
        )


def list_worlds(s: SqlSession, op: ops.ListWorlds) -> list[World]:
    rows = mind_rows(s, "worlds", WORLD_COLUMNS, op.mind_id, f"id{s.dialect.bytewise}")
    return [world_from_row(row) for row in rows]


def count_worlds(s: SqlSession, op: ops.CountWorlds) -> dict[str, int]:
    params: list[Any] = [op.mind_id]
    statuses = s.dialect.any_of("status", [v.value for v in op.statuses], params)
    rows = s.all(
        f"SELECT world, count(*) FROM memories WHERE mind_id = {s.dialect.mark} AND {statuses} "
        "GROUP BY world",
        params,
    )
    return {str(world): int(n) for world, n in rows}


def put_world_link(s: SqlSession, op: ops.PutWorldLink) -> bool:
    added = s.execute(
        "INSERT INTO world_links (mind_id, src, dst, created_at) "
        f"VALUES ({s.dialect.marks(4)}) ON CONFLICT (mind_id, src, dst) DO NOTHING",
        [op.mind_id, op.src, op.dst, to_micros(op.created_at)],
    )
    return added > 0


def delete_world_link(s: SqlSession, op: ops.DeleteWorldLink) -> bool:
    mark = s.dialect.mark
    deleted = s.execute(
        f"DELETE FROM world_links WHERE mind_id = {mark} AND src = {mark} AND dst = {mark}",
        [op.mind_id, op.src, op.dst],
    )
    return deleted > 0


def list_world_links(s: SqlSession, op: ops.ListWorldLinks) -> list[tuple[str, str]]:
    order = f"src{s.dialect.bytewise}, dst{s.dialect.bytewise}"
    rows = mind_rows(s, "world_links", ("src", "dst"), op.mind_id, order)
    return [(str(a), str(b)) for a, b in rows]


def get_world_vectors(s: SqlSession, op: ops.GetWorldVectors) -> dict[str, ops.WorldSum]:
    mark = s.dialect.mark
    params: list[Any] = [op.mind_id, op.model, op.dims]
    query = (
        "SELECT world, total, members FROM world_vectors "
        f"WHERE mind_id = {mark} AND model = {mark} AND dims = {mark}"
    )
    if op.worlds is not None:
        if not op.worlds:
            return {}
        query += " AND " + s.dialect.any_of("world", list(op.worlds), params)
    return {
        str(world): (np.frombuffer(bytes(total), dtype=np.float64).copy(), int(members))
        for world, total, members in s.all(query, params)
    }


def add_world_vectors(s: SqlSession, op: ops.AddWorldVectors) -> None:
    if not op.deltas:
        return
    held = get_world_vectors(
        s, ops.GetWorldVectors(op.mind_id, op.model, op.dims, sorted(op.deltas))
    )
    rows = []
    for world, (delta, count) in sorted(op.deltas.items()):
        vector = np.asarray(delta, dtype=np.float64).reshape(-1)
        if vector.shape[0] != op.dims:
            raise ValueError(f"AddWorldVectors: a delta of width {vector.shape[0]}, not {op.dims}")
        total, members = held.get(world, (np.zeros(op.dims), 0))
        members += count
        total = total + vector if members > 0 else np.zeros(op.dims)
        rows.append((op.mind_id, world, op.model, op.dims, total.tobytes(), max(members, 0)))
    s.many(
        "INSERT INTO world_vectors (mind_id, world, model, dims, total, members) "
        f"VALUES ({s.dialect.marks(6)}) ON CONFLICT (mind_id, model, dims, world) DO UPDATE SET "
        "total = excluded.total, members = excluded.members",
        rows,
    )


def world_vector_models(s: SqlSession, op: ops.WorldVectorModels) -> list[tuple[str, int]]:
    rows = s.all(
        "SELECT DISTINCT model, dims FROM world_vectors "
        f"WHERE mind_id = {s.dialect.mark} ORDER BY model, dims",
        [op.mind_id],
    )
    return [(str(model), int(dims)) for model, dims in rows]
