"""The typed operations of the storage contract (ADR 0002).

Every operation is a frozen record; ``Session.run(op)`` returns the result type
the operation declares (``Op[R]``). One on the rows of a single mind says so
(``OnMind``), as does one that changes the store (``Writes``). Backends implement a
handler per operation and nothing else: all memory logic (reconciler, scoring,
decay, audit) lives above them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, NamedTuple, TypeVar

import numpy as np

from concepts import (
    AuditEntry,
    Event,
    Memory,
    MindInfo,
    RecallFilters,
    Relation,
    Relationship,
    RelationStatus,
)
from concepts.enums import Lifecycle, Status
from concepts.federation import Peer
from concepts.worlds import World

R = TypeVar("R")

#: Fields of a stored memory that may change after it is written. Content never does;
#: ``keys`` is derived from it and rebuilt when the derivation improves.
MUTABLE_FIELDS = frozenset(
    {
        "keys",
        "changed_at",
        "confidence",
        "alpha",
        "beta",
        "importance",
        "salience",
        "activation",
        "activation_at",
        "status",
        "lifecycle",
        "valid_to",
        "last_accessed",
        "access_count",
        "feedback_count",
        "feedback_mean",
    }
)


#: Mutable fields whose earlier values are kept as transaction-time history: an update
#: that changes one must also set ``changed_at``, the instant the change is known from.
HISTORY_FIELDS = frozenset({"status", "lifecycle", "valid_to"})


class Op(Generic[R]):
    """Base of every operation; ``R`` is what running it returns."""

    __slots__ = ()


class Writes:
    """Marks an operation that changes the store: a read session refuses it."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class OnMind:
    """Marks an operation on the rows of one mind, ``mind_id`` (its first field)."""

    mind_id: str


# ---------------------------------------------------------------- minds


@dataclass(frozen=True, slots=True)
class EnsureMind(Op[MindInfo], Writes):
    """Return the mind called ``name``, creating it with ``new_id`` when missing."""

    name: str
    new_id: str
    now: datetime


@dataclass(frozen=True, slots=True)
class ListMinds(Op[list[MindInfo]]):
    """Every mind in the database, by name."""


# ---------------------------------------------------------------- memories


@dataclass(frozen=True, slots=True)
class InsertMemories(Op[None], Writes):
    """Insert new memories, each into the mind it names, and index their text for search."""

    memories: Sequence[Memory]


@dataclass(frozen=True, slots=True)
class UpdateMemories(Op[None], OnMind, Writes):
    """Change mutable fields (``MUTABLE_FIELDS``) of memories of one mind.

    A change of ``keys`` re-indexes them: afterwards only the new keys match. A
    change of a ``HISTORY_FIELDS`` field must come with ``changed_at``: the state
    it replaces is kept in the history as the span from the memory's previous
    ``changed_at`` (else ``recorded_at``) to this one (``MemoryStates`` reads it).
    """

    updates: Sequence[tuple[str, Mapping[str, Any]]]


@dataclass(frozen=True, slots=True)
class GetMemories(Op[list[Memory]], OnMind):
    """The memories of one mind with ``ids``, whatever their status; unknown ids are skipped."""

    ids: Sequence[str]


@dataclass(frozen=True, slots=True)
class FindActiveByHash(Op[list[Memory]], OnMind):
    """The active memories of one mind whose ``content_hash`` is one of ``hashes``."""

    hashes: Sequence[str]


@dataclass(frozen=True, slots=True)
class FindActiveByKey(Op[list[Memory]], OnMind):
    """The active memories of one mind whose ``key`` is one of ``keys``."""

    keys: Sequence[str]


@dataclass(frozen=True, slots=True)
class SearchText(Op[list[tuple[Memory, float]]], OnMind):
    """Full-text candidates with a raw rank (higher is better), best first.

    ``terms`` are plain words; the backend quotes them for its own syntax.
    ``strict`` requires every term, otherwise any term matches. ``field`` picks
    the index searched: the memories' ``content`` or their derived ``keys``,
    each tokenised the same way and ranked by BM25 over its own statistics.
    """

    terms: Sequence[str]
    strict: bool
    filters: RecallFilters
    as_of: datetime | None
    limit: int
    field: Literal["content", "keys"] = "content"


@dataclass(frozen=True, slots=True)
class ScanMemories(Op[list[Memory]], OnMind):
    """Memories in ``id`` order (keyset paging with ``after_id``) or newest first.

    ``recent``: the latest valid time (``valid_from``) first; ``recorded``: the
    latest transaction time (``recorded_at``) first; ties by ``id``, descending.
    """

    filters: RecallFilters | None = None
    as_of: datetime | None = None
    order: Literal["id", "recent", "recorded"] = "id"
    after_id: str | None = None
    limit: int = 1000


@dataclass(frozen=True, slots=True)
class ScanActivation(Op[list[tuple[str, float, datetime, float]]], OnMind):
    """``(id, activation, activation_at, importance)`` of memories in id order, for decay."""

    after_id: str | None
    limit: int


@dataclass(frozen=True, slots=True)
class CountMemories(Op[list[tuple[str, str, int]]], OnMind):
    """``(kind, status, count)`` rows for one mind."""


@dataclass(frozen=True, slots=True)
class MemoryStates(Op[dict[str, tuple[Status, Lifecycle, datetime | None, datetime]]], OnMind):
    """``(status, lifecycle, valid_to, since)`` that memories of ``ids`` had at ``at``.

    ``since`` is when that state began (its span's ``sys_from``). Only memories
    whose state changed after ``at`` are in the answer (the others stand as
    stored), and only if they had been recorded by then.
    """

    ids: Sequence[str]
    at: datetime


#: One earlier state of a memory: ``(memory_id, sys_from, sys_to, status, lifecycle,
#: valid_to)``, held from ``sys_from`` until ``sys_to`` (transaction time).
HistorySpan = tuple[str, datetime, datetime, Status, Lifecycle, datetime | None]


@dataclass(frozen=True, slots=True)
class GetHistory(Op[list[HistorySpan]], OnMind):
    """The history spans of the memories ``ids``, by memory id then ``sys_from``."""

    ids: Sequence[str]


@dataclass(frozen=True, slots=True)
class PutHistory(Op[None], OnMind, Writes):
    """Store history spans as they are (a restore); a span already held is refused."""

    spans: Sequence[HistorySpan]


# ---------------------------------------------------------------- worlds


@dataclass(frozen=True, slots=True)
class PutWorlds(Op[None], Writes):
    """Store worlds: new ones, or a new name or parent for those already held."""

    worlds: Sequence[World]


@dataclass(frozen=True, slots=True)
class ListWorlds(Op[list[World]], OnMind):
    """Every stored world of a mind (the root is never stored), by id."""


@dataclass(frozen=True, slots=True)
class CountWorlds(Op[dict[str, int]], OnMind):
    """How many memories of each ``statuses`` each world of a mind holds (none: left out)."""

    statuses: Sequence[Status] = (Status.ACTIVE,)


@dataclass(frozen=True, slots=True)
class PutWorldLink(Op[bool], OnMind, Writes):
    """Link world ``src`` to ``dst`` (``refers_to``); False when they were linked already."""

    src: str
    dst: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class DeleteWorldLink(Op[bool], OnMind, Writes):
    """Remove the link from ``src`` to ``dst``; False when there was none."""

    src: str
    dst: str


@dataclass(frozen=True, slots=True)
class ListWorldLinks(Op[list[tuple[str, str]]], OnMind):
    """``(src, dst)`` of every world link of a mind, in that order."""


#: A world's composed vector as stored: the float64 sum of its members' vectors and
#: how many were added (``noema.memory.write.worlds`` composes them).
WorldSum = tuple[np.ndarray, int]


@dataclass(frozen=True, slots=True)
class GetWorldVectors(Op[dict[str, WorldSum]], OnMind):
    """The composed vectors under ``(model, dims)`` of ``worlds`` (``None``: every world)."""

    model: str
    dims: int
    worlds: Sequence[str] | None = None


@dataclass(frozen=True, slots=True)
class AddWorldVectors(Op[None], OnMind, Writes):
    """Add ``(sum, count)`` deltas to worlds' composed vectors under ``(model, dims)``.

    A world with no composed vector yet starts from zero; a negative delta takes
    a member's vector away (re-embedding, purge).
    """

    model: str
    dims: int
    deltas: Mapping[str, WorldSum]


@dataclass(frozen=True, slots=True)
class WorldVectorModels(Op[list[tuple[str, int]]], OnMind):
    """The ``(model, dims)`` under which a mind holds composed world vectors."""


# ---------------------------------------------------------------- vectors and entities


@dataclass(frozen=True, slots=True)
class PutVectors(Op[None], OnMind, Writes):
    """Store (or replace) the vectors of memories under ``model``.

    ``vectors`` holds one unit float32 row per id; its width is the dimensions.
    Vectors of another model or width are never touched.
    """

    model: str
    ids: Sequence[str]
    vectors: np.ndarray


@dataclass(frozen=True, slots=True)
class GetVectors(Op[dict[str, np.ndarray]], OnMind):
    """The vectors under ``(model, dims)`` of those of ``ids`` that have one."""

    model: str
    dims: int
    ids: Sequence[str]


@dataclass(frozen=True, slots=True)
class MissingVectors(Op[list[tuple[str, str, datetime]]], OnMind):
    """``(id, content, valid_from)`` of memories with no vector under ``(model, dims)``.

    In id order; ``valid_from`` is UTC, for embedders that put the date in the text.
    """

    model: str
    dims: int
    after_id: str | None = None
    limit: int = 1000


@dataclass(frozen=True, slots=True)
class CountVectors(Op[tuple[int, int]], OnMind):
    """``(memories with a vector under (model, dims), all memories)`` of one mind."""

    model: str
    dims: int


class Nearest(NamedTuple):
    """A memory ``SearchVectors`` found: its exact cosine and the stored vector it was scored by."""

    memory: Memory
    similarity: float
    vector: np.ndarray


@dataclass(frozen=True, slots=True)
class SearchVectors(Op[list[Nearest]], OnMind):
    """Nearest memories to ``query`` under ``(model, len(query))``: exact cosine, best first.

    A backend may find candidates with an approximate index but scores them
    exactly; only memories passing ``filters`` and ``as_of`` are returned. Each
    comes with its stored vector, so a caller need not read it again.
    """

    model: str
    query: np.ndarray
    filters: RecallFilters
    as_of: datetime | None
    limit: int


@dataclass(frozen=True, slots=True)
class PutEntities(Op[None], OnMind, Writes):
    """Link memories to entity nodes: ``(memory_id, entity)`` rows; repeats are ignored."""

    refs: Sequence[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class SearchEntities(Op[list[tuple[Memory, int]]], OnMind):
    """Memories referring to any of ``entities``, with how many they refer to.

    Most entities first, then newest first; only memories passing the filters.
    An entity referred to by ``max_refs`` memories or more says little about
    any of them and is skipped (it would also cost a scan of all of them).
    """

    entities: Sequence[str]
    filters: RecallFilters
    as_of: datetime | None
    limit: int
    max_refs: int = 1_000


# ---------------------------------------------------------------- threads


@dataclass(frozen=True, slots=True)
class ThreadEnds(Op[dict[str, int]], OnMind):
    """The highest position held in each of ``threads`` (those holding a memory)."""

    threads: Sequence[str]


@dataclass(frozen=True, slots=True)
class Neighbours(Op[dict[str, tuple[tuple[Memory, ...], tuple[Memory, ...]]]], OnMind):
    """``(before, after)`` of each memory of ``ids`` that has a thread.

    Each side holds the ``span`` memories nearest it in its thread, in thread
    order ``(position, id)`` (oldest first), among those with ``statuses``:
    positions a purge emptied are passed over. Unknown ids and memories with no
    thread are left out.
    """

    ids: Sequence[str]
    span: int
    statuses: tuple[Status, ...] = (Status.ACTIVE,)


# ---------------------------------------------------------------- relationships


@dataclass(frozen=True, slots=True)
class InsertRelationships(Op[None], Writes):
    """Insert new relationships (edges between memories), each into the mind it names."""

    relationships: Sequence[Relationship]


@dataclass(frozen=True, slots=True)
class SetRelationshipStatus(Op[None], OnMind, Writes):
    """Set the ``status`` of one relationship of a mind, decided at ``decided_at``."""

    id: str
    status: RelationStatus
    decided_at: datetime


@dataclass(frozen=True, slots=True)
class FindRelationships(Op[list[Relationship]], OnMind):
    """Edges of one mind touching ``memory_ids`` (either end), or with ``ids``, in id order."""

    ids: Sequence[str] | None = None
    memory_ids: Sequence[str] | None = None
    relations: Sequence[Relation] = ()
    statuses: Sequence[RelationStatus] = ()
    after_id: str | None = None
    limit: int | None = None


# ---------------------------------------------------------------- events and audit


#: A co-occurrence edge of a mind: ``(a, b, weight, updated_at)`` with ``a < b``; the
#: weight is as of ``updated_at`` and decays from there (``noema.memory.recall.cooccurrence``).
CoEdge = tuple[str, str, float, datetime]


@dataclass(frozen=True, slots=True)
class GetCooccurrence(Op[list[CoEdge]], OnMind):
    """The co-occurrence edges with both ends among ``ids``, ordered by ``(a, b)``."""

    ids: Sequence[str]


@dataclass(frozen=True, slots=True)
class PutCooccurrence(Op[None], OnMind, Writes):
    """Write co-occurrence edges, replacing the stored weight of any pair already held."""

    edges: Sequence[CoEdge]


@dataclass(frozen=True, slots=True)
class ScanCooccurrence(Op[list[CoEdge]], OnMind):
    """A page of a mind's co-occurrence edges stored with at least ``min_weight``.

    Ordered by ``(a, b)``; ``after`` is the last pair of the previous page.
    """

    min_weight: float = 0.0
    after: tuple[str, str] | None = None
    limit: int = 10_000


@dataclass(frozen=True, slots=True)
class AppendEvents(Op[None], Writes):
    """Append events to their minds' logs; the store numbers them (``seq``) in append order.

    ``payloads``: each event's payload as compact JSON with sorted keys
    (``noema.memory.records.audit.canonical``), when the caller encoded them already.
    """

    events: Sequence[Event]
    payloads: Sequence[str] | None = None


@dataclass(frozen=True, slots=True)
class ListEvents(Op[list[Event]], OnMind):
    """Events of one mind in append order."""

    memory_id: str | None = None
    kinds: Sequence[str] = ()
    ids: Sequence[str] | None = None
    after_seq: int | None = None
    limit: int | None = None
    newest_first: bool = False


@dataclass(frozen=True, slots=True)
class AuditHead(Op[AuditEntry | None], OnMind):
    """The last entry of a mind's audit chain; in a write session, the chain is locked."""


@dataclass(frozen=True, slots=True)
class AppendAudit(Op[None], OnMind, Writes):
    """Append entries, already chained (seq and hashes set), to the end of a mind's audit chain."""

    entries: Sequence[AuditEntry]


@dataclass(frozen=True, slots=True)
class ListAudit(Op[list[AuditEntry]], OnMind):
    """A mind's audit entries after ``after_seq``, in chain order, at most ``limit`` of them."""

    after_seq: int = 0
    limit: int = 1000


@dataclass(frozen=True, slots=True)
class GetAuditEntry(Op[AuditEntry | None], OnMind):
    """The audit entry of one event of a mind, if the chain holds one."""

    event_id: str


@dataclass(frozen=True, slots=True)
class IsEmpty(Op[bool], OnMind):
    """True when the mind holds no memory, relationship, event or audit entry."""


# ---------------------------------------------------------------- purge (the only deletion)


@dataclass(frozen=True, slots=True)
class PurgeMemories(Op[int], OnMind, Writes):
    """Delete memories for good, with their vectors, entity links, full-text entries and edges.

    The only operation that deletes memory rows (``noema forget``). Backends also
    clear what they keep of the text outside the rows where they can (SQLite
    zeroes freed pages and merges the full-text indexes, of content and of keys).
    Returns how many memory rows went.
    """

    ids: Sequence[str]


@dataclass(frozen=True, slots=True)
class TombstoneEvents(Op[None], OnMind, Writes):
    """Replace the payloads of events that quoted purged text; ids, kinds and times stay."""

    ids: Sequence[str]
    payload: Mapping[str, Any]


# ---------------------------------------------------------------- workspace and jobs


@dataclass(frozen=True, slots=True)
class SaveSnapshot(Op[None], OnMind, Writes):
    """Replace a mind's workspace snapshot (JSON text) as of ``cycle``."""

    cycle: int
    saved_at: datetime
    data: str


@dataclass(frozen=True, slots=True)
class LoadSnapshot(Op[tuple[int, str] | None], OnMind):
    """``(cycle, data)`` of a mind's last workspace snapshot, if any."""


@dataclass(frozen=True, slots=True)
class AcquireLease(Op[bool], Writes):
    """Take the lease ``name`` for ``holder`` until ``expires_at``.

    Succeeds when the lease is free, expired at ``now``, or already held by
    ``holder`` (which renews it). The store-wide lock of a write session makes
    the check and the take one step.
    """

    name: str
    holder: str
    now: datetime
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class ReleaseLease(Op[None], Writes):
    """Give the lease ``name`` back, if ``holder`` holds it."""

    name: str
    holder: str


# ---------------------------------------------------------------- federation


@dataclass(frozen=True, slots=True)
class PutPeer(Op[None], OnMind, Writes):
    """Store a mind's subscription to a peer, or replace the one of that name (its trust)."""

    peer: Peer


@dataclass(frozen=True, slots=True)
class DeletePeer(Op[bool], OnMind, Writes):
    """Remove a mind's subscription ``name``; False when it had none of that name."""

    name: str


@dataclass(frozen=True, slots=True)
class ListPeers(Op[list[Peer]], OnMind):
    """Every subscription of a mind, by name."""


# ---------------------------------------------------------------- verify


@dataclass(frozen=True, slots=True)
class StoredRows:
    """What verify checks of a mind beside its memories, edges, events and audit chain.

    ``mind``: the mind's row ``(info, digest)``, ``None`` when it is gone. Rows
    that cannot be read are left out of the lists; ``unreadable`` says why, one
    line each ("peer p: alpha 'x' is not a valid value").
    """

    mind: tuple[MindInfo, str | None] | None
    worlds: list[World]
    links: list[tuple[str, str, datetime]]
    history: list[HistorySpan]
    peers: list[Peer]
    unreadable: list[str]


@dataclass(frozen=True, slots=True)
class ReadStoredRows(Op[StoredRows], OnMind):
    """The mind's row, worlds, world links, history spans and peers, for verify."""


#: The operations that change the store (those marked ``Writes``); a read session refuses them.
WRITE_OPS: frozenset[type[Op[Any]]] = frozenset(
    op
    for op in list(globals().values())
    if isinstance(op, type) and issubclass(op, Op) and issubclass(op, Writes)
)
