"""Numbered, append-only migrations of the PostgreSQL schema (ADR 0009).

The versions and names follow the SQLite list one for one, so a store's schema
version means the same on both backends. Rows use the codecs of ``_rows``:
times are ``bigint`` microseconds since the epoch, JSON columns hold the same
compact text. Identifiers and keys are ``COLLATE "C"`` so they sort byte-wise,
as SQLite sorts them. Never edit a released migration: append a new one.

``{vector_type}`` in a migration is ``vector`` (pgvector) when the extension is
in the database and ``bytea`` (float32 bytes, searched exactly) when it is not;
the choice is made once, when migration 3 runs.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str, str]] = [
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

        CREATE TABLE relationships (
            id          text COLLATE "C" NOT NULL,
            mind_id     text COLLATE "C" NOT NULL REFERENCES minds(id),
            src         text COLLATE "C" NOT NULL,
            relation    text NOT NULL,
            dst         text COLLATE "C" NOT NULL,
            confidence  double precision NOT NULL,
            source      text NOT NULL,
            status      text NOT NULL,
            created_at  bigint NOT NULL,
            decided_at  bigint,
            PRIMARY KEY (mind_id, id),
            FOREIGN KEY (mind_id, src) REFERENCES memories (mind_id, id),
            FOREIGN KEY (mind_id, dst) REFERENCES memories (mind_id, id)
        );
        CREATE UNIQUE INDEX relationships_edge ON relationships (mind_id, src, relation, dst);
        CREATE INDEX relationships_dst ON relationships (mind_id, dst);

        CREATE TABLE events (
            seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            id           text COLLATE "C" NOT NULL,
            mind_id      text COLLATE "C" NOT NULL REFERENCES minds(id),
            kind         text COLLATE "C" NOT NULL,
            at           bigint NOT NULL,
            memory_id    text COLLATE "C",
            origin_event text COLLATE "C",
            payload      text NOT NULL DEFAULT '{}'
        );
        CREATE UNIQUE INDEX events_mind_id ON events (mind_id, id);
        CREATE INDEX events_mind_memory ON events (mind_id, memory_id, seq)
            WHERE memory_id IS NOT NULL;
        CREATE INDEX events_mind_kind ON events (mind_id, kind, seq);

        CREATE TABLE audit (
            mind_id    text COLLATE "C" NOT NULL REFERENCES minds(id),
            seq        bigint NOT NULL,
            at         bigint NOT NULL,
            event_id   text COLLATE "C" NOT NULL,
            action     text NOT NULL,
            digest     text NOT NULL,
            prev_hash  text NOT NULL,
            hash       text NOT NULL,
            PRIMARY KEY (mind_id, seq)
        );
        """,
    ),
    (
        2,
        "workspace snapshots and job leases",
        """
        CREATE TABLE workspace_snapshots (
            mind_id   text COLLATE "C" PRIMARY KEY REFERENCES minds(id),
            cycle     bigint NOT NULL,
            saved_at  bigint NOT NULL,
            data      text NOT NULL
        );

        CREATE TABLE job_leases (
            name        text COLLATE "C" PRIMARY KEY,
            holder      text COLLATE "C" NOT NULL,
            expires_at  bigint NOT NULL
        );
        """,
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
]
