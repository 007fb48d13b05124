"""The PostgreSQL backend: psycopg 3 with a connection pool, tsvector + GIN, pgvector HNSW.

One database holds any number of minds and serves any number of processes
(ADR 0009). Writers of one mind are serialised by a transaction-scoped
advisory lock taken the first time a write session touches that mind, which
gives each mind what SQLite's single writer gives the whole file: the audit
chain and the check-then-insert of the reconciler see no interleaving writer.
Read sessions are ``REPEATABLE READ READ ONLY``: one snapshot.

Full text: a stored ``tsvector`` column (configuration ``noema``: English
stemming, no stop words) under a GIN index; ``ts_rank_cd`` picks the best
matches and BM25, computed as SQLite's FTS5 computes it, orders them, with
each mind's own statistics (``text_stats`` per mind, document counts within
the mind), so one mind's writes never move another's scores. The derived
``keys`` have their own column, ``keys_tsv``, searched the same way over
their own statistics.
Vectors: pgvector's ``vector`` column with one partial HNSW index
(``vector_cosine_ops``) per (model, dimensions), built the first time a search
needs it; without the extension, float32 bytes searched exactly. Either way
candidates are scored exactly, in float32, as on SQLite. pgvector 0.5.0 is the
oldest supported; before 0.8 (no iterative scans) filtered searches widen the
HNSW scan, and search exactly when it still yields too few candidates.

Noema's own settings ride in the URL's query string and are removed before
the rest reaches libpq: ``pool_min``, ``pool_max``, ``pool_timeout``,
``vectors`` (``auto`` or ``off``), ``hnsw_m``, ``hnsw_ef_construction``,
``hnsw_ef_search``, ``index_min_rows``, ``index_build_memory_mb`` (see
``PostgresOptions``).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Literal, TypeVar, cast
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import numpy as np
import psycopg
from psycopg import sql
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo
from psycopg_pool import ConnectionPool, PoolTimeout
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from concepts import AuditEntry, Event, Memory, MindInfo, RecallFilters, Relationship
from noema.errors import ConfigError, InvalidInput, MigrationError, StorageError
from noema.storage import ops
from noema.storage._postgres_schema import MIGRATIONS
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
    unit_query,
    update_groups,
)

__all__ = ["MIGRATIONS", "PostgresOptions", "PostgresStorage"]

R = TypeVar("R")

_MEMORY_SELECT = ", ".join(f"m.{c}" for c in MEMORY_COLUMNS)
#: Advisory lock keys live in one namespace per database: ours are hashed from a
#: prefixed name, so they will not meet another application's small integers.
_MIGRATION_LOCK = "noema:migrate"


class PostgresOptions(BaseModel):
    """Pool and index settings, read from the URL's query string."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pool_min: int = Field(default=1, ge=0, le=1_000)
    pool_max: int = Field(default=10, ge=1, le=1_000)
    #: Seconds to wait for a free connection (and for the first one on open).
    pool_timeout: float = Field(default=30.0, gt=0, le=3_600)
    #: ``auto``: use pgvector when the extension is installed (or can be created);
    #: ``off``: store vectors as bytes and search them exactly. Decided once, when
    #: the schema is created.
    vectors: Literal["auto", "off"] = "auto"
    hnsw_m: int = Field(default=16, ge=2, le=100)
    hnsw_ef_construction: int = Field(default=64, ge=4, le=1_000)
    hnsw_ef_search: int = Field(default=64, ge=1, le=1_000)
    #: A (model, dimensions) with fewer vectors than this is searched exactly.
    index_min_rows: int = Field(default=5_000, ge=0)
    #: ``maintenance_work_mem`` for building an HNSW index: the build is much
    #: faster when the whole graph fits (about 1.6 GB per million 384-d vectors).
    index_build_memory_mb: int = Field(default=1_024, ge=64, le=1_048_576)


def parse_url(url: str) -> tuple[str, PostgresOptions]:
    """Split ``url`` into the libpq connection string and Noema's options."""
    if "\x00" in url:  # libpq would read the URL up to it
        raise ConfigError("database URL is not usable: it contains a NUL byte")
    try:
        parts = urlsplit(url)
        if "," not in parts.netloc:  # one host (libpq takes a list, which urllib cannot read)
            _ = parts.port  # a port out of range or not a number raises here
    except ValueError as exc:  # an unclosed IPv6 bracket, for one
        raise ConfigError(f"database URL is not usable: {exc}") from None
    ours: dict[str, str] = {}
    theirs: list[tuple[str, str]] = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name in PostgresOptions.model_fields:
            ours[name] = value
        else:
            theirs.append((name, value))
    try:
        options = PostgresOptions.model_validate(ours)
    except ValidationError as exc:
        problem = exc.errors()[0]
        field = ".".join(str(p) for p in problem["loc"])
        raise ConfigError(f"database URL option {field}: {problem['msg']}") from None
    if options.pool_min > options.pool_max:
        raise ConfigError("database URL options: pool_min is larger than pool_max")
    conninfo = urlunsplit(
        parts._replace(scheme="postgresql", query=urlencode(theirs, quote_via=quote))
    )
    return conninfo, options


def _lock_key(name: str) -> int:
    """A signed 64-bit advisory lock key for ``name``."""
    return int.from_bytes(
        hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True
    )


def _redact(conninfo: str) -> str:
    parts = urlsplit(conninfo)
    if parts.password is None:
        return conninfo
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


# ---------------------------------------------------------------- SQL helpers


def _filter_sql(filters: RecallFilters | None, as_of: datetime | None, params: list[Any]) -> str:
    """WHERE fragments (each starting with AND) for memories aliased ``m``."""
    parts: list[str] = []
    if filters is not None:
        for column, values in (
            ("status", filters.statuses),
            ("kind", filters.kinds),
            ("epistemic", filters.epistemics),
            ("channel", filters.channels),
        ):
            if values:
                parts.append(f"AND m.{column} = ANY(%s)")
                params.append([v.value for v in values])
        for tag in filters.tags:
            parts.append("AND m.tags::jsonb ? %s")
            params.append(tag)
        if filters.key is not None:
            parts.append("AND m.key = %s")
            params.append(filters.key)
        if filters.since is not None:
            parts.append("AND m.recorded_at >= %s")
            params.append(to_micros(filters.since))
        if filters.until is not None:
            parts.append("AND m.recorded_at <= %s")
            params.append(to_micros(filters.until))
        if filters.min_confidence > 0:
            parts.append("AND m.confidence >= %s")
            params.append(filters.min_confidence)
        if filters.min_feedback is not None:
            parts.append("AND m.feedback_mean >= %s")
            params.append(filters.min_feedback)
    if as_of is not None:
        t = to_micros(as_of)
        parts.append("AND m.valid_from <= %s AND (m.valid_to IS NULL OR m.valid_to > %s)")
        params.extend((t, t))
    return " ".join(parts)


def _tsquery(terms: Sequence[str], strict: bool, params: list[Any]) -> str:
    """A tsquery matching any (or, when ``strict``, every) of ``terms``."""
    params.extend(terms)
    joiner = " && " if strict else " || "
    return "(" + joiner.join("plainto_tsquery('noema', noema_words(%s))" for _ in terms) + ")"


#: A word in at least this many memories is "common" (SQLite also counts 2% of
#: the table; here the cut stays at 2,000, so no query ranks more matches than that).
COMMON_DOCS = 2_000
#: How long the table's word statistics are trusted before they are read again.
STATS_SECONDS = 60.0


#: The full-text index of each ``SearchText.field``: the ``tsvector`` column of
#: memories and its total of tokens in ``text_stats`` (documents are shared).
_TEXT_INDEXES = {"content": ("tsv", "tokens"), "keys": ("keys_tsv", "keys_tokens")}


class _WordStats:
    """Frequent lexemes of a ``tsvector`` column from the planner's statistics (``ANALYZE``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._read: dict[str, tuple[float, frozenset[str]]] = {}  # column -> (when, lexemes)

    def common(self, cur: psycopg.Cursor[Any], column: str) -> frozenset[str]:
        with self._lock:
            read_at, cached = self._read.get(column, (float("-inf"), frozenset()))
            if time.monotonic() - read_at < STATS_SECONDS:
                return cached
            row = cur.execute(
                "SELECT s.most_common_elems::text::text[], s.most_common_elem_freqs, c.reltuples "
                "FROM pg_stats s JOIN pg_class c ON c.relname = s.tablename "
                "AND c.relnamespace = to_regnamespace(s.schemaname) "
                "WHERE s.schemaname = current_schema() AND s.tablename = 'memories' "
                "AND s.attname = %s",
                (column,),
            ).fetchone()
            common: frozenset[str] = frozenset()
            if row is not None and row[0] is not None:
                elems, freqs, total = row
                common = frozenset(
                    e for e, f in zip(elems, freqs, strict=False) if f * total >= COMMON_DOCS
                )
            self._read[column] = (time.monotonic(), common)
            return common


# ---------------------------------------------------------------- the session


class _Session:
    """Runs operations on one pooled connection inside one transaction."""

    def __init__(self, store: PostgresStorage, conn: psycopg.Connection[Any], write: bool) -> None:
        self._store = store
        self._conn = conn
        self._cur = conn.cursor()
        self._write = write
        self._locked: set[str] = set()
        # Rows this transaction added to memories and vectors: the statistics follow them.
        self.inserted = 0

    def run(self, op: ops.Op[R]) -> R:
        handler = _HANDLERS.get(type(op))
        if handler is None:
            raise TypeError(f"PostgreSQL backend has no handler for {type(op).__name__}")
        if not self._write and type(op) in ops.WRITE_OPS:
            raise TypeError(f"{type(op).__name__} needs a write transaction")
        try:
            if self._write:
                self._lock_mind(op)
            return cast(R, handler(self, op))
        except psycopg.DataError as exc:
            if "NUL" in str(exc):
                raise InvalidInput("text holds a NUL byte") from None
            raise StorageError(f"PostgreSQL failed on {type(op).__name__}: {exc}") from exc
        except psycopg.Error as exc:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StorageError(f"PostgreSQL failed on {type(op).__name__}: {message}") from exc
        except UnicodeEncodeError:
            raise InvalidInput("text is not valid Unicode (it holds a lone surrogate)") from None

    def _lock_mind(self, op: ops.Op[Any]) -> None:
        """Serialise this transaction with every other writer of the op's mind."""
        minds: set[str] = set()
        mind_id = getattr(op, "mind_id", None)
        if isinstance(mind_id, str):
            minds.add(mind_id)
        for collection in ("memories", "relationships", "events"):
            minds.update(item.mind_id for item in getattr(op, collection, ()))
        for mind in sorted(minds - self._locked):
            self._cur.execute(
                "SELECT pg_advisory_xact_lock(%s)", (_lock_key(f"noema:mind:{mind}"),)
            )
            self._locked.add(mind)

    # Small helpers over the cursor.

    def all(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._cur.execute(query, params).fetchall()

    def one(self, query: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        return self._cur.execute(query, params).fetchone()

    def execute(self, query: str | sql.Composed, params: Sequence[Any] = ()) -> int:
        return self._cur.execute(query, params).rowcount


# ---------------------------------------------------------------- handlers: minds and memories


def _ensure_mind(s: _Session, op: ops.EnsureMind) -> MindInfo:
    s.execute(
        "INSERT INTO minds (id, name, created_at) VALUES (%s, %s, %s) "
        "ON CONFLICT (name) DO NOTHING",
        (op.new_id, op.name, to_micros(op.now)),
    )
    row = s.one("SELECT id, name, created_at FROM minds WHERE name = %s", (op.name,))
    assert row is not None
    return MindInfo(id=row[0], name=row[1], created_at=from_micros(row[2]))


def _list_minds(s: _Session, op: ops.ListMinds) -> list[MindInfo]:
    rows = s.all("SELECT id, name, created_at FROM minds ORDER BY name")
    return [MindInfo(id=r[0], name=r[1], created_at=from_micros(r[2])) for r in rows]


def _insert_memories(s: _Session, op: ops.InsertMemories) -> None:
    if not op.memories:
        return
    s.inserted += len(op.memories)
    with s._cur.copy(f"COPY memories ({', '.join(MEMORY_COLUMNS)}) FROM STDIN") as copy:
        for memory in op.memories:
            copy.write_row(memory_row(memory))
    stats: dict[str, list[int]] = {}
    for memory in op.memories:
        counts = stats.setdefault(memory.mind_id, [0, 0, 0])
        counts[0] += 1
        counts[1] += token_count(memory.content)
        counts[2] += token_count(memory.keys)
    s._cur.executemany(
        "INSERT INTO text_stats (mind_id, documents, tokens, keys_tokens) "
        "VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (mind_id) DO UPDATE SET documents = text_stats.documents "
        "+ excluded.documents, tokens = text_stats.tokens + excluded.tokens, "
        "keys_tokens = text_stats.keys_tokens + excluded.keys_tokens",
        [(mind_id, *counts) for mind_id, counts in stats.items()],
    )


#: A token as SQLite's unicode61 tokenizer (and PostgreSQL's parser after
#: ``noema_words``) sees one: a run of letters and digits.
_TOKEN = re.compile(r"[^\W_]+")


def token_count(text: str) -> int:
    """How many tokens BM25 counts in ``text`` (for the corpus's average length)."""
    return len(_TOKEN.findall(text))


def _update_memories(s: _Session, op: ops.UpdateMemories) -> None:
    groups = update_groups(op.mind_id, op.updates, ops.MUTABLE_FIELDS)
    rekeyed = [(i, changes["keys"]) for i, changes in op.updates if "keys" in changes]
    if rekeyed:
        # The generated ``keys_tsv`` follows by itself; BM25's token total follows here
        # (the mind's lock is held, so the old keys read now are the ones replaced).
        current: dict[str, str] = {
            r[0]: r[1]
            for r in s.all(
                "SELECT id, keys FROM memories WHERE mind_id = %s AND id = ANY(%s)",
                (op.mind_id, list(dict.fromkeys(i for i, _ in rekeyed))),
            )
        }
        delta = 0
        for memory_id, keys in rekeyed:
            if memory_id in current:
                delta += token_count(keys) - token_count(current[memory_id])
                current[memory_id] = keys
        if delta:
            s.execute(
                "UPDATE text_stats SET keys_tokens = greatest(keys_tokens + %s, 0) "
                "WHERE mind_id = %s",
                (delta, op.mind_id),
            )
    for columns, rows in groups.items():
        assignments = ", ".join(f"{c} = %s" for c in columns)
        s._cur.executemany(
            f"UPDATE memories SET {assignments} WHERE mind_id = %s AND id = %s", rows
        )


def _memories_where(
    s: _Session, mind_id: str, column: str, values: Sequence[str], extra: str = ""
) -> list[Memory]:
    # A join with the unnested list probes the index once per value; ``= ANY(array)``
    # would compare every row of the mind with every value.
    unique = list(dict.fromkeys(values))
    if not unique:
        return []
    rows = s.all(
        f"SELECT {_MEMORY_SELECT} FROM unnest(%s::text[]) AS wanted(value) "
        f"JOIN memories m ON m.mind_id = %s AND m.{column} = wanted.value{extra}",
        (unique, mind_id),
    )
    return [memory_from_row(r) for r in rows]


def _get_memories(s: _Session, op: ops.GetMemories) -> list[Memory]:
    return _memories_where(s, op.mind_id, "id", op.ids)


def _find_by_hash(s: _Session, op: ops.FindActiveByHash) -> list[Memory]:
    return _memories_where(s, op.mind_id, "content_hash", op.hashes, " AND m.status = 'active'")


def _find_by_key(s: _Session, op: ops.FindActiveByKey) -> list[Memory]:
    return _memories_where(s, op.mind_id, "key", op.keys, " AND m.status = 'active'")


#: Matches ranked by ``ts_rank_cd`` before the best are scored exactly by BM25.
RERANK_MIN = 200


def _term_counts(
    s: _Session, mind_id: str, terms: Sequence[str], column: str, tokens_column: str
) -> tuple[int, int, list[tuple[str, list[str], int]]]:
    """The mind's documents and tokens, and per term ``(term, lexemes, documents)``.

    Every count is the mind's own, so another mind's writes never move its
    scores. ``column`` is the ``tsvector`` searched, ``tokens_column`` its token
    total in ``text_stats``. Document counts stop at ``COMMON_DOCS``. The
    planner's statistics cover the whole table: a term whose every lexeme they
    call common is taken as common without counting only while the mind holds
    every document. One statement for all of it.
    """
    common = sorted(s._store._words.common(s._cur, column))
    rows = s.all(
        "WITH stats AS (SELECT coalesce(sum(documents) FILTER (WHERE mind_id = %s), 0) "
        f"AS documents, coalesce(sum({tokens_column}) FILTER (WHERE mind_id = %s), 0) "
        "AS tokens, coalesce(sum(documents), 0) AS everyone FROM text_stats), "
        "words AS (SELECT i, t, coalesce((SELECT array_agg(lexeme) "
        "FROM unnest(to_tsvector('noema', noema_words(t)))), '{}') AS lexemes "
        "FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, i)) "
        "SELECT stats.documents, stats.tokens, w.t, w.lexemes, "
        "CASE WHEN w.lexemes <> '{}' AND w.lexemes <@ %s::text[] "
        "AND stats.everyone = stats.documents THEN %s ELSE "
        "(SELECT count(*) FROM (SELECT 1 FROM memories WHERE mind_id = %s "
        f"AND {column} @@ plainto_tsquery('noema', noema_words(w.t)) LIMIT %s) x) END "
        "FROM stats LEFT JOIN words w ON true ORDER BY w.i",
        (mind_id, mind_id, list(terms), common, COMMON_DOCS, mind_id, COMMON_DOCS),
    )
    total, tokens = int(rows[0][0]), int(rows[0][1])
    return total, tokens, [(t, list(lexemes), int(n)) for _, _, t, lexemes, n in rows]


def _search_text(s: _Session, op: ops.SearchText) -> list[tuple[Memory, float]]:
    """BM25 as SQLite computes it, over the matches ``ts_rank_cd`` ranks best.

    Any-term queries drop common words when rarer ones remain; when every word is
    common, all are required and the newest matches come unranked (SQLite's plan).
    """
    if not op.terms:
        return []
    column, tokens_column = _TEXT_INDEXES[op.field]
    total, tokens, counted = _term_counts(s, op.mind_id, op.terms, column, tokens_column)
    if total == 0:
        return []
    strict, ranked = op.strict, True
    if total > COMMON_DOCS:
        common = {term for term, _, n in counted if n >= COMMON_DOCS}
        rare = [c for c in counted if c[0] not in common]
        if common and rare and not strict:
            counted = rare
        elif common:
            strict, ranked = True, bool(rare)
    term_params: list[Any] = []
    query = _tsquery([term for term, _, _ in counted], strict, term_params)
    params: list[Any] = [*term_params, op.mind_id]
    where = _filter_sql(op.filters, op.as_of, params)
    if not ranked:
        rows = s.all(
            f"SELECT {_MEMORY_SELECT}, 1.0::float8 FROM memories m "
            f"WHERE m.{column} @@ {query} AND m.mind_id = %s {where} "
            "ORDER BY m.seq DESC LIMIT %s",
            [*params, op.limit],
        )
        return [(memory_from_row(r[:-1]), float(r[-1])) for r in rows]
    idfs = [math.log((total - n + 0.5) / (n + 0.5)) for _, _, n in counted]
    idfs = [idf if idf > 0 else 1e-6 for idf in idfs]  # FTS5's floor
    hits = s.all(
        f"SELECT m.seq, m.{column}::text FROM memories m "
        f"WHERE m.{column} @@ {query} AND m.mind_id = %s {where} "
        f"ORDER BY ts_rank_cd(m.{column}, {query}, 1) DESC, m.seq DESC LIMIT %s",
        [*params, *term_params, max(op.limit * 4, RERANK_MIN)],
    )
    average = tokens / total
    scored = [
        (bm25(tsv, [words for _, words, _ in counted], idfs, average), int(seq))
        for seq, tsv in hits
    ]
    scored.sort(key=lambda pair: (-pair[0], -pair[1]))
    best = scored[: op.limit]
    found = {
        int(r[0]): memory_from_row(r[1:])
        for r in s.all(
            f"SELECT m.seq, {_MEMORY_SELECT} FROM memories m WHERE m.seq = ANY(%s)",
            ([seq for _, seq in best],),
        )
    }
    return [(found[seq], score) for score, seq in best]


_POSITIONS = re.compile(r"'([^']*)'(?::([0-9A-D,]+))?")


def bm25(
    tsv: str, phrases: Sequence[Sequence[str]], idfs: Sequence[float], average: float
) -> float:
    """Okapi BM25 of a document (its ``tsvector`` as text) as SQLite's FTS5 computes it.

    k1 = 1.2, b = 0.75; a phrase's frequency is that of its rarest lexeme in the
    document; the document's length is its number of positions (tokens), and
    phrases are summed in query order, as FTS5 sums them. Lexemes hold no quote:
    ``noema_words`` removed ASCII punctuation before the text was parsed.
    """
    counts: dict[str, int] = {}
    length = 0
    for lexeme, positions in _POSITIONS.findall(tsv):
        n = positions.count(",") + 1 if positions else 1
        counts[lexeme] = n
        length += n
    score = 0.0
    for words, idf in zip(phrases, idfs, strict=True):
        tf = min((counts.get(word, 0) for word in words), default=0)
        if tf:
            score += idf * (tf * 2.2) / (tf + 1.2 * (0.25 + 0.75 * length / average))
    return score


def _scan_memories(s: _Session, op: ops.ScanMemories) -> list[Memory]:
    params: list[Any] = [op.mind_id]
    query = f"SELECT {_MEMORY_SELECT} FROM memories m WHERE m.mind_id = %s"
    if op.after_id is not None:
        query += " AND m.id > %s"
        params.append(op.after_id)
    query += " " + _filter_sql(op.filters, op.as_of, params)
    query += " ORDER BY m.id" if op.order == "id" else " ORDER BY m.recorded_at DESC, m.id DESC"
    query += " LIMIT %s"
    params.append(op.limit)
    return [memory_from_row(r) for r in s.all(query, params)]


def _scan_activation(
    s: _Session, op: ops.ScanActivation
) -> list[tuple[str, float, datetime, float]]:
    rows = s.all(
        "SELECT id, activation, activation_at, importance FROM memories "
        "WHERE mind_id = %s AND id > %s ORDER BY id LIMIT %s",
        (op.mind_id, op.after_id or "", op.limit),
    )
    return [(r[0], r[1], from_micros(r[2]), r[3]) for r in rows]


def _count_memories(s: _Session, op: ops.CountMemories) -> list[tuple[str, str, int]]:
    rows = s.all(
        "SELECT kind, status, count(*) FROM memories WHERE mind_id = %s "
        'GROUP BY kind, status ORDER BY kind COLLATE "C", status COLLATE "C"',
        (op.mind_id,),
    )
    return [(r[0], r[1], int(r[2])) for r in rows]


# ---------------------------------------------------------------- handlers: vectors and entities


def _put_vectors(s: _Session, op: ops.PutVectors) -> None:
    vectors = np.ascontiguousarray(op.vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(op.ids):
        raise ValueError(f"PutVectors: {len(op.ids)} ids but vectors of shape {vectors.shape}")
    if not len(op.ids):
        return
    # Vectors written after their memories (background embedding, embed-missing) grow
    # the table too: with statistics of an empty one, the planner rescans it for every
    # memory when it looks for those still missing a vector.
    s.inserted += len(op.ids)
    dims = int(vectors.shape[1])
    kind = "vector" if s._store.pgvector else "bytea"
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
    with s._cur.copy(f"COPY {target} FROM STDIN (FORMAT BINARY)") as copy:
        if replacing:
            copy.set_types(["text", kind])
        else:
            copy.set_types(["text", "text", "text", "int4", kind])
        for memory_id, row in zip(op.ids, vectors, strict=True):
            value = row if s._store.pgvector else row.tobytes()
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


class _VectorLoader(Loader):
    """pgvector's binary ``vector`` (dims, unused, big-endian floats) as a float32 array."""

    format = Format.BINARY

    def load(self, data: Buffer) -> np.ndarray:
        return np.frombuffer(data, dtype=">f4", offset=4).astype(np.float32)


def _as_array(value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    return np.frombuffer(value, dtype=np.float32)  # bytea: float32 in this machine's order


def _get_vectors(s: _Session, op: ops.GetVectors) -> dict[str, np.ndarray]:
    unique = list(dict.fromkeys(op.ids))
    if not unique:
        return {}
    rows = s._cur.execute(
        "SELECT v.memory_id, v.vector FROM unnest(%s::text[]) AS wanted(id) "
        "JOIN vectors v ON v.mind_id = %s AND v.model = %s AND v.dims = %s "
        "AND v.memory_id = wanted.id",
        (unique, op.mind_id, op.model, op.dims),
        binary=True,
    ).fetchall()
    return {r[0]: _as_array(r[1]) for r in rows}


def _missing_vectors(s: _Session, op: ops.MissingVectors) -> list[tuple[str, str, datetime]]:
    rows = s.all(
        "SELECT m.id, m.content, m.valid_from FROM memories m WHERE m.mind_id = %s AND m.id > %s "
        "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.mind_id = m.mind_id "
        "AND v.model = %s AND v.dims = %s AND v.memory_id = m.id) ORDER BY m.id LIMIT %s",
        (op.mind_id, op.after_id or "", op.model, op.dims, op.limit),
    )
    return [(r[0], r[1], from_micros(r[2])) for r in rows]


def _count_vectors(s: _Session, op: ops.CountVectors) -> tuple[int, int]:
    row = s.one(
        "SELECT (SELECT count(*) FROM vectors WHERE mind_id = %s AND model = %s AND dims = %s), "
        "(SELECT count(*) FROM memories WHERE mind_id = %s)",
        (op.mind_id, op.model, op.dims, op.mind_id),
    )
    assert row is not None
    return int(row[0]), int(row[1])


#: Statistics are refreshed after this many new memories, or once the table doubled
#: (an ANALYZE samples 30,000 rows: 0.1 to 1 s).
ANALYZE_MIN_ROWS = 1_000
ANALYZE_GROWTH = 1.0

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


def _search_vectors(s: _Session, op: ops.SearchVectors) -> list[tuple[Memory, float]]:
    query = unit_query(op.query)
    if query is None:
        return []
    dims = int(query.shape[0])
    params: list[Any] = [op.mind_id]
    where = _filter_sql(op.filters, op.as_of, params)
    key = sql.SQL("v.model = {} AND v.dims = {}").format(sql.Literal(op.model), sql.Literal(dims))
    base = sql.SQL(
        "SELECT m.seq, v.vector FROM vectors v "
        "JOIN memories m ON m.mind_id = v.mind_id AND m.id = v.memory_id "
        "WHERE {key} AND v.mind_id = %s " + where
    ).format(key=key)
    if s._store.pgvector:
        # Nearest first, by pgvector's distance: through the HNSW index once one is
        # built (its order is nearly right; iterative scans go on past rows the
        # filters reject), else exactly. The candidates are scored exactly below.
        wanted = max(op.limit * CANDIDATE_FACTOR, MIN_CANDIDATES)
        distance = sql.SQL("v.vector::vector({dims}) <=> %s::vector({dims})").format(
            dims=sql.Literal(dims)
        )
        indexed = s._store.ensure_index(op.model, dims, s)
        if indexed and (s._store.pgvector_version or ()) < PGVECTOR_ITERATIVE_SCAN:
            rows = _nearest_without_iterative_scan(
                s, base, key, distance, where, params, query, wanted
            )
        else:
            if indexed:
                ef_search = min(HNSW_MAX_EF_SEARCH, max(s._store.options.hnsw_ef_search, wanted))
                s.execute(
                    f"SET LOCAL hnsw.ef_search = {int(ef_search)}; "
                    "SET LOCAL hnsw.iterative_scan = relaxed_order"
                )
            statement = sql.SQL("{base} ORDER BY {distance} LIMIT %s").format(
                base=base, distance=distance
            )
            rows = s._cur.execute(statement, [*params, query, wanted], binary=True).fetchall()
    else:  # float32 bytes: every vector passing the filters is scored
        rows = s._cur.execute(base, params, binary=True).fetchall()
    if not rows:
        return []
    seqs = [int(r[0]) for r in rows]
    matrix = np.vstack([_as_array(r[1]) for r in rows])
    similarities = matrix @ query
    order = sorted(range(len(seqs)), key=lambda i: (-float(similarities[i]), seqs[i]))
    best = [(seqs[i], float(similarities[i])) for i in order[: op.limit]]
    found = {
        int(r[0]): memory_from_row(r[1:])
        for r in s.all(
            f"SELECT m.seq, {_MEMORY_SELECT} FROM memories m WHERE m.seq = ANY(%s)",
            ([seq for seq, _ in best],),
        )
    }
    return [(found[seq], similarity) for seq, similarity in best]


def _nearest_without_iterative_scan(
    s: _Session,
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
    pool = min(HNSW_MAX_EF_SEARCH, max(s._store.options.hnsw_ef_search, wanted * POOL_FACTOR))
    s.execute(f"SET LOCAL hnsw.ef_search = {int(pool)}")
    widened = sql.SQL(
        "SELECT m.seq, v.vector FROM (SELECT v.mind_id, v.memory_id, v.vector, "
        "{distance} AS distance FROM vectors v WHERE {key} AND v.mind_id = %s "
        "ORDER BY distance LIMIT {pool}) v "
        "JOIN memories m ON m.mind_id = v.mind_id AND m.id = v.memory_id "
        "WHERE true " + where + " ORDER BY v.distance LIMIT %s"
    ).format(distance=distance, key=key, pool=sql.Literal(pool))
    rows = s._cur.execute(widened, [query, *params, wanted], binary=True).fetchall()
    if len(rows) < wanted:
        # ``+ 0``: an order no index serves, so every row passing the filters is measured.
        exact = sql.SQL("{base} ORDER BY ({distance}) + 0 LIMIT %s").format(
            base=base, distance=distance
        )
        rows = s._cur.execute(exact, [*params, query, wanted], binary=True).fetchall()
    return rows


def _put_entities(s: _Session, op: ops.PutEntities) -> None:
    if not op.refs:
        return
    s.execute(
        "INSERT INTO entity_refs (mind_id, entity, memory_id) "
        "SELECT %s, e, mid FROM unnest(%s::text[], %s::text[]) AS t(mid, e) "
        "ON CONFLICT DO NOTHING",
        (op.mind_id, [m for m, _ in op.refs], [e for _, e in op.refs]),
    )


def _search_entities(s: _Session, op: ops.SearchEntities) -> list[tuple[Memory, int]]:
    unique = list(dict.fromkeys(op.entities))
    if not unique:
        return []
    kept = s.all(
        "SELECT e FROM unnest(%s::text[]) AS e WHERE (SELECT count(*) FROM (SELECT 1 "
        "FROM entity_refs r WHERE r.mind_id = %s AND r.entity = e LIMIT %s) x) < %s",
        (unique, op.mind_id, op.max_refs, op.max_refs),
    )
    entities = [r[0] for r in kept]
    if not entities:
        return []
    params: list[Any] = [op.mind_id, entities, op.mind_id]
    where = _filter_sql(op.filters, op.as_of, params)
    params.append(op.limit)
    rows = s.all(
        "WITH hits AS (SELECT memory_id, count(*) AS n FROM entity_refs "
        "WHERE mind_id = %s AND entity = ANY(%s) GROUP BY memory_id) "
        f"SELECT {_MEMORY_SELECT}, hits.n FROM hits "
        "JOIN memories m ON m.mind_id = %s AND m.id = hits.memory_id "
        f"WHERE true {where} ORDER BY hits.n DESC, m.recorded_at DESC, m.id DESC LIMIT %s",
        params,
    )
    return [(memory_from_row(r[:-1]), int(r[-1])) for r in rows]


# ---------------------------------------------------------------- handlers: relationships, events


def _insert_relationships(s: _Session, op: ops.InsertRelationships) -> None:
    if not op.relationships:
        return
    s._cur.executemany(
        f"INSERT INTO relationships ({', '.join(REL_COLUMNS)}) "
        f"VALUES ({', '.join('%s' for _ in REL_COLUMNS)})",
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


def _set_relationship_status(s: _Session, op: ops.SetRelationshipStatus) -> None:
    s.execute(
        "UPDATE relationships SET status = %s, decided_at = %s WHERE mind_id = %s AND id = %s",
        (op.status.value, to_micros(op.decided_at), op.mind_id, op.id),
    )


def _find_relationships(s: _Session, op: ops.FindRelationships) -> list[Relationship]:
    params: list[Any] = [op.mind_id]
    query = f"SELECT {', '.join(REL_COLUMNS)} FROM relationships WHERE mind_id = %s"
    if op.ids is not None:
        query += " AND id = ANY(%s)"
        params.append(list(op.ids))
    if op.memory_ids is not None:
        query += " AND (src = ANY(%s) OR dst = ANY(%s))"
        params.extend((list(op.memory_ids), list(op.memory_ids)))
    if op.relations:
        query += " AND relation = ANY(%s)"
        params.append([r.value for r in op.relations])
    if op.statuses:
        query += " AND status = ANY(%s)"
        params.append([st.value for st in op.statuses])
    if op.after_id is not None:
        query += " AND id > %s"
        params.append(op.after_id)
    query += " ORDER BY id"
    if op.limit is not None:
        query += " LIMIT %s"
        params.append(op.limit)
    return [relationship_from_row(r) for r in s.all(query, params)]


def _append_events(s: _Session, op: ops.AppendEvents) -> None:
    if not op.events:
        return
    with s._cur.copy(
        "COPY events (id, mind_id, kind, at, memory_id, origin_event, payload) FROM STDIN"
    ) as copy:
        for e in op.events:
            copy.write_row(
                (
                    e.id,
                    e.mind_id,
                    e.kind,
                    to_micros(e.at),
                    e.memory_id,
                    e.origin_event,
                    to_json(e.payload),
                )
            )


def _list_events(s: _Session, op: ops.ListEvents) -> list[Event]:
    params: list[Any] = [op.mind_id]
    query = f"SELECT {', '.join(EVENT_COLUMNS)} FROM events WHERE mind_id = %s"
    if op.memory_id is not None:
        query += " AND memory_id = %s"
        params.append(op.memory_id)
    if op.kinds:
        query += " AND kind = ANY(%s)"
        params.append(list(op.kinds))
    if op.ids is not None:
        query += " AND id = ANY(%s)"
        params.append(list(op.ids))
    if op.after_seq is not None:
        query += " AND seq > %s"
        params.append(op.after_seq)
    query += " ORDER BY seq DESC" if op.newest_first else " ORDER BY seq"
    if op.limit is not None:
        query += " LIMIT %s"
        params.append(op.limit)
    return [event_from_row(r) for r in s.all(query, params)]


def _audit_head(s: _Session, op: ops.AuditHead) -> AuditEntry | None:
    row = s.one(
        f"SELECT {', '.join(AUDIT_COLUMNS)} FROM audit WHERE mind_id = %s "
        "ORDER BY seq DESC LIMIT 1",
        (op.mind_id,),
    )
    return None if row is None else audit_from_row(row)


def _append_audit(s: _Session, op: ops.AppendAudit) -> None:
    if not op.entries:
        return
    with s._cur.copy(
        "COPY audit (mind_id, seq, at, event_id, action, digest, prev_hash, hash) FROM STDIN"
    ) as copy:
        for a in op.entries:
            copy.write_row(
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
            )


def _list_audit(s: _Session, op: ops.ListAudit) -> list[AuditEntry]:
    rows = s.all(
        f"SELECT {', '.join(AUDIT_COLUMNS)} FROM audit WHERE mind_id = %s AND seq > %s "
        "ORDER BY seq LIMIT %s",
        (op.mind_id, op.after_seq, op.limit),
    )
    return [audit_from_row(r) for r in rows]


def _is_empty(s: _Session, op: ops.IsEmpty) -> bool:
    row = s.one(
        "SELECT EXISTS (SELECT 1 FROM memories WHERE mind_id = %s) "
        "OR EXISTS (SELECT 1 FROM relationships WHERE mind_id = %s) "
        "OR EXISTS (SELECT 1 FROM events WHERE mind_id = %s) "
        "OR EXISTS (SELECT 1 FROM audit WHERE mind_id = %s)",
        (op.mind_id,) * 4,
    )
    return not (row and row[0])


# ---------------------------------------------------------------- handlers: workspace and jobs


def _save_snapshot(s: _Session, op: ops.SaveSnapshot) -> None:
    s.execute(
        "INSERT INTO workspace_snapshots (mind_id, cycle, saved_at, data) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (mind_id) DO UPDATE SET cycle = excluded.cycle, "
        "saved_at = excluded.saved_at, data = excluded.data",
        (op.mind_id, op.cycle, to_micros(op.saved_at), op.data),
    )


def _load_snapshot(s: _Session, op: ops.LoadSnapshot) -> tuple[int, str] | None:
    row = s.one("SELECT cycle, data FROM workspace_snapshots WHERE mind_id = %s", (op.mind_id,))
    return None if row is None else (int(row[0]), str(row[1]))


def _acquire_lease(s: _Session, op: ops.AcquireLease) -> bool:
    """The lease row, as on SQLite, guarded by a session advisory lock per lease name.

    The store holds the advisory lock on its own connection for as long as one of
    its runtimes holds the lease. Another store cannot get it, so two processes
    never run the job at once even if a lease row outlives its expiry. When the
    advisory lock is free, no live process holds the lease (a crashed runtime's
    connection released it with the crash), so the row is taken over at once.
    """
    leases = s._store.leases
    held = leases.holds(op.name)
    if not held and not leases.take(op.name, _lock_key(f"noema:lease:{op.name}")):
        return False  # another live store holds it
    taken = s.execute(
        "INSERT INTO job_leases (name, holder, expires_at) VALUES (%s, %s, %s) "
        "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
        "expires_at = excluded.expires_at "
        "WHERE job_leases.holder = excluded.holder OR job_leases.expires_at <= %s "
        "OR NOT %s",
        (op.name, op.holder, to_micros(op.expires_at), to_micros(op.now), held),
    )
    return taken == 1


def _release_lease(s: _Session, op: ops.ReleaseLease) -> None:
    released = s.execute(
        "DELETE FROM job_leases WHERE name = %s AND holder = %s", (op.name, op.holder)
    )
    if released:
        s._store.leases.give_back(op.name, _lock_key(f"noema:lease:{op.name}"))


class _Leases:
    """Session-level advisory locks of one store, on one connection of its own."""

    def __init__(self, conninfo: str) -> None:
        self._conninfo = conninfo
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._held: set[str] = set()

    def holds(self, name: str) -> bool:
        """Whether this store holds the lock (then the lease row decides, as on SQLite)."""
        with self._lock:
            return name in self._held

    def take(self, name: str, key: int) -> bool:
        with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = psycopg.connect(self._conninfo, autocommit=True)
                self._held.clear()
            row = self._conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            if not (row and row[0]):
                return False
            self._held.add(name)
            return True

    def give_back(self, name: str, key: int) -> None:
        with self._lock:
            if name in self._held and self._conn is not None and not self._conn.closed:
                self._conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
            self._held.discard(name)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            self._held.clear()


def _purge_memories(s: _Session, op: ops.PurgeMemories) -> int:
    ids = list(op.ids)
    if not ids:
        return 0
    s.execute(
        "DELETE FROM relationships WHERE mind_id = %s AND (src = ANY(%s) OR dst = ANY(%s))",
        (op.mind_id, ids, ids),
    )
    s.execute(
        "DELETE FROM entity_refs WHERE mind_id = %s AND memory_id = ANY(%s)", (op.mind_id, ids)
    )
    s.execute("DELETE FROM vectors WHERE mind_id = %s AND memory_id = ANY(%s)", (op.mind_id, ids))
    gone = s.all(
        "DELETE FROM memories WHERE mind_id = %s AND id = ANY(%s) RETURNING content, keys",
        (op.mind_id, ids),
    )
    if gone:
        s.execute(
            "UPDATE text_stats SET documents = greatest(documents - %s, 0), "
            "tokens = greatest(tokens - %s, 0), keys_tokens = greatest(keys_tokens - %s, 0) "
            "WHERE mind_id = %s",
            (
                len(gone),
                sum(token_count(content) for content, _ in gone),
                sum(token_count(keys) for _, keys in gone),
                op.mind_id,
            ),
        )
    return len(gone)


def _tombstone_events(s: _Session, op: ops.TombstoneEvents) -> None:
    s.execute(
        "UPDATE events SET payload = %s WHERE mind_id = %s AND id = ANY(%s)",
        (to_json(dict(op.payload)), op.mind_id, list(op.ids)),
    )


_HANDLERS: dict[type[Any], Callable[[_Session, Any], Any]] = {
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
    ops.SearchVectors: _search_vectors,
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
    ops.PurgeMemories: _purge_memories,
    ops.TombstoneEvents: _tombstone_events,
    ops.LoadSnapshot: _load_snapshot,
    ops.AcquireLease: _acquire_lease,
    ops.ReleaseLease: _release_lease,
}


# ---------------------------------------------------------------- the store


def _installed_pgvector(conn: psycopg.Connection[Any]) -> str:
    """The version of pgvector installed in the database, as ``pg_extension`` records it."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return str(row[0]) if row else ""


def _pgvector_version(text: str) -> tuple[int, ...]:
    """``0.8.0`` as ``(0, 8, 0)``; a ``StorageError`` when older than Noema supports."""
    version = tuple(int(part) for part in re.findall(r"\d+", text))
    if version < PGVECTOR_MIN_VERSION:
        needed = ".".join(map(str, PGVECTOR_MIN_VERSION))
        raise StorageError(
            f"pgvector {text or '(version unknown)'} is too old: Noema needs {needed} or newer "
            "(upgrade it, then ALTER EXTENSION vector UPDATE)"
        )
    return version


class PostgresStorage:
    """A PostgreSQL database holding any number of minds, shared by any number of processes."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.conninfo, self.options = parse_url(url)
        self._words = _WordStats()
        self.leases = _Leases(self.conninfo)
        self._indexes: dict[tuple[str, int], bool] = {}
        self._not_due: dict[tuple[str, int], float] = {}  # key -> when to count again
        self._index_lock = threading.Lock()
        self._growth_lock = threading.Lock()
        self._grown = 0
        self._analyzed_rows = 0.0
        #: pgvector's version as numbers, ``(0, 8, 0)``; None when vectors are bytes.
        self.pgvector_version: tuple[int, ...] | None = None
        try:
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                self.pgvector = self._migrate(conn)
                if self.pgvector:
                    self.pgvector_version = _pgvector_version(_installed_pgvector(conn))
        except psycopg.OperationalError as exc:
            raise StorageError(
                f"cannot connect to PostgreSQL at {_redact(self.conninfo)}: {_first_line(exc)}"
            ) from exc
        except psycopg.ProgrammingError as exc:  # a malformed connection string
            raise ConfigError(f"database URL is not usable: {_first_line(exc)}") from None
        except psycopg.Error as exc:
            raise StorageError(f"cannot open PostgreSQL database: {_first_line(exc)}") from exc
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
            from pgvector.psycopg import register_vector

            register_vector(conn)  # numpy rows in as ``vector`` ...
            info = TypeInfo.fetch(conn, "vector")
            assert info is not None
            conn.adapters.register_loader(info.oid, _VectorLoader)  # ... and out as numpy

    # ------------------------------------------------------------ schema

    def _migrate(self, conn: psycopg.Connection[Any]) -> bool:
        """Apply missing migrations under a lock; return whether vectors use pgvector."""
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(_MIGRATION_LOCK),))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)"
            )
            applied = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
            known = {version for version, _, _ in MIGRATIONS}
            if applied - known:
                raise MigrationError(
                    f"database {_redact(self.conninfo)} has schema version {max(applied)}, "
                    f"newer than this Noema knows ({max(known)}); upgrade Noema"
                )
            vector_type = None
            for version, name, script in MIGRATIONS:
                if version in applied:
                    continue
                if "{vector_type}" in script:
                    vector_type = vector_type or self._vector_type(conn)
                    script = script.replace("{vector_type}", vector_type)
                try:
                    with conn.transaction():
                        conn.execute(script)
                except psycopg.Error as exc:
                    raise MigrationError(
                        f"migration {version} ({name}) failed: {_first_line(exc)}"
                    ) from exc
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) "
                    "VALUES (%s, %s, now())",
                    (version, name),
                )
            row = conn.execute(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = to_regclass('vectors') AND attname = 'vector'"
            ).fetchone()
        return row is not None and row[0] == "vector"

    def _vector_type(self, conn: psycopg.Connection[Any]) -> str:
        """``vector`` when pgvector is (or can be) installed in this database, else ``bytea``."""
        if self.options.vectors == "off":
            return "bytea"
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
            return "vector"
        if not conn.execute(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone():
            return "bytea"
        try:
            with conn.transaction():
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error:  # not allowed to: vectors are still stored and searched exactly
            return "bytea"
        return "vector"

    def schema_version(self) -> int:
        with self._pool.connection() as conn:
            row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
            return int(row[0] or 0) if row else 0

    # ------------------------------------------------------------ vector indexes

    def ensure_index(self, model: str, dims: int, session: _Session) -> bool:
        """Whether an HNSW index serves ``(model, dims)``, building it when one is due.

        Built on its own connection (so a read session may ask for it), under a
        lock so that two processes never build the same index at once.
        """
        key = (model, dims)
        if self._indexes.get(key):
            return True
        if time.monotonic() < self._not_due.get(key, float("-inf")):
            return False
        name = "vectors_hnsw_" + hashlib.sha1(f"{model}\x00{dims}".encode()).hexdigest()[:16]
        if session.one(
            "SELECT 1 FROM pg_class WHERE relname = %s AND relkind = 'i' "
            "AND relnamespace = current_schema()::regnamespace",
            (name,),
        ):
            self._indexes[key] = True
            return True
        if dims > HNSW_MAX_DIMS:  # pgvector cannot index wider vectors: search exactly
            return False
        count = session.one(
            "SELECT count(*) FROM "
            "(SELECT 1 FROM vectors WHERE model = %s AND dims = %s LIMIT %s) x",
            (model, dims, self.options.index_min_rows),
        )
        if count is None or count[0] < self.options.index_min_rows:
            self._not_due[key] = time.monotonic() + INDEX_RECHECK_SECONDS
            return False
        if session._write:
            # The build waits for every writer of the table, this session included:
            # it would wait for itself. A read session builds it; until then, exactly.
            return False
        with self._index_lock, psycopg.connect(self.conninfo, autocommit=True) as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (_lock_key(f"noema:index:{name}"),))
            conn.execute(
                sql.SQL("SET maintenance_work_mem = {}").format(
                    sql.Literal(f"{self.options.index_build_memory_mb}MB")
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
                    m=sql.Literal(self.options.hnsw_m),
                    ef=sql.Literal(self.options.hnsw_ef_construction),
                    model=sql.Literal(model),
                )
            )
        self._indexes[key] = True
        return True

    # ------------------------------------------------------------ transactions

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[_Session]:
        try:
            with self._pool.connection() as conn:
                conn.execute(
                    "BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
                )
                session = _Session(self, conn, write)
                try:
                    yield session
                except BaseException:
                    with contextlib.suppress(psycopg.Error):
                        conn.execute("ROLLBACK")
                    raise
                try:
                    conn.execute("COMMIT")
                except psycopg.Error as exc:
                    raise StorageError(f"commit failed: {_first_line(exc)}") from exc
                if session.inserted:
                    self._grew(conn, session.inserted)
        except PoolTimeout as exc:
            raise StorageError(f"no database connection free: {exc}") from exc
        except psycopg.OperationalError as exc:
            raise StorageError(f"lost the database connection: {_first_line(exc)}") from exc

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
            conn.execute(
                "SELECT gin_clean_pending_list('memories_tsv'::regclass), "
                "gin_clean_pending_list('memories_keys_tsv'::regclass)"
            )
            row = conn.execute(
                "SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass"
            ).fetchone()
        except psycopg.Error:  # statistics are an optimisation: never fail a commit for them
            return
        self._analyzed_rows = max(0.0, float(row[0])) if row else 0.0

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
            raise StorageError(f"cannot vacuum after the purge: {_first_line(exc)}") from exc

    def close(self) -> None:
        self.leases.close()
        self._pool.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
