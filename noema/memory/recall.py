"""Recall v1: fused, filtered, explained (DESIGN section 3, "Retrieval").

Signals are normalised to [0, 1]; a result's ``components`` are the weighted
signals and its ``score`` is their sum, so every ranking explains itself.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from concepts import (
    CONFIDENCE_HALF_LIFE_DAYS,
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
from noema.embeddings import Embedder
from noema.memory.activation import SECONDS_PER_DAY, decayed, recency
from noema.memory.entities import extract_entities
from noema.memory.reconciler import EventLog, reinforcement
from noema.storage import Session, Storage, ops

__all__ = ["Recaller", "confidence_fade", "feedback_adjustment", "query_terms"]

#: Most terms a query contributes to the text lane.
MAX_TERMS = 32
#: Candidates scored per result asked for (and at least ``MIN_POOL``).
POOL_FACTOR = 5
MIN_POOL = 50
#: The lanes that reciprocal-rank fusion combines.
LANES = ("text", "vector", "graph")
#: A memory one edge away from an entity match gets this share of its graph signal.
HOP_FACTOR = 0.5
#: Feedback adjustment: mean feedback in [-1, 1] times these.
FEEDBACK_BOOST = 0.2
FEEDBACK_PENALTY = 0.3
#: Diversity: cosine above the threshold to a higher-ranked result costs (sim - t) * cost.
DIVERSITY_THRESHOLD = 0.9
DIVERSITY_COST = 0.5
#: Weight of the Thompson-sampling draw (centred on the posterior mean) when exploring.
EXPLORATION_WEIGHT = 0.1

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


@dataclass
class _Candidate:
    """One memory found by at least one lane, with what each lane said of it."""

    memory: Memory
    text: float = 0.0
    vector: float | None = None  # spread cosine in [0, 1]; None when the memory has no vector
    cosine: float | None = None  # the raw cosine to the query
    graph: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)  # lane -> 1-based rank


class Recaller:
    """Answers recall queries for one mind and reinforces what it returns.

    Lanes: text (full-text rank), vector (cosine, when an embedder is set) and
    graph (entities shared with the query, one hop along ``refers_to`` and
    ``same_as``). ``weighted`` fusion sums weighted signals; ``rrf`` sums
    ``1 / (k + rank)`` over the lanes. Either way ``components`` sum to ``score``.
    """

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

    def recall(self, query: RecallQuery, vector: np.ndarray | None = None) -> list[RecallResult]:
        """Rank, explain and (unless ``peek``) reinforce the memories matching ``query``.

        ``vector``: the query's embedding when the caller already has it.
        """
        if vector is None:
            vector = self.query_vector(query.text)
        with self.storage.transaction(write=not query.peek) as session:
            now = self.clock.now()
            results = self.rank(session, query, now, vector)
            if results and not query.peek:
                self._reinforce(session, query, results, now)
        return results

    def query_vector(self, text: str) -> np.ndarray | None:
        """The query's embedding (before any transaction: embedding is slow), if any."""
        if self.embedder is None or not text.strip():
            return None
        return self.embedder.query(text)

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

    def rank(
        self, session: Session, query: RecallQuery, now: datetime, vector: np.ndarray | None
    ) -> list[RecallResult]:
        """The ranked, explained results of ``query`` (nothing is written)."""
        filters = query.filters
        if query.as_of is not None and filters.statuses == (Status.ACTIVE,):
            # What was held true then includes what has since been superseded.
            filters = filters.model_copy(update={"statuses": (Status.ACTIVE, Status.SUPERSEDED)})
        pool = max(query.limit * POOL_FACTOR, MIN_POOL)
        found: dict[str, _Candidate] = {}
        self._text_lane(session, query, filters, pool, found)
        if vector is not None and self.embedder is not None:
            self._vector_lane(session, query, filters, pool, vector, found)
        self._graph_lane(session, query, filters, pool, found)
        if not found:
            return []
        reference = query.as_of or now
        fusion = query.fusion or self.config.fusion
        rng = random.Random(query.seed) if query.explore else None
        scored = [
            self._score(c, fusion, reference, now, vectors=vector is not None, rng=rng)
            for c in found.values()
        ]
        # Ties break on the content hash, not the id (whose low bits are random), so
        # the same memories rank the same way in every store.
        scored.sort(key=_order)
        if fusion == "weighted" and vector is not None:
            scored = self._diversify(session, scored, query.limit)
        top = scored[: query.limit]
        # Contradicting memories come back together: partners that pass the filters
        # are appended after the top results, and each side lists the other.
        conflicts = self._conflicts(session, [s.memory.id for s in top])
        present = {s.memory.id for s in top}
        partners = sorted({p for m_id in present for p in conflicts.get(m_id, ())} - present)
        if partners:
            for memory in session.run(ops.GetMemories(self.mind.id, partners)):
                if _passes(memory, filters, query.as_of):
                    candidate = found.get(memory.id) or _Candidate(memory)
                    top.append(
                        self._score(
                            candidate, fusion, reference, now, vectors=vector is not None, rng=rng
                        )
                    )
                    present.add(memory.id)
        return [
            RecallResult(
                memory=s.memory,
                rank=index,
                score=sum(s.components.values()),
                components=s.components,
                signals=s.signals,
                weights=s.weights,
                conflicts=tuple(sorted(conflicts.get(s.memory.id, set()) & present)),
            )
            for index, s in enumerate(top, start=1)
        ]

    def _text_lane(
        self,
        session: Session,
        query: RecallQuery,
        filters: RecallFilters,
        pool: int,
        found: dict[str, _Candidate],
    ) -> None:
        terms = query_terms(query.text)
        if not terms:
            if query.text.strip() and self.embedder is not None:
                return  # only punctuation or symbols: leave it to the vector lane
            # No words: the most recent memories, unranked by text.
            scanned = session.run(
                ops.ScanMemories(self.mind.id, filters, query.as_of, order="recent", limit=pool)
            )
            for memory in scanned:
                found[memory.id] = _Candidate(memory)
            return
        hits = session.run(
            ops.SearchText(self.mind.id, terms, query.mode == "strict", filters, query.as_of, pool)
        )
        best = max((rank for _, rank in hits), default=0.0)
        for position, (memory, rank) in enumerate(hits, start=1):
            candidate = found.setdefault(memory.id, _Candidate(memory))
            candidate.text = rank / best if best > 0 else 0.0
            candidate.ranks["text"] = position

    def _vector_lane(
        self,
        session: Session,
        query: RecallQuery,
        filters: RecallFilters,
        pool: int,
        vector: np.ndarray,
        found: dict[str, _Candidate],
    ) -> None:
        assert self.embedder is not None
        model = self.embedder.model
        hits = session.run(
            ops.SearchVectors(self.mind.id, model, vector, filters, query.as_of, pool)
        )
        for position, (memory, similarity) in enumerate(hits, start=1):
            candidate = found.setdefault(memory.id, _Candidate(memory))
            candidate.vector = similarity
            candidate.ranks["vector"] = position
        # Candidates of the other lanes are scored against their own vectors too.
        missing = [c.memory.id for c in found.values() if c.vector is None]
        if missing:
            stored = session.run(ops.GetVectors(self.mind.id, model, int(vector.shape[0]), missing))
            for memory_id, row in stored.items():
                found[memory_id].vector = float(row @ vector)
        # The signal spreads the pool's cosines over [0, 1], as the text signal is
        # spread by the best rank: raw cosines of one model crowd into a narrow band.
        cosines = [c.vector for c in found.values() if c.vector is not None]
        if cosines:
            low, high = min(cosines), max(cosines)
            for candidate in found.values():
                if candidate.vector is not None:
                    candidate.cosine = candidate.vector
                    if high > low:
                        candidate.vector = (candidate.vector - low) / (high - low)
                    else:  # nothing to spread: the cosine itself
                        candidate.vector = max(candidate.vector, 0.0)

    def _graph_lane(
        self,
        session: Session,
        query: RecallQuery,
        filters: RecallFilters,
        pool: int,
        found: dict[str, _Candidate],
    ) -> None:
        entities = extract_entities(query.text)
        if not entities:
            return
        # An entity that more memories refer to than the pool holds cannot pick
        # candidates (a speaker's name in a conversation): it is skipped.
        hits = session.run(
            ops.SearchEntities(self.mind.id, entities, filters, query.as_of, pool, max_refs=pool)
        )
        strength = {memory.id: count / len(entities) for memory, count in hits}
        memories = {memory.id: memory for memory, _ in hits}
        # One hop: what the matching memories refer to or are the same as.
        if hits:
            edges = session.run(
                ops.FindRelationships(
                    self.mind.id,
                    memory_ids=list(strength),
                    relations=[Relation.REFERS_TO, Relation.SAME_AS],
                    statuses=[RelationStatus.ACTIVE],
                )
            )
            hop: dict[str, float] = {}
            for edge in edges:
                for near, far in ((edge.src, edge.dst), (edge.dst, edge.src)):
                    if near in strength and far not in strength:
                        hop[far] = max(hop.get(far, 0.0), strength[near] * HOP_FACTOR)
            if hop:
                for memory in session.run(ops.GetMemories(self.mind.id, sorted(hop))):
                    if _passes(memory, filters, query.as_of):
                        strength[memory.id] = hop[memory.id]
                        memories[memory.id] = memory
        # Strongest first, then newest; content hashes break ties alike in every store.
        ordered = sorted(
            strength,
            key=lambda m_id: (
                -strength[m_id],
                -memories[m_id].recorded_at.timestamp(),
                memories[m_id].content_hash,
            ),
        )
        for position, memory_id in enumerate(ordered, start=1):
            candidate = found.setdefault(memory_id, _Candidate(memories[memory_id]))
            candidate.graph = strength[memory_id]
            candidate.ranks["graph"] = position

    # ------------------------------------------------------------ scoring

    def _score(
        self,
        candidate: _Candidate,
        fusion: str,
        reference: datetime,
        now: datetime,
        *,
        vectors: bool,
        rng: random.Random | None,
    ) -> _Scored:
        memory = candidate.memory
        fade = confidence_fade(memory, reference)
        signals = {
            "text": candidate.text,
            "recency": recency(memory.recorded_at, reference, self.config.recency_days),
            "activation": decayed(
                memory.activation,
                memory.activation_at,
                now,
                memory.importance,
                self.config.half_life_days,
            ),
            "importance": memory.importance,
            "credibility": memory.credibility * fade,
        }
        has_vector = vectors and candidate.vector is not None
        if has_vector:
            signals["vector"] = candidate.vector or 0.0
            signals["cosine"] = candidate.cosine or 0.0
        if candidate.graph:
            signals["graph"] = candidate.graph
        if fusion == "rrf":
            k = self.config.rrf_k
            weights = {lane: 1.0 for lane in LANES}
            components = {
                lane: 1.0 / (k + candidate.ranks[lane]) for lane in LANES if lane in candidate.ranks
            }
        else:
            weights = self.config.weights.effective(vectors=has_vector)
            components = {name: weight * signals.get(name, 0.0) for name, weight in weights.items()}
            if memory.feedback_count:
                components["feedback"] = feedback_adjustment(memory.feedback_mean)
        if rng is not None:
            # Thompson sampling: a draw from the confidence posterior, centred on its mean.
            draw = rng.betavariate(memory.alpha, memory.beta)
            components["exploration"] = EXPLORATION_WEIGHT * (draw - memory.confidence)
        return _Scored(memory, components, signals, weights)

    def _diversify(self, session: Session, scored: list[_Scored], limit: int) -> list[_Scored]:
        """Cost a result ``(sim - 0.9) * 0.5`` when it nearly repeats a higher-ranked one."""
        assert self.embedder is not None
        window = scored[: limit * 2]
        if len(window) < 2:
            return scored
        stored = session.run(
            ops.GetVectors(
                self.mind.id, self.embedder.model, self.embedder.dims, [s.memory.id for s in window]
            )
        )
        kept: list[np.ndarray] = []
        for item in window:
            row = stored.get(item.memory.id)
            if row is None:
                continue
            if kept:
                closest = float(np.max(np.stack(kept) @ row))
                if closest > DIVERSITY_THRESHOLD:
                    item.components["diversity"] = -(closest - DIVERSITY_THRESHOLD) * DIVERSITY_COST
            kept.append(row)
        window.sort(key=_order)
        return window + scored[limit * 2 :]

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


@dataclass
class _Scored:
    memory: Memory
    components: dict[str, float]
    signals: dict[str, float]
    weights: dict[str, float]

    @property
    def score(self) -> float:
        return sum(self.components.values())


def _order(item: _Scored) -> tuple[float, str, str]:
    return (-item.score, item.memory.content_hash, item.memory.id)


def feedback_adjustment(mean: float) -> float:
    """Positive feedback boosts up to +0.2, negative penalises up to -0.3 (DESIGN section 3)."""
    return mean * (FEEDBACK_BOOST if mean > 0 else FEEDBACK_PENALTY)


def confidence_fade(memory: Memory, at: datetime) -> float:
    """How much of its confidence a memory keeps at ``at``, by its decay class."""
    half_life = CONFIDENCE_HALF_LIFE_DAYS[memory.decay]
    if half_life is None:
        return 1.0
    age_days = max((at - memory.recorded_at).total_seconds(), 0.0) / SECONDS_PER_DAY
    return math.pow(0.5, age_days / half_life)


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
    if filters.min_feedback is not None and memory.feedback_mean < filters.min_feedback:
        return False
    if as_of is not None:
        return memory.valid_from <= as_of and (memory.valid_to is None or memory.valid_to > as_of)
    return True
