"""What only the PostgreSQL backend has: URL options, pgvector or not, HNSW indexes,
per-mind writer locks, statistics upkeep, and its errors.

Everything the backends share is proven by the conformance and invariant suites,
which run on PostgreSQL too; these tests look beneath the protocol on purpose.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import psycopg
import pytest
from conformance.test_storage_contract import make_memory
from pgvector.psycopg import register_vector

from concepts import RecallFilters
from noema import ConfigError, Mind, StorageError
from noema.ids import new_id
from noema.storage import open_storage, ops
from noema.storage.postgres import (
    MIGRATIONS,
    PostgresStorage,
    bm25,
    parse_url,
    token_count,
    vectors as pg_vectors,
)
from noema.storage.postgres.store import PostgresSession

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


@pytest.fixture(params=["postgres", "postgres-novector"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def sql(url: str, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(parse_url(url)[0], autocommit=True) as conn:
        return conn.execute(query, params or None).fetchall()


@pytest.fixture
def storage(store_url: str) -> Iterator[PostgresStorage]:
    store = open_storage(store_url)
    assert isinstance(store, PostgresStorage)
    yield store
    store.close()


# ---------------------------------------------------------------- URLs and errors


def test_noema_options_leave_the_url_and_the_rest_goes_to_libpq() -> None:
    conninfo, options = parse_url(
        "postgresql://u:pw@h:5433/db?pool_max=3&hnsw_ef_search=40&connect_timeout=5&vectors=off"
    )
    assert conninfo == "postgresql://u:pw@h:5433/db?connect_timeout=5"
    assert (options.pool_max, options.hnsw_ef_search, options.vectors) == (3, 40, "off")
    assert parse_url("postgres://h/db")[0] == "postgresql://h/db"


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("pool_max=0", "pool_max"),
        ("pool_max=lots", "pool_max"),
        ("vectors=maybe", "vectors"),
        ("hnsw_m=1", "hnsw_m"),
        ("pool_min=5&pool_max=2", "pool_min is larger than pool_max"),
    ],
)
def test_a_bad_option_is_a_config_error_naming_it(query: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        open_storage(f"postgresql://postgres@127.0.0.1/postgres?{query}")
    assert "\n" not in str(caught.value)


def test_an_unreachable_server_is_one_line_without_the_password() -> None:
    with pytest.raises(StorageError) as caught:
        open_storage("postgresql://noema:secret@127.0.0.1:1/noema?connect_timeout=2")
    message = str(caught.value)
    assert message.startswith("cannot connect to PostgreSQL at postgresql://noema:***@127.0.0.1:1")
    assert "secret" not in message and "\n" not in message


def test_an_unknown_libpq_parameter_is_a_config_error(store_url: str) -> None:
    with pytest.raises(ConfigError, match="database URL is not usable"):
        open_storage(store_url + "&no_such_parameter=1")


def test_the_cli_runs_on_a_postgresql_url(store_url: str) -> None:
    def noema(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(Path(sys.executable).parent / "noema"), "--db", store_url, "--mind", "cli", *args],
            capture_output=True,
            text=True,
            timeout=120,
            env={"NOEMA_EMBEDDER": "none", "PATH": "/usr/bin:/bin"},
        )

    assert noema("remember", "the ferry runs hourly").returncode == 0
    found = noema("recall", "ferry", "--json")
    assert found.returncode == 0, found.stderr
    assert '"the ferry runs hourly"' in found.stdout
    verified = noema("verify")
    assert verified.returncode == 0, verified.stderr


# ---------------------------------------------------------------- vectors


def test_the_vector_column_is_pgvector_or_bytes(storage: PostgresStorage, backend: str) -> None:
    [(column,)] = sql(
        storage.url,
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = 'vectors'::regclass AND attname = 'vector'",
    )
    assert storage.pgvector is (backend == "postgres")
    assert column == ("vector" if backend == "postgres" else "bytea")
    if backend == "postgres":
        [(installed,)] = sql(
            storage.url, "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        )
        assert storage.pgvector_version == tuple(int(part) for part in installed.split("."))
    else:
        assert storage.pgvector_version is None


@pytest.mark.parametrize("backend", ["postgres"])
def test_a_pgvector_older_than_0_5_is_refused_in_one_line(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_vectors, "installed_pgvector", lambda conn: "0.4.1")
    with pytest.raises(StorageError) as caught:
        open_storage(store_url)
    assert str(caught.value) == (
        "pgvector 0.4.1 is too old: Noema needs 0.5.0 or newer "
        "(upgrade it, then ALTER EXTENSION vector UPDATE)"
    )
    monkeypatch.setattr(pg_vectors, "installed_pgvector", lambda conn: "0.5.0")
    store = open_storage(store_url)
    assert isinstance(store, PostgresStorage)
    store.close()
    assert store.pgvector_version == (0, 5, 0)


def test_an_hnsw_index_per_model_is_built_when_due_and_finds_the_exact_best(
    store_url: str, backend: str
) -> None:
    store = open_storage(store_url + "&index_min_rows=300")
    assert isinstance(store, PostgresStorage)
    try:
        with store.transaction() as session:
            mind = session.run(ops.EnsureMind("m", new_id(NOW), NOW)).id
        rng = np.random.default_rng(7)
        memories = []
        for i in range(400):
            memories.append(make_memory(mind, f"vector memory {i}"))
        vectors = rng.normal(size=(400, 24)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with store.transaction() as session:
            session.run(ops.InsertMemories(memories))
            session.run(ops.PutVectors(mind, "model-a", [m.id for m in memories], vectors))
            session.run(
                ops.PutVectors(mind, "model-b", [m.id for m in memories[:10]], vectors[:10, :8])
            )
        query = vectors[17] + 0.1 * vectors[3]
        query /= np.linalg.norm(query)
        with store.transaction(write=False) as session:
            found = session.run(ops.SearchVectors(mind, "model-a", query, RecallFilters(), None, 5))
            small = session.run(
                ops.SearchVectors(mind, "model-b", vectors[2, :8], RecallFilters(), None, 3)
            )
        exact = np.argsort(-(vectors @ query))[:5]
        assert [m.id for m, *_ in found] == [memories[i].id for i in exact]
        assert [s for _, s, _ in found] == pytest.approx([float(vectors[i] @ query) for i in exact])
        assert small[0][0].id == memories[2].id
        indexes = [
            r[0]
            for r in sql(
                store_url,
                "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() "
                "AND indexdef LIKE '%hnsw%'",
            )
        ]
        if backend == "postgres":  # one index, for model-a: model-b has 10 vectors only
            assert len(indexes) == 1
            assert "vector_cosine_ops" in indexes[0] and "'model-a'" in indexes[0]
        else:
            assert indexes == []
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["postgres"])
def test_a_bulk_load_past_the_threshold_gets_its_hnsw_index_at_the_next_search(
    store_url: str,
) -> None:
    # A search below index_min_rows marks the index "not due" for a while; vectors
    # written after must clear that, or the load is searched exactly until then.
    store = open_storage(store_url + "&index_min_rows=300")
    assert isinstance(store, PostgresStorage)
    hnsw = "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexdef ~ 'hnsw'"
    try:
        with store.transaction() as session:
            mind = session.run(ops.EnsureMind("m", new_id(NOW), NOW)).id
        memories = [make_memory(mind, f"bulk memory {i}") for i in range(400)]
        vectors = np.random.default_rng(3).normal(size=(400, 16)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)

        def search() -> None:
            with store.transaction(write=False) as session:
                session.run(ops.SearchVectors(mind, "m", vectors[0], RecallFilters(), None, 3))

        with store.transaction() as session:
            session.run(ops.InsertMemories(memories))
            session.run(ops.PutVectors(mind, "m", [m.id for m in memories[:10]], vectors[:10]))
        search()
        assert sql(store_url, hnsw) == []  # 10 vectors: not due
        with store.transaction() as session:
            session.run(ops.PutVectors(mind, "m", [m.id for m in memories[10:]], vectors[10:]))
        search()
        assert len(sql(store_url, hnsw)) == 1
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["postgres"])
def test_before_pgvector_0_8_filtered_searches_still_find_the_exact_best(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before pgvector 0.8 (no iterative scans) an HNSW scan ends after
    # hnsw.ef_search rows, and a filter passing 1 in 50 keeps about one of them.
    # Sorts and table scans are priced out so that 2,000 rows take the index,
    # as a table past index_min_rows would.
    planner = quote("-c enable_seqscan=off -c enable_sort=off ", safe="")
    url = store_url.replace("options=", f"options={planner}", 1) + "&index_min_rows=300"
    current = open_storage(url)
    monkeypatch.setattr(pg_vectors, "installed_pgvector", lambda conn: "0.7.0")
    old = open_storage(url)
    assert isinstance(current, PostgresStorage) and isinstance(old, PostgresStorage)
    assert old.pgvector_version == (0, 7, 0)
    assert (current.pgvector_version or ()) >= (0, 8, 0)
    try:
        with current.transaction() as session:
            mind = session.run(ops.EnsureMind("m", new_id(NOW), NOW)).id
        tags = [("rare",) if i % 50 == 0 else ("half",) if i % 2 else () for i in range(2_000)]
        memories = [make_memory(mind, f"memory {i}", tags=t) for i, t in enumerate(tags)]
        rng = np.random.default_rng(11)
        vectors = rng.normal(size=(len(memories), 24)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with current.transaction() as session:
            session.run(ops.InsertMemories(memories))
            session.run(ops.PutVectors(mind, "model", [m.id for m in memories], vectors))
        query = rng.normal(size=24).astype(np.float32)
        query /= np.linalg.norm(query)
        scores = vectors @ query

        def search(store: PostgresStorage, tag: str | None, k: int) -> tuple[list[str], str, str]:
            filters = RecallFilters(tags=(tag,) if tag else ())
            with store.transaction(write=False) as session:
                found = session.run(ops.SearchVectors(mind, "model", query, filters, None, k))
                row = session.one(
                    "SELECT current_setting('hnsw.iterative_scan', true), "
                    "current_setting('hnsw.ef_search')"
                )
                assert row is not None
                return [m.id for m, *_ in found], str(row[0]), str(row[1])

        for tag, k in (("rare", 10), ("half", 10), (None, 5)):
            passing = [i for i, t in enumerate(tags) if tag is None or tag in t]
            exact = [memories[i].id for i in sorted(passing, key=lambda i: -scores[i])[:k]]
            assert search(old, tag, k) == (exact, "off", "256"), tag  # a pool 4 x 64 wide
            assert search(current, tag, k) == (exact, "relaxed_order", "64"), tag
        hnsw = "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() AND indexdef ~ 'hnsw'"
        assert len(sql(url, hnsw)) == 1
        # What the old path did: ef_search rows through the index, then the filter.
        with psycopg.connect(parse_url(url)[0]) as conn:
            register_vector(conn)
            conn.execute("SET LOCAL hnsw.ef_search = 64")
            plain = conn.execute(
                "SELECT v.memory_id FROM vectors v JOIN memories m "
                "ON m.mind_id = v.mind_id AND m.id = v.memory_id "
                "WHERE v.model = 'model' AND v.dims = 24 AND m.tags::jsonb ? 'rare' "
                "ORDER BY v.vector::vector(24) <=> %s::vector(24) LIMIT 64",
                (query,),
            ).fetchall()
        assert len(plain) < 10
    finally:
        old.close()
        current.close()


# ---------------------------------------------------------------- writers and statistics


def test_writers_of_one_mind_wait_for_each_other_and_other_minds_do_not(store_url: str) -> None:
    first, second = open_storage(store_url), open_storage(store_url)
    try:
        with first.transaction() as session:
            a = session.run(ops.EnsureMind("a", new_id(NOW), NOW)).id
            b = session.run(ops.EnsureMind("b", new_id(NOW), NOW)).id
        holding, release = threading.Event(), threading.Event()

        def hold_a() -> None:
            with first.transaction() as session:
                session.run(ops.AuditHead(a))  # takes mind a's lock
                holding.set()
                release.wait(30)

        holder = threading.Thread(target=hold_a)
        holder.start()
        assert holding.wait(30)
        with second.transaction() as session:  # mind b: no wait
            session.run(ops.AuditHead(b))
        # Had it waited for mind a's lock, it would have come after the holder let go.
        assert holder.is_alive() and not release.is_set()
        done = threading.Event()

        def write_a() -> None:
            with second.transaction() as session:
                session.run(ops.AuditHead(a))
            done.set()

        waiter = threading.Thread(target=write_a)
        waiter.start()
        assert not done.wait(0.5)  # blocked behind the first writer of mind a
        release.set()
        assert done.wait(30)
        holder.join(30)
        waiter.join(30)
    finally:
        first.close()
        second.close()


def test_two_processes_opening_a_new_database_migrate_it_once(store_url: str) -> None:
    errors: list[BaseException] = []

    def open_close() -> None:
        try:
            open_storage(store_url).close()
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=open_close) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert sql(store_url, "SELECT version FROM schema_migrations ORDER BY version") == [
        (version,) for version, _, _ in MIGRATIONS
    ]


def test_bulk_writes_refresh_the_planner_statistics(store_url: str) -> None:
    with Mind.open(store_url, "bulk", embedder="none") as mind:
        mind.remember_many([{"content": f"bulk fact number {i}"} for i in range(1_200)])
    [(analyzed,)] = sql(
        store_url,
        "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables "
        "WHERE relid = 'memories'::regclass",
    )
    assert analyzed


@pytest.mark.parametrize(("pool", "connections"), [("pool_min=2", 2), ("pool_max=1", 1)])
def test_a_read_sessions_vector_search_runs_on_a_free_second_connection_in_its_snapshot(
    store_url: str, pool: str, connections: int
) -> None:
    store = open_storage(f"{store_url}&{pool}")
    assert isinstance(store, PostgresStorage)
    try:
        with store.transaction() as session:
            mind = session.run(ops.EnsureMind("m", new_id(NOW), NOW)).id
            near, far = make_memory(mind, "near"), make_memory(mind, "far")
            session.run(ops.InsertMemories([near, far]))
            vectors = np.array([[0.6, 0.8], [0.0, 1.0]], dtype=np.float32)
            session.run(ops.PutVectors(mind, "v", [near.id, far.id], vectors))
        query = np.array([1.0, 0.0], dtype=np.float32)
        search = ops.SearchVectors(mind, "v", query, RecallFilters(), None, 5)
        stats = store._pool.get_stats()
        served = stats.get("requests_num", 0) - stats.get("requests_errors", 0)
        writer = open_storage(store_url)
        with store.transaction(write=False) as session:
            session.run(ops.ScanMemories(mind))  # the snapshot is taken
            nearest = make_memory(mind, "nearest")
            with writer.transaction() as other:  # committed meanwhile: not in the snapshot
                other.run(ops.InsertMemories([nearest]))
                other.run(ops.PutVectors(mind, "v", [nearest.id], query.reshape(1, 2)))
            writer.close()
            found = session.submit(search).result()
        assert [m.id for m, *_ in found] == [near.id, far.id]
        stats = store._pool.get_stats()
        # A second connection when one is free; else the search ran on the session's own.
        assert (
            stats.get("requests_num", 0) - stats.get("requests_errors", 0) - served == connections
        )
    finally:
        store.close()


# ---------------------------------------------------------------- BM25


def test_bm25_follows_fts5() -> None:
    # FTS5: idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)), k1 1.2, b 0.75.
    tsv = "'ferri':3,7 'river':1 'run':2"
    idf = 0.5
    expected = idf * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 4 / 5.0))
    assert bm25(tsv, [["ferri"]], [idf], 5.0) == pytest.approx(expected)
    assert bm25(tsv, [["ferri"], ["boat"]], [idf, 3.0], 5.0) == pytest.approx(expected)
    assert bm25(tsv, [["boat"]], [3.0], 5.0) == 0.0


@pytest.mark.parametrize(
    ("tsv", "lexeme", "tf", "length"),
    [
        ("'ferri':3 'ferris':1,2", "ferri", 1, 3),  # a lexeme that begins another
        ("'ferri':3 'ferris':1,2", "ferris", 2, 3),
        ("'aferri':1,2 'ferri':3", "ferri", 1, 3),  # ... or ends one
        ("'boat' 'ferri':1,4", "boat", 1, 3),  # stripped of positions: counted once
        ("'boat' 'ferri':1,4", "ferri", 2, 3),
        ("'ferri':1A,2B,5", "ferri", 3, 3),  # weighted positions
        ("'river':1 'ferri':2,3,4", "ferri", 3, 4),  # the last lexeme
        ("'river':1", "ferri", 0, 1),
    ],
)
def test_bm25_reads_frequencies_and_length_off_the_tsvector_text(
    tsv: str, lexeme: str, tf: int, length: int
) -> None:
    expected = 0.0 if not tf else 2.2 * tf / (tf + 1.2 * (0.25 + 0.75 * length / 4.0))
    assert bm25(tsv, [[lexeme]], [1.0], 4.0) == pytest.approx(expected)
    assert token_count("INC-7 is well-known, isn't it?") == 8  # inc 7 is well known isn t it


def _ferry_and_harbour(index: int) -> str:
    """Short ferry notes, some saying it three times; long harbour notes (a rarer word); others."""
    if index < 400:
        return f"ferry {'ferry ferry ' if index % 7 == 0 else ''}note {index}"
    if index < 550:
        return f"the harbour was quiet and grey when the boats came back late on day {index}"
    return f"an unrelated memory about gardens and walls number {index}"


def test_past_the_reranked_matches_the_text_search_still_orders_as_sqlite(
    store_url: str, tmp_path: Path
) -> None:
    # 550 matches: more than RERANK_MIN, so only the estimate's best are scored
    # exactly. BM25 ranks the notes saying "ferry" three times first, then the
    # long harbour notes (a rarer word); an estimate blind to idf (cover density)
    # prefers the short ferry notes and leaves the harbour notes out.
    items = [{"content": _ferry_and_harbour(i)} for i in range(1_500)]
    found = {}
    for url in (store_url, f"sqlite:///{tmp_path / 'same.db'}"):
        with Mind.open(url, "m", embedder="none") as mind:
            mind.remember_many(items)
            with mind.storage.transaction(write=False) as session:
                search = ops.SearchText(
                    mind.id, ["ferry", "harbour"], False, RecallFilters(), None, 100, "content"
                )
                found[url] = [(m.content, score) for m, score in session.run(search)]
    postgres, sqlite = found.values()
    assert [content for content, _ in postgres] == [content for content, _ in sqlite]
    assert [score for _, score in postgres] == pytest.approx([score for _, score in sqlite])
    assert all("ferry ferry ferry" in content for content, _ in postgres[:50])
    assert all("harbour" in content for content, _ in postgres[60:])


def on_ranking(monkeypatch: pytest.MonkeyPatch, seen: Callable[[PostgresSession], None]) -> None:
    """Call ``seen`` with the session before each text search's ranking statement."""
    ranked = PostgresSession.all

    def spy(self: PostgresSession, query: str, params: Any = ()) -> list[tuple[Any, ...]]:
        if "LATERAL" in query:
            seen(self)
        return ranked(self, query, params)

    monkeypatch.setattr(PostgresSession, "all", spy)


def test_a_wide_text_search_ranks_through_the_index_and_leaves_the_setting_as_it_was(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "ferry" is in every other memory (wide), "lighthouse" in one (narrow). While a
    # wide search ranks its matches, sequential scans are off; before and after, as
    # set. Up to 2,000 memories no search is wide.
    during: list[str] = []
    on_ranking(
        monkeypatch,
        lambda s: during.append(s.cur.execute("SHOW enable_seqscan").fetchone()[0]),  # type: ignore[index]
    )
    items = [
        {"content": f"note {i}" + (" ferry" if i % 2 else "") + (" lighthouse" if i == 7 else "")}
        for i in range(2_100)
    ]
    with Mind.open(store_url, "m", embedder="none") as mind:
        for batch in (items[:1_900], items[1_900:]):
            mind.remember_many(batch)
            with mind.storage.transaction(write=False) as session:
                assert isinstance(session, PostgresSession)
                for word in ("ferry", "lighthouse"):
                    filters = RecallFilters()
                    search = ops.SearchText(mind.id, [word], False, filters, None, 10, "content")
                    assert session.run(search)
                    assert session.cur.execute("SHOW enable_seqscan").fetchone() == ("on",)
    assert during == ["on", "on", "off", "on"]


def test_a_text_search_of_words_no_memory_holds_runs_no_ranking_statement(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The words' counts come first; when every count is 0 nothing is ranked.
    ranking: list[PostgresSession] = []
    on_ranking(monkeypatch, ranking.append)
    with Mind.open(store_url, "m", embedder="none") as mind:
        mind.remember_many([{"content": f"ferry note {i}"} for i in range(30)])
        with mind.storage.transaction(write=False) as session:
            for terms, strict, found in (
                (["nowhere", "absent"], False, 0),
                (["nowhere", "absent"], True, 0),
                (["ferry", "absent"], False, 10),
            ):
                search = ops.SearchText(
                    mind.id, terms, strict, RecallFilters(), None, 10, "content"
                )
                assert len(session.run(search)) == found
    assert len(ranking) == 1  # only the search that finds something


def test_a_strict_text_search_that_nothing_matches_stops_after_one_probe_of_the_index(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "ferry" and "harbor" are each in half of 2,100 memories, never in the same
    # one. A strict search of both probes the GIN index once and stops: no word
    # counts, no ranking. Asked for one row, the planner would walk the mind's
    # rows instead (all of them, as none matches): the probe keeps to the index.
    statements: list[str] = []
    plans: list[str] = []
    listed = PostgresSession.all

    def spy(self: PostgresSession, query: str, params: Any = ()) -> list[tuple[Any, ...]]:
        statements.append(query)
        if query.startswith("SELECT 1 FROM memories"):
            explained = self.cur.execute("EXPLAIN " + query, params).fetchall()
            plans.append(" ".join(str(row[0]) for row in explained))
        return listed(self, query, params)

    items = [{"content": f"note {i} " + ("ferry" if i % 2 else "harbor")} for i in range(2_100)]
    with Mind.open(store_url, "m", embedder="none") as mind:
        mind.remember_many(items)
        monkeypatch.setattr(PostgresSession, "all", spy)
        with mind.storage.transaction(write=False) as session:
            assert isinstance(session, PostgresSession)
            for terms, found in ((["ferry", "harbor"], 0), (["ferry", "note"], 10)):
                search = ops.SearchText(mind.id, terms, True, RecallFilters(), None, 10, "content")
                assert len(session.run(search)) == found
                for setting in ("enable_seqscan", "enable_indexscan"):
                    assert session.cur.execute(f"SHOW {setting}").fetchone() == ("on",)
    counts = [i for i, q in enumerate(statements) if q.startswith("WITH stats")]
    ranked = [i for i, q in enumerate(statements) if "LATERAL" in q]
    probes = [i for i, q in enumerate(statements) if q.startswith("SELECT 1 FROM memories")]
    assert len(probes) == 2 and len(counts) == 1 and len(ranked) == 1
    assert probes[0] < probes[1] < counts[0] < ranked[0]  # the first search stopped at its probe
    assert all("Bitmap Index Scan" in plan and "Seq Scan" not in plan for plan in plans), plans


# ---------------------------------------------------------------- job leases

HOLDER = """
import sys, time
from datetime import UTC, datetime, timedelta
from noema.storage import open_storage, ops
store = open_storage(sys.argv[1])
now = datetime.now(UTC)
until = now + timedelta(seconds=float(sys.argv[2]))
with store.transaction() as session:
    assert session.run(ops.AcquireLease("job:sweep", "child", now, until))
print("holding", flush=True)
time.sleep(600)
"""


def test_a_live_runtime_keeps_its_lease_and_a_killed_one_frees_it_at_once(
    storage: PostgresStorage,
) -> None:
    def acquire(holder: str) -> bool:
        now = datetime.now(UTC)
        with storage.transaction() as session:
            return session.run(
                ops.AcquireLease("job:sweep", holder, now, now + timedelta(seconds=60))
            )

    for expiry, after_kill in (("0", "expired row"), ("3600", "row an hour from expiry")):
        with subprocess.Popen(
            [sys.executable, "-c", HOLDER, storage.url, expiry],
            stdout=subprocess.PIPE,
            text=True,
        ) as child:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "holding"
            # Alive, even with its lease row past expiry: the advisory lock keeps it.
            assert not acquire("parent"), after_kill
            child.kill()
            child.wait()
        # Its connection died with it: the lease is free at once, whatever the row says.
        deadline = time.monotonic() + 10
        while not acquire("parent"):
            assert time.monotonic() < deadline, after_kill
            time.sleep(0.1)
        with storage.transaction() as session:
            session.run(ops.ReleaseLease("job:sweep", "parent"))
