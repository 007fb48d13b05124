"""Schema migrations: numbered, append-only, applied on open (ADR 0002).

Each backend has its own list of migrations and its own way to look beneath the
protocol, so the few backend-specific steps live in a ``MigrationProbe`` per
backend; the checks are written once. A backend without a probe is skipped
with a reason, never silently passed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

import psycopg
import pytest

import noema
from concepts import Memory, RecallFilters
from conformance.test_storage_contract import make_memory
from noema.errors import RuntimeFailure
from noema.ids import new_id
from noema.storage import open_storage, ops
from noema.storage._rows import MEMORY_COLUMNS, memory_row

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


class MigrationProbe(Protocol):
    """What the tests need to see and build beneath the storage protocol."""

    migrations: list[tuple[int, str, str]]

    def recorded(self, url: str) -> list[tuple[int, str, str]]:
        """``(version, name, applied_at)`` rows of ``schema_migrations``, by version."""
        ...

    def schema(self, url: str) -> list[tuple[str, str]]:
        """Every schema object as ``(name, definition)``, sorted."""
        ...

    def build(self, url: str, upto: int) -> None:
        """An old database: migrations ``1..upto`` applied and recorded by hand."""
        ...

    def record(self, url: str, version: int, name: str) -> None:
        """Record ``version`` as applied, as a newer Noema would."""
        ...

    def has_table(self, url: str, table: str) -> bool: ...

    def with_migrations(self, migrations: list[tuple[int, str, str]]) -> MigrationProbe:
        """The same probe over another list (a test's made-up next migration)."""
        ...

    def add_mind(self, url: str, mind_id: str, name: str) -> None:
        """Write a mind row with plain SQL (the ``minds`` table exists from migration 1)."""
        ...

    def add_old_memory(self, url: str, memory: Memory) -> None:
        """Write a memory as Noema wrote it before migration 4 (no ``keys``), text index too."""
        ...

    def check_text_indexes(self, url: str) -> None:
        """Fail when a full-text index disagrees with the rows it indexes."""
        ...


def _old_row(memory: Memory) -> dict[str, Any]:
    row = dict(zip(MEMORY_COLUMNS, memory_row(memory), strict=True))
    for later in ("keys", "lifecycle", "world", "changed_at", "thread", "position"):
        del row[later]
    return row


def _sqlite_path(url: str) -> str:
    assert url.startswith("sqlite:///"), url
    return url[len("sqlite:///") :]


@dataclass
class SQLiteProbe:
    migrations: list[tuple[int, str, str]]

    def _connect(self, url: str) -> sqlite3.Connection:
        return sqlite3.connect(_sqlite_path(url), isolation_level=None)

    def recorded(self, url: str) -> list[tuple[int, str, str]]:
        with closing(self._connect(url)) as conn:
            return conn.execute(
                "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
            ).fetchall()

    def schema(self, url: str) -> list[tuple[str, str]]:
        with closing(self._connect(url)) as conn:
            return conn.execute(
                "SELECT name, coalesce(sql, '') FROM sqlite_master ORDER BY name"
            ).fetchall()

    def build(self, url: str, upto: int) -> None:
        with closing(self._connect(url)) as conn:
            conn.execute(
                "CREATE TABLE schema_migrations ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
            )
            for version, name, sql in self.migrations[:upto]:
                conn.executescript(sql)
                conn.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, '2025-01-01 00:00:00')",
                    (version, name),
                )

    def record(self, url: str, version: int, name: str) -> None:
        with closing(self._connect(url)) as conn:
            conn.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, datetime('now'))", (version, name)
            )

    def with_migrations(self, migrations: list[tuple[int, str, str]]) -> MigrationProbe:
        return replace(self, migrations=migrations)

    def has_table(self, url: str, table: str) -> bool:
        with closing(self._connect(url)) as conn:
            row = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            return row is not None

    def add_mind(self, url: str, mind_id: str, name: str) -> None:
        with closing(self._connect(url)) as conn:
            conn.execute(
                "INSERT INTO minds (id, name, created_at) VALUES (?, ?, ?)",
                (mind_id, name, 1_700_000_000_000_000),
            )

    def add_old_memory(self, url: str, memory: Memory) -> None:
        row = _old_row(memory)
        with closing(self._connect(url)) as conn:
            conn.execute(
                f"INSERT INTO memories ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
                tuple(row.values()),
            )
            conn.execute(
                "INSERT INTO memories_fts(rowid, content) "
                "SELECT rowid, content FROM memories WHERE id = ?",
                (memory.id,),
            )

    def check_text_indexes(self, url: str) -> None:
        with closing(self._connect(url)) as conn:
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND (name GLOB 'memories_fts_[0-9]*' OR name GLOB 'memories_keys_fts_[0-9]*') "
                    "AND name GLOB '*[0-9]'"
                )
            ]
            minds = conn.execute("SELECT count(*) FROM minds").fetchone()[0]
            assert len(tables) == 2 * minds, tables  # a content and a keys table per mind
            for table in tables:
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")


def _sqlite_probe() -> MigrationProbe:
    from noema.storage._sqlite_schema import MIGRATIONS

    return SQLiteProbe(MIGRATIONS)


@dataclass
class PostgresProbe:
    migrations: list[tuple[int, str, str]]

    def _connect(self, url: str) -> psycopg.Connection[tuple[Any, ...]]:
        from noema.storage.postgres import parse_url

        return psycopg.connect(parse_url(url)[0], autocommit=True)

    def recorded(self, url: str) -> list[tuple[int, str, str]]:
        with self._connect(url) as conn:
            rows = conn.execute(
                "SELECT version, name, applied_at::text FROM schema_migrations ORDER BY version"
            ).fetchall()
            return [(r[0], r[1], r[2]) for r in rows]

    def schema(self, url: str) -> list[tuple[str, str]]:
        """Tables as ``column TYPE, ...`` and indexes as their definitions."""
        with self._connect(url) as conn:
            tables = conn.execute(
                "SELECT c.relname, string_agg(a.attname || ' ' || "
                "upper(format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum) "
                "FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid "
                "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' "
                "AND a.attnum > 0 AND NOT a.attisdropped GROUP BY c.relname"
            ).fetchall()
            indexes = conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()"
            ).fetchall()
            return sorted([(r[0], r[1]) for r in tables] + [(r[0], r[1]) for r in indexes])

    def build(self, url: str, upto: int) -> None:
        from noema.storage.postgres import parse_url
        from noema.storage.postgres.schema import partitioned

        options = parse_url(url)[1]
        vectors = "bytea" if options.vectors == "off" else "vector"
        with self._connect(url) as conn:
            conn.execute(
                "CREATE TABLE schema_migrations (version integer PRIMARY KEY, "
                "name text NOT NULL, applied_at timestamptz NOT NULL)"
            )
            for version, name, sql in partitioned(self.migrations[:upto], options.partitions or 0):
                conn.execute(sql.replace("{vector_type}", vectors))  # type: ignore[arg-type]
                conn.execute(
                    "INSERT INTO schema_migrations VALUES (%s, %s, '2025-01-01 00:00:00+00')",
                    (version, name),
                )

    def record(self, url: str, version: int, name: str) -> None:
        with self._connect(url) as conn:
            conn.execute("INSERT INTO schema_migrations VALUES (%s, %s, now())", (version, name))

    def with_migrations(self, migrations: list[tuple[int, str, str]]) -> MigrationProbe:
        return replace(self, migrations=migrations)

    def has_table(self, url: str, table: str) -> bool:
        with self._connect(url) as conn:
            row = conn.execute(
                "SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = %s",
                (table,),
            ).fetchone()
            return row is not None

    def add_mind(self, url: str, mind_id: str, name: str) -> None:
        with self._connect(url) as conn:
            conn.execute(
                "INSERT INTO minds (id, name, created_at) VALUES (%s, %s, %s)",
                (mind_id, name, 1_700_000_000_000_000),
            )

    def add_old_memory(self, url: str, memory: Memory) -> None:
        from noema.storage.postgres import token_count

        row = _old_row(memory)
        with self._connect(url) as conn:
            conn.execute(
                f"INSERT INTO memories ({', '.join(row)}) "  # type: ignore[arg-type]
                f"VALUES ({', '.join('%s' for _ in row)})",
                tuple(row.values()),
            )
            conn.execute(
                "INSERT INTO text_stats (mind_id, documents, tokens) VALUES (%s, 1, %s) "
                "ON CONFLICT (mind_id) DO UPDATE SET documents = text_stats.documents + 1, "
                "tokens = text_stats.tokens + excluded.tokens",
                (memory.mind_id, token_count(memory.content)),
            )

    def check_text_indexes(self, url: str) -> None:
        """BM25's statistics are those of the rows (generated columns follow by themselves)."""
        from noema.storage.postgres import token_count

        with self._connect(url) as conn:
            rows = conn.execute("SELECT content, keys FROM memories").fetchall()
            stats = conn.execute(
                "SELECT coalesce(sum(documents), 0), coalesce(sum(tokens), 0), "
                "coalesce(sum(keys_tokens), 0) FROM text_stats"
            ).fetchone()
        assert stats is not None
        assert tuple(int(n) for n in stats) == (
            len(rows),
            sum(token_count(content) for content, _ in rows),
            sum(token_count(keys) for _, keys in rows),
        )


def _postgres_probe() -> MigrationProbe:
    from noema.storage.postgres.schema import MIGRATIONS

    return PostgresProbe(MIGRATIONS)


PROBES = {
    "sqlite": _sqlite_probe,
    "postgres": _postgres_probe,
    "postgres-novector": _postgres_probe,
    "postgres-partitioned": _postgres_probe,
}
#: Where each backend's list lives, for tests that extend it.
MIGRATION_LISTS = {
    "sqlite": "noema.storage._sqlite_schema.MIGRATIONS",
    "postgres": "noema.storage.postgres.schema.MIGRATIONS",
    "postgres-novector": "noema.storage.postgres.schema.MIGRATIONS",
    "postgres-partitioned": "noema.storage.postgres.schema.MIGRATIONS",
}


@pytest.fixture
def probe(backend: str) -> MigrationProbe:
    if backend not in PROBES:
        pytest.skip(f"no migration probe for the {backend} backend yet")
    return PROBES[backend]()


@pytest.fixture
def patched_migrations(backend: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The module attribute holding the backend's list, for tests that extend it."""
    if backend not in MIGRATION_LISTS:
        pytest.skip(f"no way to extend the {backend} migrations in tests yet")
    yield MIGRATION_LISTS[backend]


def _longest_migration_list() -> int:
    """Positions to start from: as many as the longest list of any backend."""
    return max(len(make().migrations) for make in PROBES.values())


def test_migrations_are_an_append_only_numbered_list(probe: MigrationProbe) -> None:
    versions = [version for version, _, _ in probe.migrations]
    assert versions == list(range(1, len(versions) + 1))
    assert all(name.strip() and sql.strip() for _, name, sql in probe.migrations)


def test_every_migration_applies_on_an_empty_database(
    probe: MigrationProbe, store_url: str
) -> None:
    storage = open_storage(store_url)
    try:
        assert storage.schema_version() == probe.migrations[-1][0]
        with storage.transaction() as session:
            mind = session.run(ops.EnsureMind("m", new_id(NOW), NOW))
            assert session.run(ops.IsEmpty(mind.id)) is True
    finally:
        storage.close()
    recorded = probe.recorded(store_url)
    assert [(v, n) for v, n, _ in recorded] == [(v, n) for v, n, _ in probe.migrations]
    assert all(applied for _, _, applied in recorded)


def test_reopening_a_current_database_is_a_no_op(probe: MigrationProbe, store_url: str) -> None:
    first = open_storage(store_url)
    with first.transaction() as session:
        mind = session.run(ops.EnsureMind("m", new_id(NOW), NOW))
    first.close()
    recorded, schema = probe.recorded(store_url), probe.schema(store_url)

    for _ in range(2):
        again = open_storage(store_url)
        try:
            assert again.schema_version() == probe.migrations[-1][0]
            with again.transaction(write=False) as session:
                assert session.run(ops.ListMinds()) == [mind]
        finally:
            again.close()
    assert probe.recorded(store_url) == recorded  # applied_at too: nothing re-ran
    assert probe.schema(store_url) == schema


def test_a_database_newer_than_this_noema_is_refused(probe: MigrationProbe, store_url: str) -> None:
    open_storage(store_url).close()
    future = probe.migrations[-1][0] + 1
    probe.record(store_url, future, "from the future")
    schema = probe.schema(store_url)
    with pytest.raises(noema.MigrationError, match=str(future)):
        open_storage(store_url)
    with pytest.raises(noema.MigrationError):
        noema.Mind.open(store_url, "m")
    assert probe.schema(store_url) == schema
    assert [v for v, _, _ in probe.recorded(store_url)][-1] == future


@pytest.mark.parametrize("upto", range(_longest_migration_list()))
def test_a_previous_version_database_migrates_forward(
    probe: MigrationProbe, store_url: str, upto: int
) -> None:
    """Migrations ``1..upto`` applied by hand; opening applies the rest and keeps the data.

    With one migration this starts from a database that recorded none; when the
    next migration lands it also starts from every released version.
    """
    if upto >= len(probe.migrations):
        pytest.skip(f"this backend has only {len(probe.migrations)} migrations")
    check_migrates_forward(probe, store_url, upto)


def test_the_previous_version_check_holds_for_a_second_migration(
    probe: MigrationProbe,
    store_url: str,
    patched_migrations: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check above, run today against a made-up next migration on a released database."""
    latest = probe.migrations[-1][0]
    extra = (latest + 1, "add a note to minds", "ALTER TABLE minds ADD COLUMN note TEXT;")
    extended = [*probe.migrations, extra]
    monkeypatch.setattr(patched_migrations, extended)
    longer = probe.with_migrations(extended)
    check_migrates_forward(longer, store_url, len(extended) - 1)
    assert any("note TEXT" in sql for name, sql in longer.schema(store_url) if name == "minds")


def check_migrates_forward(probe: MigrationProbe, store_url: str, upto: int) -> None:
    probe.build(store_url, upto)
    old = probe.recorded(store_url)
    assert [v for v, _, _ in old] == list(range(1, upto + 1))
    mind_id = new_id(NOW)
    if probe.has_table(store_url, "minds"):
        probe.add_mind(store_url, mind_id, "old mind")

    storage = open_storage(store_url)
    try:
        assert storage.schema_version() == probe.migrations[-1][0]
        with storage.transaction() as session:
            minds = session.run(ops.ListMinds())
            if upto >= 1:
                assert [(m.id, m.name) for m in minds] == [(mind_id, "old mind")]
            info = session.run(ops.EnsureMind("new mind", new_id(NOW), NOW))
            assert session.run(ops.IsEmpty(info.id)) is True
    finally:
        storage.close()
    recorded = probe.recorded(store_url)
    assert [(v, n) for v, n, _ in recorded] == [(v, n) for v, n, _ in probe.migrations]
    assert recorded[:upto] == old  # what was applied before is left alone


def test_a_failing_migration_rolls_back_completely(
    probe: MigrationProbe,
    store_url: str,
    patched_migrations: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    open_storage(store_url).close()
    before = probe.recorded(store_url)
    latest = probe.migrations[-1][0]
    broken = (
        latest + 1,
        "broken",
        "CREATE TABLE half_done (x INTEGER);\nINSERT INTO no_such_table VALUES (1);\n",
    )
    monkeypatch.setattr(patched_migrations, [*probe.migrations, broken])
    with pytest.raises(RuntimeFailure):
        open_storage(store_url)
    assert probe.recorded(store_url) == before
    assert not probe.has_table(store_url, "half_done")
    monkeypatch.undo()
    storage = open_storage(store_url)
    assert storage.schema_version() == latest
    storage.close()


def test_a_failing_migration_raises_migration_error(
    probe: MigrationProbe,
    store_url: str,
    patched_migrations: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    open_storage(store_url).close()
    broken = (probe.migrations[-1][0] + 1, "broken", "INSERT INTO no_such_table VALUES (1);")
    monkeypatch.setattr(patched_migrations, [*probe.migrations, broken])
    with pytest.raises(noema.MigrationError):
        open_storage(store_url)


#: The migration that gave memories their expansion keys and the keys their index.
KEYS_MIGRATION = 4


def test_the_keys_migration_keeps_old_memories_searchable_and_gives_them_empty_keys(
    probe: MigrationProbe, store_url: str
) -> None:
    if len(probe.migrations) < KEYS_MIGRATION:
        pytest.skip("this backend has no keys migration")
    probe.build(store_url, KEYS_MIGRATION - 1)
    mind_id = new_id(NOW)
    probe.add_mind(store_url, mind_id, "old mind")
    old = [
        make_memory(mind_id, "the old ferry timetable", at=NOW),
        make_memory(mind_id, "an old note on the river", at=NOW),
        make_memory(mind_id, "gone before the keys came", at=NOW),
    ]
    for memory in old:
        probe.add_old_memory(store_url, memory)

    storage = open_storage(store_url)
    try:
        assert storage.schema_version() == probe.migrations[-1][0]

        def search(terms: list[str], field: Any = "content") -> list[str]:
            op = ops.SearchText(mind_id, terms, False, RecallFilters(), None, 10, field)
            with storage.transaction(write=False) as session:
                return [m.id for m, _ in session.run(op)]

        with storage.transaction(write=False) as session:
            stored = session.run(ops.GetMemories(mind_id, [m.id for m in old]))
        assert sorted(stored, key=lambda m: m.id) == sorted(old, key=lambda m: m.id)
        assert all(m.keys == "" for m in stored)
        assert search(["ferry"]) == [old[0].id]
        assert search(["old"]) != [] and search(["ferry"], "keys") == []
        # Old memories take keys, new ones come with theirs, a purge takes both away.
        new = make_memory(mind_id, "a new memory", at=NOW, keys="ferry timetable")
        with storage.transaction() as session:
            session.run(ops.UpdateMemories(mind_id, [(old[1].id, {"keys": "river elbe"})]))
            session.run(ops.InsertMemories([new]))
        assert search(["elbe"], "keys") == [old[1].id]
        assert search(["ferry"], "keys") == [new.id]
        assert search(["ferry"]) == [old[0].id]
        with storage.transaction() as session:
            assert session.run(ops.PurgeMemories(mind_id, [old[2].id, old[1].id])) == 2
        storage.reclaim()
        assert search(["elbe"], "keys") == [] and search(["gone"]) == []
    finally:
        storage.close()
    probe.check_text_indexes(store_url)
