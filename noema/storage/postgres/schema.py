"""Numbered, append-only migrations of the PostgreSQL schema (ADR 0009).

The versions and names follow the SQLite list one for one, so a store's schema
version means the same on both backends. Rows use the codecs of ``_rows``:
times are ``bigint`` microseconds since the epoch, JSON columns hold the same
compact text. Identifiers and keys are ``COLLATE "C"`` so they sort byte-wise,
as SQLite sorts them. Never edit a released migration: append a new one.

``{vector_type}`` in a migration is ``vector`` (pgvector) when the extension is
in the database and ``bytea`` (float32 bytes, searched exactly) when it is not;
the choice is made once, when migration 3 runs.

``migrate`` applies the list on open, through the runner both backends share.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import psycopg

from noema.storage import _schema as shared
from noema.storage._migrations import Migration, Migrator
from noema.storage.postgres.options import first_line, lock_key

__all__ = ["MIGRATIONS", "migrate"]

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
]


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


def migrate(conn: psycopg.Connection[Any], database: str, vectors: Literal["auto", "off"]) -> bool:
    """Apply missing migrations under a lock; return whether vectors use pgvector.

    ``database`` names it in errors; ``vectors`` is ``PostgresOptions.vectors``.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key("noema:migrate"),))
        _Migrator(conn, database, vectors).run(MIGRATIONS)
        row = conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = to_regclass('vectors') AND attname = 'vector'"
        ).fetchone()
    return row is not None and row[0] == "vector"
