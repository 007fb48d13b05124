"""Numbered, append-only migrations of the PostgreSQL schema (ADR 0009).

The versions and names follow the SQLite list one for one, so a store's schema
version means the same on both backends. Rows use the codecs of ``_rows``:
times are ``bigint`` microseconds since the epoch, JSON columns hold the same
compact text. Identifiers and keys are ``COLLATE "C"`` so they sort byte-wise,
as SQLite sorts them. Never edit a released migration: append a new one.

``{vector_type}`` in a migration is ``vector`` (pgvector) when the extension is
in the database and ``bytea`` (float32 bytes, searched exactly) when it is not;
the choice is made once, when migration 3 runs.

A store created with ``partitions=N`` (ADR 0024) runs the same migrations as
``partitioned(MIGRATIONS, N)`` renders them: every table with a ``mind_id``
column is ``PARTITION BY HASH (mind_id)`` with N partitions, and its keys hold
``mind_id`` (a unique key of a partitioned table must hold the partition key).
Indexes made on such a table, HNSW and GIN ones too, are made on each partition.

``migrate`` applies the list on open, through the runner both backends share.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

import psycopg

from noema.errors import ConfigError, MigrationError
from noema.storage import _schema as shared
from noema.storage._migrations import Migration, Migrator, check_readable, refuse_newer
from noema.storage.postgres.options import first_line, lock_key

__all__ = ["MIGRATIONS", "migrate", "partitioned"]

#: PostgreSQL's types in the templates of the tables both backends hold alike (``_schema``).
_TYPES: shared.Types = {
    "id": 'text COLLATE "C"',
    "text": "text",
    "real": "double precision",
    "int": "bigint",
    "serial": "bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    "blob": "bytea",
    "without_rowid": "",
}

#: ``noema.ids.mind_digest`` of a ``minds`` row, in SQL.
_MIND_DIGEST = (
    "encode(sha256(convert_to(id || chr(31) || name || chr(31) || created_at::text, 'UTF8')), "
    "'hex')"
)

MIGRATIONS: list[Migration] = [
    (
        1,
        "initial schema",
        """
        -- The text search configuration: English snowball stemming with no stop
        -- words, so any word can be searched for (as with SQLite's porter tokenizer).
        CREATE TEXT SEARCH DICTIONARY noema_stem (TEMPLATE = snowball, Language = english);
        CREATE TEXT SEARCH CONFIGURATION noema (COPY = english);
        ALTER TEXT SEARCH CONFIGURATION noema
            ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
            WITH noema_stem;

        -- Words as SQLite's unicode61 tokenizer sees them: ASCII punctuation separates
        -- (so "INC-7" is "inc" and "7", never the signed number "-7", and "well-known"
        -- two words, not three).
        CREATE FUNCTION noema_words(content text) RETURNS text
        LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
            SELECT regexp_replace(content, '[!-/:-@[-`{-~]+', ' ', 'g')
        $$;

        CREATE TABLE minds (
            id          text COLLATE "C" PRIMARY KEY,
            name        text COLLATE "C" NOT NULL UNIQUE,
            created_at  bigint NOT NULL
        );

        CREATE TABLE memories (
            seq            bigint GENERATED ALWAYS AS IDENTITY,
            id             text COLLATE "C" NOT NULL,
            mind_id        text COLLATE "C" NOT NULL REFERENCES minds(id),
            kind           text NOT NULL,
            epistemic      text NOT NULL,
            channel        text NOT NULL,
            content        text NOT NULL,
            summary        text,
            key            text COLLATE "C",
            tags           text NOT NULL DEFAULT '[]',
            payload        text NOT NULL DEFAULT '{}',
            confidence     double precision NOT NULL,
            alpha          double precision NOT NULL,
            beta           double precision NOT NULL,
            importance     double precision NOT NULL,
            salience       double precision NOT NULL,
            trust          double precision NOT NULL,
            credibility    double precision NOT NULL,
            activation     double precision NOT NULL,
            activation_at  bigint NOT NULL,
            status         text NOT NULL,
            valid_from     bigint NOT NULL,
            valid_to       bigint,
            recorded_at    bigint NOT NULL,
            last_accessed  bigint,
            access_count   integer NOT NULL DEFAULT 0,
            origin_event   text COLLATE "C",
            content_hash   text COLLATE "C" NOT NULL,
            feedback_count integer NOT NULL DEFAULT 0,
            feedback_mean  double precision NOT NULL DEFAULT 0,
            tsv            tsvector GENERATED ALWAYS AS (to_tsvector('noema', noema_words(content)))
                           STORED,
            PRIMARY KEY (mind_id, id)
        );
        CREATE UNIQUE INDEX memories_seq ON memories (seq);
        CREATE UNIQUE INDEX memories_active_hash
            ON memories (mind_id, content_hash) WHERE status = 'active';
        CREATE INDEX memories_mind_status_time ON memories (mind_id, status, recorded_at);
        CREATE INDEX memories_mind_key ON memories (mind_id, key) WHERE key IS NOT NULL;
        -- A small pending list: searches read it row by row until it is merged.
        CREATE INDEX memories_tsv ON memories USING gin (tsv) WITH (gin_pending_list_limit = 512);

        -- What BM25 needs of the whole table: documents and tokens, kept per mind
        -- (each mind's writers are serialised) and summed at query time.
        CREATE TABLE text_stats (
            mind_id    text COLLATE "C" PRIMARY KEY REFERENCES minds(id),
            documents  bigint NOT NULL,
            tokens     bigint NOT NULL
        );
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
        ALTER TABLE memories ADD COLUMN decay text NOT NULL DEFAULT 'stable';

        -- One vector per (memory, model, dimensions). An HNSW index per
        -- (model, dimensions) is added beside the table when a search first needs it.
        CREATE TABLE vectors (
            id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            mind_id     text COLLATE "C" NOT NULL,
            memory_id   text COLLATE "C" NOT NULL,
            model       text COLLATE "C" NOT NULL,
            dims        integer NOT NULL CHECK (dims > 0),
            vector      {vector_type} NOT NULL,
            FOREIGN KEY (mind_id, memory_id) REFERENCES memories (mind_id, id)
        );
        CREATE UNIQUE INDEX vectors_key ON vectors (mind_id, model, dims, memory_id);

        -- A memory refers_to an entity node (a normalised name, quote, code or date).
        CREATE TABLE entity_refs (
            mind_id     text COLLATE "C" NOT NULL,
            entity      text COLLATE "C" NOT NULL,
            memory_id   text COLLATE "C" NOT NULL,
            PRIMARY KEY (mind_id, entity, memory_id),
            FOREIGN KEY (mind_id, memory_id) REFERENCES memories (mind_id, id)
        );
        """,
    ),
    (
        4,
        "expansion keys with their own full-text index",
        """
        -- Derived expansion text (entities, keyphrases, dates), indexed apart from
        -- content and tokenised the same way; old memories have no keys yet.
        ALTER TABLE memories ADD COLUMN keys text NOT NULL DEFAULT '';
        ALTER TABLE memories ADD COLUMN keys_tsv tsvector
            GENERATED ALWAYS AS (to_tsvector('noema', noema_words(keys))) STORED;
        CREATE INDEX memories_keys_tsv ON memories USING gin (keys_tsv)
            WITH (gin_pending_list_limit = 512);

        -- BM25 of keys counts the same documents as content (every memory), and
        -- its own tokens.
        ALTER TABLE text_stats ADD COLUMN keys_tokens bigint NOT NULL DEFAULT 0;
        """,
    ),
    (5, "audit entries by event, events by position", shared.render(shared.EVENT_LOOKUPS, _TYPES)),
    (6, "lifecycle, edge evidence, co-occurrence", shared.render(shared.KNOWLEDGE_HEALTH, _TYPES)),
    (7, "worlds, composed vectors, history", shared.render(shared.WORLDS_AND_HISTORY, _TYPES)),
    (8, "federation: peers", shared.render(shared.FEDERATION, _TYPES)),
    (9, "the recent order reads valid time", shared.render(shared.VALID_TIME_ORDER, _TYPES)),
    (
        10,
        "a digest of each mind's row",
        shared.render(shared.MIND_DIGEST, _TYPES) + f"UPDATE minds SET digest = {_MIND_DIGEST};\n",
    ),
    (11, "threads: each memory's conversation and place", shared.render(shared.THREADS, _TYPES)),
]


#: A table's statement in a migration: its name, and its columns and constraints
#: (no ``;`` inside, so a match never runs on into the next statement).
_CREATE_TABLE = re.compile(r"CREATE TABLE (\w+) \(([^;]*?)\n\s*\)(?=\s*;)")
#: A per-mind table's column that counts up, and is the key on its own.
_IDENTITY_KEY = re.compile(r"^(\s*)(\w+)(\s+bigint GENERATED ALWAYS AS IDENTITY) PRIMARY KEY", re.M)
_UNIQUE_INDEX = re.compile(r"(CREATE UNIQUE INDEX \w+ ON (\w+) ?\()([^)]*)\)")


def partitioned(migrations: Sequence[Migration], partitions: int) -> list[Migration]:
    """``migrations`` as they run on a store with ``partitions`` hash partitions by mind.

    A table is per mind when it has a ``mind_id`` column: it is made
    ``PARTITION BY HASH (mind_id)``, with partitions ``<table>_p0`` onwards. A key
    that does not hold ``mind_id`` (``seq`` and ``id`` count up over all minds)
    takes it as its last column, so a look-up by the counter alone still uses it.
    Other tables (``minds``, ``job_leases``) stay as they are. ``0``: unchanged.
    """
    if not partitions:
        return list(migrations)
    per_mind: set[str] = set()

    def table(match: re.Match[str]) -> str:
        name, body = match[1], match[2]
        if not re.search(r"^\s*mind_id\s", body, re.M):
            return match[0]
        per_mind.add(name)
        keys = [m[2] for m in _IDENTITY_KEY.finditer(body)]
        body = _IDENTITY_KEY.sub(r"\1\2\3", body)
        body += "".join(f",\n            PRIMARY KEY ({key}, mind_id)" for key in keys)
        each = "".join(
            f";\n        CREATE TABLE {name}_p{i} PARTITION OF {name} "
            f"FOR VALUES WITH (MODULUS {partitions}, REMAINDER {i})"
            for i in range(partitions)
        )
        return f"CREATE TABLE {name} ({body}\n        ) PARTITION BY HASH (mind_id){each}"

    def unique(match: re.Match[str]) -> str:
        columns = [c.strip() for c in match[3].split(",")]
        if match[2] not in per_mind or "mind_id" in columns:
            return match[0]
        return f"{match[1]}{match[3]}, mind_id)"

    result: list[Migration] = []
    for version, name, script in migrations:
        script = _CREATE_TABLE.sub(table, script)
        result.append((version, name, _UNIQUE_INDEX.sub(unique, script)))
    return result


def _partitions(conn: psycopg.Connection[Any]) -> int | None:
    """The partitions of the store's ``memories``: 0 unpartitioned, None before migration 1."""
    row = conn.execute(
        "SELECT (SELECT count(*) FROM pg_inherits WHERE inhparent = c.oid) "
        "FROM pg_class c WHERE c.oid = to_regclass('memories')"
    ).fetchone()
    return None if row is None else int(row[0])


def _check_current(conn: psycopg.Connection[Any], database: str) -> None:
    """Refuse a read-only database (a replica) whose schema is not this Noema's.

    Raises:
        MigrationError: Migrations are missing (open the primary first), or the
            schema is newer than this Noema.
    """
    applied: set[int] = set()
    if conn.execute("SELECT to_regclass('schema_migrations')").fetchone() != (None,):
        applied = {int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations")}
    known = {version for version, _, _ in MIGRATIONS}
    refuse_newer(database, applied, known)
    if known - applied:
        raise MigrationError(
            f"database {database} is read-only (a replica?) and lacks migration "
            f"{min(known - applied)} and later: open it on the primary first"
        )


class _Migrator(Migrator):
    ledger = (
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        "version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)"
    )
    record = "INSERT INTO schema_migrations (version, name, applied_at) VALUES (%s, %s, now())"

    def __init__(
        self, conn: psycopg.Connection[Any], database: str, vectors: Literal["auto", "off"]
    ) -> None:
        super().__init__(database)
        self._conn = conn
        self._vectors = vectors
        self._vector_type: str | None = None

    def rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = self._conn.execute(query, params)
        return cursor.fetchall() if cursor.description else []

    def apply(self, script: str) -> None:
        if "{vector_type}" in script:
            self._vector_type = self._vector_type or self._choose_vector_type()
            script = script.replace("{vector_type}", self._vector_type)
        with self._conn.transaction():
            self._conn.execute(script)

    def cause(self, exc: Exception) -> str | None:
        return first_line(exc) if isinstance(exc, psycopg.Error) else None

    def _choose_vector_type(self) -> str:
        """``vector`` when pgvector is (or can be) installed in this database, else ``bytea``."""
        conn = self._conn
        if self._vectors == "off":
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


def migrate(
    conn: psycopg.Connection[Any],
    database: str,
    vectors: Literal["auto", "off"],
    partitions: int | None = None,
) -> bool:
    """Apply missing migrations under a lock; return whether vectors use pgvector.

    ``database`` names it in errors; ``vectors`` and ``partitions`` are those of
    ``PostgresOptions``. A new store takes ``partitions`` (None: 0); an existing
    one keeps its own, and asking for another number is refused. On a read-only
    server (a replica) nothing is migrated: the schema must be current.

    Raises:
        ConfigError: ``partitions`` is not what the store was created with.
        MigrationError: A migration failed, the schema is newer than this Noema,
            or a read-only server lacks migrations.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("noema:migrate"),))
        existing = _partitions(conn)
        if existing is not None and partitions is not None and partitions != existing:
            created = f"with {existing} partitions" if existing else "unpartitioned"
            raise ConfigError(
                f"database URL option partitions={partitions}: the store at {database} was "
                f"created {created}, and partitioning is chosen only when a store is created "
                "(copy the minds into a new store to change it)"
            )
        chosen = existing if existing is not None else partitions or 0
        if conn.execute("SHOW transaction_read_only").fetchone() == ("on",):
            _check_current(conn, database)  # a replica: read sessions only, nothing to migrate
        else:
            _Migrator(conn, database, vectors).run(partitioned(MIGRATIONS, chosen))
        return _uses_pgvector(conn)


def read_existing(conn: psycopg.Connection[Any], shown: str) -> bool:
    """Check a store opened to be read only (a peer's); return whether vectors use pgvector.

    Nothing is created or migrated: the connection is read-only, and only the
    catalog and ``schema_migrations`` are read.

    Raises:
        ConfigError: the database holds no Noema store, or one at another schema.
    """
    with conn.transaction():
        applied: set[int] = set()
        if conn.execute("SELECT to_regclass('schema_migrations')").fetchone() != (None,):
            applied = {int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations")}
        check_readable(shown, applied, {version for version, _, _ in MIGRATIONS})
        return _uses_pgvector(conn)


def _uses_pgvector(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = to_regclass('vectors') AND attname = 'vector'"
    ).fetchone()
    return row is not None and row[0] == "vector"
