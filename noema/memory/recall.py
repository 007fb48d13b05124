"""Recall v1: fused, filtered, explained (DESIGN section 3, "Retrieval").

Signals are normalised to [0, 1]; a result's ``components`` are the weighted
signals and its ``score`` is their sum, so every ranking explains itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from concepts import (
    EventKind,
    Memory,
    MindInfo,
    RecallFilters,
    RecallQuery,
    RecallResult,
    Relation,
    RelationStatus,
    Status,
)
from noema.clock import Clock
from noema.config import MindConfig
from noema.memory.activation import decayed, recency
from noema.memory.reconciler import EventLog, reinforcement
from noema.storage import Session, Storage, ops

__all__ = ["Recaller", "query_terms"]

#: Most terms a query contributes to the text lane.
MAX_TERMS = 32
#: Candidates scored per result asked for (and at least ``MIN_POOL``).
POOL_FACTOR = 5
MIN_POOL = 50

_WORD = re.compile(r"\w+", re.UNICODE)
# Words too common to rank by; dropped unless the query holds nothing else.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)


def query_terms(text: str) -> list[str]:
    """The words of a query, folded, without duplicates; any user text is safe here.

    Punctuation and operators (quotes, ``*``, ``-``, ``:``, ``NEAR(``, brackets)
    never reach the full-text engine: only runs of word characters do.
    """
    words = list(dict.fromkeys(w.casefold() for w in _WORD.findall(text)))
    content = [w for w in words if w not in STOPWORDS]
    return (content or words)[:MAX_TERMS]


class Recaller:
    """Answers recall queries for one mind and reinforces what it returns."""

    def __init__(self, storage: Storage, mind: MindInfo, config: MindConfig, clock: Clock) -> None:
        self.storage = storage
        self.mind = mind
        self.config = config
        self.clock = clock

    def recall(self, query: RecallQuery) -> list[RecallResult]:
        """Rank, explain and (unless ``peek``) reinforce the memories matching ``query``."""
        with self.storage.transaction(write=not query.peek) as session:
            now = self.clock.now()
            results = self._rank(session, query, now)
            if results and not query.peek:
                self._reinforce(session, query, results, now)
        return results

    def admit(self, results: Sequence[RecallResult], query: str) -> None:
        """Reinforce results recalled with ``peek`` that were admitted later (by attention).

        Each gets the same ``memory_retrieved`` event, with its components, as a
        normal recall would have written.
        """
        if not results:
            return
        with self.storage.transaction() as session:
            self._reinforce(session, RecallQuery(text=query), list(results), self.clock.now())

    # ------------------------------------------------------------ ranking

    def _rank(self, session: Session, query: RecallQuery, now: datetime) -> list[RecallResult]:
        filters = query.filters
        if query.as_of is not None and filters.statuses == (Status.ACTIVE,):
            # What was held true then includes what has since been superseded.
            filters = filters.model_copy(update={"statuses": (Status.ACTIVE, Status.SUPERSEDED)})
        pool = max(query.limit * POOL_FACTOR, MIN_POOL)
        terms = query_terms(query.text)
        if terms:
            hits = session.run(
                ops.SearchText(
                    self.mind.id, terms, query.mode == "strict", filters, query.as_of, pool
                )
            )
        else:
            scanned = session.run(
                ops.ScanMemories(self.mind.id, filters, query.as_of, order="recent", limit=pool)
            )
            hits = [(m, 0.0) for m in scanned]
        if not hits:
            return []
        best = max(rank for _, rank in hits)
        reference = query.as_of or now
        scored = [
            self._score(memory, rank / best if best > 0 else 0.0, reference, now)
            for memory, rank in hits
        ]
        # Ties break on the content hash, not the id (whose low bits are random), so
        # the same memories rank the same way in every store.
        scored.sort(key=lambda r: (-r[0], r[1].content_hash, r[1].id))
        top = scored[: query.limit]
        # Contradicting memories come back together: partners that pass the filters
        # are appended after the top results, and each side lists the other.
        conflicts = self._conflicts(session, [m.id for _, m, _, _ in top])
        present = {m.id for _, m, _, _ in top}
        partners = sorted({p for m_id in present for p in conflicts.get(m_id, ())} - present)
        if partners:
            text = {m.id: rank / best if best > 0 else 0.0 for m, rank in hits}
            for memory in session.run(ops.GetMemories(self.mind.id, partners)):
                if _passes(memory, filters, query.as_of):
                    top.append(self._score(memory, text.get(memory.id, 0.0), reference, now))
                    present.add(memory.id)
        return [
            RecallResult(
                memory=memory,
                rank=index,
                score=score,
                components=components,
                signals=signals,
                weights=self._weights(),
                conflicts=tuple(sorted(conflicts.get(memory.id, set()) & present)),
            )
            for index, (score, memory, components, signals) in enumerate(top, start=1)
        ]

    def _weights(self) -> dict[str, float]:
        return self.config.weights.effective(vectors=False)

    def _score(
        self, memory: Memory, text: float, reference: datetime, now: datetime
    ) -> tuple[float, Memory, dict[str, float], dict[str, float]]:
        signals = {
            "text": text,
            "recency": recency(memory.recorded_at, reference, self.config.recency_days),
            "activation": decayed(
                memory.activation,
                memory.activation_at,
                now,
                memory.importance,
                self.config.half_life_days,
            ),
            "importance": memory.importance,
            "credibility": memory.credibility,
        }
        weights = self._weights()
        components = {name: weights[name] * value for name, value in signals.items()}
        return sum(components.values()), memory, components, signals

    def _conflicts(self, session: Session, ids: Sequence[str]) -> dict[str, set[str]]:
        if not ids:
            return {}
        edges = session.run(
            ops.FindRelationships(
                self.mind.id,
                memory_ids=list(ids),
                relations=[Relation.CONTRADICTS],
                statuses=[RelationStatus.ACTIVE],
            )
        )
        found: dict[str, set[str]] = {}
        for edge in edges:
            found.setdefault(edge.src, set()).add(edge.dst)
            found.setdefault(edge.dst, set()).add(edge.src)
        return found

    # ------------------------------------------------------------ reinforcement

    def _reinforce(
        self, session: Session, query: RecallQuery, results: list[RecallResult], now: datetime
    ) -> None:
        log = EventLog(self.mind.id, now)
        updates: list[tuple[str, dict[str, Any]]] = []
        for result in results:
            changes = reinforcement(result.memory, now, self.config)
            updates.append((result.memory.id, changes))
            log.add(
                EventKind.MEMORY_RETRIEVED,
                memory_id=result.memory.id,
                payload={
                    "query": query.text,
                    "rank": result.rank,
                    "score": result.score,
                    "components": result.components,
                    "activation": changes["activation"],
                },
            )
        session.run(ops.UpdateMemories(self.mind.id, updates))
        log.flush(session)


def _passes(memory: Memory, filters: RecallFilters, as_of: datetime | None) -> bool:
    """Whether a memory fetched by id (a conflict partner) meets the recall's filters."""
    if memory.status not in filters.statuses:
        return False
    if filters.kinds and memory.kind not in filters.kinds:
        return False
    if filters.epistemics and memory.epistemic not in filters.epistemics:
        return False
    if filters.channels and memory.channel not in filters.channels:
        return False
    if filters.key is not None and memory.key != filters.key:
        return False
    if any(tag not in memory.tags for tag in filters.tags):
        return False
    if filters.since is not None and memory.recorded_at < filters.since:
        return False
    if filters.until is not None and memory.recorded_at > filters.until:
        return False
    if memory.confidence < filters.min_confidence:
        return False
    if as_of is not None:
        return memory.valid_from <= as_of and (memory.valid_to is None or memory.valid_to > as_of)
    return True
