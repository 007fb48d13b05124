"""Lifecycle transitions, and reopening what a memory superseded once it no longer stands.

An operator may ``verify``, ``reject`` or ``reinstate`` a memory
(``_TRANSITIONS``: where each leads and the lifecycles it may start from); decay
marks memories ``stale``. Each transition is logged (``_transition``). A memory
retracted or rejected while active gives back the values it superseded
(``_restore_superseded``). The ``Reconciler`` (``reconciler``) calls them.
"""

from __future__ import annotations

from datetime import datetime

from concepts import (
    EventKind,
    Lifecycle,
    Memory,
    MindInfo,
    Relation,
    RelationStatus,
    Status,
)
from noema.clock import iso
from noema.memory.records.events import EventLog
from noema.memory.write.pending import _load, _Pending
from noema.storage import Session, ops

#: Lifecycle transitions an operator asks for: the action, where it leads, and
#: the lifecycles it may start from.
_TRANSITIONS: dict[str, tuple[Lifecycle, frozenset[Lifecycle]]] = {
    "verify": (Lifecycle.VERIFIED, frozenset(Lifecycle) - {Lifecycle.VERIFIED}),
    "reject": (Lifecycle.REJECTED, frozenset(Lifecycle) - {Lifecycle.REJECTED}),
    "reinstate": (Lifecycle.ACTIVE, frozenset({Lifecycle.REJECTED, Lifecycle.STALE})),
}


def _transition(
    pending: _Pending,
    log: EventLog,
    memory: Memory,
    lifecycle: Lifecycle,
    *,
    reason: str,
    actor: str,
    origin: str | None = None,
) -> Memory:
    """Move ``memory`` to ``lifecycle`` and log it."""
    log.add(
        EventKind.MEMORY_LIFECYCLE,
        memory_id=memory.id,
        origin_event=origin,
        payload={
            "from": memory.lifecycle.value,
            "to": lifecycle.value,
            "reason": reason,
            "actor": actor,
        },
    )
    return pending.change(memory, lifecycle=lifecycle)


def _restore_superseded(
    mind: MindInfo,
    session: Session,
    pending: _Pending,
    log: EventLog,
    memory: Memory,
    now: datetime,
    origin: str,
) -> None:
    """Reopen what ``memory`` superseded, now that it no longer stands.

    Per key (and per explicitly superseded memory) the most recent value it
    replaced becomes active again with its validity reopened up to
    ``memory``'s own end, unless another standing memory supersedes it too.
    """
    edges = session.run(
        ops.FindRelationships(
            mind.id,
            memory_ids=[memory.id],
            relations=[Relation.SUPERSEDES],
            statuses=[RelationStatus.ACTIVE],
        )
    )
    targets = [e.dst for e in edges if e.src == memory.id]
    if not targets:
        return
    _load(mind, session, pending, targets)
    replaced = [
        m
        for m in (pending.get(t) for t in targets)
        if m is not None and m.status == Status.SUPERSEDED and m.lifecycle != Lifecycle.REJECTED
    ]
    others = session.run(
        ops.FindRelationships(
            mind.id,
            memory_ids=[m.id for m in replaced],
            relations=[Relation.SUPERSEDES],
            statuses=[RelationStatus.ACTIVE],
        )
    )
    other_src = sorted({e.src for e in others if e.src != memory.id})
    standing = {
        m.id: m
        for m in session.run(ops.GetMemories(mind.id, other_src))
        if m.status == Status.ACTIVE and m.lifecycle != Lifecycle.REJECTED
    }
    held = {e.dst for e in others if e.src in standing}
    latest: dict[str, Memory] = {}
    for m in replaced:
        if m.id in held:
            continue
        group = f"key:{m.key}" if m.key is not None and m.key == memory.key else f"id:{m.id}"
        if group not in latest or (m.valid_from, m.id) > (
            latest[group].valid_from,
            latest[group].id,
        ):
            latest[group] = m
    for m in sorted(latest.values(), key=lambda m: m.id):
        pending.change(m, status=Status.ACTIVE, valid_to=memory.valid_to)
        log.add(
            EventKind.MEMORY_RESTORED,
            memory_id=m.id,
            origin_event=origin,
            payload={
                "after": memory.id,
                "reason": f"{memory.id} no longer stands",
                "valid_to": None if memory.valid_to is None else iso(memory.valid_to),
            },
        )
