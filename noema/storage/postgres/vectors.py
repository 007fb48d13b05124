"""Vectors on PostgreSQL: pgvector with an HNSW index per (model, dimensions), or float32 bytes.

pgvector's ``vector`` column with one partial HNSW index (``vector_cosine_ops``)
per (model, dimensions), built the first time a search needs it
(``HnswIndexes``); without the extension, float32 bytes searched exactly.
Either way candidates are scored exactly, in float32, as on SQLite. pgvector
0.5.0 is the oldest supported; before 0.8 (no iterative scans) filtered
searches widen the HNSW scan, and search exactly when it still yields too few
candidates.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import psycopg
from psycopg import sql
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo

from concepts import Memory
from noema.errors import StorageError
from noema.storage import ops
from noema.storage._dialect import POSTGRES, filter_sql
from noema.storage._rows import unit_query, vector_matrix
from noema.storage.postgres.options import PostgresOptions, lock_key

__all__ = [
    "HnswIndexes",
    "get_vectors",
    "installed_pgvector",
    "pgvector_version",
    "put_vectors",
    "register_vector_types",
    "search_vectors",
]


class _Store(Protocol):
    @property
    def options(self) -> PostgresOptions: ...

    @property
    def pgvector(self) -> bool: ...

    @property
    def pgvector_version(self) -> tuple[int, ...] | None: ...

    @property
    def indexes(self) -> HnswIndexes: ...


class Session(Protocol):
    """What the vector handlers use of a PostgreSQL session (``store.Session``)."""

    inserted: int

    @property
    def store(self) -> _Store:
        """The store the session belongs to."""
        ...

    @property
    def write(self) -> bool:
        """Whether the session may write."""
        ...

    @property
    def cur(self) -> psycopg.Cursor[Any]:
        """The session's cursor."""
        ...

    def one(self, query: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """The first row ``query`` returns, or ``None``."""
        ...

    def execute(self, query: str | sql.Composed, params: Sequence[Any] = ()) -> int:
        """Run one statement (text or composed SQL); how many rows it changed."""
        ...

    def memories_by_seq(self, mind_id: str, seqs: Sequence[int]) -> dict[int, Memory]:
        """The mind's memories by their ``seq``."""
        ...


#: The oldest pgvector Noema runs on: the first with HNSW indexes.
PGVECTOR_MIN_VERSION = (0, 5, 0)
#: From this pgvector on, an HNSW scan goes on past rows the filters reject
#: (``hnsw.iterative_scan``); before it, the scan ends after ``hnsw.ef_search`` rows.
PGVECTOR_ITERATIVE_SCAN = (0, 8, 0)
#: pgvector's HNSW index takes ``vector`` columns of at most this many dimensions.
HNSW_MAX_DIMS = 2_000
#: The largest ``hnsw.ef_search`` pgvector accepts.
HNSW_MAX_EF_SEARCH = 1_000
#: Seconds before a (model, dimensions) too small for an index is counted again.
INDEX_RECHECK_SECONDS = 10.0

#: Candidates taken from the HNSW index per result asked for (and at least this
#: many) before exact scoring. Each costs graph steps: pgvector is no usearch.
CANDIDATE_FACTOR = 1
MIN_CANDIDATES = 64
#: Without iterative scans, the HNSW scan is widened to this many times the
#: candidates wanted (at most ``HNSW_MAX_EF_SEARCH``) before the filters apply.
POOL_FACTOR = 4


# ---------------------------------------------------------------- pgvector


def installed_pgvector(conn: psycopg.Connection[Any]) -> str:
    """The version of pgvector installed in the database, as ``pg_extension`` records it."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return str(row[0]) if row else ""


def pgvector_version(conn: psycopg.Connection[Any]) -> tuple[int, ...]:
    """Pgvector's version as numbers, ``(0, 8, 0)``; a ``StorageError`` when too old."""
    text = installed_pgvector(conn)
    version = tuple(int(part) for part in re.findall(r"\d+", text))
    if version < PGVECTOR_MIN_VERSION:
        needed = ".".join(map(str, PGVECTOR_MIN_VERSION))
        raise StorageError(
            f"pgvector {text or '(version unknown)'} is too old: Noema needs {needed} or newer "
            "(upgrade it, then ALTER EXTENSION vector UPDATE)"
        )
    return version


class _VectorLoader(Loader):
    """pgvector's binary ``vector`` (dims, unused, big-endian floats) as a float32 array."""

    format = Format.BINARY

    def load(self, data: Buffer) -> np.ndarray:
        return np.frombuffer(data, dtype=">f4", offset=4).astype(np.float32)


def register_vector_types(conn: psycopg.Connection[Any]) -> None:
    """Numpy rows in as ``vector`` and out as float32 arrays, on one connection."""
    from pgvector.psycopg import register_vector

    register_vector(conn)
    info = TypeInfo.fetch(conn, "vector")
    assert info is not None
    conn.adapters.register_loader(info.oid, _VectorLoader)


def _as_array(value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    return np.frombuffer(value, dtype=np.float32)  # bytea: float32 in this machine's order


# ---------------------------------------------------------------- the table


def put_vectors(s: Session, op: ops.PutVectors) -> None:
    """Store (or replace) the op's vectors: a binary ``COPY``, replacements via a staging table."""
    vectors = vector_matrix(op.ids, op.vectors)
    if not len(op.ids):
        return
    # Vectors written after their memories (background embedding, embed-missing) grow
    # the table too: with statistics of an empty one, the planner rescans it for every
    # memory when it looks for those still missing a vector.
    s.inserted += len(op.ids)
    dims = int(vectors.shape[1])
    s.store.indexes.grown(op.model, dims)
    pgvector = s.store.pgvector
    kind = "vector" if pgvector else "bytea"
    replacing = s.one(
        "SELECT 1 FROM unnest(%s::text[]) AS w(id) JOIN vectors v ON v.mind_id = %s "
        "AND v.model = %s AND v.dims = %s AND v.memory_id = w.id LIMIT 1",
        (list(op.ids), op.mind_id, op.model, dims),
    )
    # New vectors (the usual case) go straight in; replacements through a staging
    # table, so a re-embedded memory keeps one row. The mind's lock is held.
    target = (
        "noema_vector_stage (memory_id, vector)"
        if replacing
        else ("vectors (mind_id, memory_id, model, dims, vector)")
    )
    if replacing:
        s.execute(
            "CREATE TEMP TABLE IF NOT EXISTS noema_vector_stage "
            f'(memory_id text COLLATE "C", vector {kind}) ON COMMIT DELETE ROWS'
        )
        s.execute("TRUNCATE noema_vector_stage")
    with s.cur.copy(f"COPY {target} FROM STDIN (FORMAT BINARY)") as copy:
        if replacing:
            copy.set_types(["text", kind])
        else:
            copy.set_types(["text", "text", "text", "int4", kind])
        for memory_id, row in zip(op.ids, vectors, strict=True):
            value = row if pgvector else row.tobytes()
            copy.write_row(
                (memory_id, value) if replacing else (op.mind_id, memory_id, op.model, dims, value)
            )
    if replacing:
        s.execute(
            "INSERT INTO vectors (mind_id, memory_id, model, dims, vector) "
            "SELECT %s, memory_id, %s, %s, vector FROM noema_vector_stage "
            "ON CONFLICT (mind_id, model, dims, memory_id) DO UPDATE SET vector = excluded.vector",
            (op.mind_id, op.model, dims),
        )


def get_vectors(s: Session, op: ops.GetVectors) -> dict[str, np.ndarray]:
    """The vectors under ``(model, dims)`` of those of ``op.ids`` that have one, by memory id."""
    unique = list(dict.fromkeys(op.ids))
    if not unique:
        return {}
    rows = s.cur.execute(
        "SELECT v.memory_id, v.vector FROM unnest(%s::text[]) AS wanted(id) "
        "JOIN vectors v ON v.mind_id = %s AND v.model = %s AND v.dims = %s "
        "AND v.memory_id = wanted.id",
        (unique, op.mind_id, op.model, op.dims),
        binary=True,
    ).fetchall()
    return {r[0]: _as_array(r[1]) for r in rows}


# ---------------------------------------------------------------- search


def search_vectors(s: Session, op: ops.SearchVectors) -> list[ops.Nearest]:
    """The nearest memories to ``op.query`` passing the filters, by exact cosine, best first."""
    query = unit_query(op.query)
    if query is None:
        return []
    dims = int(query.shape[0])
    params: list[Any] = [op.mind_id]
    where = filter_sql(POSTGRES, op.filters, op.as_of, params)
    key = sql.SQL("v.model = {} AND v.dims = {}").format(sql.Literal(op.model), sql.Literal(dims))
    base = sql.SQL(
        "SELECT m.seq, v.vector FROM vectors v "
        "JOIN memories m ON m.mind_id = v.mind_id AND m.id = v.memory_id "
        "WHERE {key} AND v.mind_id = %s " + where
    ).format(key=key)
    store = s.store
    if store.pgvector:
        # Nearest first, by pgvector's distance: through the HNSW index once one is
        # built (its order is nearly right; iterative scans go on past rows the
        # filters reject), else exactly. The candidates are scored exactly below.
        wanted = max(op.limit * CANDIDATE_FACTOR, MIN_CANDIDATES)
        distance = sql.SQL("v.vector::vector({dims}) <=> %s::vector({dims})").format(
            dims=sql.Literal(dims)
        )
        indexed = store.indexes.ensure(s, op.model, dims)
        if indexed and (store.pgvector_version or ()) < PGVECTOR_ITERATIVE_SCAN:
            rows = _nearest_without_iterative_scan(
                s, base, key, distance, where, params, query, wanted
            )
        else:
            if indexed:
                ef_search = min(HNSW_MAX_EF_SEARCH, max(store.options.hnsw_ef_search, wanted))
                s.execute(
                    f"SET LOCAL hnsw.ef_search = {int(ef_search)}; "
                    "SET LOCAL hnsw.iterative_scan = relaxed_order"
                )
            statement = sql.SQL("{base} ORDER BY {distance} LIMIT %s").format(
                base=base, distance=distance
            )
            rows = s.cur.execute(statement, [*params, query, wanted], binary=True).fetchall()
    else:  # float32 bytes: every vector passing the filters is scored
        rows = s.cur.execute(base, params, binary=True).fetchall()
    if not rows:
        return []
    seqs = [int(r[0]) for r in rows]
    matrix = np.vstack([_as_array(r[1]) for r in rows])
    similarities = matrix @ query
    order = sorted(range(len(seqs)), key=lambda i: (-float(similarities[i]), seqs[i]))
    best = order[: op.limit]
    found = s.memories_by_seq(op.mind_id, [seqs[i] for i in best])
    return [ops.Nearest(found[seqs[i]], float(similarities[i]), matrix[i]) for i in best]


def _nearest_without_iterative_scan(
    s: Session,
    base: sql.Composable,
    key: sql.Composable,
    distance: sql.Composable,
    where: str,
    params: list[Any],
    query: np.ndarray,
    wanted: int,
) -> list[tuple[Any, ...]]:
    """The ``wanted`` nearest rows passing the filters, on pgvector before 0.8.

    There an HNSW scan ends after ``hnsw.ef_search`` rows, some of which the
    filters reject: the scan is widened to a pool of the mind's nearest and the
    filters pick from it. When fewer than ``wanted`` pass, the search is exact.
    """
    pool = min(HNSW_MAX_EF_SEARCH, max(s.store.options.hnsw_ef_search, wanted * POOL_FACTOR))
    s.execute(f"SET LOCAL hnsw.ef_search = {int(pool)}")
    widened = sql.SQL(
        "SELECT m.seq, v.vector FROM (SELECT v.mind_id, v.memory_id, v.vector, "
        "{distance} AS distance FROM vectors v WHERE {key} AND v.mind_id = %s "
        "ORDER BY distance LIMIT {pool}) v "
        "JOIN memories m ON m.mind_id = v.mind_id AND m.id = v.memory_id "
        "WHERE true " + where + " ORDER BY v.distance LIMIT %s"
    ).format(distance=distance, key=key, pool=sql.Literal(pool))
    rows = s.cur.execute(widened, [query, *params, wanted], binary=True).fetchall()
    if len(rows) < wanted:
        # ``+ 0``: an order no index serves, so every row passing the filters is measured.
        exact = sql.SQL("{base} ORDER BY ({distance}) + 0 LIMIT %s").format(
            base=base, distance=distance
        )
        rows = s.cur.execute(exact, [*params, query, wanted], binary=True).fetchall()
    return rows


# ---------------------------------------------------------------- HNSW indexes


class HnswIndexes:
    """Which (model, dimensions) of one store an HNSW index serves, building those due."""

    def __init__(self, conninfo: str, options: PostgresOptions) -> None:
        self._conninfo = conninfo
        self._options = options
        self._built: dict[tuple[str, int], bool] = {}
        self._not_due: dict[tuple[str, int], float] = {}  # key -> when to count again
        self._lock = threading.Lock()

    def grown(self, model: str, dims: int) -> None:
        """Vectors of ``(model, dims)`` were written: count them again at the next search.

        Else a bulk load right after a count below ``index_min_rows`` would be
        searched exactly until the recheck came due.
        """
        self._not_due.pop((model, dims), None)

    def ensure(self, s: Session, model: str, dims: int) -> bool:
        """Whether an HNSW index serves ``(model, dims)``, building it when one is due.

        Built on its own connection (so a read session may ask for it), under a
        lock so that two processes never build the same index at once.
        """
        key = (model, dims)
        if self._built.get(key):
            return True
        if time.monotonic() < self._not_due.get(key, float("-inf")):
            return False
        name = "vectors_hnsw_" + hashlib.sha1(f"{model}\x00{dims}".encode()).hexdigest()[:16]
        if s.one(
            "SELECT 1 FROM pg_class WHERE relname = %s AND relkind IN ('i', 'I') "
            "AND relnamespace = current_schema()::regnamespace",
            (name,),
        ):
            self._built[key] = True
            return True
        if dims > HNSW_MAX_DIMS:  # pgvector cannot index wider vectors: search exactly
            return False
        options = self._options
        count = s.one(
            "SELECT count(*) FROM "
            "(SELECT 1 FROM vectors WHERE model = %s AND dims = %s LIMIT %s) x",
            (model, dims, options.index_min_rows),
        )
        if count is None or count[0] < options.index_min_rows:
            self._not_due[key] = time.monotonic() + INDEX_RECHECK_SECONDS
            return False
        if s.write:
            # The build waits for every writer of the table, this session included:
            # it would wait for itself. A read session builds it; until then, exactly.
            return False
        try:
            self._build(name, model, dims)
        except psycopg.errors.ReadOnlySqlTransaction:  # a replica: the primary builds it
            self._not_due[key] = time.monotonic() + INDEX_RECHECK_SECONDS
            return False
        self._built[key] = True
        return True

    def _build(self, name: str, model: str, dims: int) -> None:
        """Build the index ``name`` of ``(model, dims)`` unless another process has."""
        options = self._options
        with self._lock, psycopg.connect(self._conninfo, autocommit=True) as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (lock_key(f"noema:index:{name}"),))
            conn.execute(
                sql.SQL("SET maintenance_work_mem = {}").format(
                    sql.Literal(f"{options.index_build_memory_mb}MB")
                )
            )
            conn.execute(
                sql.SQL(
                    "CREATE INDEX IF NOT EXISTS {name} ON vectors USING hnsw "
                    "((vector::vector({dims})) vector_cosine_ops) "
                    "WITH (m = {m}, ef_construction = {ef}) "
                    "WHERE model = {model} AND dims = {dims}"
                ).format(
                    name=sql.Identifier(name),
                    dims=sql.Literal(dims),
                    m=sql.Literal(options.hnsw_m),
                    ef=sql.Literal(options.hnsw_ef_construction),
                    model=sql.Literal(model),
                )
            )
