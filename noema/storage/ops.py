"""The typed operations of the storage contract (ADR 0002).

Every operation is a frozen record; ``Session.run(op)`` returns the result type
the operation declares. Backends implement a handler per operation and nothing
else: all memory logic (reconciler, scoring, decay, audit) lives above them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

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

R = TypeVar("R")

#: Fields of a stored memory that may change after it is written. Content never does.
MUTABLE_FIELDS = frozenset(
    {
        "confidence",
        "alpha",
        "beta",
        "importance",
        "salience",
        "activation",
        "activation_at",
        "status",
        "valid_to",
        "last_accessed",
        "access_count",
        "feedback_count",
        "feedback_mean",
    }
)


class Op(Generic[R]):
    """Base of every operation; ``R`` is what running it returns."""

    __slots__ = ()


# ---------------------------------------------------------------- minds


@dataclass(frozen=True, slots=True)
class EnsureMind(Op[MindInfo]):
    """Return the mind called ``name``, creating it with ``new_id`` when missing."""

    name: str
    new_id: str
    now: datetime


@dataclass(frozen=True, slots=True)
class ListMinds(Op[list[MindInfo]]):
    pass


# ---------------------------------------------------------------- memories


@dataclass(frozen=True, slots=True)
class InsertMemories(Op[None]):
    memories: Sequence[Memory]


@dataclass(frozen=True, slots=True)
class UpdateMemories(Op[None]):
    """Change mutable fields (``MUTABLE_FIELDS``) of memories of one mind."""

    mind_id: str
    updates: Sequence[tuple[str, Mapping[str, Any]]]


@dataclass(frozen=True, slots=True)
class GetMemories(Op[list[Memory]]):
    mind_id: str
    ids: Sequence[str]


@dataclass(frozen=True, slots=True)
class FindActiveByHash(Op[list[Memory]]):
    mind_id: str
    hashes: Sequence[str]


@dataclass(frozen=True, slots=True)
class FindActiveByKey(Op[list[Memory]]):
    mind_id: str
    keys: Sequence[str]


@dataclass(frozen=True, slots=True)
class SearchText(Op[list[tuple[Memory, float]]]):
    """Full-text candidates with a raw rank (higher is better), best first.

    ``terms`` are plain words; the backend quotes them for its own syntax.
    ``strict`` requires every term, otherwise any term matches.
    """

    mind_id: str
    terms: Sequence[str]
    strict: bool
    filters: RecallFilters
    as_of: datetime | None
    limit: int


@dataclass(frozen=True, slots=True)
class ScanMemories(Op[list[Memory]]):
    """Memories in ``id`` order (keyset paging with ``after_id``) or most recent first."""

    mind_id: str
    filters: RecallFilters | None = None
    as_of: datetime | None = None
    order: Literal["id", "recent"] = "id"
    after_id: str | None = None
    limit: int = 1000


@dataclass(frozen=True, slots=True)
class ScanActivation(Op[list[tuple[str, float, datetime, float]]]):
    """``(id, activation, activation_at, importance)`` of memories in id order, for decay."""

    mind_id: str
    after_id: str | None
    limit: int


@dataclass(frozen=True, slots=True)
class CountMemories(Op[list[tuple[str, str, int]]]):
    """``(kind, status, count)`` rows for one mind."""

    mind_id: str


# ---------------------------------------------------------------- relationships


@dataclass(frozen=True, slots=True)
class InsertRelationships(Op[None]):
    relationships: Sequence[Relationship]


@dataclass(frozen=True, slots=True)
class SetRelationshipStatus(Op[None]):
    mind_id: str
    id: str
    status: RelationStatus
    decided_at: datetime


@dataclass(frozen=True, slots=True)
class FindRelationships(Op[list[Relationship]]):
    """Edges of one mind touching ``memory_ids`` (either end), or with ``ids``, in id order."""

    mind_id: str
    ids: Sequence[str] | None = None
    memory_ids: Sequence[str] | None = None
    relations: Sequence[Relation] = ()
    statuses: Sequence[RelationStatus] = ()
    after_id: str | None = None
    limit: int | None = None


# ---------------------------------------------------------------- events and audit


@dataclass(frozen=True, slots=True)
class AppendEvents(Op[None]):
    events: Sequence[Event]


@dataclass(frozen=True, slots=True)
class ListEvents(Op[list[Event]]):
    """Events of one mind in append order."""

    mind_id: str
    memory_id: str | None = None
    kinds: Sequence[str] = ()
    ids: Sequence[str] | None = None
    after_seq: int | None = None
    limit: int | None = None
    newest_first: bool = False


@dataclass(frozen=True, slots=True)
class AuditHead(Op[AuditEntry | None]):
    """The last entry of a mind's audit chain; in a write session, the chain is locked."""

    mind_id: str


@dataclass(frozen=True, slots=True)
class AppendAudit(Op[None]):
    mind_id: str
    entries: Sequence[AuditEntry]


@dataclass(frozen=True, slots=True)
class ListAudit(Op[list[AuditEntry]]):
    mind_id: str
    after_seq: int = 0
    limit: int = 1000


@dataclass(frozen=True, slots=True)
class IsEmpty(Op[bool]):
    """True when the mind holds no memory, relationship, event or audit entry."""

    mind_id: str


# ---------------------------------------------------------------- workspace and jobs


@dataclass(frozen=True, slots=True)
class SaveSnapshot(Op[None]):
    """Replace a mind's workspace snapshot (JSON text) as of ``cycle``."""

    mind_id: str
    cycle: int
    saved_at: datetime
    data: str


@dataclass(frozen=True, slots=True)
class LoadSnapshot(Op[tuple[int, str] | None]):
    """``(cycle, data)`` of a mind's last workspace snapshot, if any."""

    mind_id: str


@dataclass(frozen=True, slots=True)
class AcquireLease(Op[bool]):
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
class ReleaseLease(Op[None]):
    """Give the lease ``name`` back, if ``holder`` holds it."""

    name: str
    holder: str
