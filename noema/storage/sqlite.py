"""The embedded SQLite backend: WAL mode, FTS5 with bm25, one file per store.

The handlers SQLite shares with PostgreSQL live in ``_sql``; full-text search
in ``_sqlite_text``, vectors and their HNSW index in ``_sqlite_vectors``, the
schema in ``_sqlite_schema``. This module holds the session, the handlers whose
SQL is SQLite's own, and the store.
"""

from __future__ import annotations

import contextlib
import errno
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, wait as wait_for
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import quote

import numpy as np

from concepts import Memory, MindInfo
from noema.errors import ConfigError, InvalidInput, StorageError
from noema.ids import mind_digest
from noema.storage import _sql, ops
from noema.storage._dialect import SQLITE, chunks
from noema.storage._migrations import no_store
from noema.storage._rows import (
    MEMORY_SELECT,
    memory_from_row,
    mind_from_row,
    to_micros,
    update_groups,
)
from noema.storage._sqlite_schema import check_current, migrate
from noema.storage._sqlite_text import (
    TEXT_COLUMNS,
    create_text_indexes,
    index_new_rows,
    index_rows,
    merge_text_indexes,
    search_text,
)
from noema.storage._sqlite_vectors import VectorIndexes, VectorSearch, get_vectors, put_vectors

__all__ = ["SQLiteStorage"]

R = TypeVar("R")

#: The index each ``memories_where`` column is looked up by.
_INDEX_OF = {
    "id": "memories_mind_id",
    "content_hash": "memories_active_hash",
    "key": "memories_mind_key",
}


def _parse_path(url: str) -> str:
    """The file (or ``:memory:``) a SQLite URL or bare path names.

    A SQLite URL takes no parameters and no ``file:`` URI: SQLite would read either
    as part of a file name and create a file named after it, so both are refused.
    """
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
    elif url.startswith("sqlite://"):
        path = url[len("sqlite://") :]
    else:
        path = url
    if not path:
        raise ConfigError(f"database URL {url!r} names no file (use sqlite:///PATH or :memory:)")
    if "?" in path:
        query = path.partition("?")[2]
        raise ConfigError(
            f"SQLite database URL {url!r} has parameters ({query}); it takes none "
            "(use sqlite:///PATH or sqlite:///:memory:)"
        )
    if path.startswith("file:"):
        raise ConfigError(
            f"SQLite database URL {url!r} is a file: URI; give the path (sqlite:///PATH)"
        )
    return path


class _Session(_sql.SqlSession):
    """Runs operations on one connection inside one transaction."""

    dialect = SQLITE

    def __init__(self, conn: sqlite3.Connection, write: bool, vectors: VectorIndexes) -> None:
        super().__init__(write, _HANDLERS)
        self.conn = conn
        self.vectors = vectors
        # Vectors written in this (uncommitted) transaction must not enter the index.
        self.wrote_vectors = False
        self._searches: list[VectorSearch] = []  # vector searches started aside

    def submit(self, op: ops.Op[R]) -> Future[R]:
        """A read session starts a vector search's index look-up on a worker thread.

        The look-up releases the GIL, so what the caller runs meanwhile (the
        text lane's statements) overlaps it. The candidates' rows are read on
        this session's connection, in its snapshot, when the result is first
        asked for. Any other op runs now.
        """
        if self.write or not isinstance(op, ops.SearchVectors):
            return super().submit(op)
        started = super().submit(_StartSearch(op))
        if started.exception() is not None:
            return cast(Future[R], started)  # its failure, as any op's
        search = started.result()
        if search is not None:
            self._searches.append(search)
        return cast(Future[R], _OnDemand(lambda: self.run(_FinishSearch(search))))

    def settle(self) -> None:
        """Wait for the look-ups started aside: the index is only used under the store's lock."""
        wait_for([search.keys for search in self._searches if search.keys is not None])

    def problem(self, exc: Exception) -> InvalidInput | str | None:
        if isinstance(exc, sqlite3.Error):
            return str(exc)
        if isinstance(exc, OverflowError):  # an integer no model bounded, past SQLite's 64 bits
            return InvalidInput("a number is too large for SQLite (at most 2**63 - 1)")
        return None

    def all(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(query, params).fetchall()

    def one(self, query: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.conn.execute(query, params).fetchone()
        return row

    def execute(self, query: str, params: Sequence[Any] = ()) -> int:
        return self.conn.execute(query, params).rowcount

    def many(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(query, rows)

    def append(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        self.many(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({SQLITE.marks(len(columns))})",
            rows,
        )

    def memories_where(
        self, mind_id: str, column: str, values: Sequence[str], *, active: bool
    ) -> list[Memory]:
        # INDEXED BY: with long IN lists the planner otherwise scans (mind_id, status).
        extra = " AND m.status = 'active'" if active else ""
        found: list[Memory] = []
        for chunk in chunks(list(dict.fromkeys(values))):
            rows = self.all(
                f"SELECT {MEMORY_SELECT} FROM memories m INDEXED BY {_INDEX_OF[column]} "
                f"WHERE m.mind_id = ? AND m.{column} IN ({SQLITE.marks(len(chunk))}){extra}",
                (mind_id, *chunk),
            )
            found.extend(memory_from_row(r) for r in rows)
        return found


# The handlers whose SQL is SQLite's own, each a plain function of (session, op).


def _ensure_mind(s: _Session, op: ops.EnsureMind) -> MindInfo:
    row = s.one("SELECT id, name, created_at FROM minds WHERE name = ?", (op.name,))
    if row is None:
        number = s.conn.execute("SELECT coalesce(max(text_index), 0) + 1 FROM minds").fetchone()[0]
        created = to_micros(op.now)
        s.execute(
            "INSERT INTO minds (id, name, created_at, text_index, digest) VALUES (?, ?, ?, ?, ?)",
            (op.new_id, op.name, created, number, mind_digest(op.new_id, op.name, created)),
        )
        create_text_indexes(s.conn, op.new_id, number)
        row = (op.new_id, op.name, to_micros(op.now))
    return mind_from_row(row)


def _insert_memories(s: _Session, op: ops.InsertMemories) -> None:
    # Writers are serialised (BEGIN IMMEDIATE), so the new rows are those past the old max.
    last = s.conn.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0]
    _sql.memories.insert_memory_rows(s, op.memories)
    index_new_rows(s.conn, list(dict.fromkeys(m.mind_id for m in op.memories)), last)


def _update_memories(s: _Session, op: ops.UpdateMemories) -> None:
    groups = update_groups(op.mind_id, op.updates, ops.MUTABLE_FIELDS)
    _sql.history.keep_history(s, op)  # first: it refuses a change without changed_at
    # Keys are rebuilt (reindex) where content never changes: re-index those rows.
    rekeyed = [memory_id for memory_id, changes in op.updates if "keys" in changes]
    if rekeyed:
        index_rows(s.conn, op.mind_id, rekeyed, "keys", remove=True)
    _sql.memories.set_memory_columns(s, groups)
    if rekeyed:
        index_rows(s.conn, op.mind_id, rekeyed, "keys", remove=False)


def _search_text(s: _Session, op: ops.SearchText) -> list[tuple[Memory, float]]:
    return search_text(s.conn, op)


def _put_vectors(s: _Session, op: ops.PutVectors) -> None:
    s.wrote_vectors = True
    put_vectors(s.conn, op)


def _get_vectors(s: _Session, op: ops.GetVectors) -> dict[str, np.ndarray]:
    return get_vectors(s.conn, op)


def _search_vectors(s: _Session, op: ops.SearchVectors) -> list[ops.Nearest]:
    return s.vectors.search(s.conn, op, sync=not s.wrote_vectors)


@dataclass(frozen=True, slots=True)
class _StartSearch(ops.Op[VectorSearch | None]):
    """A ``SearchVectors`` whose index look-up starts on the worker (``_Session.submit``)."""

    search: ops.SearchVectors


@dataclass(frozen=True, slots=True)
class _FinishSearch(ops.Op[list[ops.Nearest]]):
    """The rest of a search ``_StartSearch`` began (``None``: nothing to find)."""

    search: VectorSearch | None


def _start_search(s: _Session, op: _StartSearch) -> VectorSearch | None:
    return s.vectors.start(s.conn, op.search, sync=not s.wrote_vectors, aside=True)


def _finish_search(s: _Session, op: _FinishSearch) -> list[ops.Nearest]:
    return [] if op.search is None else s.vectors.finish(s.conn, op.search)


class _OnDemand(Future[R]):
    """A future that its first ``result`` call completes, on the caller's thread."""

    def __init__(self, complete: Callable[[], R]) -> None:
        super().__init__()
        self._complete: Callable[[], R] | None = complete

    def result(self, timeout: float | None = None) -> R:
        complete, self._complete = self._complete, None
        if complete is not None:
            try:
                self.set_result(complete())
            except Exception as exc:
                self.set_exception(exc)
        return super().result(timeout)


def _put_entities(s: _Session, op: ops.PutEntities) -> None:
    s.many(
        "INSERT OR IGNORE INTO entity_refs (mind_id, entity, memory_id) VALUES (?, ?, ?)",
        [(op.mind_id, entity, memory_id) for memory_id, entity in op.refs],
    )


def _search_entities(s: _Session, op: ops.SearchEntities) -> list[tuple[Memory, int]]:
    few = (
        "SELECT count(*) FROM (SELECT 1 FROM entity_refs WHERE mind_id = ? AND entity = ? LIMIT ?)"
    )
    entities = [
        entity
        for entity in dict.fromkeys(op.entities)
        if s.conn.execute(few, (op.mind_id, entity, op.max_refs)).fetchone()[0] < op.max_refs
    ]
    return _sql.memories.search_entities(s, op, entities)


def _purge_memories(s: _Session, op: ops.PurgeMemories) -> int:
    ids = list(op.ids)
    if not ids:
        return 0
    # The index file would keep the vectors: forget the mind's indexes (rebuilt on need).
    s.vectors.discard(s.conn, op.mind_id)
    # Freed pages are zeroed from here to the commit, so no byte of the text stays in
    # the file; the full-text indexes are merged so no segment keeps the purged tokens.
    s.conn.execute("PRAGMA secure_delete = ON")
    for field in TEXT_COLUMNS:
        index_rows(s.conn, op.mind_id, ids, field, remove=True)
    _sql.memories.delete_memory_links(s, op.mind_id, ids)
    deleted = 0
    for chunk in chunks(ids):
        deleted += s.execute(
            f"DELETE FROM memories WHERE mind_id = ? AND id IN ({SQLITE.marks(len(chunk))})",
            (op.mind_id, *chunk),
        )
    merge_text_indexes(s.conn, op.mind_id)
    return deleted


def _tombstone_events(s: _Session, op: ops.TombstoneEvents) -> None:
    s.conn.execute("PRAGMA secure_delete = ON")
    _sql.log.tombstone_events(s, op)


_HANDLERS: dict[type[Any], Callable[[_Session, Any], Any]] = {
    **_sql.SHARED_HANDLERS,
    ops.EnsureMind: _ensure_mind,
    ops.InsertMemories: _insert_memories,
    ops.UpdateMemories: _update_memories,
    ops.SearchText: _search_text,
    ops.PutVectors: _put_vectors,
    ops.GetVectors: _get_vectors,
    ops.SearchVectors: _search_vectors,
    _StartSearch: _start_search,
    _FinishSearch: _finish_search,
    ops.PutEntities: _put_entities,
    ops.SearchEntities: _search_entities,
    ops.AcquireLease: _sql.state.acquire_lease,
    ops.ReleaseLease: _sql.state.release_lease,
    ops.PurgeMemories: _purge_memories,
    ops.TombstoneEvents: _tombstone_events,
}


#: Seconds between two tries to switch a new file to WAL while another process does.
_WAL_RETRY_SECONDS = 0.01


def _use_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Put the database in WAL mode, waiting up to ``timeout`` seconds for the lock.

    Switching a new file to WAL takes an exclusive lock, and SQLite answers a
    second process switching the same file at that moment "database is locked"
    at once, without its busy handler (two agents opening a new store together).
    Once one has switched, the pragma finds WAL and returns.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY
            if not busy or time.monotonic() >= deadline:
                raise
            time.sleep(_WAL_RETRY_SECONDS)


#: The pragmas of every connection, a read-only one's too.
_READ_PRAGMAS = ("PRAGMA cache_size = -65536", "PRAGMA temp_store = MEMORY")


def _prepare(path: str) -> str:
    """The file a store opened to be written goes to, its directory made when missing."""
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
    return str(target)


def _open_existing(url: str, path: str, busy_timeout_ms: int) -> tuple[sqlite3.Connection, str]:
    """A read-only connection to the Noema store at ``path``, and the file it reads.

    Nothing is created, migrated or written: the file is opened with
    ``mode=ro`` and the connection is ``query_only``. A path that is missing, a
    directory, another kind of file, unreadable or not a Noema store all raise
    the same ``no_store`` error, which tells none of them from another.

    Raises:
        ConfigError: no Noema store there, or one at another schema.
    """
    unreadable = no_store(url)
    target = Path(path).expanduser().absolute()
    try:
        regular = path != ":memory:" and target.is_file()  # never open a pipe: it would block
    except OSError:
        regular = False
    if not regular:
        raise unreadable
    try:
        conn = sqlite3.connect(
            f"file:{quote(str(target))}?mode=ro",
            uri=True,
            isolation_level=None,
            check_same_thread=False,
            timeout=busy_timeout_ms / 1000,
        )
    except (sqlite3.Error, ValueError, UnicodeEncodeError):
        raise unreadable from None
    try:
        for pragma in ("PRAGMA query_only = ON", f"PRAGMA busy_timeout = {int(busy_timeout_ms)}"):
            conn.execute(pragma)
        for pragma in _READ_PRAGMAS:
            conn.execute(pragma)
        check_current(conn, url)
    except sqlite3.Error:
        conn.close()
        raise unreadable from None
    except BaseException:
        conn.close()
        raise
    return conn, str(target)


class SQLiteStorage:
    """A SQLite database file (or ``:memory:``) holding any number of minds.

    One connection, guarded by a lock, so a ``SQLiteStorage`` may be shared by
    threads; separate processes coordinate through SQLite's own file locks.
    ``read_only`` opens only a Noema store that exists, at this Noema's schema,
    for reading (``_open_existing``): a federation peer's.
    """

    def __init__(self, url: str, *, busy_timeout_ms: int = 30_000, read_only: bool = False) -> None:
        self.url = url
        self.read_only = read_only
        path = _parse_path(url)
        if read_only:
            self._conn, path = _open_existing(url, path, busy_timeout_ms)
        elif path != ":memory:":
            path = _prepare(path)
        self.path = path
        self._lock = threading.RLock()
        self._vectors = VectorIndexes(
            None if path == ":memory:" else Path(path).with_name(Path(path).name + ".vectors")
        )
        if read_only:
            return
        try:
            self._conn = sqlite3.connect(
                path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000
            )
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open SQLite database {path}: {exc}") from exc
        except (ValueError, UnicodeEncodeError) as exc:
            raise ConfigError(f"database path {path!r} is not usable: {exc}") from None
        try:
            _use_wal(self._conn, busy_timeout_ms / 1000)
            for pragma in (
                "PRAGMA synchronous = NORMAL",
                "PRAGMA foreign_keys = ON",
                f"PRAGMA busy_timeout = {int(busy_timeout_ms)}",
                # Checkpoint every ~40 MB of WAL rather than 4 MB: batch writes touch
                # random index pages, and each checkpoint rewrites them.
                "PRAGMA wal_autocheckpoint = 10000",
                *_READ_PRAGMAS,
            ):
                self._conn.execute(pragma)
            migrate(self._conn, path)
        except BaseException as exc:
            self._conn.close()
            if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB:
                raise ConfigError(f"cannot use {path}: it is not a SQLite database") from exc
            if isinstance(exc, sqlite3.Error):
                raise StorageError(f"cannot open SQLite database {path}: {exc}") from exc
            raise

    @property
    def concurrency(self) -> int:
        """One: every transaction runs on the one connection, behind its lock."""
        return 1

    def schema_version(self) -> int:
        """The highest migration recorded in ``schema_migrations`` (0 when none)."""
        with self._lock:
            row = self._conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
            return int(row[0] or 0)

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[_Session]:
        """Yield a session inside one transaction, committed on a clean exit.

        A writer begins with ``BEGIN IMMEDIATE`` (writers of the file queue on its
        lock), a reader with ``BEGIN``; an exception rolls the transaction back.

        Raises:
            StorageError: The transaction cannot begin, or the commit fails.
        """
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            except sqlite3.Error as exc:
                raise StorageError(f"cannot begin a transaction on {self.path}: {exc}") from exc
            session = _Session(conn, write, self._vectors)
            try:
                try:
                    yield session
                finally:
                    session.settle()
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
        """Save the vector indexes (best effort: they are a cache) and close the connection."""
        with self._lock:
            # The index is a cache: the next open rebuilds what was not saved. A store
            # opened read-only keeps its indexes in memory: nothing is written beside it.
            if not self.read_only:
                with contextlib.suppress(sqlite3.Error):
                    self._vectors.save(self._conn)
            self._vectors.close()
            self._conn.close()
