"""Numbered, append-only migrations of the SQLite schema.

Never edit a released migration: append a new one. Times are integer
microseconds since the Unix epoch (UTC); JSON columns hold compact JSON text.
Since version 5 every mind has its own full-text tables (content and keys,
``memories_fts_N`` and ``memories_keys_fts_N`` for the mind's ``text_index``
N), so bm25's statistics are the mind's own. They are not in this list: the
store creates a mind's tables with the mind (``create_text_indexes``), and on
opening, for any mind that lacks them. The storage operations keep them in
step: new memories enter in bulk from ``InsertMemories`` (one ``INSERT ...
SELECT`` per batch is five times faster than a per-row trigger), a change of
keys re-indexes its rows, and a purge takes its rows out.

``migrate`` applies the list on open, through the runner both backends share.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from noema.ids import mind_digest
from noema.storage import _schema as shared
from noema.storage._migrations import Migration, Migrator, check_readable
from noema.storage._sqlite_text import create_missing_text_indexes

#: SQLite's types in the templates of the tables both backends hold alike (``_schema``).
_TYPES: shared.Types = {
    "id": "TEXT",
    "text": "TEXT",
    "real": "REAL",
    "int": "INTEGER",
    "serial": "INTEGER PRIMARY KEY",
    "blob": "BLOB",
    "without_rowid": " WITHOUT ROWID",
}

MIGRATIONS: list[Migration] = [
    (
        1,
        "initial schema",
        """
        CREATE TABLE minds (
            id          TEXT PRIMARY KEY,
            name        TEXT NOT NULL UNIQUE,
            created_at  INTEGER NOT NULL
        );

        CREATE TABLE memories (
            rowid          INTEGER PRIMARY KEY,
            id             TEXT NOT NULL,
            mind_id        TEXT NOT NULL REFERENCES minds(id),
            kind           TEXT NOT NULL,
            epistemic      TEXT NOT NULL,
            channel        TEXT NOT NULL,
            content        TEXT NOT NULL,
            summary        TEXT,
            key            TEXT,
            tags           TEXT NOT NULL DEFAULT '[]',
            payload        TEXT NOT NULL DEFAULT '{}',
            confidence     REAL NOT NULL,
            alpha          REAL NOT NULL,
            beta           REAL NOT NULL,
            importance     REAL NOT NULL,
            salience       REAL NOT NULL,
            trust          REAL NOT NULL,
            credibility    REAL NOT NULL,
            activation     REAL NOT NULL,
            activation_at  INTEGER NOT NULL,
            status         TEXT NOT NULL,
            valid_from     INTEGER NOT NULL,
            valid_to       INTEGER,
            recorded_at    INTEGER NOT NULL,
            last_accessed  INTEGER,
            access_count   INTEGER NOT NULL DEFAULT 0,
            origin_event   TEXT,
            content_hash   TEXT NOT NULL,
            feedback_count INTEGER NOT NULL DEFAULT 0,
            feedback_mean  REAL NOT NULL DEFAULT 0
        );
        CREATE UNIQUE INDEX memories_mind_id ON memories(mind_id, id);
        CREATE UNIQUE INDEX memories_active_hash
            ON memories(mind_id, content_hash) WHERE status = 'active';
        CREATE INDEX memories_mind_status_time ON memories(mind_id, status, recorded_at);
        CREATE INDEX memories_mind_key ON memories(mind_id, key) WHERE key IS NOT NULL;

        CREATE VIRTUAL TABLE memories_fts USING fts5(
            content,
            content = 'memories',
            content_rowid = 'rowid',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content)
                VALUES ('delete', old.rowid, old.content);
        END;
"""
        + shared.render(shared.INITIAL_SHARED, _TYPES),
    ),
    (
        2,
        "workspace snapshots and job leases",
        shared.render(shared.SNAPSHOTS_AND_LEASES, _TYPES),
    ),
    (
        3,
        "vectors keyed by model, entity references, decay classes",
        """
        ALTER TABLE memories ADD COLUMN decay TEXT NOT NULL DEFAULT 'stable';

        -- One vector per (memory, model, dimensions); ids only grow, so an index
        -- kept outside the database catches up from the last id it holds.
        CREATE TABLE vectors (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            mind_id     TEXT NOT NULL,
            memory_id   TEXT NOT NULL,
            model       TEXT NOT NULL,
            dims        INTEGER NOT NULL,
            vector      BLOB NOT NULL,
            FOREIGN KEY (mind_id, memory_id) REFERENCES memories(mind_id, id)
        );
        CREATE UNIQUE INDEX vectors_key ON vectors(mind_id, model, dims, memory_id);
        CREATE INDEX vectors_scan ON vectors(mind_id, model, dims, id);

        -- A memory refers_to an entity node (a normalised name, quote, code or date).
        CREATE TABLE entity_refs (
            mind_id     TEXT NOT NULL,
            entity      TEXT NOT NULL,
            memory_id   TEXT NOT NULL,
            PRIMARY KEY (mind_id, entity, memory_id),
            FOREIGN KEY (mind_id, memory_id) REFERENCES memories(mind_id, id)
        ) WITHOUT ROWID;
        """,
    ),
    (
        4,
        "expansion keys with their own full-text index",
        """
        -- Derived expansion text (entities, keyphrases, dates), indexed apart from
        -- content and tokenised the same way. Every memory has a row in both
        -- indexes, so both count the same documents; old memories have no keys yet.
        ALTER TABLE memories ADD COLUMN keys TEXT NOT NULL DEFAULT '';

        CREATE VIRTUAL TABLE memories_keys_fts USING fts5(
            keys,
            content = 'memories',
            content_rowid = 'rowid',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        INSERT INTO memories_keys_fts(rowid, keys) SELECT rowid, keys FROM memories;
        CREATE TRIGGER memories_keys_fts_delete AFTER DELETE ON memories BEGIN
            INSERT INTO memories_keys_fts(memories_keys_fts, rowid, keys)
                VALUES ('delete', old.rowid, old.keys);
        END;
        -- Keys are rebuilt (reindex) where content never changes: re-index the row.
        CREATE TRIGGER memories_keys_fts_update AFTER UPDATE OF keys ON memories
        WHEN old.keys IS NOT new.keys BEGIN
            INSERT INTO memories_keys_fts(memories_keys_fts, rowid, keys)
                VALUES ('delete', old.rowid, old.keys);
            INSERT INTO memories_keys_fts(rowid, keys) VALUES (new.rowid, new.keys);
        END;
        """,
    ),
    (
        5,
        "full-text indexes per mind",
        """
        -- Each mind's full-text tables are numbered by text_index; the store
        -- creates and fills them (see the module's docstring).
        ALTER TABLE minds ADD COLUMN text_index INTEGER;
        UPDATE minds SET text_index = (SELECT count(*) FROM minds AS m WHERE m.id <= minds.id);
        CREATE UNIQUE INDEX minds_text_index ON minds(text_index);
        DROP TRIGGER memories_fts_delete;
        DROP TRIGGER memories_keys_fts_delete;
        DROP TRIGGER memories_keys_fts_update;
        DROP TABLE memories_fts;
        DROP TABLE memories_keys_fts;
        """,
    ),
    (6, "audit entries by event, events by position", shared.render(shared.EVENT_LOOKUPS, _TYPES)),
    (7, "lifecycle, edge evidence, co-occurrence", shared.render(shared.KNOWLEDGE_HEALTH, _TYPES)),
    (8, "worlds, composed vectors, history", shared.render(shared.WORLDS_AND_HISTORY, _TYPES)),
    (9, "federation: peers", shared.render(shared.FEDERATION, _TYPES)),
    (10, "the recent order reads valid time", shared.render(shared.VALID_TIME_ORDER, _TYPES)),
    (11, "a digest of each mind's row", shared.render(shared.MIND_DIGEST, _TYPES)),
    (12, "threads: each memory's conversation and place", shared.render(shared.THREADS, _TYPES)),
]


class _Migrator(Migrator):
    ledger = (
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    record = (
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, datetime('now'))"
    )

    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        super().__init__(path)
        self._conn = conn

    def rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._conn.execute(query, params).fetchall()

    def apply(self, script: str) -> None:
        for statement in _split_sql(script):
            self._conn.execute(statement)

    def cause(self, exc: Exception) -> str | None:
        return str(exc) if isinstance(exc, sqlite3.Error) else None


def migrate(conn: sqlite3.Connection, path: str) -> None:
    """Bring the database at ``path`` up to date in one write transaction.

    Then every mind has its full-text tables (those of minds older than
    migration 5 are created here) and, once migration 11 has run, its digest.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        digests = _has_column(conn, "minds", "digest")
        _Migrator(conn, path).run(MIGRATIONS)
        create_missing_text_indexes(conn)
        if not digests:  # migration 11 just ran: the minds already there get their digest
            rows = conn.execute("SELECT id, name, created_at FROM minds").fetchall()
            conn.executemany(
                "UPDATE minds SET digest = ? WHERE id = ?",
                [(mind_digest(*row), row[0]) for row in rows],
            )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLite may have rolled back already; keep the first error
            conn.execute("ROLLBACK")
        raise


def check_current(conn: sqlite3.Connection, shown: str) -> None:
    """Refuse a database, opened read-only, whose schema is not exactly this Noema's.

    Raises:
        ConfigError: it is not a Noema store, or its schema is older or newer.
        sqlite3.Error: it cannot be read (not a database at all, for one).
    """
    applied: set[int] = set()
    if conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone():
        applied = {int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations")}
    check_readable(shown, applied, {version for version, _, _ in MIGRATIONS})


def _has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})"))


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
