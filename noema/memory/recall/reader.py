"""Reading one mind without changing it: the reads ``Mind`` and ``ProcessContext`` share.

``MemoryReader`` is what a plugin process gets as ``ctx.memory``: recall that
never reinforces (``peek``), lookups by id and by key, events, relationships,
the audit entry of an event and the saved workspace snapshot. Each call is one
short read transaction. ``recall_query`` validates a recall request once for every
face.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from concepts import (
    AuditEntry,
    Event,
    EventKind,
    Memory,
    RecallFilters,
    RecallQuery,
    RecallResult,
    Relationship,
    Status,
    WorkspaceSnapshot,
)
from noema.errors import NotFound, from_validation
from noema.memory.recall.history import as_known
from noema.memory.recall.pipeline import Recaller
from noema.storage import ops

__all__ = ["MemoryReader", "recall_query"]


def recall_query(
    query: str = "",
    *,
    filters: RecallFilters | Mapping[str, Any] | None = None,
    **fields: Any,
) -> RecallQuery:
    """A validated ``RecallQuery``: ``Mind.recall``'s arguments, defaults the query's.

    ``fields`` are the query's own (``limit``, ``as_of``, ``depth``, ...) and
    filters (``kinds``, ``key``, ``known_at``, ...), merged into ``filters``.

    Raises:
        InvalidInput: a field is wrong; the error names it (``error.field``).
    """
    own = {name: value for name, value in fields.items() if name in RecallQuery.model_fields}
    narrow = {name: value for name, value in fields.items() if name not in own}
    try:
        if isinstance(filters, RecallFilters):
            filters = filters.model_dump()
        merged = RecallFilters.model_validate({**(filters or {}), **narrow})
        return RecallQuery(text=query, filters=merged, **own)
    except ValidationError as exc:
        raise from_validation(exc) from None


class MemoryReader:
    """Read-only access to one mind's long-term memory.

    Args:
        recaller: the mind's recall pipeline: its recalls here always ``peek``,
            and its parts (the store, the mind) serve every other read.
    """

    def __init__(self, recaller: Recaller) -> None:
        self._recaller = recaller
        self._parts = recaller.parts

    def recall(self, query: str | RecallQuery = "", **options: Any) -> list[RecallResult]:
        """Recall for ``query`` without reinforcing anything or logging a retrieval.

        ``options`` are those of ``Mind.recall`` (``limit``, ``filters``, ``as_of``,
        filter fields, ...); a ``RecallQuery`` is read with ``peek`` set.
        """
        if isinstance(query, RecallQuery):
            request = query.model_copy(update={"peek": True})
        else:
            request = recall_query(query, **{**options, "peek": True})
        return self._recaller.recall(request)

    def get(self, memory_id: str, *, known_at: datetime | None = None) -> Memory:
        """The memory with this id, whatever its status (as known at ``known_at``).

        Raises:
            NotFound: the mind holds no such memory (or had not recorded it by then).
        """
        found = self.get_many([memory_id], known_at=known_at)
        if not found:
            when = "" if known_at is None else f" as known at {known_at.isoformat()}"
            raise NotFound(f"no memory {memory_id} in mind {self._parts.mind.name!r}{when}")
        return found[0]

    def get_many(
        self, memory_ids: Sequence[str], *, known_at: datetime | None = None
    ) -> list[Memory]:
        """The memories with these ids that the mind holds (missing ids are left out).

        With ``known_at``: those it had recorded by then, in the status, lifecycle
        and validity they had then (``noema.memory.recall.history``).
        """
        if not memory_ids:
            return []
        with self._parts.storage.transaction(write=False) as session:
            found = session.run(ops.GetMemories(self._parts.mind.id, list(memory_ids)))
            if known_at is None:
                return found
            return [
                m
                for m in as_known(session, self._parts.mind.id, found, known_at)
                if m.recorded_at <= known_at
            ]

    def fact(
        self, key: str, *, as_of: datetime | None = None, known_at: datetime | None = None
    ) -> Memory | None:
        """The memory holding ``key`` now (or ``None``): the newest active one recall returns.

        A new value for a key supersedes the old, so the key's memories are its
        versions: ``as_of`` picks the one valid then (superseded since or not),
        ``known_at`` the one the mind held then, as it stood then. A retracted or
        rejected memory holds no fact.
        """
        statuses = (Status.ACTIVE,) if as_of is None else (Status.ACTIVE, Status.SUPERSEDED)
        filters = RecallFilters(key=key, statuses=statuses, known_at=known_at)
        with self._parts.storage.transaction(write=False) as session:
            found = session.run(
                ops.ScanMemories(
                    self._parts.mind.id, filters=filters, as_of=as_of, order="recent", limit=1
                )
            )
            found = as_known(session, self._parts.mind.id, found, known_at)
        return found[0] if found else None

    def relationships(self, memory_id: str) -> list[Relationship]:
        """Every edge touching a memory, whatever its status."""
        with self._parts.storage.transaction(write=False) as session:
            return session.run(ops.FindRelationships(self._parts.mind.id, memory_ids=[memory_id]))

    def events(
        self,
        *,
        memory_id: str | None = None,
        kinds: Sequence[EventKind | str] = (),
        ids: Sequence[str] | None = None,
        limit: int | None = None,
        newest_first: bool = False,
        after_seq: int | None = None,
    ) -> list[Event]:
        """The mind's events in append order (or newest first)."""
        with self._parts.storage.transaction(write=False) as session:
            return session.run(
                ops.ListEvents(
                    self._parts.mind.id,
                    memory_id=memory_id,
                    kinds=[str(k) for k in kinds],
                    ids=None if ids is None else list(ids),
                    after_seq=after_seq,
                    limit=limit,
                    newest_first=newest_first,
                )
            )

    def timeline(self, filters: RecallFilters | None = None, *, limit: int = 200) -> list[Memory]:
        """Memories passing ``filters`` (active ones by default), newest recorded first."""
        with self._parts.storage.transaction(write=False) as session:
            return session.run(
                ops.ScanMemories(
                    self._parts.mind.id, filters=filters, order="recorded", limit=limit
                )
            )

    def audit_entry(self, event_id: str) -> AuditEntry | None:
        """The audit-chain entry that covers the event ``event_id``, if there is one."""
        with self._parts.storage.transaction(write=False) as session:
            return session.run(ops.GetAuditEntry(self._parts.mind.id, event_id))

    def workspace_snapshot(self) -> WorkspaceSnapshot | None:
        """The workspace as a running mind last saved it, or ``None`` before the first save."""
        with self._parts.storage.transaction(write=False) as session:
            saved = session.run(ops.LoadSnapshot(self._parts.mind.id))
        return None if saved is None else WorkspaceSnapshot.model_validate_json(saved[1])
