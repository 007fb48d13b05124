"""Growing past one server (ADR 0024): a store partitioned by mind, and read-only replicas.

The conformance suite proves the partitioned schema (``partitions=N``) behaves
like every other (its ``postgres-partitioned`` param); these tests check beneath
the protocol that it really is partitioned: every per-mind table, one partition
per hash of ``mind_id``, a mind's queries pruned to its partition, HNSW and GIN
indexes on each partition, and a store never half-changed by the option. A
replica is stood in for by a session that is read-only by default
(``default_transaction_read_only``), which refuses writes as a standby does.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import numpy as np
import psycopg
import pytest
from conformance.test_storage_contract import make_memory

from concepts import RecallFilters
from noema import ConfigError, MigrationError, StorageError
from noema.ids import new_id
from noema.storage import open_storage, ops
from noema.storage.postgres import MIGRATIONS, PostgresStorage, parse_url, store as pg_store
from noema.storage.postgres.schema import partitioned

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
PARTITIONS = 4  # what the ``postgres-partitioned`` URL asks for (tests/conftest.py)


@pytest.fixture(params=["postgres-partitioned"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def sql(url: str, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(parse_url(url)[0], autocommit=True) as conn:
        return conn.execute(query, params or None).fetchall()


def open_partitioned(url: str) -> PostgresStorage:
    store = open_storage(url)
    assert isinstance(store, PostgresStorage)
    return store


def add_mind(store: PostgresStorage, name: str) -> str:
    with store.transaction() as session:
        return session.run(ops.EnsureMind(name, new_id(NOW), NOW)).id


def plans_over(url: str, query: str, params: tuple[Any, ...]) -> set[str]:
    """The partitions (``<table>_p<i>``) the plan of ``query`` reads."""
    plan = "\n".join(r[0] for r in sql(url, "EXPLAIN " + query, params))
    return set(re.findall(r"\b(\w+_p\d+)\b", plan))


# ---------------------------------------------------------------- the option


@pytest.mark.parametrize(
    ("value", "message"),
    [("-1", "greater than or equal to 0"), ("many", "valid integer"), ("100000", "less than")],
)
def test_a_bad_partitions_value_is_a_one_line_config_error(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=f"option partitions: .*{message}") as caught:
        parse_url(f"postgresql://h/db?partitions={value}")
    assert "\n" not in str(caught.value)


def test_partitioning_a_schema_touches_only_the_per_mind_tables_and_their_keys() -> None:
    plain = "\n".join(script for _, _, script in MIGRATIONS)
    assert partitioned(MIGRATIONS, 0) == MIGRATIONS
    rendered = "\n".join(script for _, _, script in partitioned(MIGRATIONS, 3))
    tables = set(re.findall(r"CREATE TABLE (\w+) \(", plain))
    made = set(re.findall(r"CREATE TABLE (\w+) \([^;]*\) PARTITION BY HASH", rendered))
    assert made == tables - {"minds", "job_leases"}
    for table in made:
        assert rendered.count(f"PARTITION OF {table} FOR VALUES WITH (MODULUS 3,") == 3
    assert "CREATE UNIQUE INDEX memories_seq ON memories (seq, mind_id)" in rendered
    assert "IDENTITY PRIMARY KEY" not in rendered
    assert rendered.count("PRIMARY KEY (seq, mind_id)") == 1  # events
    assert rendered.count("PRIMARY KEY (id, mind_id)") == 1  # vectors


# ---------------------------------------------------------------- the schema


def test_every_per_mind_table_is_hash_partitioned_by_mind(store_url: str) -> None:
    open_partitioned(store_url).close()
    with_mind = {
        r[0]
        for r in sql(
            store_url,
            "SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid "
            "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') "
            "AND NOT c.relispartition AND a.attname = 'mind_id'",
        )
    }
    assert {"memories", "vectors", "events", "audit", "text_stats", "peers"} <= with_mind
    rows = sql(
        store_url,
        "SELECT c.relname, p.partstrat, a.attname, "
        "(SELECT count(*) FROM pg_inherits i WHERE i.inhparent = c.oid) "
        "FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid "
        "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = p.partattrs[0] "
        "WHERE c.relnamespace = current_schema()::regnamespace",
    )
    assert {r[0] for r in rows} == with_mind
    assert {r[1:] for r in rows} == {("h", "mind_id", PARTITIONS)}
    unpartitioned = sql(
        store_url,
        "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
        "AND relkind = 'r' AND NOT relispartition ORDER BY relname",
    )
    assert [r[0] for r in unpartitioned] == ["job_leases", "minds", "schema_migrations"]


def test_a_minds_rows_live_in_one_partition_and_its_queries_read_only_that_one(
    store_url: str,
) -> None:
    store = open_partitioned(store_url)
    try:
        minds = [add_mind(store, f"mind {i}") for i in range(8)]
        with store.transaction() as session:
            for mind in minds:
                memories = [make_memory(mind, f"{mind} fact {j}") for j in range(3)]
                session.run(ops.InsertMemories(memories))
                vectors = np.eye(3, 8, dtype=np.float32)
                session.run(ops.PutVectors(mind, "m", [m.id for m in memories], vectors))
    finally:
        store.close()
    placed = sql(store_url, "SELECT DISTINCT mind_id, tableoid::regclass::text FROM memories")
    assert sorted(m for m, _ in placed) == sorted(minds)  # one partition per mind
    assert len({p for _, p in placed}) > 1  # and the minds spread over several
    where = dict(placed)
    for mind in minds[:3]:
        expected = where[mind]
        assert plans_over(store_url, "SELECT * FROM memories WHERE mind_id = %s", (mind,)) == {
            expected
        }
        join = (
            "SELECT m.seq FROM vectors v JOIN memories m "
            "ON m.mind_id = v.mind_id AND m.id = v.memory_id WHERE v.mind_id = %s"
        )
        assert plans_over(store_url, join, (mind,)) == {
            expected,
            expected.replace("memories", "vectors"),
        }


def test_hnsw_and_gin_indexes_are_made_on_every_partition(store_url: str) -> None:
    store = open_partitioned(store_url + "&index_min_rows=10")
    try:
        mind = add_mind(store, "m")
        memories = [make_memory(mind, f"vector memory {i}") for i in range(40)]
        rng = np.random.default_rng(3)
        vectors = rng.normal(size=(40, 8)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with store.transaction() as session:
            session.run(ops.InsertMemories(memories))
            session.run(ops.PutVectors(mind, "model-a", [m.id for m in memories], vectors))
        with store.transaction(write=False) as session:
            found = session.run(
                ops.SearchVectors(mind, "model-a", vectors[5], RecallFilters(), None, 3)
            )
        assert found[0][0].id == memories[5].id
    finally:
        store.close()
    indexes = sql(
        store_url,
        "SELECT p.relname, p.relkind, count(*) FROM pg_class p "
        "JOIN pg_inherits i ON i.inhparent = p.oid "
        "WHERE p.relnamespace = current_schema()::regnamespace AND p.relkind = 'I' "
        "AND (p.relname LIKE 'vectors_hnsw_%%' OR p.relname LIKE 'memories_%%tsv') "
        "GROUP BY p.relname, p.relkind",
    )
    names = sorted(r[0] for r in indexes)
    assert len(names) == 3 and names[:2] == ["memories_keys_tsv", "memories_tsv"]
    assert names[2].startswith("vectors_hnsw_")
    assert {r[2] for r in indexes} == {PARTITIONS}
    # Opened again, the store finds the partitioned index: a write session, which never
    # builds one, says it is there.
    again = open_partitioned(store_url + "&index_min_rows=10")
    try:
        with again.transaction() as session:
            assert again.indexes.ensure(session, "model-a", 8)
    finally:
        again.close()


def test_statistics_upkeep_runs_over_the_partitions(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_store, "ANALYZE_MIN_ROWS", 10)
    store = open_partitioned(store_url)
    try:
        mind = add_mind(store, "m")
        with store.transaction() as session:
            session.run(ops.InsertMemories([make_memory(mind, f"fact {i}") for i in range(30)]))
        # Set only once ANALYZE, the GIN clean-up of every partition and the count ran.
        assert store._analyzed_rows == 30
    finally:
        store.close()


def test_statistics_are_refreshed_once_memories_and_vectors_doubled(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_store, "ANALYZE_MIN_ROWS", 10)
    store = open_partitioned(store_url)
    written = 0

    def write(count: int) -> None:
        nonlocal written
        memories = [make_memory(mind, f"fact {written + i}") for i in range(count)]
        written += count
        vectors = np.full((count, 8), 8**-0.5, dtype=np.float32)
        with store.transaction() as session:
            session.run(ops.InsertMemories(memories))
            session.run(ops.PutVectors(mind, "m", [m.id for m in memories], vectors))

    try:
        mind = add_mind(store, "m")
        write(20)  # 40 rows, past the minimum: analysed
        assert store._analyzed_rows == 40
        write(10)  # 20 more: not yet double
        assert store._analyzed_rows == 40
        write(10)  # 40 more in all: doubled
        assert store._analyzed_rows == 80
    finally:
        store.close()


# ---------------------------------------------------------------- chosen once


def test_partitions_are_chosen_when_the_store_is_created_and_never_changed(
    store_url: str,
) -> None:
    unpartitioned = store_url.replace(f"&partitions={PARTITIONS}", "")
    open_partitioned(unpartitioned).close()

    def schema(url: str) -> list[tuple[Any, ...]]:
        return sql(
            url,
            "SELECT relname, relkind FROM pg_class "
            "WHERE relnamespace = current_schema()::regnamespace ORDER BY relname",
        )

    before = schema(unpartitioned)
    with pytest.raises(ConfigError, match=r"partitions=4: .* created unpartitioned") as caught:
        open_storage(store_url)
    assert "\n" not in str(caught.value)
    assert schema(unpartitioned) == before

    open_partitioned(unpartitioned.replace("?", "?partitions=0&", 1)).close()  # what it is


def test_a_partitioned_store_keeps_its_partitions(store_url: str) -> None:
    store = open_partitioned(store_url)
    mind = add_mind(store, "m")
    store.close()
    for other in (2, 0):
        with pytest.raises(ConfigError, match=rf"partitions={other}: .* with 4 partitions"):
            open_storage(store_url.replace(f"partitions={PARTITIONS}", f"partitions={other}"))
    # Without the option, a store is opened as it was created.
    again = open_partitioned(store_url.replace(f"&partitions={PARTITIONS}", ""))
    try:
        with again.transaction(write=False) as session:
            assert [m.id for m in session.run(ops.ListMinds())] == [mind]
    finally:
        again.close()


# ---------------------------------------------------------------- read replicas


def read_only(url: str) -> str:
    """``url`` with every transaction read-only, as on a hot standby."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query["options"] = query.get("options", "") + " -c default_transaction_read_only=on"
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


def test_a_read_only_replica_serves_read_sessions_and_refuses_writes(store_url: str) -> None:
    primary = open_partitioned(store_url + "&index_min_rows=10")
    try:
        mind = add_mind(primary, "m")
        memories = [make_memory(mind, f"replicated fact {i}") for i in range(20)]
        vectors = np.eye(20, 24, dtype=np.float32)
        with primary.transaction() as session:
            session.run(ops.InsertMemories(memories))
            session.run(ops.PutVectors(mind, "model-a", [m.id for m in memories], vectors))
    finally:
        primary.close()

    # The HNSW index is due but not built: the replica cannot build it, so searches exactly.
    replica = open_partitioned(read_only(store_url) + "&index_min_rows=10")
    try:
        with replica.transaction(write=False) as session:
            found = session.run(
                ops.SearchVectors(mind, "model-a", vectors[4], RecallFilters(), None, 1)
            )
            text = session.run(
                ops.SearchText(mind, ["fact"], False, RecallFilters(), None, 3, "content")
            )
        assert found[0][0].id == memories[4].id
        assert len(text) == 3
        with pytest.raises(StorageError, match="read-only"), replica.transaction() as session:
            session.run(ops.InsertMemories([make_memory(mind, "not on a replica")]))
    finally:
        replica.close()
    built = sql(
        store_url,
        "SELECT count(*) FROM pg_class WHERE relname LIKE 'vectors_hnsw_%%' "
        "AND relnamespace = current_schema()::regnamespace",
    )
    assert built == [(0,)]


def test_a_replica_behind_this_noemas_schema_is_refused_in_one_line(store_url: str) -> None:
    with pytest.raises(MigrationError, match=r"read-only .* lacks migration 1 ") as caught:
        open_storage(read_only(store_url))
    assert "\n" not in str(caught.value)
