"""What one write transaction touches, and how it is written out.

``_Pending`` holds the memories a transaction creates and the changes it makes
to stored ones (each change of status, lifecycle or validity stamped with when
it became known); ``_flush`` writes them, the new edges and the events with
their audit entries, in that order. ``entity_refs`` is what the entity index
holds for each memory. The ``Reconciler`` and the edge and lifecycle handlers
(``edges``, ``lifecycle``) share these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from concepts import (
    EventKind,
    Memory,
    MindInfo,
    Relationship,
)
from noema.errors import NotFound
from noema.memory.language.entities import extract_entities
from noema.memory.records.events import EventLog
from noema.storage import Session, ops

__all__ = ["entity_refs"]


@dataclass
class _Pending:
    """Memories touched by one transaction: new ones and changes to stored ones.

    A change of status, lifecycle or validity is known from ``now`` unless it
    says otherwise (``changed_at``); a memory created and changed so in the same
    transaction is inserted as it was created (``first`` holds that state) and
    changed after, so its history shows both.
    """

    now: datetime
    created: dict[str, Memory]
    changed: dict[str, dict[str, Any]]
    known: dict[str, Memory]
    first: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The entities of each new memory's content, found once for its keys and its refs.
    entities: dict[str, list[str]] = field(default_factory=dict)

    def get(self, memory_id: str) -> Memory | None:
        return self.created.get(memory_id) or self.known.get(memory_id)

    def change(self, memory: Memory, **fields: Any) -> Memory:
        if not ops.HISTORY_FIELDS.isdisjoint(fields):
            since = memory.changed_at or memory.recorded_at
            fields["changed_at"] = max(fields.get("changed_at") or self.now, since)
            if memory.id in self.created and memory.id not in self.first:
                self.first[memory.id] = {f: getattr(memory, f) for f in ops.HISTORY_FIELDS}
        updated = memory.model_copy(update=fields)
        if memory.id in self.created:
            self.created[memory.id] = updated
        else:
            self.changed.setdefault(memory.id, {}).update(fields)
            self.known[memory.id] = updated
        return updated


def _missing(mind: MindInfo, memory_id: str) -> str:
    return f"no memory {memory_id} in mind {mind.name!r} (relationships never cross minds)"


def _get(mind: MindInfo, session: Session, memory_id: str) -> Memory:
    found = session.run(ops.GetMemories(mind.id, [memory_id]))
    if not found:
        raise NotFound(f"no memory {memory_id} in mind {mind.name!r}")
    return found[0]


def _load(mind: MindInfo, session: Session, pending: _Pending, ids: Sequence[str]) -> None:
    wanted = [i for i in ids if pending.get(i) is None]
    if not wanted:
        return
    found = {m.id: m for m in session.run(ops.GetMemories(mind.id, wanted))}
    for memory_id in wanted:
        if memory_id not in found:
            raise NotFound(_missing(mind, memory_id))
    pending.known.update(found)


def _flush(
    mind: MindInfo,
    session: Session,
    pending: _Pending,
    edges: list[Relationship],
    log: EventLog,
) -> None:
    # Changes first: a value superseded here frees its content hash for a new row.
    if pending.changed:
        session.run(ops.UpdateMemories(mind.id, list(pending.changed.items())))
    if pending.created:
        created = list(pending.created.values())
        later = [
            (m.id, {f: getattr(m, f) for f in (*ops.HISTORY_FIELDS, "changed_at")})
            for m in created
            if m.id in pending.first
        ]
        session.run(
            ops.InsertMemories(
                [
                    m.model_copy(update={**pending.first[m.id], "changed_at": None})
                    if m.id in pending.first
                    else m
                    for m in created
                ]
            )
        )
        if later:  # changed in this transaction: inserted as created, then changed
            session.run(ops.UpdateMemories(mind.id, later))
        session.run(ops.PutEntities(mind.id, entity_refs(created, pending.entities)))
    if edges:
        session.run(ops.InsertRelationships(edges))
        for edge in edges:
            log.add(
                EventKind.RELATIONSHIP_CREATED,
                memory_id=edge.src,
                payload={
                    "relationship": edge.id,
                    "relation": edge.relation.value,
                    "dst": edge.dst,
                    "status": edge.status.value,
                    "confidence": edge.confidence,
                    "source": edge.source,
                    **({"evidence": edge.evidence} if edge.evidence else {}),
                },
            )
    log.flush(session)


def entity_refs(
    memories: Sequence[Memory], known: Mapping[str, Sequence[str]] | None = None
) -> list[tuple[str, str]]:
    """``(memory_id, entity)`` for every entity each memory's content refers to.

    ``known`` holds entities already found, by memory id (the reconciler's own).
    """
    found = known or {}
    return [
        (m.id, entity)
        for m in memories
        for entity in (found[m.id] if m.id in found else extract_entities(m.content))
    ]
