"""The write path (docs/architecture.md, "Write path"). Every memory and every edge is written here.

Each public method runs in one write transaction: validation and policy first,
then dedup by content hash, key supersession, edge handlers, and finally the
events with their hash-chained audit entries. An exception anywhere rolls the
whole transaction back, so nothing is ever half-written.

This module is the ``Reconciler``, the door every write goes through. A new
memory's fields are ``memories``; what one transaction touches and writing it
out is ``pending``; the edge handlers are ``edges``; lifecycle transitions and
reopening superseded values are ``lifecycle``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from concepts import (
    ROOT_WORLD,
    EventKind,
    Lifecycle,
    Memory,
    MemoryInput,
    RecallFilters,
    Relation,
    Relationship,
    RelationStatus,
    Status,
)
from noema.errors import Conflict, InvalidInput, NotFound, PolicyViolation
from noema.ids import content_hash
from noema.memory.language.entities import extract_entities
from noema.memory.records.events import EventLog
from noema.memory.write.composed import compose
from noema.memory.write.detect import DEFAULT_LIMIT as DETECT_LIMIT, detect
from noema.memory.write.edges import _check_edge, _close, _edge, _link, _settle
from noema.memory.write.lifecycle import _TRANSITIONS, _restore_superseded, _transition
from noema.memory.write.memories import initial_lifecycle, new_memory, reinforcement
from noema.memory.write.parts import Parts
from noema.memory.write.pending import _flush, _get, _load, _missing, _Pending
from noema.memory.write.policy import apply_secret_policy, screen_name, screen_text
from noema.memory.write.worlds import load_tree, resolve_worlds
from noema.storage import Session, ops

__all__ = ["Reconciler"]


class Reconciler:
    """Writes memories, edges and status changes of one mind.

    Args:
        parts: the mind's store, identity, configuration (the write policy),
            clock and embedder (the vectors of what it writes, if any).
    """

    def __init__(self, parts: Parts) -> None:
        self.parts = parts

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
        policy = self.parts.config.policy
        threshold = policy.min_confidence
        for index, item in enumerate(items):
            if labels is not None:
                where = f"{labels[index]}: "
            else:
                where = f"item {index + 1}: " if len(items) > 1 else ""
            if policy.secrets == "refuse":  # ``force`` lowers the bar of confidence only
                apply_secret_policy(item, policy, what=where)
            screen_name(item.world, policy, what=f"{where}world", field="world")
            if item.thread is not None:  # a label, like a world's path: never redacted
                screen_name(item.thread, policy, what=f"{where}thread", field="thread")
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
        with self.parts.storage.transaction(write=False) as session:
            now = self.parts.clock.now()
            found = {m.id: m for m in session.run(ops.GetMemories(self.parts.mind.id, targets))}
        for item in items:
            for link in item.links:
                target = found.get(link.target)
                if target is None:
                    raise NotFound(_missing(self.parts.mind, link.target))
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
        mind, config = self.parts.mind, self.parts.config
        redactions: list[list[str]] = [[] for _ in items]
        if config.policy.secrets == "redact":
            prepared = [apply_secret_policy(item, config.policy) for item in items]
            items = [item for item, _ in prepared]
            redactions = [kinds for _, kinds in prepared]
        # Embedding is slow: it happens before the write lock is taken.
        embedded_items = self._embed_new(items) if embed else {}
        with self.parts.storage.transaction() as session:
            now = self.parts.clock.now()
            log = EventLog(mind.id, now)
            world_ids = resolve_worlds(session, mind.id, [i.world for i in items], log, now)
            hashes = [content_hash(i.kind, i.content, i.key, world_ids[i.world]) for i in items]
            vectors = {hashes[index]: v for index, v in embedded_items.items()}
            pending = _Pending(now=now, created={}, changed={}, known={})
            by_hash = {
                m.content_hash: m for m in session.run(ops.FindActiveByHash(mind.id, hashes))
            }
            pending.known.update({m.id: m for m in by_hash.values()})
            keys = sorted({i.key for i in items if i.key is not None})
            by_key: dict[tuple[str, str], str] = {}  # (world, key): a key's value per world
            if keys:
                for m in session.run(ops.FindActiveByKey(mind.id, keys)):
                    if m.lifecycle != Lifecycle.REJECTED:  # a rejected value no longer stands
                        pending.known.setdefault(m.id, m)
                        by_key[(m.world, m.key or "")] = m.id
            targets = sorted({link.target for i in items for link in i.links})
            if targets:
                _load(mind, session, pending, targets)
            threads = sorted({i.thread for i in items if i.thread})
            # The last place of each thread: this transaction holds the mind's writer lock.
            ends = session.run(ops.ThreadEnds(mind.id, threads)) if threads else {}

            results: list[Memory] = []
            new_edges: list[Relationship] = []
            for item, digest, redacted in zip(items, hashes, redactions, strict=True):
                existing = by_hash.get(digest)
                if existing is not None:
                    existing = pending.get(existing.id) or existing
                if existing is not None and existing.status == Status.ACTIVE:
                    memory = pending.change(existing, **reinforcement(existing, now, config))
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
                        memory = _transition(
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
                        position=_next_place(ends, item.thread),
                    )
                    pending.created[memory.id] = memory
                    pending.entities[memory.id] = entities
                    by_hash[digest] = memory
                    if item.key is not None:
                        self._supersede_key(session, memory, by_key, pending, log, new_edges, now)
                for link in item.links:
                    _link(
                        mind,
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
            if config.detect_on_write:
                self._stage_detected(session, pending, new_edges, vectors, now)
            _flush(mind, session, pending, new_edges, log)
            embedded = [m for m in pending.created.values() if m.content_hash in vectors]
            if embedded and self.parts.embedder is not None:
                ids = [m.id for m in embedded]
                model = self.parts.embedder.model
                rows = np.stack([vectors[m.content_hash] for m in embedded])
                created = {m.id: m.world for m in embedded}
                compose(session, mind.id, model, ids, rows, created=created)
                session.run(ops.PutVectors(mind.id, model, ids, rows))
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
        model = self.parts.embedder.model if self.parts.embedder is not None else None
        linked = {frozenset((e.src, e.dst)) for e in edges}
        for proposal in detect(session, self.parts.mind.id, created, by_id or None, model):
            pair = frozenset((proposal.src, proposal.dst))
            target = pending.get(proposal.dst)
            if pair in linked or (target is not None and target.status != Status.ACTIVE):
                continue
            linked.add(pair)
            edges.append(
                _edge(
                    self.parts.mind,
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
        if self.parts.embedder is None or not self.parts.config.embed_on_write:
            return {}
        with self.parts.storage.transaction(write=False) as session:
            tree = load_tree(session, self.parts.mind.id) if any(i.world for i in items) else None
            worlds = [ROOT_WORLD if tree is None else tree.find(i.world) for i in items]
            hashes = {
                index: content_hash(item.kind, item.content, item.key, world)
                for index, (item, world) in enumerate(zip(items, worlds, strict=True))
                if world is not None
            }
            held = {
                m.content_hash
                for m in session.run(
                    ops.FindActiveByHash(self.parts.mind.id, sorted(hashes.values()))
                )
            }
        now = self.parts.clock.now()
        new = {
            index: (item.content, item.valid_from or item.at or now)
            for index, item in enumerate(items)
            if hashes.get(index) not in held
        }
        if not new:
            return {}
        matrix = self.parts.embedder.memories(list(new.values()))
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
        position: int | None = None,
    ) -> Memory:
        """The new memory of ``item`` in this mind (``memories.new_memory``)."""
        return new_memory(
            self.parts.mind,
            self.parts.config,
            item,
            digest,
            world,
            now,
            log,
            origin_event,
            redacted,
            entities=entities,
            position=position,
        )

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
                    self.parts.mind.id,
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
        reason = f"new value for key {key!r}"
        _close(self.parts.mind, pending, log, edges, newer, older, now, reason=reason)

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
        source = screen_text(source, self.parts.config.policy, what="source")
        with self.parts.storage.transaction() as session:
            now = self.parts.clock.now()
            log = EventLog(self.parts.mind.id, now)
            pending = _Pending(now=now, created={}, changed={}, known={})
            _load(self.parts.mind, session, pending, [src, dst])
            edges: list[Relationship] = []
            edge = _link(
                self.parts.mind,
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
            _flush(self.parts.mind, session, pending, edges, log)
        return edge

    # ------------------------------------------------------------ status changes

    def retract(self, memory_id: str, *, reason: str, actor: str = "operator") -> Memory:
        """Mark a memory inaccurate. It stays, for provenance, out of normal recall."""
        reason = reason.strip()
        if not reason:
            raise InvalidInput("reason: a retraction needs a reason", field="reason")
        reason = screen_text(reason, self.parts.config.policy, what="reason")
        with self.parts.storage.transaction() as session:
            now = self.parts.clock.now()
            memory = _get(self.parts.mind, session, memory_id)
            if memory.status == Status.RETRACTED:
                raise Conflict(f"memory {memory_id} is already retracted")
            log = EventLog(self.parts.mind.id, now)
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
                _restore_superseded(self.parts.mind, session, pending, log, memory, now, action.id)
            _flush(self.parts.mind, session, pending, [], log)
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
        reason = screen_text(reason.strip(), self.parts.config.policy, what="reason")
        if not reason:
            raise InvalidInput(f"reason: to {action} a memory needs a reason", field="reason")
        with self.parts.storage.transaction() as session:
            now = self.parts.clock.now()
            memory = _get(self.parts.mind, session, memory_id)
            if memory.lifecycle not in allowed:
                raise Conflict(
                    f"cannot {action} memory {memory_id}: it is {memory.lifecycle.value}"
                )
            log = EventLog(self.parts.mind.id, now)
            done = log.add(
                EventKind.OPERATOR_ACTION,
                memory_id=memory.id,
                payload={"action": action, "actor": actor, "reason": reason},
            )
            pending = _Pending(now=now, created={}, changed={}, known={memory.id: memory})
            edges: list[Relationship] = []
            changed = _transition(
                pending, log, memory, target, reason=reason, actor=actor, origin=done.id
            )
            if target == Lifecycle.REJECTED and memory.status == Status.ACTIVE:
                _restore_superseded(self.parts.mind, session, pending, log, memory, now, done.id)
            elif (
                action == "reinstate" and memory.key is not None and memory.status == Status.ACTIVE
            ):
                by_key: dict[tuple[str, str], str] = {}
                for other in session.run(ops.FindActiveByKey(self.parts.mind.id, [memory.key])):
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
                            ops.FindRelationships(self.parts.mind.id, memory_ids=[memory.id])
                        )
                    }
                    edges = [e for e in edges if (e.src, e.relation, e.dst) not in held]
            _flush(self.parts.mind, session, pending, edges, log)
        return pending.get(memory.id) or changed

    def mark_stale(self, memory_ids: Sequence[str], *, reason: str) -> int:
        """Mark ``memory_ids`` stale (the ``decay`` job's finding); returns how many changed.

        Only active and candidate memories become stale; the others are left.
        """
        if not memory_ids:
            return 0
        with self.parts.storage.transaction() as session:
            now = self.parts.clock.now()
            log = EventLog(self.parts.mind.id, now)
            pending = _Pending(now=now, created={}, changed={}, known={})
            for memory in session.run(ops.GetMemories(self.parts.mind.id, list(memory_ids))):
                if memory.lifecycle in (Lifecycle.ACTIVE, Lifecycle.CANDIDATE):
                    pending.known[memory.id] = memory
                    _transition(pending, log, memory, Lifecycle.STALE, reason=reason, actor="decay")
            _flush(self.parts.mind, session, pending, [], log)
        return len(pending.changed)

    def feedback(self, memory_id: str, value: float, *, note: str | None = None) -> Memory:
        """Update the confidence posterior: ``value`` in [-1, 1], positive meaning useful/true."""
        if not -1.0 <= value <= 1.0:
            raise InvalidInput(
                f"value: feedback must be between -1 and 1, got {value}", field="value"
            )
        if note is not None:
            note = screen_text(note, self.parts.config.policy, what="note")
        with self.parts.storage.transaction() as session:
            now = self.parts.clock.now()
            memory = _get(self.parts.mind, session, memory_id)
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
            session.run(ops.UpdateMemories(self.parts.mind.id, [(memory.id, changes)]))
            log = EventLog(self.parts.mind.id, now)
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
        with self.parts.storage.transaction() as session:
            now = self.parts.clock.now()
            found = session.run(ops.FindRelationships(self.parts.mind.id, ids=[relationship_id]))
            if not found:
                raise NotFound(f"no proposal {relationship_id} in mind {self.parts.mind.name!r}")
            edge = found[0]
            if edge.status != RelationStatus.PROPOSED:
                raise Conflict(f"relationship {relationship_id} is not a pending proposal")
            log = EventLog(self.parts.mind.id, now)
            pending = _Pending(now=now, created={}, changed={}, known={})
            decided = _settle(
                self.parts.mind, session, pending, log, edge, approve=approve, actor=actor, now=now
            )
            _flush(self.parts.mind, session, pending, [], log)
        return decided


def _next_place(ends: dict[str, int], thread: str | None) -> int | None:
    """The next place in ``thread`` (the first is 1), taken in ``ends``; ``None``: no thread."""
    if not thread:
        return None
    ends[thread] = ends.get(thread, 0) + 1
    return ends[thread]
