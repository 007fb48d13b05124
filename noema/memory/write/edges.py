"""The edge handlers: linking two memories, superseding, and deciding a proposal.

``_link`` adds ``src --relation--> dst`` once: asserting what the detector
proposed approves the proposal, ``supersedes`` closes the older memory's
validity (``_close``), ``same_as`` waits as a proposal, and ``_check_edge``
refuses an edge whose ends are in the wrong order in time (``causes``,
``precedes``) or a supersession of a memory no longer active. ``_settle``
approves or rejects a staged proposal and does what it says (merge, supersede,
flag). The ``Reconciler`` (``reconciler``) calls them inside its transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from concepts import (
    EventKind,
    Memory,
    MindInfo,
    Relation,
    Relationship,
    RelationStatus,
    Status,
)
from noema.clock import iso
from noema.errors import Conflict, InvalidInput, NotFound, TemporalOrderError
from noema.ids import new_id
from noema.memory.records.events import EventLog
from noema.memory.write.pending import _get, _load, _missing, _Pending
from noema.storage import Session, ops

#: Edges whose source must not come after their target in time.
_ORDERED = frozenset({Relation.CAUSES, Relation.PRECEDES})


def _close(
    mind: MindInfo,
    pending: _Pending,
    log: EventLog,
    edges: list[Relationship],
    newer: Memory,
    older: Memory,
    now: datetime,
    *,
    reason: str,
) -> None:
    """``newer`` supersedes ``older``: close its validity, mark it, link and log it."""
    valid_to = max(newer.valid_from, older.valid_from)
    # Known from now, the transaction's time: valid times say nothing of when it was learned.
    closed = pending.change(older, status=Status.SUPERSEDED, valid_to=valid_to)
    edges.append(_edge(mind, newer.id, Relation.SUPERSEDES, older.id, 1.0, "reconciler", now))
    payload = {"by": newer.id, "reason": reason, "valid_to": iso(valid_to)}
    if closed.changed_at != now:  # verify replays it: an event says when, if not at its time
        payload["changed_at"] = iso(closed.changed_at)
    log.add(EventKind.MEMORY_SUPERSEDED, memory_id=older.id, payload=payload)


def _link(
    mind: MindInfo,
    session: Session,
    pending: _Pending,
    log: EventLog,
    edges: list[Relationship],
    src_id: str,
    relation: Relation,
    dst_id: str,
    *,
    confidence: float,
    source: str,
    now: datetime,
) -> Relationship:
    src, dst = pending.get(src_id), pending.get(dst_id)
    if src is None or dst is None:
        missing = src_id if src is None else dst_id
        raise NotFound(_missing(mind, missing))
    if src.id == dst.id:
        raise InvalidInput(f"a memory cannot be {relation.value} itself ({src.id})")
    for edge in edges:
        if (edge.src, edge.relation, edge.dst) == (src.id, relation, dst.id):
            return edge
    stored = session.run(ops.FindRelationships(mind.id, memory_ids=[src.id], relations=[relation]))
    for edge in stored:
        if edge.src == src.id and edge.dst == dst.id:
            if edge.status == RelationStatus.PROPOSED and relation != Relation.SAME_AS:
                # Asserting what the detector proposed approves the proposal.
                return _settle(
                    mind, session, pending, log, edge, approve=True, actor=source, now=now
                )
            return edge
    _check_edge(src.id, src.valid_from, relation, dst)
    if relation == Relation.SUPERSEDES:
        before = len(edges)
        _close(mind, pending, log, edges, src, dst, now, reason="superseded explicitly")
        edges[before] = edges[before].model_copy(
            update={"confidence": confidence, "source": source}
        )
        return edges[before]
    status = RelationStatus.PROPOSED if relation == Relation.SAME_AS else RelationStatus.ACTIVE
    edge = _edge(mind, src.id, relation, dst.id, confidence, source, now, status=status)
    edges.append(edge)
    return edge


def _edge(
    mind: MindInfo,
    src: str,
    relation: Relation,
    dst: str,
    confidence: float,
    source: str,
    now: datetime,
    *,
    status: RelationStatus = RelationStatus.ACTIVE,
    evidence: dict[str, Any] | None = None,
) -> Relationship:
    return Relationship(
        id=new_id(now),
        mind_id=mind.id,
        src=src,
        relation=relation,
        dst=dst,
        confidence=confidence,
        source=source,
        status=status,
        created_at=now,
        evidence=evidence or {},
    )


def _settle(
    mind: MindInfo,
    session: Session,
    pending: _Pending,
    log: EventLog,
    edge: Relationship,
    *,
    approve: bool,
    actor: str,
    now: datetime,
) -> Relationship:
    """Decide the pending proposal ``edge`` (the caller flushes ``pending`` and ``log``)."""
    status = RelationStatus.ACTIVE if approve else RelationStatus.REJECTED
    if approve and edge.relation == Relation.SUPERSEDES:
        _load(mind, session, pending, [edge.src, edge.dst])
        dst = pending.get(edge.dst)
        if dst is not None and dst.status != Status.ACTIVE:
            raise InvalidInput(f"cannot approve {edge.id}: memory {dst.id} is {dst.status.value}")
    session.run(ops.SetRelationshipStatus(mind.id, edge.id, status, now))
    action = log.add(
        EventKind.OPERATOR_ACTION,
        memory_id=edge.src,
        payload={
            "action": "approve" if approve else "reject",
            "actor": actor,
            "relationship": edge.id,
        },
    )
    if approve and edge.relation == Relation.SAME_AS:
        src = pending.get(edge.src) or _get(mind, session, edge.src)
        if src.status == Status.ACTIVE:
            pending.known.setdefault(src.id, src)
            pending.change(src, status=Status.ARCHIVED)
        log.add(
            EventKind.MEMORY_MERGED,
            memory_id=edge.dst,
            origin_event=action.id,
            payload={"merged": edge.src, "relationship": edge.id},
        )
    elif approve and edge.relation == Relation.SUPERSEDES:
        newer, older = pending.get(edge.src), pending.get(edge.dst)
        assert newer is not None and older is not None
        valid_to = max(newer.valid_from, older.valid_from)
        pending.change(older, status=Status.SUPERSEDED, valid_to=valid_to)
        log.add(
            EventKind.MEMORY_SUPERSEDED,
            memory_id=older.id,
            origin_event=action.id,
            payload={"by": newer.id, "reason": "proposal approved", "valid_to": iso(valid_to)},
        )
    return edge.model_copy(update={"status": status, "decided_at": now})


def _check_edge(src: str, src_time: datetime, relation: Relation, dst: Memory) -> None:
    """The refusals of the edge handlers that depend only on the two ends."""
    if relation in _ORDERED and src_time > dst.valid_from:
        raise TemporalOrderError(
            f"{src} cannot {relation.value.rstrip('s')} {dst.id}: it is later "
            f"({iso(src_time)} > {iso(dst.valid_from)})"
        )
    if relation == Relation.SUPERSEDES and dst.status != Status.ACTIVE:
        raise Conflict(f"cannot supersede memory {dst.id}: it is {dst.status.value}")
