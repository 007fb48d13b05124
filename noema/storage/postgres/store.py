"""The PostgreSQL store: the pool, the session, the handlers whose SQL is PostgreSQL's own.

Writers of one mind are serialised by a transaction-scoped advisory lock taken
the first time a write session touches that mind, which gives each mind what
SQLite's single writer gives the whole file: the audit chain and the
check-then-insert of the reconciler see no interleaving writer. Read sessions
are ``REPEATABLE READ READ ONLY``: one snapshot, which a read op the session
submits (the vector search of a recall) can share on a second pooled connection,
so the server runs it while the first connection goes on. The handlers both SQL
backends share live in ``noema.storage._sql``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from concepts import Memory, MindInfo
from noema.errors import ConfigError, InvalidInput, StorageError
from noema.ids import mind_digest
from noema.storage import _sql, ops
from noema.storage._dialect import POSTGRES
from noema.storage._rows import (
    MEMORY_SELECT,
    memory_from_row,
    mind_from_row,
    to_micros,
    update_groups,
)
from noema.storage.postgres import leases, text, vectors
from noema.storage.postgres.options import (
    first_line,
    lock_key,
    parse_url,
    read_only_conninfo,
    redact,
)
from noema.storage.postgres.schema import migrate, read_existing

__all__ = ["PostgresSession", "PostgresStorage"]

R = TypeVar("R")

#: Statistics are refreshed after this many new rows (memories and vectors), or once
#: those two tables together doubled (an ANALYZE samples 30,000 rows: 0.1 to 1 s).
ANALYZE_MIN_ROWS = 1_000
ANALYZE_GROWTH = 1.0
#: Read ops a read session runs on a second connection, in its own snapshot.
ASIDE_OPS: frozenset[type[ops.Op[Any]]] = frozenset({ops.SearchVectors})
#: Seconds to wait for that second connection; without one the op runs in line.
ASIDE_WAIT = 0.01


class PostgresSession(_sql.SqlSession):
    """Runs operations on one pooled connection inside one transaction."""

    dialect = POSTGRES

    def __init__(self, store: PostgresStorage, conn: psycopg.Connection[Any], write: bool) -> None:
        super().__init__(write, _HANDLERS)
        self.store = store
        self.cur = conn.cursor()
        self._locked: set[str] = set()
        # Rows this transaction added to memories and vectors: the statistics follow them.
        self.inserted = 0
        self._aside: list[Future[Any]] = []
        self._snapshot: str | None = None

    def submit(self, op: ops.Op[R]) -> Future[R]:
        """Run a read op on a second connection in this session's snapshot, when one is free."""
        if not self.write and type(op) in ASIDE_OPS:
            future = self.store.aside(self, op)
            if future is not None:
                self._aside.append(future)
                return future
        return super().submit(op)

    def snapshot(self) -> str:
        """This transaction's snapshot, exported (once) for other connections to share."""
        if self._snapshot is None:
            row = self.cur.execute("SELECT pg_export_snapshot()").fetchone()
            assert row is not None
            self._snapshot = str(row[0])
        return self._snapshot

    def settle(self) -> None:
        """Wait for the ops submitted aside: their snapshot lasts as long as this transaction."""
        concurrent.futures.wait(self._aside)

    def prepare(self, op: ops.Op[Any]) -> None:
        """In a write session, lock the op's minds against their other writers first."""
        if self.write:
            self._lock_mind(op)

    def problem(self, exc: Exception) -> InvalidInput | str | None:
        """A NUL byte in text is the caller's input at fault; other driver errors, the store's."""
        if isinstance(exc, psycopg.DataError) and "NUL" in str(exc):
            return InvalidInput("text holds a NUL byte")
        return first_line(exc) if isinstance(exc, psycopg.Error) else None

    def _lock_mind(self, op: ops.Op[Any]) -> None:
        """Serialise this transaction with every other writer of the op's mind."""
        minds: set[str] = set()
        mind_id = getattr(op, "mind_id", None)
        if isinstance(mind_id, str):
            minds.add(mind_id)
        for collection in ("memories", "relationships", "events"):
            minds.update(item.mind_id for item in getattr(op, collection, ()))
        for mind in sorted(minds - self._locked):
            self.cur.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(f"noema:mind:{mind}"),))
            self._locked.add(mind)

    def all(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row ``query`` returns."""
        return self.cur.execute(query, params).fetchall()

    def one(self, query: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """The first row ``query`` returns, or ``None``."""
        return self.cur.execute(query, params).fetchone()

    def execute(self, query: str | sql.Composed, params: Sequence[Any] = ()) -> int:
        """Run one statement (text or composed SQL); how many rows it changed."""
        return self.cur.execute(query, params).rowcount

    def many(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement per row of parameters."""
        self.cur.executemany(query, rows)

    def append(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert ``rows`` of ``columns`` into ``table`` with one ``COPY ... FROM STDIN``."""
        with self.cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def memories_where(
        self, mind_id: str, column: str, values: Sequence[str], *, active: bool
    ) -> list[Memory]:
        """The mind's memories whose ``column`` is one of ``values`` (``active``: active ones)."""
        # A join with the unnested list probes the index once per value; ``= ANY(array)``
        # would compare every row of the mind with every value.
        unique = list(dict.fromkeys(values))
        if not unique:
            return []
        rows = self.all(
            f"SELECT {MEMORY_SELECT} FROM unnest(%s::text[]) AS wanted(value) "
            f"JOIN memories m ON m.mind_id = %s AND m.{column} = wanted.value"
            + (" AND m.status = 'active'" if active else ""),
            (unique, mind_id),
        )
        return [memory_from_row(r) for r in rows]

    def memories_by_seq(self, mind_id: str, seqs: Sequence[int]) -> dict[int, Memory]:
        """The mind's memories by their ``seq`` (the order the table holds them in)."""
        rows = self.all(
            f"SELECT m.seq, {MEMORY_SELECT} FROM memories m "
            "WHERE m.mind_id = %s AND m.seq = ANY(%s)",
            (mind_id, list(seqs)),
        )
        return {int(r[0]): memory_from_row(r[1:]) for r in rows}


# ---------------------------------------------------------------- handlers of PostgreSQL's own


def _ensure_mind(s: PostgresSession, op: ops.EnsureMind) -> MindInfo:
    created = to_micros(op.now)
    s.execute(
        "INSERT INTO minds (id, name, created_at, digest) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (name) DO NOTHING",
        (op.new_id, op.name, created, mind_digest(op.new_id, op.name, created)),
    )
    row = s.one("SELECT id, name, created_at FROM minds WHERE name = %s", (op.name,))
    assert row is not None
    return mind_from_row(row)


def _insert_memories(s: PostgresSession, op: ops.InsertMemories) -> None:
    if not op.memories:
        return
    s.inserted += len(op.memories)
    _sql.memories.insert_memory_rows(s, op.memories)
    text.count_new(s, op.memories)


def _update_memories(s: PostgresSession, op: ops.UpdateMemories) -> None:
    groups = update_groups(op.mind_id, op.updates, ops.MUTABLE_FIELDS)
    _sql.history.keep_history(s, op)  # first: it refuses a change without changed_at
    rekeyed = [(i, changes["keys"]) for i, changes in op.updates if "keys" in changes]
    if rekeyed:
        text.recount_keys(s, op.mind_id, rekeyed)
    _sql.memories.set_memory_columns(s, groups)


def _put_entities(s: PostgresSession, op: ops.PutEntities) -> None:
    if not op.refs:
        return
    s.execute(
        "INSERT INTO entity_refs (mind_id, entity, memory_id) "
        "SELECT %s, e, mid FROM unnest(%s::text[], %s::text[]) AS t(mid, e) "
        "ON CONFLICT DO NOTHING",
        (op.mind_id, [m for m, _ in op.refs], [e for _, e in op.refs]),
    )


def _search_entities(s: PostgresSession, op: ops.SearchEntities) -> list[tuple[Memory, int]]:
    unique = list(dict.fromkeys(op.entities))
    if not unique:
        return []
    kept = s.all(
        "SELECT e FROM unnest(%s::text[]) AS e WHERE (SELECT count(*) FROM (SELECT 1 "
        "FROM entity_refs r WHERE r.mind_id = %s AND r.entity = e LIMIT %s) x) < %s",
        (unique, op.mind_id, op.max_refs, op.max_refs),
    )
    return _sql.memories.search_entities(s, op, [r[0] for r in kept])


def _purge_memories(s: PostgresSession, op: ops.PurgeMemories) -> int:
    ids = list(op.ids)
    if not ids:
        return 0
    _sql.memories.delete_memory_links(s, op.mind_id, ids)
    gone = s.all(
        "DELETE FROM memories WHERE mind_id = %s AND id = ANY(%s) RETURNING content, keys",
        (op.mind_id, ids),
    )
    text.uncount(s, op.mind_id, [(content, keys) for content, keys in gone])
    return len(gone)


def _acquire_lease(s: PostgresSession, op: ops.AcquireLease) -> bool:
    return leases.acquire_lease(s, s.store.leases, op)


def _release_lease(s: PostgresSession, op: ops.ReleaseLease) -> None:
    leases.release_lease(s, s.store.leases, op)


_HANDLERS: dict[type[Any], Callable[[PostgresSession, Any], Any]] = {
    **_sql.SHARED_HANDLERS,
    ops.EnsureMind: _ensure_mind,
    ops.InsertMemories: _insert_memories,
    ops.UpdateMemories: _update_memories,
    ops.SearchText: text.search_text,
    ops.PutVectors: vectors.put_vectors,
    ops.GetVectors: vectors.get_vectors,
    ops.SearchVectors: vectors.search_vectors,
    ops.PutEntities: _put_entities,
    ops.SearchEntities: _search_entities,
    ops.AcquireLease: _acquire_lease,
    ops.ReleaseLease: _release_lease,
    ops.PurgeMemories: _purge_memories,
    ops.TombstoneEvents: _sql.log.tombstone_events,
}


# ---------------------------------------------------------------- the store


class PostgresStorage:
    """A PostgreSQL database holding any number of minds, shared by any number of processes.

    ``read_only`` opens only a Noema store that exists, at this Noema's schema,
    for reading (a federation peer's): every connection's transactions are
    read-only, so the server refuses any write, and nothing is migrated.
    """

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        self.url = url
        self.conninfo, self.options = parse_url(url)
        shown = redact(self.conninfo)
        if read_only:
            self.conninfo = read_only_conninfo(self.conninfo)
        self.words = text.WordStats()
        self.leases = leases.Leases(self.conninfo)
        self.indexes = vectors.HnswIndexes(self.conninfo, self.options)
        self._growth_lock = threading.Lock()
        self._aside_lock = threading.Lock()
        self._aside_threads: ThreadPoolExecutor | None = None
        self._shares_snapshots = False
        self._grown = 0
        self._analyzed_rows = 0.0
        #: pgvector's version as numbers, ``(0, 8, 0)``; None when vectors are bytes.
        self.pgvector_version: tuple[int, ...] | None = None
        try:
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                if read_only:
                    self.pgvector = read_existing(conn, shown)
                else:
                    self.pgvector = migrate(
                        conn, shown, self.options.vectors, self.options.partitions
                    )
                if self.pgvector:
                    self.pgvector_version = vectors.pgvector_version(conn)
                # A standby may refuse to export a snapshot: reads there stay in line.
                row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
                self._shares_snapshots = row is not None and not row[0]
        except psycopg.OperationalError as exc:
            raise StorageError(
                f"cannot connect to PostgreSQL at {shown}: {first_line(exc)}"
            ) from exc
        except psycopg.ProgrammingError as exc:  # a malformed connection string
            raise ConfigError(f"database URL is not usable: {first_line(exc)}") from None
        except psycopg.Error as exc:
            raise StorageError(f"cannot open PostgreSQL database: {first_line(exc)}") from exc
        self._pool = ConnectionPool(
            self.conninfo,
            min_size=self.options.pool_min,
            max_size=self.options.pool_max,
            timeout=self.options.pool_timeout,
            # No server-side prepared statements: a generic plan cannot see the query
            # words (so may scan the table where the GIN index finds 50 rows) or the
            # model literal a partial HNSW index is keyed on.
            kwargs={"autocommit": True, "prepare_threshold": None},
            configure=self._configure,
            open=False,
            name="noema",
        )
        try:
            self._pool.open(wait=self.options.pool_min > 0, timeout=self.options.pool_timeout)
        except PoolTimeout as exc:
            self._pool.close()
            raise StorageError(f"cannot fill the connection pool: {exc}") from exc

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute("SET TIME ZONE 'UTC'")
        if self.pgvector:
            vectors.register_vector_types(conn)

    @property
    def concurrency(self) -> int:
        """The pool's largest size (``pool_max``): each transaction holds one connection.

        A read session borrows a second one for a submitted op only while one is free
        (``aside``), so this many transactions can always run at once.
        """
        return self.options.pool_max

    def schema_version(self) -> int:
        """The highest migration recorded in ``schema_migrations`` (0 when none)."""
        with self._pool.connection() as conn:
            row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
            return int(row[0] or 0) if row else 0

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[PostgresSession]:
        """Yield a session inside one transaction on a pooled connection, committed on a clean exit.

        A read session is ``REPEATABLE READ READ ONLY`` (one snapshot); an exception
        rolls the transaction back. A commit that added many rows refreshes the
        planner's statistics (``_grew``).

        Raises:
            StorageError: No pooled connection is free in time, the connection is
                lost, or the commit fails.
        """
        try:
            with self._pool.connection() as conn:
                conn.execute(
                    "BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
                )
                session = PostgresSession(self, conn, write)
                try:
                    yield session
                except BaseException:
                    session.settle()
                    with contextlib.suppress(psycopg.Error):
                        conn.execute("ROLLBACK")
                    raise
                session.settle()
                try:
                    conn.execute("COMMIT")
                except psycopg.Error as exc:
                    raise StorageError(f"commit failed: {first_line(exc)}") from exc
                if session.inserted:
                    self._grew(conn, session.inserted)
        except PoolTimeout as exc:
            raise StorageError(f"no database connection free: {exc}") from exc
        except psycopg.OperationalError as exc:
            raise StorageError(f"lost the database connection: {first_line(exc)}") from exc

    def aside(self, session: PostgresSession, op: ops.Op[R]) -> Future[R] | None:
        """Start ``op`` on a second pooled connection in ``session``'s snapshot.

        None when no connection is free within ``ASIDE_WAIT`` (the caller runs it in
        line): at once when every connection the pool may open is in use, so busy
        recalls never wait on each other for a second connection.
        """
        if not self._shares_snapshots:
            return None
        stats = self._pool.get_stats()
        if not stats.get("pool_available") and stats.get("pool_size", 0) >= self.options.pool_max:
            return None
        try:
            conn = self._pool.getconn(timeout=ASIDE_WAIT)
        except PoolTimeout:
            return None
        try:
            snapshot = session.snapshot()
            with self._aside_lock:
                if self._aside_threads is None:
                    self._aside_threads = ThreadPoolExecutor(
                        self.options.pool_max, thread_name_prefix="noema-aside"
                    )
                return self._aside_threads.submit(self._run_aside, conn, snapshot, op)
        except BaseException as exc:
            self._pool.putconn(conn)
            if isinstance(exc, psycopg.Error):
                raise StorageError(f"cannot export the read snapshot: {first_line(exc)}") from exc
            raise

    def _run_aside(self, conn: psycopg.Connection[Any], snapshot: str, op: ops.Op[R]) -> R:
        try:
            conn.execute(
                sql.SQL(
                    "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT {}"
                ).format(sql.Literal(snapshot))
            )
            try:
                return PostgresSession(self, conn, write=False).run(op)
            finally:
                with contextlib.suppress(psycopg.Error):
                    conn.execute("ROLLBACK")  # read only: nothing to keep
        except psycopg.OperationalError as exc:
            raise StorageError(f"lost the database connection: {first_line(exc)}") from exc
        except psycopg.Error as exc:
            raise StorageError(f"cannot share the read snapshot: {first_line(exc)}") from exc
        finally:
            self._pool.putconn(conn)

    def _grew(self, conn: psycopg.Connection[Any], inserted: int) -> None:
        """Refresh the planner's statistics (and the GIN index) once the tables grew enough.

        Bulk writes outrun autovacuum: with statistics of a far smaller table the
        planner probes the wrong index (seconds instead of milliseconds). A busy
        table is skipped; another process or autovacuum is analysing it.
        """
        with self._growth_lock:
            self._grown += inserted
            if self._grown < max(ANALYZE_MIN_ROWS, self._analyzed_rows * ANALYZE_GROWTH):
                return
            self._grown = 0
        try:
            conn.execute("ANALYZE (SKIP_LOCKED) memories, vectors, entity_refs")
            # Fold the GIN indexes' pending lists in: searches scan them row by row.
            # A partitioned store has one index per partition under each name.
            conn.execute(
                "SELECT gin_clean_pending_list(i) FROM unnest(ARRAY["
                "'memories_tsv'::regclass, 'memories_keys_tsv'::regclass]) AS named(n), "
                "LATERAL unnest(coalesce((SELECT array_agg(relid) FROM pg_partition_tree(n) "
                "WHERE isleaf), ARRAY[n])) AS i"
            )
            # The rows counted in ``inserted``: memories and vectors (-1 is "never analysed").
            row = conn.execute(
                "SELECT sum(greatest(reltuples, 0)) FROM pg_class "
                "WHERE oid IN ('memories'::regclass, 'vectors'::regclass)"
            ).fetchone()
        except psycopg.Error:  # statistics are an optimisation: never fail a commit for them
            return
        self._analyzed_rows = float(row[0] or 0.0) if row else 0.0

    def reclaim(self) -> None:
        """After a purge: VACUUM the touched tables, so their indexes and statistics drop it.

        PostgreSQL does not zero the space of deleted rows: until it is reused, the
        bytes stay in the table files, and the server's WAL and backups keep
        theirs (``VACUUM FULL`` rewrites a table).
        """
        try:
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                conn.execute(
                    "VACUUM (ANALYZE) memories, events, relationships, vectors, entity_refs, "
                    "workspace_snapshots, text_stats"
                )
        except psycopg.Error as exc:
            raise StorageError(f"cannot vacuum after the purge: {first_line(exc)}") from exc

    def close(self) -> None:
        """Release the lease connection (and its advisory locks), then close the pool."""
        self.leases.close()
        if self._aside_threads is not None:
            self._aside_threads.shutdown()
        self._pool.close()
