"""The health rules that look at a mind's live memories one by one.

They see every memory of the report's shared scan (``scans``) and keep only what
they count: ``confidence_decline`` (1), ``stale_cluster`` (3), ``duplicate`` (4)
and ``popular_unexamined`` (6); ``health`` describes each and runs them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from concepts import (
    EventKind,
    Lifecycle,
    Memory,
    Relation,
    Relationship,
    RelationStatus,
)
from noema.memory.knowledge.health_rule import (
    _EXCERPT,
    _WORD,
    MAX_IDS,
    _Context,
    _edges,
    _excerpt,
    _live,
    _memories,
    _Rule,
    _stale,
)
from noema.memory.recall import cooccurrence
from noema.memory.write.memories import PRIOR_STRENGTH
from noema.storage import ops

__all__ = [
    "DECLINE_CONFIDENCE",
    "POPULAR_ACCESSES",
    "POPULAR_MAX_CONFIDENCE",
    "STALE_COOCCURRENCE_MEAN",
    "STALE_MIN_MEMBERS",
    "STALE_SHARE",
]


#: ``confidence_decline``: below this a memory's confidence has fallen too far.
DECLINE_CONFIDENCE = 0.5
#: ``stale_cluster``: smallest group, share of stale members it must exceed, and
#: mean decayed weight a co-occurrence cluster's edges must exceed.
STALE_MIN_MEMBERS = 3
STALE_SHARE = 0.5
STALE_COOCCURRENCE_MEAN = 1.0


#: ``popular_unexamined``: fewest recalls, and the confidence it must be below.
POPULAR_ACCESSES = 5
POPULAR_MAX_CONFIDENCE = 0.65


# ---------------------------------------------------------------- 1. confidence_decline


class _ConfidenceDecline(_Rule):
    name = "confidence_decline"
    scans = True

    def see(self, memory: Memory) -> None:
        if not memory.feedback_count:
            return
        low = memory.confidence < DECLINE_CONFIDENCE
        if not (memory.feedback_mean < 0 or low):
            return
        created = self._created_confidence(memory)
        if memory.confidence >= created:
            return
        self.finding(
            (memory.confidence, memory.id),
            "high" if low else "medium",
            [memory.id],
            f"confidence fell from {created:.2f} to {memory.confidence:.2f} after "
            f"{memory.feedback_count} feedback (mean {memory.feedback_mean:+.2f})",
            {
                "created_confidence": round(created, 4),
                "confidence": round(memory.confidence, 4),
                "feedback_count": memory.feedback_count,
                "feedback_mean": round(memory.feedback_mean, 4),
                "content": _excerpt(memory),
            },
            f"review {memory.id}: noema memory retract {memory.id} --reason ..., "
            "or reject it, or feed back that it holds",
        )

    def _created_confidence(self, memory: Memory) -> float:
        """The confidence its ``memory_created`` event recorded, else the posterior's prior."""
        context = self.context
        # A memory's first event is its creation. Asked without ``kinds``, so the
        # lookup follows the (mind, memory, seq) index, not the far larger kind one.
        events = context.session.run(ops.ListEvents(context.mind_id, memory_id=memory.id, limit=1))
        self.scanned += len(events)
        created = events[0] if events and events[0].kind == EventKind.MEMORY_CREATED else None
        value = created.payload.get("confidence") if created is not None else None
        if isinstance(value, int | float):
            return float(value)
        # Feedback v adds max(v, 0) to alpha and max(-v, 0) to beta; undo it on the
        # reconciler's prior strength (a tombstoned or missing event has no record).
        spent = max(memory.alpha + memory.beta - PRIOR_STRENGTH, 0.0)
        positive = (spent + memory.feedback_count * memory.feedback_mean) / 2
        return max(memory.alpha - positive, 0.0) / PRIOR_STRENGTH


# ---------------------------------------------------------------- 3. stale_cluster


@dataclass(slots=True)
class _Group:
    members: int = 0
    stale: int = 0
    stale_ids: list[str] = field(default_factory=list)


class _StaleCluster(_Rule):
    name = "stale_cluster"
    scans = True

    def __init__(self, context: _Context) -> None:
        super().__init__(context)
        self.groups: dict[str, _Group] = {}

    def see(self, memory: Memory) -> None:
        names = [f"tag:{tag}" for tag in memory.tags]
        if memory.key:
            names.append(f"key:{memory.key.rpartition('.')[0] or memory.key}")
        if not names:
            return
        stale = _stale(memory, self.context)
        for name in names:
            group = self.groups.setdefault(name, _Group())
            group.members += 1
            if stale:
                group.stale += 1
                if len(group.stale_ids) < MAX_IDS:
                    group.stale_ids.append(memory.id)

    def finish(self) -> None:
        for name, group in self.groups.items():
            self._judge(name, group)
        self.groups.clear()
        context = self.context
        clusters = cooccurrence.dense_clusters(
            context.session,
            context.mind_id,
            context.now,
            context.config.cooccurrence_half_life_days,
            min_size=STALE_MIN_MEMBERS,
            min_mean=STALE_COOCCURRENCE_MEAN,
        )
        for members in clusters:
            held = _memories(context.session, context.mind_id, members)
            self.scanned += len(held)
            group = _Group()
            for memory_id in members:
                memory = held.get(memory_id)
                if memory is None or not _live(memory):
                    continue
                group.members += 1
                if _stale(memory, context):
                    group.stale += 1
                    if len(group.stale_ids) < MAX_IDS:
                        group.stale_ids.append(memory_id)
            self._judge(f"cooccurrence:{members[0]}", group)

    def _judge(self, name: str, group: _Group) -> None:
        if group.members < STALE_MIN_MEMBERS or group.stale <= STALE_SHARE * group.members:
            return
        share = group.stale / group.members
        kind, _, label = name.partition(":")
        self.finding(
            (-share, -group.members, name),
            "medium",
            group.stale_ids,
            f"{group.stale} of {group.members} memories of {kind} {label!r} are stale",
            {
                "group": kind,
                "name": label,
                "members": group.members,
                "stale": group.stale,
                "share": round(share, 4),
                "stale_confidence": self.context.config.stale_confidence,
            },
            "refresh what still holds (remember it again, verify it) and archive the rest",
        )


# ---------------------------------------------------------------- 4. duplicate


def _fingerprint(memory: Memory) -> str:
    return " ".join(_WORD.findall(memory.content.casefold()))


def _digest(kind: str, text: str) -> int:
    raw = hashlib.blake2b(f"{kind}\x1f{text}".encode(), digest_size=8).digest()
    return int.from_bytes(raw, "big")


class _Duplicate(_Rule):
    name = "duplicate"
    scans = True

    def __init__(self, context: _Context) -> None:
        super().__init__(context)
        self.first: dict[int, str] = {}
        self.groups: dict[int, list[str]] = {}

    def see(self, memory: Memory) -> None:
        text = _fingerprint(memory)
        if not text:
            return
        digest = _digest(f"{memory.kind.value}\x1f{memory.world}", text)  # per world
        first = self.first.setdefault(digest, memory.id)
        if first != memory.id:
            group = self.groups.setdefault(digest, [first])
            if len(group) < MAX_IDS:
                group.append(memory.id)

    def finish(self) -> None:
        self.first.clear()
        context = self.context
        for page in _edges(
            context.session, context.mind_id, [Relation.SAME_AS], [RelationStatus.PROPOSED]
        ):
            self.scanned += len(page)
            held = _memories(
                context.session, context.mind_id, [i for e in page for i in (e.src, e.dst)]
            )
            for edge in page:
                src, dst = held.get(edge.src), held.get(edge.dst)
                if src is not None and dst is not None and _live(src) and _live(dst):
                    self._proposal(edge, src, dst)
        for ids in self.groups.values():
            self._group(ids)

    def _proposal(self, edge: Relationship, src: Memory, dst: Memory) -> None:
        self.finding(
            (0, edge.created_at.isoformat(), edge.id),
            "low",
            [src.id, dst.id],
            f"{src.id} may be the same as {dst.id} (proposal {edge.id}, undecided)",
            {
                "relationship": edge.id,
                "src": _excerpt(src),
                "dst": _excerpt(dst),
                **({"proposal": edge.evidence} if edge.evidence else {}),
            },
            f"noema memory approve {edge.id} (merges {src.id} into {dst.id}), "
            f"or noema memory reject {edge.id}",
        )

    def _group(self, ids: list[str]) -> None:
        context = self.context
        held = _memories(context.session, context.mind_id, ids)
        # The digest groups; the words decide (a hash collision splits off here).
        by_text: dict[str, list[Memory]] = {}
        for memory_id in ids:
            if (memory := held.get(memory_id)) is not None:
                by_text.setdefault(_fingerprint(memory), []).append(memory)
        for text, members in by_text.items():
            if len(members) < 2:
                continue
            members.sort(key=lambda m: (m.recorded_at, m.id))
            member_ids = [m.id for m in members]
            edges = context.session.run(
                ops.FindRelationships(
                    context.mind_id, memory_ids=member_ids, relations=[Relation.SAME_AS]
                )
            )
            self.scanned += len(members) + len(edges)
            if _joined(member_ids, edges):
                continue
            newest, oldest = members[-1], members[0]
            self.finding(
                (1, oldest.id),
                "low",
                member_ids,
                f"{len(members)} memories say the same thing apart from case or punctuation",
                {"text": text[:_EXCERPT], "members": len(members), "kind": oldest.kind.value},
                f"noema memory relate {newest.id} same_as {oldest.id}, "
                "then noema memory approve <proposal>",
            )


def _joined(ids: Sequence[str], edges: Sequence[Relationship]) -> bool:
    """Whether ``same_as`` edges (of any status) join all of ``ids`` into one."""
    parent = {i: i for i in ids}

    def root(i: str) -> str:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for edge in edges:
        if edge.src in parent and edge.dst in parent:
            parent[root(edge.src)] = root(edge.dst)
    return len({root(i) for i in ids}) == 1


# ---------------------------------------------------------------- 6. popular_unexamined


class _PopularUnexamined(_Rule):
    name = "popular_unexamined"
    scans = True

    def see(self, memory: Memory) -> None:
        if (
            memory.access_count < POPULAR_ACCESSES
            or memory.confidence >= POPULAR_MAX_CONFIDENCE
            or memory.feedback_count
            or memory.lifecycle == Lifecycle.VERIFIED
        ):
            return
        self.finding(
            (-memory.access_count, memory.confidence, memory.id),
            "medium" if memory.access_count >= 2 * POPULAR_ACCESSES else "low",
            [memory.id],
            f"recalled {memory.access_count} times at confidence {memory.confidence:.2f}, "
            "never confirmed",
            {
                "access_count": memory.access_count,
                "confidence": round(memory.confidence, 4),
                "lifecycle": memory.lifecycle.value,
                "content": _excerpt(memory),
            },
            f"noema memory verify {memory.id}, or noema memory feedback {memory.id} VALUE",
        )
