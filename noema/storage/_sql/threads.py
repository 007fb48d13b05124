"""The shared handlers of threads: where each thread ends, and a memory's neighbours in it.

A memory's thread order is ``(position, id)``; the partial index
``memories_thread`` (mind, thread, position, id, of the memories in a thread)
gives either side of a memory in that order, so each side is an index range
read to its ``LIMIT``, never a sort of the thread. Each statement says
``thread <> ''`` so that the planner may use that index.
"""

from __future__ import annotations

from typing import Any

from concepts import Memory
from noema.storage import ops
from noema.storage._dialect import chunks
from noema.storage._rows import MEMORY_SELECT, memory_from_row
from noema.storage._sql.session import SqlSession

#: Hits whose neighbours one statement reads (two sides each): recall asks for a few.
_HITS_PER_STATEMENT = 50


def thread_ends(s: SqlSession, op: ops.ThreadEnds) -> dict[str, int]:
    ends: dict[str, int] = {}
    for chunk in chunks(sorted({t for t in op.threads if t})):
        params: list[Any] = [op.mind_id]
        among = s.dialect.any_of("thread", chunk, params)
        rows = s.all(
            f"SELECT thread, max(position) FROM memories WHERE mind_id = {s.dialect.mark} "
            f"AND thread <> '' AND {among} AND position IS NOT NULL GROUP BY thread",
            params,
        )
        ends.update((str(thread), int(top)) for thread, top in rows)
    return ends


def neighbours(
    s: SqlSession, op: ops.Neighbours
) -> dict[str, tuple[tuple[Memory, ...], tuple[Memory, ...]]]:
    if op.span < 1 or not op.ids or not op.statuses:
        return {}
    mark = s.dialect.mark
    # The hits by the backend's own look-up by id; those in a thread are placed.
    placed = [
        (m.id, m.thread, m.position)
        for m in s.memories_where(op.mind_id, "id", sorted(set(op.ids)), active=False)
        if m.thread and m.position is not None
    ]
    found: dict[str, tuple[list[Memory], list[Memory]]] = {
        str(hit): ([], []) for hit, _, _ in placed
    }
    statuses = [status.value for status in op.statuses]
    for start in range(0, len(placed), _HITS_PER_STATEMENT):
        params = []
        parts: list[str] = []
        for hit, thread, position in placed[start : start + _HITS_PER_STATEMENT]:
            for side, (near, order) in enumerate((("<", "DESC"), (">", "ASC"))):
                params += [hit, side, op.mind_id, thread, position, position, hit]
                among = s.dialect.any_of("m.status", statuses, params)
                params.append(op.span)
                parts.append(
                    f"SELECT * FROM (SELECT {mark} AS hit, {mark} AS side, {MEMORY_SELECT} "
                    f"FROM memories m WHERE m.mind_id = {mark} AND m.thread <> '' "
                    f"AND m.thread = {mark} "
                    f"AND m.position {near}= {mark} "
                    f"AND (m.position {near} {mark} OR m.id {near} {mark}) AND {among} "
                    f"ORDER BY m.position {order}, m.id {order} LIMIT {mark}) AS side_{len(parts)}"
                )
        for row in s.all(" UNION ALL ".join(parts), params):
            found[str(row[0])][int(row[1])].append(memory_from_row(row[2:]))
    return {hit: (tuple(reversed(before)), tuple(after)) for hit, (before, after) in found.items()}
