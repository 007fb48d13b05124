"""The write path (DESIGN section 3). Every memory and every edge is written here.

Each public method runs in one write transaction: validation and policy first,
then dedup by content hash, key supersession, edge handlers, and finally the
events with their hash-chained audit entries. An exception anywhere rolls the
whole transaction back, so nothing is ever half-written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from concepts import (
    CHANNEL_TRUST,
    ROOT_WORLD,
    Channel,
    Epistemic,
    EventKind,
    Lifecycle,
    Memory,
    MemoryInput,
    MindInfo,
    RecallFilters,
    Relation,
    Relationship,
    RelationStatus,
    Status,
    credibility,
    trusted,
)
from noema.clock import Clock, iso
from noema.config import MindConfig
from noema.embeddings import Embedder
from noema.errors import Conflict, InvalidInput, NotFound, PolicyViolation, TemporalOrderError
from noema.ids import content_hash, new_id
from noema.memory.language.entities import extract_entities
from noema.memory.records.activation import decayed, reinforced
from noema.memory.records.audit import created_payload
from noema.memory.records.events import EventLog
from noema.memory.write.composed import compose
from noema.memory.write.detect import DEFAULT_LIMIT as DETECT_LIMIT
from noema.memory.write.detect import detect
from noema.memory.write.keys import expand_keys
from noema.memory.write.policy import apply_secret_policy, screen_name, screen_text
from noema.memory.write.worlds import load_tree, resolve_worlds
from noema.storage import Session, Storage, ops

__all__ = ["Reconciler", "entity_refs", "initial_lifecycle", "reinforcement"]

#: Prior strength of the Beta confidence posterior: Beta(5, 5) has strength 10.
PRIOR_STRENGTH = 10.0
_MIN_SHAPE = 1e-3
#: Edges whose source must not come after their target in time.
_ORDERED = frozenset({Relation.CAUSES, Relation.PRECEDES})


def initial_lifecycle(item: MemoryInput) -> Lifecycle:
    """The lifecycle a new memory starts in, unless the caller names one.

    ``verified`` when the operator states it; ``candidate`` when it is derived
    (it links ``derived_from`` another memory), an inference, or from the
    low-trust channel; else ``active``.
    """
    if item.lifecycle is not None:
        return item.lifecycle
    if item.channel == Channel.OPERATOR:
        return Lifecycle.VERIFIED
    derived = any(link.relation == Relation.DERIVED_FROM for link in item.links)
    if derived or item.channel == Channel.LOW or item.epistemic == Epistemic.INFERENCE:
        return Lifecycle.CANDIDATE
    return Lifecycle.ACTIVE


#: Lifecycle transitions an operator asks for: the action, where it leads, and
#: the lifecycles it may start from.
_TRANSITIONS: dict[str, tuple[Lifecycle, frozenset[Lifecycle]]] = {
    "verify": (Lifecycle.VERIFIED, frozenset(Lifecycle) - {Lifecycle.VERIFIED}),
    "reject": (Lifecycle.REJECTED, frozenset(Lifecycle) - {Lifecycle.REJECTED}),
    "reinstate": (Lifecycle.ACTIVE, frozenset({Lifecycle.REJECTED, Lifecycle.STALE})),
}


def reinforcement(memory: Memory, now: datetime, config: MindConfig) -> dict[str, Any]:
    """The field changes of one admitted recall of ``memory`` at ``now``."""
    current = decayed(
        memory.activation, memory.activation_at, now, memory.importance, config.half_life_days
    )
    return {
        "activation": reinforced(current, config.reinforce_gain),
        "activation_at": now,
        "access_count": memory.access_count + 1,
        "last_accessed": now,
    }


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


class Reconciler:
    """Writes memories, edges and status changes of one mind."""

    def __init__(
        self,
        storage: Storage,
        mind: MindInfo,
        config: MindConfig,
        clock: Clock,
        embedder: Embedder | None = None,
    ) -> None:
        self.storage = storage
        self.mind = mind
        self.config = config
        self.clock = clock
        self.embedder = embedder

    # ------------------------------------------------------------ policy

    def check_policy(
        self,
        items: Sequence[MemoryInput],
        *,
        force: bool,
        labels: Sequence[str] | None = None,
    ) -> None:
        """Refuse, before any write, what the write policy does not allow.

        A credential in an item's world is refused under ``redact`` too: the path
        names the world, and a redacted one would name another.
        """
        policy = self.config.policy
        threshold = policy.min_confidence
        for index, item in enumerate(items):
            if labels is not None:
                where = f"{labels[index]}: "
            else:
                where = f"item {index + 1}: " if len(items) > 1 else ""
            if policy.secrets == "refuse":  # ``force`` lowers the bar of confidence only
                apply_secret_policy(item, policy, what=where)
            screen_name(item.world, policy, what=f"{where}world", field="world")
            if item.confidence < threshold and not force:
                raise PolicyViolation(
                    f"{where}confidence {item.confidence} is below the write policy's "
                    f"minimum {threshold} (force the write to keep it anyway)",
                    field="confidence",
                )

    def check_links(self, items: Sequence[MemoryInput]) -> None:
        """Refuse, before any write, links that the edge handlers would refuse.

        Batched writes commit batch by batch; checking every link first keeps a
        bad link in a late batch from leaving the earlier batches written.
        """
        targets = sorted({link.target for item in items for link in item.links})
        if not targets:
            return
        with self.storage.transaction(write=False) as session:
            now = self.clock.now()
            found = {m.id: m for m in session.run(ops.GetMemories(self.mind.id, targets))}
        for item in items:
            for link in item.links:
                target = found.get(link.target)
                if target is None:
                    raise NotFound(self._missing(link.target))
                when = item.valid_from or item.at or now
                _check_edge("the new memory", when, link.relation, target)

    # ------------------------------------------------------------ remember

    def remember(
        self,
        items: Sequence[MemoryInput],
        *,
        force: bool = False,
        origin_event: str | None = None,
        checked: bool = False,
        embed: bool = True,
    ) -> list[Memory]:
        """Write ``items`` in one transaction; returns one memory per item, in order.

        Identical content already active in the mind is reinforced and returned
        instead of duplicated. ``checked``: the caller already ran ``check_policy``.
        ``embed``: embed the new memories inline (when embedding on write), else
        leave them to ``embed_missing``.
        """
        if not checked:
            self.check_policy(items, force=force)
        if not items:
            return []
        redactions: list[list[str]] = [[] for _ in items]
        if self.config.policy.secrets == "redact":
            prepared = [apply_secret_policy(item, self.config.policy) for item in items]
            items = [item for item, _ in prepared]
            redactions = [kinds for _, kinds in prepared]
        # Embedding is slow: it happens before the write lock is taken.
        embedded_items = self._embed_new(items) if embed else {}
        with self.storage.transaction() as session:
            now = self.clock.now()
            log = EventLog(self.mind.id, now)
            world_ids = resolve_worlds(session, self.mind.id, [i.world for i in items], log, now)
            hashes = [content_hash(i.kind, i.content, i.key, world_ids[i.world]) for i in items]
            vectors = {hashes[index]: v for index, v in embedded_items.items()}
            pending = _Pending(now=now, created={}, changed={}, known={})
            by_hash = {
                m.content_hash: m for m in session.run(ops.FindActiveByHash(self.mind.id, hashes))
            }
            pending.known.update({m.id: m for m in by_hash.values()})
            keys = sorted({i.key for i in items if i.key is not None})
            by_key: dict[tuple[str, str], str] = {}  # (world, key): a key's value per world
            if keys:
                for m in session.run(ops.FindActiveByKey(self.mind.id, keys)):
                    if m.lifecycle != Lifecycle.REJECTED:  # a rejected value no longer stands
                        pending.known.setdefault(m.id, m)
                        by_key[(m.world, m.key or "")] = m.id
            targets = sorted({link.target for i in items for link in i.links})
            if targets:
                self._load(session, pending, targets)

            results: list[Memory] = []
            new_edges: list[Relationship] = []
            for item, digest, redacted in zip(items, hashes, redactions, strict=True):
                existing = by_hash.get(digest)
                if existing is not None:
                    existing = pending.get(existing.id) or existing
                if existing is not None and existing.status == Status.ACTIVE:
                    memory = pending.change(existing, **reinforcement(existing, now, self.config))
                    log.add(
                        EventKind.MEMORY_REINFORCED,
                        memory_id=memory.id,
                        origin_event=origin_event,
                        payload={"reason": "remembered again", "activation": memory.activation},
                    )
                    if (
                        memory.lifecycle == Lifecycle.CANDIDATE
                        and initial_lifecycle(item) != Lifecycle.CANDIDATE
                    ):  # an observation that is not itself a candidate confirms it
                        memory = self._transition(
                            pending,
                            log,
                            memory,
                            Lifecycle.VERIFIED,
                            reason=f"confirmed by a repeated observation ({item.channel.value})",
                            actor="reconciler",
                        )
                else:
                    entities = extract_entities(item.content)
                    memory = self._new_memory(
                        item,
                        digest,
                        world_ids[item.world],
                        now,
                        log,
                        origin_event,
                        redacted,
                        entities=entities,
                    )
                    pending.created[memory.id] = memory
                    pending.entities[memory.id] = entities
                    by_hash[digest] = memory
                    if item.key is not None:
                        self._supersede_key(session, memory, by_key, pending, log, new_edges, now)
                for link in item.links:
                    self._link(
                        session,
                        pending,
                        log,
                        new_edges,
                        memory.id,
                        link.relation,
                        link.target,
                        confidence=link.confidence,
                        source=item.channel.value,
                        now=now,
                    )
                results.append(memory)
            if self.config.detect_on_write:
                self._stage_detected(session, pending, new_edges, vectors, now)
            self._flush(session, pending, new_edges, log)
            embedded = [m for m in pending.created.values() if m.content_hash in vectors]
            if embedded and self.embedder is not None:
                ids = [m.id for m in embedded]
                rows = np.stack([vectors[m.content_hash] for m in embedded])
                created = {m.id: m.world for m in embedded}
                compose(session, self.mind.id, self.embedder.model, ids, rows, created=created)
                session.run(ops.PutVectors(self.mind.id, self.embedder.model, ids, rows))
        return [pending.get(m.id) or m for m in results]

    def _stage_detected(
        self,
        session: Session,
        pending: _Pending,
        edges: list[Relationship],
        vectors: dict[str, Any],
        now: datetime,
    ) -> None:
        """Stage, as proposals, what write-time detection finds (``noema.memory.write.detect``).

        Nothing is applied: each ``supersedes``, ``contradicts`` or ``same_as``
        waits for an operator. A batch larger than the detector's limit (a bulk
        import) is not examined. Pairs this write already links are left alone.
        """
        created = [m for m in pending.created.values() if m.status == Status.ACTIVE]
        if not created or len(created) > DETECT_LIMIT:
            return
        by_id = {m.id: vectors[m.content_hash] for m in created if m.content_hash in vectors}
        model = self.embedder.model if self.embedder is not None else None
        linked = {frozenset((e.src, e.dst)) for e in edges}
        for proposal in detect(session, self.mind.id, created, by_id or None, model):
            pair = frozenset((proposal.src, proposal.dst))
            target = pending.get(proposal.dst)
            if pair in linked or (target is not None and target.status != Status.ACTIVE):
                continue
            linked.add(pair)
            edges.append(
                self._edge(
                    proposal.src,
                    proposal.relation,
                    proposal.dst,
                    proposal.confidence,
                    "detector",
                    now,
                    status=RelationStatus.PROPOSED,
                    evidence=proposal.evidence,
                )
            )

    def _embed_new(self, items: Sequence[MemoryInput]) -> dict[int, Any]:
        """Vectors, by position, of the items not already held (when embedding on write).

        An item of a world the mind does not hold yet cannot be held: it is embedded.
        """
        if self.embedder is None or not self.config.embed_on_write:
            return {}
        with self.storage.transaction(write=False) as session:
            tree = load_tree(session, self.mind.id) if any(i.world for i in items) else None
            worlds = [ROOT_WORLD if tree is None else tree.find(i.world) for i in items]
            hashes = {
                index: content_hash(item.kind, item.content, item.key, world)
                for index, (item, world) in enumerate(zip(items, worlds, strict=True))
                if world is not None
            }
            held = {
                m.content_hash
                for m in session.run(ops.FindActiveByHash(self.mind.id, sorted(hashes.values())))
            }
        now = self.clock.now()
        new = {
            index: (item.content, item.valid_from or item.at or now)
            for index, item in enumerate(items)
            if hashes.get(index) not in held
        }
        if not new:
            return {}
        matrix = self.embedder.memories(list(new.values()))
        return dict(zip(new, matrix, strict=True))

    def _new_memory(
        self,
        item: MemoryInput,
        digest: str,
        world: str,
        now: datetime,
        log: EventLog,
        origin_event: str | None,
        redacted: Sequence[str] = (),
        *,
        entities: Sequence[str] | None = None,
    ) -> Memory:
        """The new memory of ``item``; ``entities``: its content's, when already found.

        Transaction time is the store's: ``recorded_at`` is ``now``, whatever the
        caller says. ``item.at`` (when it happened or was said) is valid time: the
        start of ``valid_from`` unless that is given, and of the activation's decay.
        """
        valid_from = item.valid_from or item.at or now
        memory_id = new_id(now)
        event_id = new_id(now)
        c = item.confidence
        memory = trusted(
            Memory,
            dict(
                id=memory_id,
                mind_id=self.mind.id,
                kind=item.kind,
                epistemic=item.epistemic,
                channel=item.channel,
                content=item.content,
                summary=item.summary,
                key=item.key,
                tags=item.tags,
                payload=item.payload,
                keys=expand_keys(
                    item.content,
                    valid_from,
                    summary=item.summary,
                    key=item.key,
                    tags=item.tags,
                    payload=item.payload,
                    entities=entities,
                ),
                confidence=c,
                alpha=max(PRIOR_STRENGTH * c, _MIN_SHAPE),
                beta=max(PRIOR_STRENGTH * (1.0 - c), _MIN_SHAPE),
                importance=item.importance,
                salience=item.salience,
                trust=CHANNEL_TRUST[item.channel],
                credibility=credibility(item.channel, item.epistemic),
                activation=self.config.initial_activation,
                activation_at=item.at or now,
                status=Status.ACTIVE,
                valid_from=valid_from,
                valid_to=None,
                recorded_at=now,
                last_accessed=None,
                access_count=0,
                origin_event=origin_event or event_id,
                content_hash=digest,
                feedback_count=0,
                feedback_mean=0.0,
                decay=item.decay,
                lifecycle=initial_lifecycle(item),
                world=world,
                changed_at=None,
            ),
        )
        payload: dict[str, Any] = {
            "content_hash": digest,
            "kind": item.kind.value,
            "epistemic": item.epistemic.value,
            "channel": item.channel.value,
            "key": item.key,
            **created_payload(memory),
        }
        if redacted:  # the write policy replaced credentials: which kinds, never what
            payload["redacted"] = list(redacted)
        log.add(
            EventKind.MEMORY_CREATED,
            memory_id=memory_id,
            origin_event=origin_event,
            payload=payload,
            event_id=event_id,
        )
        return memory

    def _supersede_key(
        self,
        session: Session,
        memory: Memory,
        by_key: dict[tuple[str, str], str],
        pending: _Pending,
        log: EventLog,
        edges: list[Relationship],
        now: datetime,
    ) -> None:
        """A new value for a key supersedes the current one of its world.

        An older value learned late goes straight into history: it is superseded
        by the earliest value of the key that became true after it.
        """
        key = memory.key or ""
        slot = (memory.world, key)
        current_id = by_key.get(slot)
        current = pending.get(current_id) if current_id else None
        if current is None or current.status != Status.ACTIVE:
            by_key[slot] = memory.id
            return
        if memory.valid_from >= current.valid_from:
            newer, older = memory, current
            by_key[slot] = memory.id
        else:
            history = session.run(
                ops.ScanMemories(
                    self.mind.id,
                    RecallFilters(key=key, statuses=tuple(Status), worlds=(memory.world,)),
                    limit=10_000,
                )
            )
            versions = [pending.get(m.id) or m for m in history]
            versions += [
                m for m in pending.created.values() if m.key == key and m.world == memory.world
            ]
            later = [m for m in versions if m.valid_from > memory.valid_from and m.id != memory.id]
            newer = min(later, key=lambda m: (m.valid_from, m.id), default=current)
            older = memory
        self._close(pending, log, edges, newer, older, now, reason=f"new value for key {key!r}")

    def _close(
        self,
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
        edges.append(self._edge(newer.id, Relation.SUPERSEDES, older.id, 1.0, "reconciler", now))
        payload = {"by": newer.id, "reason": reason, "valid_to": iso(valid_to)}
        if closed.changed_at != now:  # verify replays it: an event says when, if not at its time
            payload["changed_at"] = iso(closed.changed_at)
        log.add(EventKind.MEMORY_SUPERSEDED, memory_id=older.id, payload=payload)

    # ------------------------------------------------------------ edges

    def relate(
        self,
        src: str,
        relation: Relation,
        dst: str,
        *,
        confidence: float = 1.0,
        source: str = "api",
    ) -> Relationship:
        """Add the edge ``src --relation--> dst`` through the edge handlers."""
        source = screen_text(source, self.config.policy, what="source")
        with self.storage.transaction() as session:
            now = self.clock.now()
            log = EventLog(self.mind.id, now)
            pending = _Pending(now=now, created={}, changed={}, known={})
            self._load(session, pending, [src, dst])
            edges: list[Relationship] = []
            edge = self._link(
                session,
                pending,
                log,
                edges,
                src,
                relation,
                dst,
                confidence=confidence,
                source=source,
                now=now,
            )
            self._flush(session, pending, edges, log)
        return edge

    def _link(
        self,
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
            raise NotFound(self._missing(missing))
        if src.id == dst.id:
            raise InvalidInput(f"a memory cannot be {relation.value} itself ({src.id})")
        for edge in edges:
            if (edge.src, edge.relation, edge.dst) == (src.id, relation, dst.id):
                return edge
        stored = session.run(
            ops.FindRelationships(self.mind.id, memory_ids=[src.id], relations=[relation])
        )
        for edge in stored:
            if edge.src == src.id and edge.dst == dst.id:
                if edge.status == RelationStatus.PROPOSED and relation != Relation.SAME_AS:
                    # Asserting what the detector proposed approves the proposal.
                    return self._settle(
                        session, pending, log, edge, approve=True, actor=source, now=now
                    )
                return edge
        _check_edge(src.id, src.valid_from, relation, dst)
        if relation == Relation.SUPERSEDES:
            before = len(edges)
            self._close(pending, log, edges, src, dst, now, reason="superseded explicitly")
            edges[before] = edges[before].model_copy(
                update={"confidence": confidence, "source": source}
            )
            return edges[before]
        status = RelationStatus.PROPOSED if relation == Relation.SAME_AS else RelationStatus.ACTIVE
        edge = self._edge(src.id, relation, dst.id, confidence, source, now, status=status)
        edges.append(edge)
        return edge

    def _edge(
        self,
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
            mind_id=self.mind.id,
            src=src,
            relation=relation,
            dst=dst,
            confidence=confidence,
            source=source,
            status=status,
            created_at=now,
            evidence=evidence or {},
        )

    # ------------------------------------------------------------ status changes

    def retract(self, memory_id: str, *, reason: str, actor: str = "operator") -> Memory:
        """Mark a memory inaccurate. It stays, for provenance, out of normal recall."""
        reason = reason.strip()
        if not reason:
            raise InvalidInput("reason: a retraction needs a reason", field="reason")
        reason = screen_text(reason, self.config.policy, what="reason")
        with self.storage.transaction() as session:
            now = self.clock.now()
            memory = self._get(session, memory_id)
            if memory.status == Status.RETRACTED:
                raise Conflict(f"memory {memory_id} is already retracted")
            log = EventLog(self.mind.id, now)
            action = log.add(
                EventKind.OPERATOR_ACTION,
                memory_id=memory.id,
                payload={"action": "retract", "actor": actor, "reason": reason},
            )
            log.add(
                EventKind.MEMORY_RETRACTED,
                memory_id=memory.id,
                origin_event=action.id,
                payload={"reason": reason, "previous_status": memory.status.value},
            )
            pending = _Pending(now=now, created={}, changed={}, known={memory.id: memory})
            retracted = pending.change(memory, status=Status.RETRACTED)
            if memory.status == Status.ACTIVE:
                self._restore_superseded(session, pending, log, memory, now, action.id)
            self._flush(session, pending, [], log)
        return retracted

    def set_lifecycle(
        self, memory_id: str, action: str, *, reason: str, actor: str = "operator"
    ) -> Memory:
        """``verify``, ``reject`` or ``reinstate`` a memory: a lifecycle transition.

        Rejecting the active value of a key (or of anything that superseded
        another memory) reopens the value it replaced, as retracting does;
        reinstating a keyed value takes its place among the key's values again.
        """
        if action not in _TRANSITIONS:
            raise InvalidInput(
                f"action: {action!r} is not one of {', '.join(_TRANSITIONS)}", field="action"
            )
        target, allowed = _TRANSITIONS[action]
        reason = screen_text(reason.strip(), self.config.policy, what="reason")
        if not reason:
            raise InvalidInput(f"reason: to {action} a memory needs a reason", field="reason")
        with self.storage.transaction() as session:
            now = self.clock.now()
            memory = self._get(session, memory_id)
            if memory.lifecycle not in allowed:
                raise Conflict(
                    f"cannot {action} memory {memory_id}: it is {memory.lifecycle.value}"
                )
            log = EventLog(self.mind.id, now)
            done = log.add(
                EventKind.OPERATOR_ACTION,
                memory_id=memory.id,
                payload={"action": action, "actor": actor, "reason": reason},
            )
            pending = _Pending(now=now, created={}, changed={}, known={memory.id: memory})
            edges: list[Relationship] = []
            changed = self._transition(
                pending, log, memory, target, reason=reason, actor=actor, origin=done.id
            )
            if target == Lifecycle.REJECTED and memory.status == Status.ACTIVE:
                self._restore_superseded(session, pending, log, memory, now, done.id)
            elif (
                action == "reinstate" and memory.key is not None and memory.status == Status.ACTIVE
            ):
                by_key: dict[tuple[str, str], str] = {}
                for other in session.run(ops.FindActiveByKey(self.mind.id, [memory.key])):
                    if (
                        other.id != memory.id
                        and other.world == memory.world
                        and other.lifecycle != Lifecycle.REJECTED
                    ):
                        pending.known.setdefault(other.id, other)
                        by_key[(memory.world, memory.key)] = other.id
                if by_key:
                    self._supersede_key(session, changed, by_key, pending, log, edges, now)
                    held = {
                        (e.src, e.relation, e.dst)
                        for e in session.run(
                            ops.FindRelationships(self.mind.id, memory_ids=[memory.id])
                        )
                    }
                    edges = [e for e in edges if (e.src, e.relation, e.dst) not in held]
            self._flush(session, pending, edges, log)
        return pending.get(memory.id) or changed

    def mark_stale(self, memory_ids: Sequence[str], *, reason: str) -> int:
        """Mark ``memory_ids`` stale (the ``decay`` job's finding); returns how many changed.

        Only active and candidate memories become stale; the others are left.
        """
        if not memory_ids:
            return 0
        with self.storage.transaction() as session:
            now = self.clock.now()
            log = EventLog(self.mind.id, now)
            pending = _Pending(now=now, created={}, changed={}, known={})
            for memory in session.run(ops.GetMemories(self.mind.id, list(memory_ids))):
                if memory.lifecycle in (Lifecycle.ACTIVE, Lifecycle.CANDIDATE):
                    pending.known[memory.id] = memory
                    self._transition(
                        pending, log, memory, Lifecycle.STALE, reason=reason, actor="decay"
                    )
            self._flush(session, pending, [], log)
        return len(pending.changed)

    def _transition(
        self,
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
        self,
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
                self.mind.id,
                memory_ids=[memory.id],
                relations=[Relation.SUPERSEDES],
                statuses=[RelationStatus.ACTIVE],
            )
        )
        targets = [e.dst for e in edges if e.src == memory.id]
        if not targets:
            return
        self._load(session, pending, targets)
        replaced = [
            m
            for m in (pending.get(t) for t in targets)
            if m is not None and m.status == Status.SUPERSEDED and m.lifecycle != Lifecycle.REJECTED
        ]
        others = session.run(
            ops.FindRelationships(
                self.mind.id,
                memory_ids=[m.id for m in replaced],
                relations=[Relation.SUPERSEDES],
                statuses=[RelationStatus.ACTIVE],
            )
        )
        other_src = sorted({e.src for e in others if e.src != memory.id})
        standing = {
            m.id: m
            for m in session.run(ops.GetMemories(self.mind.id, other_src))
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

    def feedback(self, memory_id: str, value: float, *, note: str | None = None) -> Memory:
        """Update the confidence posterior: ``value`` in [-1, 1], positive meaning useful/true."""
        if not -1.0 <= value <= 1.0:
            raise InvalidInput(
                f"value: feedback must be between -1 and 1, got {value}", field="value"
            )
        if note is not None:
            note = screen_text(note, self.config.policy, what="note")
        with self.storage.transaction() as session:
            now = self.clock.now()
            memory = self._get(session, memory_id)
            alpha = memory.alpha + max(value, 0.0)
            beta = memory.beta + max(-value, 0.0)
            count = memory.feedback_count + 1
            changes = {
                "alpha": alpha,
                "beta": beta,
                "confidence": alpha / (alpha + beta),
                "feedback_count": count,
                "feedback_mean": memory.feedback_mean + (value - memory.feedback_mean) / count,
            }
            session.run(ops.UpdateMemories(self.mind.id, [(memory.id, changes)]))
            log = EventLog(self.mind.id, now)
            log.add(
                EventKind.FEEDBACK_GIVEN,
                memory_id=memory.id,
                payload={"value": value, "note": note, "confidence": changes["confidence"]},
            )
            log.flush(session)
        return memory.model_copy(update=changes)

    def decide(
        self, relationship_id: str, *, approve: bool, actor: str = "operator"
    ) -> Relationship:
        """Approve or reject a staged proposal (``same_as``, ``supersedes`` or ``contradicts``).

        Approving makes the edge active and does what it says: ``same_as``
        merges (the proposing memory is archived in favour of its target, which
        stays active), ``supersedes`` closes the target's validity, and
        ``contradicts`` flags the pair for recall to surface together.
        """
        with self.storage.transaction() as session:
            now = self.clock.now()
            found = session.run(ops.FindRelationships(self.mind.id, ids=[relationship_id]))
            if not found:
                raise NotFound(f"no proposal {relationship_id} in mind {self.mind.name!r}")
            edge = found[0]
            if edge.status != RelationStatus.PROPOSED:
                raise Conflict(f"relationship {relationship_id} is not a pending proposal")
            log = EventLog(self.mind.id, now)
            pending = _Pending(now=now, created={}, changed={}, known={})
            decided = self._settle(
                session, pending, log, edge, approve=approve, actor=actor, now=now
            )
            self._flush(session, pending, [], log)
        return decided

    def _settle(
        self,
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
            self._load(session, pending, [edge.src, edge.dst])
            dst = pending.get(edge.dst)
            if dst is not None and dst.status != Status.ACTIVE:
                raise InvalidInput(
                    f"cannot approve {edge.id}: memory {dst.id} is {dst.status.value}"
                )
        session.run(ops.SetRelationshipStatus(self.mind.id, edge.id, status, now))
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
            src = pending.get(edge.src) or self._get(session, edge.src)
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

    # ------------------------------------------------------------ helpers

    def _missing(self, memory_id: str) -> str:
        return f"no memory {memory_id} in mind {self.mind.name!r} (relationships never cross minds)"

    def _get(self, session: Session, memory_id: str) -> Memory:
        found = session.run(ops.GetMemories(self.mind.id, [memory_id]))
        if not found:
            raise NotFound(f"no memory {memory_id} in mind {self.mind.name!r}")
        return found[0]

    def _load(self, session: Session, pending: _Pending, ids: Sequence[str]) -> None:
        wanted = [i for i in ids if pending.get(i) is None]
        if not wanted:
            return
        found = {m.id: m for m in session.run(ops.GetMemories(self.mind.id, wanted))}
        for memory_id in wanted:
            if memory_id not in found:
                raise NotFound(self._missing(memory_id))
        pending.known.update(found)

    def _flush(
        self,
        session: Session,
        pending: _Pending,
        edges: list[Relationship],
        log: EventLog,
    ) -> None:
        # Changes first: a value superseded here frees its content hash for a new row.
        if pending.changed:
            session.run(ops.UpdateMemories(self.mind.id, list(pending.changed.items())))
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
                session.run(ops.UpdateMemories(self.mind.id, later))
            session.run(ops.PutEntities(self.mind.id, entity_refs(created, pending.entities)))
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


def memory_keys(memory: Memory) -> str:
    """The expanded keys a stored memory should have (``noema.memory.write.keys``)."""
    return expand_keys(
        memory.content,
        memory.valid_from,
        summary=memory.summary,
        key=memory.key,
        tags=memory.tags,
        payload=memory.payload,
    )


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


def _check_edge(src: str, src_time: datetime, relation: Relation, dst: Memory) -> None:
    """The refusals of the edge handlers that depend only on the two ends."""
    if relation in _ORDERED and src_time > dst.valid_from:
        raise TemporalOrderError(
            f"{src} cannot {relation.value.rstrip('s')} {dst.id}: it is later "
            f"({iso(src_time)} > {iso(dst.valid_from)})"
        )
    if relation == Relation.SUPERSEDES and dst.status != Status.ACTIVE:
        raise Conflict(f"cannot supersede memory {dst.id}: it is {dst.status.value}")
