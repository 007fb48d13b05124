"""The health rules that read edges and recall events rather than each memory.

``unresolved_contradiction`` (2) and ``orphaned_derived`` (7) page through their
relation's edges; ``coverage_gap`` (5) reads the newest recall events. ``health``
describes each and runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from concepts import (
    EventKind,
    Lifecycle,
    Memory,
    Relation,
    Relationship,
    RelationStatus,
    Status,
)
from noema.memory.knowledge.health_rule import (
    _EXCERPT,
    MAX_IDS,
    _edges,
    _excerpt,
    _live,
    _memories,
    _Rule,
)
from noema.storage import ops

__all__ = [
    "COVERAGE_EVENTS",
    "COVERAGE_MIN_MATCH",
    "COVERAGE_MIN_SCORE",
    "COVERAGE_REPEATED",
    "MATCH_COMPONENTS",
]


#: ``coverage_gap``: events read (newest first), components that say the query
#: matched, and the thresholds of a weak best result.
COVERAGE_EVENTS = 5_000
MATCH_COMPONENTS = ("text", "keys", "entity", "time", "graph")
COVERAGE_MIN_MATCH = 0.1
COVERAGE_MIN_SCORE = 0.3
COVERAGE_REPEATED = 3


# ---------------------------------------------------------------- 2. unresolved_contradiction


class _UnresolvedContradiction(_Rule):
    name = "unresolved_contradiction"

    def finish(self) -> None:
        context = self.context
        statuses = [RelationStatus.ACTIVE, RelationStatus.PROPOSED]
        for page in _edges(context.session, context.mind_id, [Relation.CONTRADICTS], statuses):
            self.scanned += len(page)
            held = _memories(
                context.session, context.mind_id, [i for e in page for i in (e.src, e.dst)]
            )
            for edge in page:
                src, dst = held.get(edge.src), held.get(edge.dst)
                if src is None or dst is None or not (_live(src) and _live(dst)):
                    continue
                self._found(edge, src, dst)

    def _found(self, edge: Relationship, src: Memory, dst: Memory) -> None:
        proposed = edge.status == RelationStatus.PROPOSED
        if proposed:
            action = f"noema memory approve {edge.id}, or noema memory reject {edge.id}"
        else:
            action = f"retract or reject the wrong one of {src.id} and {dst.id}"
        self.finding(
            (edge.created_at, edge.id),
            "medium" if proposed else "high",
            [src.id, dst.id],
            f"{src.id} contradicts {dst.id} and both are still live"
            + (" (proposed, undecided)" if proposed else ""),
            {
                "relationship": edge.id,
                "status": edge.status.value,
                "confidence": edge.confidence,
                "source": edge.source,
                "src": _excerpt(src),
                "dst": _excerpt(dst),
                **({"proposal": edge.evidence} if edge.evidence else {}),
            },
            action,
        )


# ---------------------------------------------------------------- 5. coverage_gap


@dataclass(slots=True)
class _Asked:
    at: datetime
    rank: int
    score: float
    components: dict[str, float]
    memory_id: str | None
    recalls: int = 0


class _CoverageGap(_Rule):
    name = "coverage_gap"

    def finish(self) -> None:
        context = self.context
        events = context.session.run(
            ops.ListEvents(
                context.mind_id,
                kinds=[EventKind.MEMORY_RETRIEVED, EventKind.RECALL_EMPTY],
                limit=COVERAGE_EVENTS,
                newest_first=True,
            )
        )
        self.scanned += len(events)
        asked: dict[str, _Asked] = {}
        for event in events:  # newest first: a query's first event is of its newest recall
            payload = event.payload
            if event.kind == EventKind.RECALL_EMPTY:  # nothing came back at all
                payload = {**payload, "rank": 1, "score": 0.0, "components": {}}
            query, rank, score = payload.get("query"), payload.get("rank"), payload.get("score")
            components = payload.get("components")
            if not (isinstance(query, str) and query.strip() and isinstance(components, dict)):
                continue
            if not isinstance(rank, int) or not isinstance(score, int | float):
                continue
            seen = asked.get(query)
            if seen is None or (event.at == seen.at and rank < seen.rank):
                best = _Asked(event.at, rank, float(score), _floats(components), event.memory_id)
                if seen is not None:
                    best.recalls = seen.recalls
                seen = asked[query] = best
            if rank == 1:
                seen.recalls += 1
        for query, best in asked.items():
            self._judge(query, best)

    def _judge(self, query: str, best: _Asked) -> None:
        match = sum(best.components.get(name, 0.0) for name in MATCH_COMPONENTS)
        weighted = "credibility" in best.components  # rrf components hold the lanes only
        weak = match <= 0.0 or (weighted and match < COVERAGE_MIN_MATCH)
        weak = weak or (weighted and best.score < COVERAGE_MIN_SCORE)
        if not weak:
            return
        recalls = max(best.recalls, 1)
        self.finding(
            (-best.at.timestamp(), query),
            "medium" if recalls >= COVERAGE_REPEATED else "low",
            [],
            f"recall of {query[:_EXCERPT]!r} found nothing that matches it well "
            f"(best score {best.score:.2f}, match {match:.2f})",
            {
                "query": query,
                "best_score": round(best.score, 4),
                "match": round(match, 4),
                "best_memory": best.memory_id,
                "recalls": recalls,
                "last_recalled": best.at.isoformat(),
            },
            "remember something about it (noema remember ...)",
        )


def _floats(components: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in components.items() if isinstance(v, int | float)}


# ---------------------------------------------------------------- 7. orphaned_derived


@dataclass(slots=True)
class _Sources:
    total: int = 0
    gone: dict[str, str] = field(default_factory=dict)  # source id -> why it is gone


class _OrphanedDerived(_Rule):
    name = "orphaned_derived"

    def finish(self) -> None:
        context = self.context
        derived: dict[str, _Sources] = {}
        for page in _edges(
            context.session, context.mind_id, [Relation.DERIVED_FROM], [RelationStatus.ACTIVE]
        ):
            self.scanned += len(page)
            held = _memories(
                context.session, context.mind_id, [i for e in page for i in (e.src, e.dst)]
            )
            merged = self._merged_into_live(held)
            for edge in page:
                if not _live(held.get(edge.src)):
                    continue
                sources = derived.setdefault(edge.src, _Sources())
                sources.total += 1
                why = _gone(held.get(edge.dst), edge.dst in merged)
                if why is not None:
                    sources.gone[edge.dst] = why
        for memory_id, sources in derived.items():
            if len(sources.gone) == sources.total:
                self._found(memory_id, sources)

    def _merged_into_live(self, held: dict[str, Memory]) -> set[str]:
        """Archived memories of ``held`` merged (an active ``same_as``) into a live one."""
        context = self.context
        archived = [m.id for m in held.values() if m.status == Status.ARCHIVED]
        if not archived:
            return set()
        edges = context.session.run(
            ops.FindRelationships(
                context.mind_id,
                memory_ids=archived,
                relations=[Relation.SAME_AS],
                statuses=[RelationStatus.ACTIVE],
            )
        )
        targets = _memories(context.session, context.mind_id, [e.dst for e in edges])
        return {e.src for e in edges if e.src in held and _live(targets.get(e.dst))}

    def _found(self, memory_id: str, sources: _Sources) -> None:
        gone = dict(sorted(sources.gone.items())[:MAX_IDS])
        self.finding(
            (memory_id,),
            "medium",
            [memory_id],
            f"{memory_id} is derived from {sources.total} memories, all of them gone",
            {"sources": gone, "source_count": sources.total},
            f"review {memory_id} (noema memory show {memory_id}), "
            "then reject or retract it if nothing else supports it",
        )


def _gone(source: Memory | None, merged: bool) -> str | None:
    """Why a ``derived_from`` source no longer stands, or ``None`` when it does."""
    if source is None:
        return "purged"
    if source.lifecycle == Lifecycle.REJECTED:
        return "rejected"
    if source.status == Status.ACTIVE or (source.status == Status.ARCHIVED and merged):
        return None
    return source.status.value
