"""What one consolidation run reads: new episodes, their context, the summaries they refine.

The new episodes are the newest active episodic memories that no semantic or
procedural memory is yet ``derived_from``, found by scanning ``SCAN_WINDOW``
recent episodes per one wanted; the context is the recent episodes that
reflect's active summaries are derived from. ``_Pool`` holds them with those
summaries, and tells which summary a group refines (``REFINE_OVERLAP``).
Co-occurrence clusters can join groups (``_cluster_plans``). ``consolidate``
runs the whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from concepts import (
    Channel,
    Memory,
    MemoryKind,
    RecallFilters,
    Relation,
    Relationship,
    Status,
)
from noema.memory.knowledge import episodes as task_episodes
from noema.memory.recall.cooccurrence import CLUSTER_MIN_SIZE, dense_clusters
from noema.memory.upkeep.grouping import (
    GroupPlan,
    plan_group,
)
from noema.storage import ops

if TYPE_CHECKING:
    from noema.memory.engine import Engine

__all__ = ["REFINE_OVERLAP", "SCAN_WINDOW", "TAG"]


#: Recent episodes looked at per unconsolidated episode wanted.
SCAN_WINDOW = 4
#: Share of a summary's episodes a new group must hold to refine that summary
#: (and of the smaller summary's that two active summaries may share).
REFINE_OVERLAP = 0.5


#: The tag of reflect's summaries.
TAG = "reflection"


_ID_CHUNK = 400


@dataclass(frozen=True)
class _Pool:
    """What a run reads: the new episodes, the context, and reflect's active summaries.

    Attributes:
        fresh: the unconsolidated episodes (the newest ``limit``).
        context: recent episodes that active summaries are derived from.
        summaries: reflect's active summaries of those, with their episodes read.
    """

    fresh: list[Memory]
    context: list[Memory]
    summaries: dict[str, tuple[Memory, frozenset[str]]]

    def refined(self, plan: GroupPlan) -> Memory | None:
        """The active summary ``plan``'s group refines, if any (the most covered, then newest)."""
        members = {m.id for m in plan.members}
        best: tuple[float, Any, str] | None = None
        for summary, sources in self.summaries.values():
            overlap = len(sources & members) / len(sources)
            rank = (overlap, summary.recorded_at, summary.id)
            if overlap >= REFINE_OVERLAP and (best is None or rank > best):
                best = rank
        return None if best is None else self.summaries[best[2]][0]


def _read(engine: Engine, limit: int) -> _Pool:
    """The newest ``limit`` unconsolidated episodes, and the context to refine summaries by.

    An episode is consolidated when a semantic or procedural memory is
    ``derived_from`` it, whatever that memory's status, except one of
    reflect's summaries that another superseded: an episode that only such a
    summary covered (its group was refined without it, or a concurrent run's
    summary won) is new again, and the next run groups it. The context is the
    consolidated episodes among the recent ones (at most ``limit``) that
    reflect's active summaries are derived from.
    """
    mind_id = engine.mind.id
    with engine.storage.transaction(write=False) as session:
        recent = session.run(
            ops.ScanMemories(
                mind_id,
                RecallFilters(kinds=(MemoryKind.EPISODIC,)),
                order="recent",
                limit=limit * SCAN_WINDOW,
            )
        )
        derived = _sources(session, mind_id, [m.id for m in recent])
        consolidated: set[str] = set()
        summaries: dict[str, tuple[Memory, frozenset[str]]] = {}
        for source in _memories(session, mind_id, sorted(derived)):
            if source.kind not in (MemoryKind.SEMANTIC, MemoryKind.PROCEDURAL):
                continue
            if _by_reflect(source) and source.status == Status.SUPERSEDED:
                continue
            consolidated |= derived[source.id]
            if _is_summary(source):
                summaries[source.id] = (source, frozenset(derived[source.id]))
    recent = [m for m in recent if not task_episodes.is_episode(m)]  # distilled on their own
    covered = {i for _, episodes in summaries.values() for i in episodes}
    context = [m for m in recent if m.id in covered][:limit]
    read = {m.id for m in context}
    return _Pool(
        fresh=[m for m in recent if m.id not in consolidated][:limit],
        context=context,
        summaries={
            i: (summary, episodes & read)
            for i, (summary, episodes) in summaries.items()
            if episodes & read
        },
    )


def _cluster_plans(engine: Engine, plans: list[GroupPlan]) -> list[GroupPlan]:
    """Dense co-occurrence clusters not distilled yet: one more plan each.

    A cluster (``dense_clusters``: memories recalled together often) is left
    out when half of it is already in a keyword group of this run, or when a
    memory is already derived from half of it.
    """
    mind_id = engine.mind.id
    planned = [{m.id for m in plan.members} for plan in plans]
    found: list[GroupPlan] = []
    with engine.storage.transaction(write=False) as session:
        clusters = dense_clusters(
            session, mind_id, engine.clock.now(), engine.config.cooccurrence_half_life_days
        )
        for cluster in clusters:
            half = len(cluster) / 2
            if any(len(group.intersection(cluster)) >= half for group in planned):
                continue
            if any(len(held) >= half for held in _sources(session, mind_id, cluster).values()):
                continue
            members = [
                m
                for m in _memories(session, mind_id, cluster)
                if m.status == Status.ACTIVE and not _by_reflect(m)
            ]
            if len(members) >= CLUSTER_MIN_SIZE:
                found.append(plan_group(members))
                planned.append({m.id for m in members})
    return found


def _by_reflect(memory: Memory) -> bool:
    """A semantic or procedural memory that reflect wrote."""
    return (
        memory.kind in (MemoryKind.SEMANTIC, MemoryKind.PROCEDURAL)
        and memory.channel == Channel.SYSTEM
        and TAG in memory.tags
    )


def _is_summary(memory: Memory) -> bool:
    """An active memory that reflect wrote (and may therefore refine or supersede)."""
    return memory.status == Status.ACTIVE and _by_reflect(memory)


def _derivations(session: Any, mind_id: str, ids: list[str]) -> list[Relationship]:
    """The ``derived_from`` edges with an end among ``ids``, read in chunks."""
    edges: list[Relationship] = []
    for start in range(0, len(ids), _ID_CHUNK):
        chunk = ids[start : start + _ID_CHUNK]
        edges += session.run(
            ops.FindRelationships(mind_id, memory_ids=chunk, relations=[Relation.DERIVED_FROM])
        )
    return edges


def _sources(session: Any, mind_id: str, episode_ids: list[str]) -> dict[str, set[str]]:
    """Per memory derived from some of ``episode_ids``: which of them."""
    wanted = set(episode_ids)
    derived: dict[str, set[str]] = {}
    for edge in _derivations(session, mind_id, episode_ids):
        if edge.dst in wanted:
            derived.setdefault(edge.src, set()).add(edge.dst)
    return derived


def _memories(session: Any, mind_id: str, ids: list[str]) -> list[Memory]:
    found: list[Memory] = []
    for start in range(0, len(ids), _ID_CHUNK):
        found += session.run(ops.GetMemories(mind_id, ids[start : start + _ID_CHUNK]))
    return found
