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
"""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str, str]] = [
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

        CREATE TABLE relationships (
            id          TEXT NOT NULL,
            mind_id     TEXT NOT NULL REFERENCES minds(id),
            src         TEXT NOT NULL,
            relation    TEXT NOT NULL,
            dst         TEXT NOT NULL,
            confidence  REAL NOT NULL,
            source      TEXT NOT NULL,
            status      TEXT NOT NULL,
            created_at  INTEGER NOT NULL,
            decided_at  INTEGER,
            PRIMARY KEY (mind_id, id),
            FOREIGN KEY (mind_id, src) REFERENCES memories(mind_id, id),
            FOREIGN KEY (mind_id, dst) REFERENCES memories(mind_id, id)
        );
        CREATE UNIQUE INDEX relationships_edge ON relationships(mind_id, src, relation, dst);
        CREATE INDEX relationships_dst ON relationships(mind_id, dst);

        CREATE TABLE events (
            seq          INTEGER PRIMARY KEY,
            id           TEXT NOT NULL,
            mind_id      TEXT NOT NULL REFERENCES minds(id),
            kind         TEXT NOT NULL,
            at           INTEGER NOT NULL,
            memory_id    TEXT,
            origin_event TEXT,
            payload      TEXT NOT NULL DEFAULT '{}'
        );
        CREATE UNIQUE INDEX events_mind_id ON events(mind_id, id);
        CREATE INDEX events_mind_memory ON events(mind_id, memory_id, seq)
            WHERE memory_id IS NOT NULL;
        CREATE INDEX events_mind_kind ON events(mind_id, kind, seq);

        CREATE TABLE audit (
            mind_id    TEXT NOT NULL REFERENCES minds(id),
            seq        INTEGER NOT NULL,
            at         INTEGER NOT NULL,
            event_id   TEXT NOT NULL,
            action     TEXT NOT NULL,
            digest     TEXT NOT NULL,
            prev_hash  TEXT NOT NULL,
            hash       TEXT NOT NULL,
            PRIMARY KEY (mind_id, seq)
        ) WITHOUT ROWID;
        """,
    ),
    (
        2,
        "workspace snapshots and job leases",
        """
        CREATE TABLE workspace_snapshots (
            mind_id   TEXT PRIMARY KEY REFERENCES minds(id),
            cycle     INTEGER NOT NULL,
            saved_at  INTEGER NOT NULL,
            data      TEXT NOT NULL
        );

        CREATE TABLE job_leases (
            name        TEXT PRIMARY KEY,
            holder      TEXT NOT NULL,
            expires_at  INTEGER NOT NULL
        );
        """,
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
]
