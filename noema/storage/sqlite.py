"""The embedded SQLite backend: WAL mode, FTS5 with bm25, one file per store."""

from __future__ import annotations

import contextlib
import errno
import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np

from concepts import AuditEntry, Event, Memory, MindInfo, RecallFilters, Relationship
from noema.errors import ConfigError, InvalidInput, MigrationError, StorageError
from noema.storage import ops
from noema.storage._rows import (
    AUDIT_COLUMNS,
    EVENT_COLUMNS,
    MEMORY_COLUMNS,
    REL_COLUMNS,
    audit_from_row,
    event_from_row,
    from_micros,
    memory_from_row,
    memory_row,
    relationship_from_row,
    to_json,
    to_micros,
    update_groups,
)
from noema.storage._sqlite_schema import MIGRATIONS
from noema.storage._sqlite_vectors import VectorIndexes

__all__ = ["SQLiteStorage"]

R = TypeVar("R")

_MEMORY_SELECT = ", ".join(f"m.{c}" for c in MEMORY_COLUMNS)
_INSERT_MEMORY = (
    f"INSERT INTO memories ({', '.join(MEMORY_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in MEMORY_COLUMNS)})"
)


def _placeholders(n: int) -> str:
    return ", ".join("?" for _ in range(n))


def _filter_sql(filters: RecallFilters | None, as_of: datetime | None, params: list[Any]) -> str:
    """WHERE fragments (each starting with AND) for memories aliased ``m``."""
    sql: list[str] = []
    if filters is not None:
        for column, values in (
            ("status", filters.statuses),
            ("kind", filters.kinds),
            ("epistemic", filters.epistemics),
            ("channel", filters.channels),
        ):
            if values:
                sql.append(f"AND m.{column} IN ({_placeholders(len(values))})")
                params.extend(v.value for v in values)
        for tag in filters.tags:
            sql.append("AND EXISTS (SELECT 1 FROM json_each(m.tags) WHERE json_each.value = ?)")
            params.append(tag)
        if filters.key is not None:
            sql.append("AND m.key = ?")
            params.append(filters.key)
        if filters.since is not None:
            sql.append("AND m.recorded_at >= ?")
            params.append(to_micros(filters.since))
        if filters.until is not None:
            sql.append("AND m.recorded_at <= ?")
            params.append(to_micros(filters.until))
        if filters.min_confidence > 0:
            sql.append("AND m.confidence >= ?")
            params.append(filters.min_confidence)
        if filters.min_feedback is not None:
            sql.append("AND m.feedback_mean >= ?")
            params.append(filters.min_feedback)
    if as_of is not None:
        t = to_micros(as_of)
        sql.append("AND m.valid_from <= ? AND (m.valid_to IS NULL OR m.valid_to > ?)")
        params.extend((t, t))
    return " ".join(sql)


#: The column of memories each ``SearchText.field`` indexes. Every mind has its
#: own FTS5 table per column (``_text_table``), so a mind's bm25 statistics
#: (documents, lengths, term counts) are its own: another mind's writes never
#: move its scores.
_TEXT_COLUMNS = {"content": "content", "keys": "keys"}
_TOKENIZE = "porter unicode61 remove_diacritics 2"


def _text_table(number: int, field: str) -> str:
    return f"memories_fts_{number}" if field == "content" else f"memories_keys_fts_{number}"


def _text_number(conn: sqlite3.Connection, mind_id: str) -> int | None:
    """The number of the mind's full-text tables (None: no such mind)."""
    row = conn.execute("SELECT text_index FROM minds WHERE id = ?", (mind_id,)).fetchone()
    return None if row is None else int(row[0])


def create_text_indexes(conn: sqlite3.Connection, mind_id: str, number: int) -> None:
    """The mind's full-text tables, filled from its memories (none for a new mind)."""
    for field, column in _TEXT_COLUMNS.items():
        table = _text_table(number, field)
        conn.execute(
            f"CREATE VIRTUAL TABLE {table} USING fts5({column}, content = 'memories', "
            f"content_rowid = 'rowid', tokenize = '{_TOKENIZE}')"
        )
        conn.execute(
            f"INSERT INTO {table}(rowid, {column}) SELECT rowid, {column} FROM memories "
            "WHERE mind_id = ?",
            (mind_id,),
        )


def _index_rows(
    conn: sqlite3.Connection, mind_id: str, ids: Sequence[str], field: str, *, remove: bool
) -> None:
    """Put memories' current text of ``field`` into the mind's full-text table, or take
    it out (``remove``: FTS5's ``delete`` needs the text as it was indexed)."""
    number = _text_number(conn, mind_id)
    if number is None:
        return
    table, column = _text_table(number, field), _TEXT_COLUMNS[field]
    target, values = (
        (f"{table}({table}, rowid, {column})", f"'delete', rowid, {column}")
        if remove
        else (f"{table}(rowid, {column})", f"rowid, {column}")
    )
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        conn.execute(
            f"INSERT INTO {target} SELECT {values} FROM memories "
            f"WHERE mind_id = ? AND id IN ({_placeholders(len(chunk))})",
            (mind_id, *chunk),
        )


def _fts_query(terms: Sequence[str], strict: bool) -> str:
    quoted = ['"' + term.replace('"', '""') + '"' for term in terms]
    return (" AND " if strict else " OR ").join(quoted)


def _parse_path(url: str) -> str:
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
    elif url.startswith("sqlite://"):
        path = url[len("sqlite://") :]
    else:
        path = url
    if not path:
        raise ConfigError(f"database URL {url!r} names no file (use sqlite:///PATH or :memory:)")
    return path


class _Session:
    """Runs operations on one connection inside one transaction."""

    def __init__(self, conn: sqlite3.Connection, write: bool, vectors: VectorIndexes) -> None:
        self._conn = conn
        self._write = write
        self._vectors = vectors
        # Vectors written in this (uncommitted) transaction must not enter the index.
        self._wrote_vectors = False

    def run(self, op: ops.Op[R]) -> R:
        if isinstance(op, ops.SearchVectors):
            try:
                return cast(
                    R,
                    self._vectors.search(
                        self._conn,
                        op,
                        _vector_rows,
                        partial(_memories_by_rowid, self._conn),
                        sync=not self._wrote_vectors,
                    ),
                )
            except sqlite3.Error as exc:
                raise StorageError(f"SQLite failed on SearchVectors: {exc}") from exc
        if isinstance(op, ops.PutVectors):
            self._wrote_vectors = True
        if isinstance(op, ops.PurgeMemories):
            self._vectors.discard(self._conn, op.mind_id)
        handler = _HANDLERS.get(type(op))
        if handler is None:
            raise TypeError(f"SQLite backend has no handler for {type(op).__name__}")
        if not self._write and type(op) in ops.WRITE_OPS:
            raise TypeError(f"{type(op).__name__} needs a write transaction")
        try:
            return cast(R, handler(self._conn, op))
        except sqlite3.Error as exc:
            raise StorageError(f"SQLite failed on {type(op).__name__}: {exc}") from exc
        except UnicodeEncodeError:
            # Text no model checked (an id, a name) that cannot be stored as UTF-8.
            raise InvalidInput("text is not valid Unicode (it holds a lone surrogate)") from None
        except OverflowError:  # an integer no model bounded, past SQLite's 64 bits
            raise InvalidInput("a number is too large for SQLite (at most 2**63 - 1)") from None


# The handlers: one per operation, each a plain function of (connection, op).


def _ensure_mind(conn: sqlite3.Connection, op: ops.EnsureMind) -> MindInfo:
    row = conn.execute(
        "SELECT id, name, created_at FROM minds WHERE name = ?", (op.name,)
    ).fetchone()
    if row is None:
        number = conn.execute("SELECT coalesce(max(text_index), 0) + 1 FROM minds").fetchone()[0]
        conn.execute(
            "INSERT INTO minds (id, name, created_at, text_index) VALUES (?, ?, ?, ?)",
            (op.new_id, op.name, to_micros(op.now), number),
        )
        create_text_indexes(conn, op.new_id, number)
        row = (op.new_id, op.name, to_micros(op.now))
    return MindInfo(id=row[0], name=row[1], created_at=from_micros(row[2]))


def _list_minds(conn: sqlite3.Connection, op: ops.ListMinds) -> list[MindInfo]:
    rows = conn.execute("SELECT id, name, created_at FROM minds ORDER BY name").fetchall()
    return [MindInfo(id=r[0], name=r[1], created_at=from_micros(r[2])) for r in rows]


def _insert_memories(conn: sqlite3.Connection, op: ops.InsertMemories) -> None:
    # Writers are serialised (BEGIN IMMEDIATE), so the new rows are those past the old max.
    last = conn.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0]
    conn.executemany(_INSERT_MEMORY, [memory_row(m) for m in op.memories])
    for mind_id in dict.fromkeys(m.mind_id for m in op.memories):
        number = _text_number(conn, mind_id)
        if number is None:
            raise sqlite3.IntegrityError(f"no mind {mind_id}")
        for field, column in _TEXT_COLUMNS.items():
            conn.execute(
                f"INSERT INTO {_text_table(number, field)}(rowid, {column}) "
                f"SELECT rowid, {column} FROM memories WHERE rowid > ? AND mind_id = ?",
                (last, mind_id),
            )


def _update_memories(conn: sqlite3.Connection, op: ops.UpdateMemories) -> None:
    groups = update_groups(op.mind_id, op.updates, ops.MUTABLE_FIELDS)
    # Keys are rebuilt (reindex) where content never changes: re-index those rows.
    rekeyed = [memory_id for memory_id, changes in op.updates if "keys" in changes]
    if rekeyed:
        _index_rows(conn, op.mind_id, rekeyed, "keys", remove=True)
    for columns, rows in groups.items():
        assignments = ", ".join(f"{c} = ?" for c in columns)
        conn.executemany(f"UPDATE memories SET {assignments} WHERE mind_id = ? AND id = ?", rows)
    if rekeyed:
        _index_rows(conn, op.mind_id, rekeyed, "keys", remove=False)


def _get_memories(conn: sqlite3.Connection, op: ops.GetMemories) -> list[Memory]:
    return _memories_where(conn, op.mind_id, "id", op.ids, "memories_mind_id", "")


def _find_by_hash(conn: sqlite3.Connection, op: ops.FindActiveByHash) -> list[Memory]:
    active = " AND m.status = 'active'"
    return _memories_where(
        conn, op.mind_id, "content_hash", op.hashes, "memories_active_hash", active
    )


def _find_by_key(conn: sqlite3.Connection, op: ops.FindActiveByKey) -> list[Memory]:
    active = " AND m.status = 'active'"
    return _memories_where(conn, op.mind_id, "key", op.keys, "memories_mind_key", active)


def _memories_where(
    conn: sqlite3.Connection,
    mind_id: str,
    column: str,
    values: Sequence[str],
    index: str,
    extra: str,
) -> list[Memory]:
    # INDEXED BY: with long IN lists the planner otherwise scans (mind_id, status).
    found: list[Memory] = []
    unique = list(dict.fromkeys(values))
    for start in range(0, len(unique), 500):
        chunk = unique[start : start + 500]
        rows = conn.execute(
            f"SELECT {_MEMORY_SELECT} FROM memories m INDEXED BY {index} "
            f"WHERE m.mind_id = ? AND m.{column} IN ({_placeholders(len(chunk))}){extra}",
            (mind_id, *chunk),
        ).fetchall()
        found.extend(memory_from_row(r) for r in rows)
    return found


#: A query word found in at least this many memories (or this share of them) is
#: "common": bm25 gives it almost no weight, yet ranking its matches costs ~2 µs each.
COMMON_MIN_DOCS = 2_000
COMMON_FRACTION = 0.02


def _documents(conn: sqlite3.Connection, table: str) -> int:
    """Rows of an FTS5 table, from the totals bm25 itself reads (no scan).

    FTS5 keeps them in its ``_data`` table, record 1: the row count first, as
    an SQLite varint.
    """
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0
    value = 0
    for index, byte in enumerate(bytes(row[0])[:9]):
        if index == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            break
    return value


def _plan_match(
    conn: sqlite3.Connection, table: str, terms: Sequence[str], strict: bool
) -> tuple[str, bool]:
    """The MATCH expression to search ``table`` with, and whether to rank it by bm25.

    Any-term queries drop common words when rarer ones remain. When every word is
    common, the search matches all of them and takes the newest matches unranked,
    so no query costs more than a few thousand rank computations.
    """
    total = _documents(conn, table)
    threshold = max(COMMON_MIN_DOCS, int(total * COMMON_FRACTION))
    if total <= threshold:
        return _fts_query(terms, strict), True
    common = {
        term
        for term in terms
        if conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)",
            (_fts_query([term], False), threshold),
        ).fetchone()[0]
        >= threshold
    }
    rare = [term for term in terms if term not in common]
    if not common:
        return _fts_query(terms, strict), True
    if rare and not strict:
        return _fts_query(rare, False), True
    return _fts_query(terms, True), bool(rare)


def _search_text(conn: sqlite3.Connection, op: ops.SearchText) -> list[tuple[Memory, float]]:
    if not op.terms:
        return []
    number = _text_number(conn, op.mind_id)
    if number is None:
        return []
    table = _text_table(number, op.field)
    match, ranked = _plan_match(conn, table, op.terms, op.strict)
    # Ranked: best bm25 first (FTS5 rank = bm25, lower is better). Unranked: newest first.
    order, score = ("rank", "-rank") if ranked else ("rowid DESC", "1.0")
    params: list[Any] = []
    where = _filter_sql(op.filters, op.as_of, params)
    # Fast path: the best hits of the whole index, then filtered. FTS5 keeps
    # ORDER BY ... LIMIT cheap only without a join, so the join comes after.
    pool = max(op.limit * 4, 200)
    rows = conn.execute(
        f"WITH hits AS (SELECT rowid AS rid, {score} AS score FROM {table} "
        f"WHERE {table} MATCH ? ORDER BY {order} LIMIT ?) "
        f"SELECT {_MEMORY_SELECT}, hits.score FROM hits JOIN memories m ON m.rowid = hits.rid "
        f"WHERE m.mind_id = ? {where} ORDER BY hits.score DESC, m.rowid DESC LIMIT ?",
        (match, pool, op.mind_id, *params, op.limit),
    ).fetchall()
    if len(rows) < op.limit:
        total = conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)",
            (match, pool + 1),
        ).fetchone()[0]
        if total > pool:  # filters or other minds hid hits: search them all
            rows = conn.execute(
                f"SELECT {_MEMORY_SELECT}, {score.replace('rank', f'{table}.rank')} "
                f"FROM {table} JOIN memories m ON m.rowid = {table}.rowid "
                f"WHERE {table} MATCH ? AND m.mind_id = ? {where} "
                f"ORDER BY {order.replace('rowid', f'{table}.rowid')} LIMIT ?",
                (match, op.mind_id, *params, op.limit),
            ).fetchall()
    return [(memory_from_row(r[:-1]), float(r[-1])) for r in rows]


def _scan_memories(conn: sqlite3.Connection, op: ops.ScanMemories) -> list[Memory]:
    params: list[Any] = [op.mind_id]
    sql = f"SELECT {_MEMORY_SELECT} FROM memories m WHERE m.mind_id = ?"
    if op.after_id is not None:
        sql += " AND m.id > ?"
        params.append(op.after_id)
    sql += " " + _filter_sql(op.filters, op.as_of, params)
    sql += " ORDER BY m.id" if op.order == "id" else " ORDER BY m.recorded_at DESC, m.id DESC"
    sql += " LIMIT ?"
    params.append(op.limit)
    return [memory_from_row(r) for r in conn.execute(sql, params).fetchall()]


def _scan_activation(
    conn: sqlite3.Connection, op: ops.ScanActivation
) -> list[tuple[str, float, datetime, float]]:
    rows = conn.execute(
        "SELECT id, activation, activation_at, importance FROM memories "
        "WHERE mind_id = ? AND id > ? ORDER BY id LIMIT ?",
        (op.mind_id, op.after_id or "", op.limit),
    ).fetchall()
    return [(r[0], r[1], from_micros(r[2]), r[3]) for r in rows]


def _count_memories(conn: sqlite3.Connection, op: ops.CountMemories) -> list[tuple[str, str, int]]:
    return conn.execute(
        "SELECT kind, status, count(*) FROM memories WHERE mind_id = ? "
        "GROUP BY kind, status ORDER BY kind, status",
        (op.mind_id,),
    ).fetchall()


def _put_vectors(conn: sqlite3.Connection, op: ops.PutVectors) -> None:
    vectors = np.ascontiguousarray(op.vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(op.ids):
        raise ValueError(f"PutVectors: {len(op.ids)} ids but vectors of shape {vectors.shape}")
    dims = int(vectors.shape[1])
    # REPLACE deletes and re-inserts, so a re-embedded memory gets a new, higher id.
    conn.executemany(
        "INSERT OR REPLACE INTO vectors (mind_id, memory_id, model, dims, vector) "
        "VALUES (?, ?, ?, ?, ?)",
        [
            (op.mind_id, i, op.model, dims, row.tobytes())
            for i, row in zip(op.ids, vectors, strict=True)
        ],
    )


def _get_vectors(conn: sqlite3.Connection, op: ops.GetVectors) -> dict[str, np.ndarray]:
    found: dict[str, np.ndarray] = {}
    unique = list(dict.fromkeys(op.ids))
    for start in range(0, len(unique), 500):
        chunk = unique[start : start + 500]
        rows = conn.execute(
            "SELECT memory_id, vector FROM vectors INDEXED BY vectors_key "
            "WHERE mind_id = ? AND model = ? AND dims = ? "
            f"AND memory_id IN ({_placeholders(len(chunk))})",
            (op.mind_id, op.model, op.dims, *chunk),
        ).fetchall()
        found.update((r[0], np.frombuffer(r[1], dtype=np.float32)) for r in rows)
    return found


def _missing_vectors(
    conn: sqlite3.Connection, op: ops.MissingVectors
) -> list[tuple[str, str, datetime]]:
    rows = conn.execute(
        "SELECT m.id, m.content, m.valid_from FROM memories m WHERE m.mind_id = ? AND m.id > ? "
        "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.mind_id = m.mind_id "
        "AND v.model = ? AND v.dims = ? AND v.memory_id = m.id) ORDER BY m.id LIMIT ?",
        (op.mind_id, op.after_id or "", op.model, op.dims, op.limit),
    ).fetchall()
    return [(r[0], r[1], from_micros(r[2])) for r in rows]


def _count_vectors(conn: sqlite3.Connection, op: ops.CountVectors) -> tuple[int, int]:
    with_vector = conn.execute(
        "SELECT count(*) FROM vectors WHERE mind_id = ? AND model = ? AND dims = ?",
        (op.mind_id, op.model, op.dims),
    ).fetchone()[0]
    total = conn.execute("SELECT count(*) FROM memories WHERE mind_id = ?", (op.mind_id,))
    return int(with_vector), int(total.fetchone()[0])


def _vector_rows(
    conn: sqlite3.Connection,
    mind_id: str,
    model: str,
    dims: int,
    memory_rowids: Sequence[int],
    op: ops.SearchVectors,
) -> list[tuple[int, bytes]]:
    """Memory rowids passing the search's filters, with their vector under the model."""
    if not memory_rowids:
        return []
    params: list[Any] = [json.dumps(list(memory_rowids)), model, dims, mind_id]
    where = _filter_sql(op.filters, op.as_of, params)
    # CROSS JOIN keeps the candidate list as the outer loop: one key look-up per
    # candidate (an IN list of rowids made the planner scan the mind's vectors).
    rows = conn.execute(
        "SELECT m.rowid, v.vector FROM json_each(?) AS j "
        "CROSS JOIN memories m ON m.rowid = j.value "
        "CROSS JOIN vectors v ON v.mind_id = m.mind_id AND v.memory_id = m.id "
        f"AND v.model = ? AND v.dims = ? WHERE m.mind_id = ? {where}",
        params,
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def _memories_by_rowid(conn: sqlite3.Connection, rowids: Sequence[int]) -> dict[int, Memory]:
    rows = conn.execute(
        f"SELECT m.rowid, {_MEMORY_SELECT} FROM json_each(?) AS j "
        "CROSS JOIN memories m ON m.rowid = j.value",
        (json.dumps(list(rowids)),),
    ).fetchall()
    return {r[0]: memory_from_row(r[1:]) for r in rows}


def _put_entities(conn: sqlite3.Connection, op: ops.PutEntities) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO entity_refs (mind_id, entity, memory_id) VALUES (?, ?, ?)",
        [(op.mind_id, entity, memory_id) for memory_id, entity in op.refs],
    )


def _search_entities(conn: sqlite3.Connection, op: ops.SearchEntities) -> list[tuple[Memory, int]]:
    entities = [
        entity
        for entity in dict.fromkeys(op.entities)
        if conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM entity_refs WHERE mind_id = ? AND entity = ? "
            "LIMIT ?)",
            (op.mind_id, entity, op.max_refs),
        ).fetchone()[0]
        < op.max_refs
    ]
    if not entities:
        return []
    params: list[Any] = []
    where = _filter_sql(op.filters, op.as_of, params)
    rows = conn.execute(
        "WITH hits AS (SELECT memory_id, count(*) AS n FROM entity_refs "
        f"WHERE mind_id = ? AND entity IN ({_placeholders(len(entities))}) GROUP BY memory_id) "
        f"SELECT {_MEMORY_SELECT}, hits.n FROM hits "
        "JOIN memories m ON m.mind_id = ? AND m.id = hits.memory_id "
        f"WHERE 1 = 1 {where} ORDER BY hits.n DESC, m.recorded_at DESC, m.id DESC LIMIT ?",
        [op.mind_id, *entities, op.mind_id, *params, op.limit],
    ).fetchall()
    return [(memory_from_row(r[:-1]), int(r[-1])) for r in rows]


def _insert_relationships(conn: sqlite3.Connection, op: ops.InsertRelationships) -> None:
    conn.executemany(
        f"INSERT INTO relationships ({', '.join(REL_COLUMNS)}) "
        f"VALUES ({_placeholders(len(REL_COLUMNS))})",
        [
            (
                r.id,
                r.mind_id,
                r.src,
                r.relation.value,
                r.dst,
                r.confidence,
                r.source,
                r.status.value,
                to_micros(r.created_at),
                None if r.decided_at is None else to_micros(r.decided_at),
            )
            for r in op.relationships
        ],
    )


def _set_relationship_status(conn: sqlite3.Connection, op: ops.SetRelationshipStatus) -> None:
    conn.execute(
        "UPDATE relationships SET status = ?, decided_at = ? WHERE mind_id = ? AND id = ?",
        (op.status.value, to_micros(op.decided_at), op.mind_id, op.id),
    )


def _find_relationships(conn: sqlite3.Connection, op: ops.FindRelationships) -> list[Relationship]:
    params: list[Any] = [op.mind_id]
    sql = f"SELECT {', '.join(REL_COLUMNS)} FROM relationships WHERE mind_id = ?"
    if op.ids is not None:
        sql += f" AND id IN ({_placeholders(len(op.ids))})"
        params.extend(op.ids)
    if op.memory_ids is not None:
        marks = _placeholders(len(op.memory_ids))
        sql += f" AND (src IN ({marks}) OR dst IN ({marks}))"
        params.extend(op.memory_ids)
        params.extend(op.memory_ids)
    if op.relations:
        sql += f" AND relation IN ({_placeholders(len(op.relations))})"
        params.extend(r.value for r in op.relations)
    if op.statuses:
        sql += f" AND status IN ({_placeholders(len(op.statuses))})"
        params.extend(s.value for s in op.statuses)
    if op.after_id is not None:
        sql += " AND id > ?"
        params.append(op.after_id)
    sql += " ORDER BY id"
    if op.limit is not None:
        sql += " LIMIT ?"
        params.append(op.limit)
    return [relationship_from_row(r) for r in conn.execute(sql, params).fetchall()]


def _append_events(conn: sqlite3.Connection, op: ops.AppendEvents) -> None:
    conn.executemany(
        "INSERT INTO events (id, mind_id, kind, at, memory_id, origin_event, payload) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                e.id,
                e.mind_id,
                e.kind,
                to_micros(e.at),
                e.memory_id,
                e.origin_event,
                to_json(e.payload),
            )
            for e in op.events
        ],
    )


def _list_events(conn: sqlite3.Connection, op: ops.ListEvents) -> list[Event]:
    params: list[Any] = [op.mind_id]
    sql = f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE mind_id = ?"
    if op.memory_id is not None:
        sql += " AND memory_id = ?"
        params.append(op.memory_id)
    if op.kinds:
        sql += f" AND kind IN ({_placeholders(len(op.kinds))})"
        params.extend(op.kinds)
    if op.ids is not None:
        sql += f" AND id IN ({_placeholders(len(op.ids))})"
        params.extend(op.ids)
    if op.after_seq is not None:
        sql += " AND seq > ?"
        params.append(op.after_seq)
    sql += " ORDER BY seq DESC" if op.newest_first else " ORDER BY seq"
    if op.limit is not None:
        sql += " LIMIT ?"
        params.append(op.limit)
    return [event_from_row(r) for r in conn.execute(sql, params).fetchall()]


def _audit_head(conn: sqlite3.Connection, op: ops.AuditHead) -> AuditEntry | None:
    row = conn.execute(
        f"SELECT {', '.join(AUDIT_COLUMNS)} FROM audit WHERE mind_id = ? ORDER BY seq DESC LIMIT 1",
        (op.mind_id,),
    ).fetchone()
    return None if row is None else audit_from_row(row)


def _append_audit(conn: sqlite3.Connection, op: ops.AppendAudit) -> None:
    conn.executemany(
        "INSERT INTO audit (mind_id, seq, at, event_id, action, digest, prev_hash, hash) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                op.mind_id,
                a.seq,
                to_micros(a.at),
                a.event_id,
                a.action,
                a.digest,
                a.prev_hash,
                a.hash,
            )
            for a in op.entries
        ],
    )


def _list_audit(conn: sqlite3.Connection, op: ops.ListAudit) -> list[AuditEntry]:
    rows = conn.execute(
        f"SELECT {', '.join(AUDIT_COLUMNS)} FROM audit WHERE mind_id = ? AND seq > ? "
        "ORDER BY seq LIMIT ?",
        (op.mind_id, op.after_seq, op.limit),
    ).fetchall()
    return [audit_from_row(r) for r in rows]


def _is_empty(conn: sqlite3.Connection, op: ops.IsEmpty) -> bool:
    for table in ("memories", "relationships", "events", "audit"):
        if conn.execute(
            f"SELECT 1 FROM {table} WHERE mind_id = ? LIMIT 1", (op.mind_id,)
        ).fetchone():
            return False
    return True


def _save_snapshot(conn: sqlite3.Connection, op: ops.SaveSnapshot) -> None:
    conn.execute(
        "INSERT INTO workspace_snapshots (mind_id, cycle, saved_at, data) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (mind_id) DO UPDATE SET cycle = excluded.cycle, "
        "saved_at = excluded.saved_at, data = excluded.data",
        (op.mind_id, op.cycle, to_micros(op.saved_at), op.data),
    )


def _load_snapshot(conn: sqlite3.Connection, op: ops.LoadSnapshot) -> tuple[int, str] | None:
    row = conn.execute(
        "SELECT cycle, data FROM workspace_snapshots WHERE mind_id = ?", (op.mind_id,)
    ).fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def _acquire_lease(conn: sqlite3.Connection, op: ops.AcquireLease) -> bool:
    cursor = conn.execute(
        "INSERT INTO job_leases (name, holder, expires_at) VALUES (?, ?, ?) "
        "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
        "expires_at = excluded.expires_at "
        "WHERE job_leases.holder = excluded.holder OR job_leases.expires_at <= ?",
        (op.name, op.holder, to_micros(op.expires_at), to_micros(op.now)),
    )
    return cursor.rowcount == 1


def _release_lease(conn: sqlite3.Connection, op: ops.ReleaseLease) -> None:
    conn.execute("DELETE FROM job_leases WHERE name = ? AND holder = ?", (op.name, op.holder))


def _purge_memories(conn: sqlite3.Connection, op: ops.PurgeMemories) -> int:
    ids = list(op.ids)
    if not ids:
        return 0
    # Freed pages are zeroed from here to the commit, so no byte of the text stays in
    # the file; the full-text indexes are merged so no segment keeps the purged tokens.
    conn.execute("PRAGMA secure_delete = ON")
    for field in _TEXT_COLUMNS:
        _index_rows(conn, op.mind_id, ids, field, remove=True)
    deleted = 0
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = _placeholders(len(chunk))
        args = (op.mind_id, *chunk)
        conn.execute(f"DELETE FROM relationships WHERE mind_id = ? AND src IN ({marks})", args)
        conn.execute(f"DELETE FROM relationships WHERE mind_id = ? AND dst IN ({marks})", args)
        conn.execute(f"DELETE FROM entity_refs WHERE mind_id = ? AND memory_id IN ({marks})", args)
        conn.execute(f"DELETE FROM vectors WHERE mind_id = ? AND memory_id IN ({marks})", args)
        deleted += conn.execute(
            f"DELETE FROM memories WHERE mind_id = ? AND id IN ({marks})", args
        ).rowcount
    number = _text_number(conn, op.mind_id)
    for field in _TEXT_COLUMNS:
        if number is not None:
            table = _text_table(number, field)
            conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
    return deleted


def _tombstone_events(conn: sqlite3.Connection, op: ops.TombstoneEvents) -> None:
    conn.execute("PRAGMA secure_delete = ON")
    payload = to_json(dict(op.payload))
    conn.executemany(
        "UPDATE events SET payload = ? WHERE mind_id = ? AND id = ?",
        [(payload, op.mind_id, event_id) for event_id in op.ids],
    )


_HANDLERS: dict[type[Any], Callable[[sqlite3.Connection, Any], Any]] = {
    ops.EnsureMind: _ensure_mind,
    ops.ListMinds: _list_minds,
    ops.InsertMemories: _insert_memories,
    ops.UpdateMemories: _update_memories,
    ops.GetMemories: _get_memories,
    ops.FindActiveByHash: _find_by_hash,
    ops.FindActiveByKey: _find_by_key,
    ops.SearchText: _search_text,
    ops.ScanMemories: _scan_memories,
    ops.ScanActivation: _scan_activation,
    ops.CountMemories: _count_memories,
    ops.PutVectors: _put_vectors,
    ops.GetVectors: _get_vectors,
    ops.MissingVectors: _missing_vectors,
    ops.CountVectors: _count_vectors,
    ops.PutEntities: _put_entities,
    ops.SearchEntities: _search_entities,
    ops.InsertRelationships: _insert_relationships,
    ops.SetRelationshipStatus: _set_relationship_status,
    ops.FindRelationships: _find_relationships,
    ops.AppendEvents: _append_events,
    ops.ListEvents: _list_events,
    ops.AuditHead: _audit_head,
    ops.AppendAudit: _append_audit,
    ops.ListAudit: _list_audit,
    ops.IsEmpty: _is_empty,
    ops.SaveSnapshot: _save_snapshot,
    ops.LoadSnapshot: _load_snapshot,
    ops.AcquireLease: _acquire_lease,
    ops.ReleaseLease: _release_lease,
    ops.PurgeMemories: _purge_memories,
    ops.TombstoneEvents: _tombstone_events,
}


class SQLiteStorage:
    """A SQLite database file (or ``:memory:``) holding any number of minds.

    One connection, guarded by a lock, so a ``SQLiteStorage`` may be shared by
    threads; separate processes coordinate through SQLite's own file locks.
    """

    def __init__(self, url: str, *, busy_timeout_ms: int = 30_000) -> None:
        self.url = url
        path = _parse_path(url)
        if path != ":memory:":
            target = Path(path).expanduser()
            try:
                is_dir, special = target.is_dir(), target.exists() and not target.is_file()
            except OSError as exc:  # a name too long for the file system, for one
                raise ConfigError(f"cannot open SQLite database {target}: {exc.strerror}") from None
            if is_dir:
                raise ConfigError(f"cannot open SQLite database {target}: it is a directory")
            if special:  # /dev/null, a pipe: SQLite fails on them with unrelated messages
                raise ConfigError(f"cannot use {target} as a SQLite database: not a regular file")
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                error = ConfigError if exc.errno == errno.ENAMETOOLONG else StorageError
                raise error(f"cannot create directory {target.parent}: {exc.strerror}") from exc
            path = str(target)
        self.path = path
        self._lock = threading.RLock()
        self._vectors = VectorIndexes(
            None if path == ":memory:" else Path(path).with_name(Path(path).name + ".vectors")
        )
        try:
            self._conn = sqlite3.connect(
                path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000
            )
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open SQLite database {path}: {exc}") from exc
        except (ValueError, UnicodeEncodeError) as exc:
            raise ConfigError(f"database path {path!r} is not usable: {exc}") from None
        try:
            for pragma in (
                "PRAGMA journal_mode = WAL",
                "PRAGMA synchronous = NORMAL",
                "PRAGMA foreign_keys = ON",
                f"PRAGMA busy_timeout = {int(busy_timeout_ms)}",
                # Checkpoint every ~40 MB of WAL rather than 4 MB: batch writes touch
                # random index pages, and each checkpoint rewrites them.
                "PRAGMA wal_autocheckpoint = 10000",
                "PRAGMA cache_size = -65536",
                "PRAGMA temp_store = MEMORY",
            ):
                self._conn.execute(pragma)
            self._migrate()
        except BaseException as exc:
            self._conn.close()
            if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB:
                raise ConfigError(f"cannot use {path}: it is not a SQLite database") from exc
            if isinstance(exc, sqlite3.Error):
                raise StorageError(f"cannot open SQLite database {path}: {exc}") from exc
            raise

    def _migrate(self) -> None:
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            applied = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
            known = {version for version, _, _ in MIGRATIONS}
            if applied - known:
                raise MigrationError(
                    f"database {self.path} has schema version {max(applied)}, newer than this "
                    f"Noema knows ({max(known)}); upgrade Noema"
                )
            for version, name, sql in MIGRATIONS:
                if version in applied:
                    continue
                try:
                    for statement in _split_sql(sql):
                        conn.execute(statement)
                except sqlite3.Error as exc:
                    raise MigrationError(
                        f"migration {version} ({name}) failed on {self.path}: {exc}"
                    ) from exc
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) "
                    "VALUES (?, ?, datetime('now'))",
                    (version, name),
                )
            tables = {
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            for mind_id, number in conn.execute("SELECT id, text_index FROM minds").fetchall():
                if _text_table(number, "content") not in tables:
                    create_text_indexes(conn, mind_id, number)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite may have rolled back already; keep the first error
                conn.execute("ROLLBACK")
            raise

    def schema_version(self) -> int:
        with self._lock:
            row = self._conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
            return int(row[0] or 0)

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[_Session]:
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.Error as exc:
                raise StorageError(f"cannot begin a transaction on {self.path}: {exc}") from exc
            session = _Session(conn, write, self._vectors)
            try:
                yield session
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                conn.execute("ROLLBACK")
                raise StorageError(f"commit failed on {self.path}: {exc}") from exc

    def reclaim(self) -> None:
        """After a purge: rebuild the file from its live rows, then empty the write-ahead log.

        Zeroing freed pages is not enough: a page that was split or defragmented
        before the purge can keep a stale copy of a row in its unused space.
        VACUUM writes every live row into fresh pages (its temporary copy stays
        in memory: ``temp_store``), and the checkpoint then leaves nothing of
        the old pages in the log. A reader that holds an old snapshot open keeps
        its pages in the log until it finishes.
        """
        with self._lock:
            try:
                self._conn.execute("PRAGMA secure_delete = OFF")
                self._conn.execute("VACUUM")
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.Error as exc:
                raise StorageError(f"cannot rebuild {self.path} after the purge: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            # The index is a cache: the next open rebuilds what was not saved.
            with contextlib.suppress(sqlite3.Error):
                self._vectors.save(self._conn)
            self._conn.close()


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        statements.append(buffer.strip())
    return statements
