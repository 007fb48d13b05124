"""The tables both SQL backends hold alike, written once over placeholders for their types.

Each backend's migrations render these with its own ``Types``: ``$id`` is an
identifier or key (sorted byte-wise), ``$text`` other text, ``$real`` a
double, ``$int`` a 64-bit integer (times are microseconds), ``$serial`` a
64-bit key the database counts up, and ``$without_rowid`` what ends a table
stored by its primary key. A template is part of the released migration that
renders it: never edit one; change the schema with a new migration.
"""

from __future__ import annotations

from collections.abc import Mapping
from string import Template

__all__ = [
    "EVENT_LOOKUPS",
    "FEDERATION",
    "INITIAL_SHARED",
    "KNOWLEDGE_HEALTH",
    "MIND_DIGEST",
    "SNAPSHOTS_AND_LEASES",
    "THREADS",
    "VALID_TIME_ORDER",
    "WORLDS_AND_HISTORY",
    "Types",
    "render",
]

#: A backend's SQL for each placeholder.
Types = Mapping[str, str]


def render(template: str, types: Types) -> str:
    """``template`` with a backend's types in its placeholders."""
    return Template(template).substitute(types)


#: Migration 1, after ``minds`` and ``memories``: edges, events and the audit chain.
INITIAL_SHARED = """
        CREATE TABLE relationships (
            id          $id NOT NULL,
            mind_id     $id NOT NULL REFERENCES minds(id),
            src         $id NOT NULL,
            relation    $text NOT NULL,
            dst         $id NOT NULL,
            confidence  $real NOT NULL,
            source      $text NOT NULL,
            status      $text NOT NULL,
            created_at  $int NOT NULL,
            decided_at  $int,
            PRIMARY KEY (mind_id, id),
            FOREIGN KEY (mind_id, src) REFERENCES memories(mind_id, id),
            FOREIGN KEY (mind_id, dst) REFERENCES memories(mind_id, id)
        );
        CREATE UNIQUE INDEX relationships_edge ON relationships(mind_id, src, relation, dst);
        CREATE INDEX relationships_dst ON relationships(mind_id, dst);

        CREATE TABLE events (
            seq          $serial,
            id           $id NOT NULL,
            mind_id      $id NOT NULL REFERENCES minds(id),
            kind         $id NOT NULL,
            at           $int NOT NULL,
            memory_id    $id,
            origin_event $id,
            payload      $text NOT NULL DEFAULT '{}'
        );
        CREATE UNIQUE INDEX events_mind_id ON events(mind_id, id);
        CREATE INDEX events_mind_memory ON events(mind_id, memory_id, seq)
            WHERE memory_id IS NOT NULL;
        CREATE INDEX events_mind_kind ON events(mind_id, kind, seq);

        CREATE TABLE audit (
            mind_id    $id NOT NULL REFERENCES minds(id),
            seq        $int NOT NULL,
            at         $int NOT NULL,
            event_id   $id NOT NULL,
            action     $text NOT NULL,
            digest     $text NOT NULL,
            prev_hash  $text NOT NULL,
            hash       $text NOT NULL,
            PRIMARY KEY (mind_id, seq)
        )$without_rowid;
        """

#: Migration 2, all of it: the workspace snapshot of each mind and the job leases.
SNAPSHOTS_AND_LEASES = """
        CREATE TABLE workspace_snapshots (
            mind_id   $id PRIMARY KEY REFERENCES minds(id),
            cycle     $int NOT NULL,
            saved_at  $int NOT NULL,
            data      $text NOT NULL
        );

        CREATE TABLE job_leases (
            name        $id PRIMARY KEY,
            holder      $id NOT NULL,
            expires_at  $int NOT NULL
        );
        """

#: A later migration on both backends: a mind's audit entry found by its event
#: (``GetAuditEntry``, the TUI's detail) and a mind's newest events (the faces'
#: change detection) by index, not by a scan.
EVENT_LOOKUPS = """
        CREATE INDEX audit_mind_event ON audit(mind_id, event_id);
        CREATE INDEX events_mind_seq ON events(mind_id, seq);
        """

#: A later migration on both backends (ADR 0017): each memory's lifecycle beside its
#: status, the evidence of a staged edge, and the co-occurrence edges of a mind
#: (``a < b``; ``weight`` as of ``updated_at``, decaying from there).
KNOWLEDGE_HEALTH = """
        ALTER TABLE memories ADD COLUMN lifecycle $id NOT NULL DEFAULT 'active';
        ALTER TABLE relationships ADD COLUMN evidence $text NOT NULL DEFAULT '{}';

        CREATE TABLE cooccurrence (
            mind_id     $id NOT NULL REFERENCES minds(id),
            a           $id NOT NULL,
            b           $id NOT NULL,
            weight      $real NOT NULL,
            updated_at  $int NOT NULL,
            PRIMARY KEY (mind_id, a, b),
            FOREIGN KEY (mind_id, a) REFERENCES memories(mind_id, id),
            FOREIGN KEY (mind_id, b) REFERENCES memories(mind_id, id)
        )$without_rowid;
        CREATE INDEX cooccurrence_b ON cooccurrence(mind_id, b);
        CREATE INDEX relationships_status ON relationships(mind_id, status, id);
        """

#: A later migration on both backends (ADR 0018): the world each memory belongs to,
#: the tree of worlds and their ``refers_to`` links, each world's composed vector
#: (a float64 sum of its memories' vectors and how many were added), and the
#: transaction-time history of each memory's status, lifecycle and validity: a
#: span ``[sys_from, sys_to)`` per earlier state; the row holds the state since
#: ``changed_at`` (or ``recorded_at``).
WORLDS_AND_HISTORY = """
        ALTER TABLE memories ADD COLUMN world $id NOT NULL DEFAULT '';
        ALTER TABLE memories ADD COLUMN changed_at $int;
        CREATE INDEX memories_world ON memories(mind_id, world);
        -- Memories changed before: the last time an event changed them (verify replays it).
        UPDATE memories SET changed_at = (
            SELECT max(e.at) FROM events e
            WHERE e.mind_id = memories.mind_id AND (
                (e.memory_id = memories.id AND e.kind IN ('memory_superseded',
                    'memory_retracted', 'memory_restored', 'memory_lifecycle_changed'))
                OR (e.kind = 'memory_merged'
                    AND e.payload LIKE '%"merged":"' || memories.id || '"%')))
        WHERE EXISTS (SELECT 1 FROM events e WHERE e.mind_id = memories.mind_id
                      AND (e.memory_id = memories.id OR e.kind = 'memory_merged'));
        UPDATE memories SET changed_at = recorded_at WHERE changed_at < recorded_at;

        CREATE TABLE worlds (
            mind_id     $id NOT NULL REFERENCES minds(id),
            id          $id NOT NULL,
            parent_id   $id NOT NULL,
            name        $text NOT NULL,
            created_at  $int NOT NULL,
            PRIMARY KEY (mind_id, id)
        )$without_rowid;
        CREATE UNIQUE INDEX worlds_name ON worlds(mind_id, parent_id, name);

        CREATE TABLE world_links (
            mind_id     $id NOT NULL REFERENCES minds(id),
            src         $id NOT NULL,
            dst         $id NOT NULL,
            created_at  $int NOT NULL,
            PRIMARY KEY (mind_id, src, dst)
        )$without_rowid;

        CREATE TABLE world_vectors (
            mind_id     $id NOT NULL REFERENCES minds(id),
            world       $id NOT NULL,
            model       $id NOT NULL,
            dims        $int NOT NULL,
            total       $blob NOT NULL,
            members     $int NOT NULL,
            PRIMARY KEY (mind_id, model, dims, world)
        )$without_rowid;

        CREATE TABLE memory_history (
            mind_id     $id NOT NULL,
            memory_id   $id NOT NULL,
            sys_from    $int NOT NULL,
            sys_to      $int NOT NULL,
            status      $id NOT NULL,
            lifecycle   $id NOT NULL,
            valid_to    $int,
            PRIMARY KEY (mind_id, memory_id, sys_from),
            FOREIGN KEY (mind_id, memory_id) REFERENCES memories(mind_id, id)
        )$without_rowid;
        """

#: A later migration on both backends (ADR 0019): each mind's subscriptions to peer
#: minds (``url`` NULL: the subscriber's own store) and its Beta trust in each.
FEDERATION = """
        CREATE TABLE peers (
            mind_id     $id NOT NULL REFERENCES minds(id),
            name        $id NOT NULL,
            url         $text,
            peer_mind   $text NOT NULL,
            alpha       $real NOT NULL,
            beta        $real NOT NULL,
            created_at  $int NOT NULL,
            PRIMARY KEY (mind_id, name)
        )$without_rowid;
        """

#: A later migration on both backends (ADR 0034): recall's "most recent first" reads
#: valid time (``valid_from``); the timeline keeps reading ``recorded_at``.
VALID_TIME_ORDER = """
        CREATE INDEX memories_mind_status_valid ON memories(mind_id, status, valid_from);
        """

#: A later migration on both backends (ADR 0037): each mind's row is hashed
#: (``noema.ids.mind_digest``) so verify shows an edited name or creation time.
#: The digests of the minds already there are written by the backend: PostgreSQL
#: in the same migration, SQLite (which has no sha256 in SQL) right after it.
MIND_DIGEST = """
        ALTER TABLE minds ADD COLUMN digest $text;
        """

#: A later migration on both backends: the thread (a conversation) each memory was
#: written in, ``''`` for none, and its place in it, which the write gives (the
#: next after the thread's highest). Thread order is ``(position, id)``: the index
#: reads a memory's nearest neighbours either side without a sort. It holds only
#: memories in a thread (a query uses it by saying ``thread <> ''``), so it never
#: stands in for ``(mind_id, id)`` in the plans of other reads.
THREADS = """
        ALTER TABLE memories ADD COLUMN thread $id NOT NULL DEFAULT '';
        ALTER TABLE memories ADD COLUMN position $int;
        CREATE INDEX memories_thread ON memories(mind_id, thread, position, id)
            WHERE thread <> '';
        """
