"""The session both SQL backends build on, and the handlers they share.

A backend's session runs an operation through its handler table: the guard (a
read session refuses a write op) runs before anything else, and driver errors
become Noema's in one place. Most operations are the same SQL on both backends
but for the dialect; their handlers are written here once, over the session's
small cursor API (``all``, ``one``, ``execute``, ``many``, ``append``,
``memories_where``). Backends add the handlers whose SQL is their own.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime
from typing import Any, ClassVar, TypeVar, cast

import numpy as np

from concepts import (
    AuditEntry,
    Event,
    Lifecycle,
    Memory,
    MindInfo,
    Relationship,
    Status,
    World,
)
from concepts.federation import Peer
from noema.errors import IntegrityError, InvalidInput, StorageError
from noema.storage import ops
from noema.storage._dialect import Dialect, chunks, filter_sql
from noema.storage._rows import (
    AUDIT_COLUMNS,
    AUDIT_INSERT_COLUMNS,
    EVENT_COLUMNS,
    EVENT_INSERT_COLUMNS,
    HISTORY_COLUMNS,
    LINK_COLUMNS,
    MEMORY_COLUMNS,
    MEMORY_SELECT,
    PEER_COLUMNS,
    REL_COLUMNS,
    WORLD_COLUMNS,
    audit_from_row,
    audit_row,
    event_from_row,
    event_row,
    from_micros,
    link_from_row,
    memory_from_row,
    memory_row,
    mind_from_row,
    opt_micros,
    opt_time,
    peer_from_row,
    relationship_from_row,
    relationship_row,
    span_from_row,
    to_json,
    to_micros,
    world_from_row,
)

__all__ = ["SHARED_HANDLERS", "Handler", "SqlSession"]

R = TypeVar("R")

#: A handler: ``(session, op) -> the op's result``.
Handler = Callable[[Any, Any], Any]


class SqlSession(ABC):
    """One transaction on one connection, as the handlers see it."""

    dialect: ClassVar[Dialect]

    def __init__(self, write: bool, handlers: Mapping[type[Any], Handler]) -> None:
        self.write = write
        self._handlers = handlers

    def run(self, op: ops.Op[R]) -> R:
        """Run ``op`` through its handler; a read session refuses a write op before anything."""
        handler = self._handlers.get(type(op))
        if handler is None:
            raise TypeError(f"{self.dialect.name} backend has no handler for {type(op).__name__}")
        if not self.write and type(op) in ops.WRITE_OPS:
            raise TypeError(f"{type(op).__name__} needs a write transaction")
        try:
            self.prepare(op)
            return cast(R, handler(self, op))
        except UnicodeEncodeError:
            # Text no model checked (an id, a name) that cannot be stored as UTF-8.
            raise InvalidInput("text is not valid Unicode (it holds a lone surrogate)") from None
        except Exception as exc:
            problem = self.problem(exc)
            if problem is None:
                raise
            if isinstance(problem, InvalidInput):
                raise problem from None
            raise StorageError(
                f"{self.dialect.name} failed on {type(op).__name__}: {problem}"
            ) from exc

    def submit(self, op: ops.Op[R]) -> Future[R]:
        """Run ``op`` now (a backend that can run it beside the caller overrides this)."""
        future: Future[R] = Future()
        try:
            future.set_result(self.run(op))
        except Exception as exc:
            future.set_exception(exc)
        return future

    def prepare(self, op: ops.Op[Any]) -> None:  # noqa: B027 - a hook, empty by default
        """Runs before each handler of this session (after the guard)."""

    @abstractmethod
    def problem(self, exc: Exception) -> InvalidInput | str | None:
        """What an exception ``exc`` raised by a handler means.

        Returns:
            The caller's input at fault (an ``InvalidInput``, raised as it is), the
            store failing (a one-line cause, raised as a ``StorageError``), or
            neither (``None``: ``exc`` propagates unchanged).
        """

    # The cursor API the shared handlers use.

    @abstractmethod
    def all(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def one(self, query: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None: ...

    @abstractmethod
    def execute(self, query: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; how many rows it changed."""

    @abstractmethod
    def many(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement per row of parameters."""

    @abstractmethod
    def append(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert ``rows`` of ``columns`` into ``table``, the fastest way the backend has."""

    @abstractmethod
    def memories_where(
        self, mind_id: str, column: str, values: Sequence[str], *, active: bool
    ) -> list[Memory]:
        """The mind's memories whose ``column`` is one of ``values`` (``active``: active ones)."""


# ---------------------------------------------------------------- minds and memories


def list_minds(s: SqlSession, op: ops.ListMinds) -> list[MindInfo]:
    return [mind_from_row(r) for r in s.all("SELECT id, name, created_at FROM minds ORDER BY name")]


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


def history_changes(op: ops.UpdateMemories) -> dict[str, int]:
    """The memories whose ``HISTORY_FIELDS`` ``op`` changes, with their new ``changed_at``.

    Raises:
        ValueError: such a change comes without ``changed_at`` (backends keep the
            history first in their handler, so the op then writes nothing).
    """
    changing = {}
    for memory_id, changes in op.updates:
        if ops.HISTORY_FIELDS.isdisjoint(changes):
            continue
        if changes.get("changed_at") is None:
            raise ValueError(
                f"UpdateMemories: a change of {sorted(ops.HISTORY_FIELDS & set(changes))} "
                f"of memory {memory_id} needs changed_at"
            )
        changing[memory_id] = to_micros(changes["changed_at"])
    return changing


def keep_history(s: SqlSession, op: ops.UpdateMemories) -> None:
    """Keep, as history spans, the states that ``op``'s changes of ``HISTORY_FIELDS`` replace.

    Runs first in a backend's ``UpdateMemories`` handler, before anything is
    written (a refused op writes nothing). A span is ``[previous changed_at or recorded_at,
    changed_at)``; one of no length (a change at the instant of the last) is not kept.
    """
    changing = history_changes(op)
    if not changing:
        return
    mark = s.dialect.mark
    spans = []
    for chunk in chunks(sorted(changing)):
        params: list[Any] = [op.mind_id]
        rows = s.all(
            "SELECT id, COALESCE(changed_at, recorded_at), status, lifecycle, valid_to "
            f"FROM memories WHERE mind_id = {mark} AND " + s.dialect.any_of("id", chunk, params),
            params,
        )
        for memory_id, since, status, lifecycle, valid_to in rows:
            until = changing[memory_id]
            if until > since:
                spans.append((op.mind_id, memory_id, since, until, status, lifecycle, valid_to))
    if spans:
        s.append(
            "memory_history",
            ("mind_id", "memory_id", "sys_from", "sys_to", "status", "lifecycle", "valid_to"),
            spans,
        )


def memory_states(
    s: SqlSession, op: ops.MemoryStates
) -> dict[str, tuple[Status, Lifecycle, datetime | None, datetime]]:
    mark, at = s.dialect.mark, to_micros(op.at)
    found: dict[str, tuple[Status, Lifecycle, datetime | None, datetime]] = {}
    for chunk in chunks(sorted(set(op.ids))):
        params: list[Any] = [op.mind_id, at, at]
        rows = s.all(
            "SELECT memory_id, status, lifecycle, valid_to, sys_from FROM memory_history "
            f"WHERE mind_id = {mark} AND sys_from <= {mark} AND sys_to > {mark} AND "
            + s.dialect.any_of("memory_id", chunk, params),
            params,
        )
        for memory_id, status, lifecycle, valid_to, since in rows:
            found[memory_id] = (
                Status(status),
                Lifecycle(lifecycle),
                opt_time(valid_to),
                from_micros(since),
            )
    return found


def get_history(s: SqlSession, op: ops.GetHistory) -> list[ops.HistorySpan]:
    mark = s.dialect.mark
    found: list[ops.HistorySpan] = []
    for chunk in chunks(sorted(set(op.ids))):
        params: list[Any] = [op.mind_id]
        rows = s.all(
            f"SELECT {', '.join(HISTORY_COLUMNS)} FROM memory_history "
            f"WHERE mind_id = {mark} AND " + s.dialect.any_of("memory_id", chunk, params),
            params,
        )
        found += [span_from_row(row) for row in rows]
    found.sort(key=lambda span: (span[0], span[1]))
    return found


def put_history(s: SqlSession, op: ops.PutHistory) -> None:
    rows = [
        (op.mind_id, m, to_micros(a), to_micros(b), st.value, lc.value, opt_micros(v))
        for m, a, b, st, lc, v in op.spans
    ]
    if rows:
        s.append(
            "memory_history",
            ("mind_id", "memory_id", "sys_from", "sys_to", "status", "lifecycle", "valid_to"),
            rows,
        )


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
    mark = s.dialect.mark
    params: list[Any] = [op.mind_id]
    query = f"SELECT {MEMORY_SELECT} FROM memories m WHERE m.mind_id = {mark}"
    if op.after_id is not None:
        query += f" AND m.id > {mark}"
        params.append(op.after_id)
    query += " " + filter_sql(s.dialect, op.filters, op.as_of, params)
    query += _SCAN_ORDER[op.order]
    return [memory_from_row(r) for r in s.all(query + _limit(s, op.limit, params), params)]


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


# ---------------------------------------------------------------- vectors and entities


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
        + _limit(s, op.limit, params),
        params,
    )
    return [(memory_from_row(r[:-1]), int(r[-1])) for r in rows]


# ---------------------------------------------------------------- relationships


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
        mark = dialect.mark
        params.append(op.mind_id)
        src = dialect.any_of("src", op.memory_ids, params)
        params.append(op.mind_id)
        dst = dialect.any_of("dst", op.memory_ids, params)
        query += (
            f" AND id IN (SELECT id FROM relationships WHERE mind_id = {mark} AND {src}"
            f" UNION ALL SELECT id FROM relationships WHERE mind_id = {mark} AND {dst})"
        )
    if op.relations:
        query += " AND " + dialect.any_of("relation", [r.value for r in op.relations], params)
    if op.statuses:
        query += " AND " + dialect.any_of("status", [st.value for st in op.statuses], params)
    if op.after_id is not None:
        query += f" AND id > {dialect.mark}"
        params.append(op.after_id)
    query += " ORDER BY id" + _limit(s, op.limit, params)
    return [relationship_from_row(r) for r in s.all(query, params)]


# ---------------------------------------------------------------- co-occurrence

_CO_SELECT = "SELECT a, b, weight, updated_at FROM cooccurrence"


def _co_edges(rows: Sequence[Sequence[Any]]) -> list[ops.CoEdge]:
    return [(str(a), str(b), float(w), from_micros(int(t))) for a, b, w, t in rows]


def get_cooccurrence(s: SqlSession, op: ops.GetCooccurrence) -> list[ops.CoEdge]:
    ids = sorted(set(op.ids))
    if len(ids) < 2:
        return []
    found: list[ops.CoEdge] = []
    for chunk in chunks(ids):
        params: list[Any] = [op.mind_id]
        query = f"{_CO_SELECT} WHERE mind_id = {s.dialect.mark} AND " + s.dialect.any_of(
            "a", chunk, params
        )
        query += " AND " + s.dialect.any_of("b", ids, params)
        found += _co_edges(s.all(query, params))
    found.sort(key=lambda edge: (edge[0], edge[1]))
    return found


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
    query += f" ORDER BY a{bytewise}, b{bytewise}" + _limit(s, op.limit, params)
    return _co_edges(s.all(query, params))


# ---------------------------------------------------------------- worlds


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
    rows = s.all(
        f"SELECT {', '.join(WORLD_COLUMNS)} FROM worlds "
        f"WHERE mind_id = {s.dialect.mark} ORDER BY id{s.dialect.bytewise}",
        [op.mind_id],
    )
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
    bytewise = s.dialect.bytewise
    rows = s.all(
        f"SELECT src, dst FROM world_links WHERE mind_id = {s.dialect.mark} "
        f"ORDER BY src{bytewise}, dst{bytewise}",
        [op.mind_id],
    )
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


# ---------------------------------------------------------------- events and audit


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
    if op.memory_id is not None:
        query += f" AND memory_id = {dialect.mark}"
        params.append(op.memory_id)
    if op.kinds:
        query += " AND " + dialect.any_of("kind", op.kinds, params)
    if op.ids is not None:
        query += " AND " + dialect.any_of("id", op.ids, params)
    if op.after_seq is not None:
        query += f" AND seq > {dialect.mark}"
        params.append(op.after_seq)
    query += " ORDER BY seq DESC" if op.newest_first else " ORDER BY seq"
    return [event_from_row(r) for r in s.all(query + _limit(s, op.limit, params), params)]


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


def is_empty(s: SqlSession, op: ops.IsEmpty) -> bool:
    tables = ("memories", "relationships", "events", "audit")
    tests = [f"EXISTS (SELECT 1 FROM {t} WHERE mind_id = {s.dialect.mark})" for t in tables]
    row = s.one("SELECT " + " OR ".join(tests), (op.mind_id,) * len(tables))
    return not (row and row[0])


# ---------------------------------------------------------------- workspace and jobs


def save_snapshot(s: SqlSession, op: ops.SaveSnapshot) -> None:
    s.execute(
        "INSERT INTO workspace_snapshots (mind_id, cycle, saved_at, data) "
        f"VALUES ({s.dialect.marks(4)}) "
        "ON CONFLICT (mind_id) DO UPDATE SET cycle = excluded.cycle, "
        "saved_at = excluded.saved_at, data = excluded.data",
        (op.mind_id, op.cycle, to_micros(op.saved_at), op.data),
    )


def load_snapshot(s: SqlSession, op: ops.LoadSnapshot) -> tuple[int, str] | None:
    row = s.one(
        f"SELECT cycle, data FROM workspace_snapshots WHERE mind_id = {s.dialect.mark}",
        (op.mind_id,),
    )
    return None if row is None else (int(row[0]), str(row[1]))


def acquire_lease(s: SqlSession, op: ops.AcquireLease, *, take_over: bool = False) -> bool:
    """Take the lease row when it is free, expired, already the holder's, or ``take_over``."""
    mark = s.dialect.mark
    taken = s.execute(
        f"INSERT INTO job_leases (name, holder, expires_at) VALUES ({s.dialect.marks(3)}) "
        "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
        "expires_at = excluded.expires_at "
        f"WHERE job_leases.holder = excluded.holder OR job_leases.expires_at <= {mark} "
        f"OR {mark}",
        (op.name, op.holder, to_micros(op.expires_at), to_micros(op.now), take_over),
    )
    return taken == 1


def drop_lease(s: SqlSession, op: ops.ReleaseLease) -> bool:
    """Delete the lease row if ``op.holder`` holds it; whether it did."""
    mark = s.dialect.mark
    return bool(
        s.execute(
            f"DELETE FROM job_leases WHERE name = {mark} AND holder = {mark}", (op.name, op.holder)
        )
    )


def release_lease(s: SqlSession, op: ops.ReleaseLease) -> None:
    drop_lease(s, op)


# ---------------------------------------------------------------- federation


def put_peer(s: SqlSession, op: ops.PutPeer) -> None:
    p = op.peer
    s.execute(
        "INSERT INTO peers (mind_id, name, url, peer_mind, alpha, beta, created_at) "
        f"VALUES ({s.dialect.marks(7)}) ON CONFLICT (mind_id, name) DO UPDATE SET "
        "url = excluded.url, peer_mind = excluded.peer_mind, alpha = excluded.alpha, "
        "beta = excluded.beta, created_at = excluded.created_at",
        (op.mind_id, p.name, p.url, p.mind, p.alpha, p.beta, to_micros(p.created_at)),
    )


def delete_peer(s: SqlSession, op: ops.DeletePeer) -> bool:
    mark = s.dialect.mark
    deleted = s.execute(
        f"DELETE FROM peers WHERE mind_id = {mark} AND name = {mark}", (op.mind_id, op.name)
    )
    return deleted > 0


def list_peers(s: SqlSession, op: ops.ListPeers) -> list[Peer]:
    rows = s.all(
        f"SELECT {', '.join(PEER_COLUMNS)} FROM peers "
        f"WHERE mind_id = {s.dialect.mark} ORDER BY name{s.dialect.bytewise}",
        (op.mind_id,),
    )
    return [peer_from_row(row) for row in rows]


# ---------------------------------------------------------------- verify


def read_stored_rows(s: SqlSession, op: ops.ReadStoredRows) -> ops.StoredRows:
    """Every row verify checks beside the audited ones; a row no codec reads is a line."""
    mark, unreadable = s.dialect.mark, []

    def read(table: str, columns: Sequence[str], decode: Callable[[Any], R], key: str) -> list[R]:
        rows = s.all(
            f"SELECT {', '.join(columns)} FROM {table} WHERE mind_id = {mark} ORDER BY {key}",
            (op.mind_id,),
        )
        decoded = []
        for row in rows:
            try:
                decoded.append(decode(row))
            except IntegrityError as exc:
                unreadable.append(str(exc))
        return decoded

    bytewise = s.dialect.bytewise
    mind = None
    row = s.one(f"SELECT id, name, created_at, digest FROM minds WHERE id = {mark}", (op.mind_id,))
    if row is not None:
        try:
            mind = (mind_from_row(row[:3]), None if row[3] is None else str(row[3]))
        except IntegrityError as exc:
            unreadable.append(str(exc))
    return ops.StoredRows(
        mind=mind,
        worlds=read("worlds", WORLD_COLUMNS, world_from_row, f"id{bytewise}"),
        links=read("world_links", LINK_COLUMNS, link_from_row, f"src{bytewise}, dst{bytewise}"),
        history=read(
            "memory_history", HISTORY_COLUMNS, span_from_row, f"memory_id{bytewise}, sys_from"
        ),
        peers=read("peers", PEER_COLUMNS, peer_from_row, f"name{bytewise}"),
        unreadable=unreadable,
    )


# ---------------------------------------------------------------- purge


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


def _limit(s: SqlSession, limit: int | None, params: list[Any]) -> str:
    """`` LIMIT`` and its parameter, or nothing when there is no limit."""
    if limit is None:
        return ""
    params.append(limit)
    return f" LIMIT {s.dialect.mark}"


#: The operations whose handler is the same on both SQL backends.
SHARED_HANDLERS: dict[type[Any], Handler] = {
    ops.ListMinds: list_minds,
    ops.GetMemories: get_memories,
    ops.FindActiveByHash: find_by_hash,
    ops.FindActiveByKey: find_by_key,
    ops.ScanMemories: scan_memories,
    ops.ScanActivation: scan_activation,
    ops.CountMemories: count_memories,
    ops.MissingVectors: missing_vectors,
    ops.CountVectors: count_vectors,
    ops.InsertRelationships: insert_relationships,
    ops.SetRelationshipStatus: set_relationship_status,
    ops.FindRelationships: find_relationships,
    ops.GetCooccurrence: get_cooccurrence,
    ops.PutCooccurrence: put_cooccurrence,
    ops.ScanCooccurrence: scan_cooccurrence,
    ops.MemoryStates: memory_states,
    ops.GetHistory: get_history,
    ops.PutHistory: put_history,
    ops.PutWorlds: put_worlds,
    ops.ListWorlds: list_worlds,
    ops.CountWorlds: count_worlds,
    ops.PutWorldLink: put_world_link,
    ops.DeleteWorldLink: delete_world_link,
    ops.ListWorldLinks: list_world_links,
    ops.GetWorldVectors: get_world_vectors,
    ops.AddWorldVectors: add_world_vectors,
    ops.WorldVectorModels: world_vector_models,
    ops.AppendEvents: append_events,
    ops.ListEvents: list_events,
    ops.AuditHead: audit_head,
    ops.GetAuditEntry: get_audit_entry,
    ops.AppendAudit: append_audit,
    ops.ListAudit: list_audit,
    ops.IsEmpty: is_empty,
    ops.SaveSnapshot: save_snapshot,
    ops.LoadSnapshot: load_snapshot,
    ops.PutPeer: put_peer,
    ops.DeletePeer: delete_peer,
    ops.ListPeers: list_peers,
    ops.ReadStoredRows: read_stored_rows,
}
