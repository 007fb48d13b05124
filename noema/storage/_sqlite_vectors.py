"""Vectors on SQLite: float32 rows in ``vectors``, an HNSW index per (mind, model, dimensions).

The ``vectors`` table is the truth; the index (usearch, int8 HNSW) only finds
candidates, which are then scored exactly against their float32 rows, so a
result's similarity is never approximate (ADR 0008). Vector ids only grow, so
an index catches up by loading rows past the last id it holds. Indexes of a
file database are saved beside it (``<file>.vectors/``) when the store closes
and reloaded on the next open; a missing, stale or unreadable index file is
rebuilt from the table.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from usearch.index import Index

from concepts import Memory
from noema.storage import ops
from noema.storage._dialect import SQLITE, chunks, filter_sql
from noema.storage._rows import MEMORY_SELECT, memory_from_row, unit_query, vector_matrix

__all__ = ["VectorIndexes", "VectorSearch", "get_vectors", "put_vectors"]

#: Candidates taken from the index per result asked for, and at least this many.
CANDIDATE_FACTOR = 4
MIN_CANDIDATES = 100
#: Below this many vectors the index is searched exhaustively (exact and cheap).
EXACT_BELOW = 5_000
#: Build and search breadth of the HNSW graph (usearch's defaults are 128 and 64).
EXPANSION_ADD = 64
MIN_EXPANSION_SEARCH = 128
#: Candidates read and re-scored exactly per result asked for, and at least
#: RESCORE_MIN: a quarter more than asked for, as the index's order is approximate
#: (int8 distances and, past EXACT_BELOW, a graph search). Each costs a read of its
#: float32 row, most of a search's time (ADR 0008, amendment of 2026-12-05).
RESCORE_FACTOR = 1.25
RESCORE_MIN = 64
#: Rows read from the table per step while an index catches up.
SYNC_CHUNK = 5_000


# ---------------------------------------------------------------- the table


def put_vectors(conn: sqlite3.Connection, op: ops.PutVectors) -> None:
    vectors = vector_matrix(op.ids, op.vectors)
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


def get_vectors(conn: sqlite3.Connection, op: ops.GetVectors) -> dict[str, np.ndarray]:
    found: dict[str, np.ndarray] = {}
    for chunk in chunks(list(dict.fromkeys(op.ids))):
        rows = conn.execute(
            "SELECT memory_id, vector FROM vectors INDEXED BY vectors_key "
            "WHERE mind_id = ? AND model = ? AND dims = ? "
            f"AND memory_id IN ({SQLITE.marks(len(chunk))})",
            (op.mind_id, op.model, op.dims, *chunk),
        ).fetchall()
        found.update((r[0], np.frombuffer(r[1], dtype=np.float32)) for r in rows)
    return found


def _passing(
    conn: sqlite3.Connection, op: ops.SearchVectors, dims: int, memory_rowids: Sequence[int]
) -> list[tuple[int, bytes]]:
    """Candidates passing the search's filters: ``(memory rowid, vector)``."""
    if not memory_rowids:
        return []
    params: list[Any] = [json.dumps(list(memory_rowids)), op.model, dims, op.mind_id]
    where = filter_sql(SQLITE, op.filters, op.as_of, params)
    # CROSS JOIN keeps the candidate list as the outer loop: one key look-up per
    # candidate (an IN list of rowids made the planner scan the mind's vectors).
    return conn.execute(
        "SELECT m.rowid, v.vector FROM json_each(?) AS j "
        "CROSS JOIN memories m ON m.rowid = j.value "
        "CROSS JOIN vectors v ON v.mind_id = m.mind_id AND v.memory_id = m.id "
        f"AND v.model = ? AND v.dims = ? WHERE m.mind_id = ? {where}",
        params,
    ).fetchall()


def _memories(conn: sqlite3.Connection, memory_rowids: Sequence[int]) -> dict[int, Memory]:
    """The memories at ``memory_rowids``, by rowid.

    Read apart from the candidates' vectors: only the best are turned into
    memories, and reading every candidate's columns cost more than a second
    statement.
    """
    rows = conn.execute(
        f"SELECT m.rowid, {MEMORY_SELECT} FROM json_each(?) AS j "
        "CROSS JOIN memories m ON m.rowid = j.value",
        (json.dumps(list(memory_rowids)),),
    ).fetchall()
    return {row[0]: memory_from_row(row[1:]) for row in rows}


def _best_first(pair: tuple[float, int]) -> tuple[float, int]:
    """Sort key: highest similarity first, then the older memory (lower rowid)."""
    return -pair[0], pair[1]


# ---------------------------------------------------------------- the index


@dataclass
class _Index:
    index: Index
    watermark: int  # the highest vector id the index holds
    saved: int  # the watermark of the file it was last saved to (or loaded from)


@dataclass
class VectorSearch:
    """One ``SearchVectors`` under way: what it asks, and its first look-up once started."""

    op: ops.SearchVectors
    query: np.ndarray  # the unit query
    entry: _Index
    wanted: int  # candidates to take from the index
    keys: Future[list[int]] | None = None  # the first look-up, when it runs on the worker

    def look_up(self) -> list[int]:
        """The ``wanted`` nearest keys in the index, best first."""
        index, size = self.entry.index, len(self.entry.index)
        count = min(self.wanted, size)
        index.expansion_search = max(MIN_EXPANSION_SEARCH, count)  # type: ignore[misc]
        found = index.search(self.query, count, exact=count >= size or size <= EXACT_BELOW)
        return [int(k) for k in np.asarray(found.keys).reshape(-1)]


class VectorIndexes:
    """The HNSW indexes of one SQLite store, kept in memory and saved on ``close``."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._indexes: dict[tuple[str, str, int], _Index] = {}
        self._worker: ThreadPoolExecutor | None = None  # started by the first look-up aside

    # ------------------------------------------------------------ search

    def search(
        self, conn: sqlite3.Connection, op: ops.SearchVectors, *, sync: bool
    ) -> list[ops.Nearest]:
        """Exact cosine of the best candidates the index offers, widening until enough pass.

        ``sync``: catch the index up with the table first (not with vectors this
        transaction wrote, which a rollback may take back).
        """
        search = self.start(conn, op, sync=sync, aside=False)
        return [] if search is None else self.finish(conn, search)

    def start(
        self, conn: sqlite3.Connection, op: ops.SearchVectors, *, sync: bool, aside: bool
    ) -> VectorSearch | None:
        """Begin ``op``: its first look-up in the index, on a worker thread when ``aside``.

        ``None`` when nothing can be found (a zero query, an empty index).
        ``finish`` reads the candidates' rows, on the caller's connection: the
        index releases the GIL while it searches, so a caller that runs other
        statements meanwhile gets that time back.
        """
        query = unit_query(op.query)
        if query is None:
            return None
        dims = int(query.shape[0])
        entry = self._entry(conn, op.mind_id, op.model, dims, sync=sync)
        if len(entry.index) == 0:
            return None
        search = VectorSearch(op, query, entry, max(op.limit * CANDIDATE_FACTOR, MIN_CANDIDATES))
        if aside:
            if self._worker is None:
                self._worker = ThreadPoolExecutor(1, thread_name_prefix="noema-vectors")
            search.keys = self._worker.submit(search.look_up)
        return search

    @staticmethod
    def finish(conn: sqlite3.Connection, search: VectorSearch) -> list[ops.Nearest]:
        """The nearest memories ``search`` finds: exact cosines, widening as needed."""
        op, query, size = search.op, search.query, len(search.entry.index)
        dims = int(query.shape[0])
        first = search.keys
        while True:
            # Widen until every vector was a candidate: a filter (a world, a kind) may
            # pass none of the nearest, however small the index.
            exhaustive = min(search.wanted, size) >= size
            keys = first.result() if first is not None else search.look_up()
            first = None
            # Candidates come best first: read them in slices until enough pass the filters.
            rows: list[tuple[int, bytes]] = []
            step = max(int(op.limit * RESCORE_FACTOR), RESCORE_MIN)
            for start in range(0, len(keys), step):
                rows += _passing(conn, op, dims, keys[start : start + step])
                if len(rows) >= op.limit:
                    break
            if len(rows) >= op.limit or exhaustive:
                break
            search.wanted *= CANDIDATE_FACTOR
        if not rows:
            return []
        vectors = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32)
        vectors = vectors.reshape(len(rows), dims)
        similarities = (vectors @ query).tolist()
        ranked = zip(similarities, (row[0] for row in rows), strict=True)
        best = sorted(ranked, key=_best_first)[: op.limit]
        memories = _memories(conn, [rowid for _, rowid in best])
        held = {row[0]: position for position, row in enumerate(rows)}
        return [
            ops.Nearest(memories[rowid], similarity, vectors[held[rowid]])
            for similarity, rowid in best
        ]

    def close(self) -> None:
        """Stop the worker thread, once its last look-up is over."""
        if self._worker is not None:
            self._worker.shutdown()
            self._worker = None

    # ------------------------------------------------------------ upkeep

    def _entry(
        self, conn: sqlite3.Connection, mind_id: str, model: str, dims: int, *, sync: bool
    ) -> _Index:
        key = (mind_id, model, dims)
        entry = self._indexes.get(key)
        if entry is None:
            entry = self._load(conn, key) or _Index(self._new(dims), 0, 0)
            self._indexes[key] = entry
            sync = True
        if sync:
            self._catch_up(conn, key, entry)
        return entry

    @staticmethod
    def _new(dims: int) -> Index:
        return Index(ndim=dims, metric="cos", dtype="i8", expansion_add=EXPANSION_ADD)

    @staticmethod
    def _catch_up(conn: sqlite3.Connection, key: tuple[str, str, int], entry: _Index) -> None:
        mind_id, model, dims = key
        while True:
            rows = conn.execute(
                "SELECT v.id, m.rowid, v.vector FROM vectors v "
                "JOIN memories m ON m.mind_id = v.mind_id AND m.id = v.memory_id "
                "WHERE v.mind_id = ? AND v.model = ? AND v.dims = ? AND v.id > ? "
                "ORDER BY v.id LIMIT ?",
                (mind_id, model, dims, entry.watermark, SYNC_CHUNK),
            ).fetchall()
            if not rows:
                return
            # A memory re-embedded since the last catch-up: its newest row wins.
            latest = {memory_rowid: blob for _, memory_rowid, blob in rows}
            keys = np.fromiter(latest, dtype=np.uint64, count=len(latest))
            present = np.asarray(entry.index.contains(keys), dtype=bool).reshape(-1)
            if present.any():
                entry.index.remove(keys[present])
            vectors = np.frombuffer(b"".join(latest.values()), dtype=np.float32)
            # One thread: the graph then depends on the rows alone, so a store answers
            # the same way every time (a threaded build differs run to run, ADR 0008).
            entry.index.add(keys, vectors.reshape(len(latest), dims), threads=1)
            entry.watermark = int(rows[-1][0])

    def discard(self, conn: sqlite3.Connection, mind_id: str) -> None:
        """Forget a mind's indexes, in memory and on disk: the next search rebuilds them.

        Purging deletes vectors, which an index cannot give back byte for byte, and
        its file would keep them.
        """
        keys = {key for key in self._indexes if key[0] == mind_id}
        keys.update(
            (mind_id, str(model), int(dims))
            for model, dims in conn.execute(
                "SELECT DISTINCT model, dims FROM vectors WHERE mind_id = ?", (mind_id,)
            )
        )
        for key in keys:
            self._indexes.pop(key, None)
            for _, _, path in self._files(key):
                path.unlink(missing_ok=True)

    # ------------------------------------------------------------ persistence

    def _stem(self, key: tuple[str, str, int]) -> str:
        return hashlib.blake2b("\x1f".join(map(str, key)).encode(), digest_size=8).hexdigest()

    @staticmethod
    def _fingerprint(conn: sqlite3.Connection, vector_id: int) -> str | None:
        row = conn.execute("SELECT vector FROM vectors WHERE id = ?", (vector_id,)).fetchone()
        return None if row is None else hashlib.blake2b(row[0], digest_size=6).hexdigest()

    def _files(self, key: tuple[str, str, int]) -> list[tuple[int, str, Path]]:
        if self.directory is None or not self.directory.is_dir():
            return []
        found = []
        for path in self.directory.glob(f"{self._stem(key)}.*.usearch"):
            parts = path.name.split(".")
            if len(parts) == 4 and parts[1].isdigit():
                found.append((int(parts[1]), parts[2], path))
        return sorted(found, reverse=True)

    def _load(self, conn: sqlite3.Connection, key: tuple[str, str, int]) -> _Index | None:
        """The newest saved index whose last vector is still the table's row with that id."""
        for watermark, fingerprint, path in self._files(key):
            if self._fingerprint(conn, watermark) != fingerprint:
                continue  # written for another database, or a rolled-back write
            try:
                index = Index.restore(str(path))
            except Exception:  # a truncated or foreign file: rebuild from the table instead
                continue
            if index is None or index.ndim != key[2]:
                continue
            index.expansion_add = EXPANSION_ADD  # type: ignore[misc]
            return _Index(index, watermark, watermark)
        return None

    def save(self, conn: sqlite3.Connection) -> None:
        """Write every index that grew since it was loaded or saved; drop older files."""
        if self.directory is None:
            return
        for key, entry in self._indexes.items():
            if entry.watermark <= entry.saved:
                continue
            fingerprint = self._fingerprint(conn, entry.watermark)
            if fingerprint is None:
                continue
            with contextlib.suppress(OSError):
                self.directory.mkdir(parents=True, exist_ok=True)
                name = f"{self._stem(key)}.{entry.watermark}.{fingerprint}.usearch"
                temporary = self.directory / f".{name}.{os.getpid()}.tmp"
                entry.index.save(str(temporary))
                os.replace(temporary, self.directory / name)
                entry.saved = entry.watermark
                for watermark, _, path in self._files(key):
                    if watermark < entry.watermark:
                        path.unlink(missing_ok=True)
