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
from functools import lru_cache
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
from noema.errors import ConfigError, RuntimeFailure
from noema.memory.activation import SECONDS_PER_DAY, decayed, recency
from noema.memory.entities import extract_entities
from noema.memory.events import EventLog
from noema.memory.policy import loggable
from noema.memory.query import QueryPlan, entity_signal, memory_facts, time_signal, understand
from noema.memory.reconciler import reinforcement
from noema.memory.rerank import Reranker, spread
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
#: Newer beats older: an outdated memory is put this far below its newer counterpart.
OUTDATED_MARGIN = 0.001
#: Two memories are about one subject when they share a name or code and this share
#: (Jaccard) of their content words, each having at least ``SUBJECT_MIN_WORDS``.
SUBJECT_OVERLAP = 0.4
SUBJECT_MIN_WORDS = 3
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
    keys: float = 0.0  # the expanded keys' full-text rank, spread like ``text``
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
        reranker: Reranker | None = None,
    ) -> None:
        self.storage = storage
        self.mind = mind
        self.config = config
        self.clock = clock
        self.embedder = embedder
        self.reranker = reranker

    def recall(self, query: RecallQuery, vector: np.ndarray | None = None) -> list[RecallResult]:
        """Rank, explain and (unless ``peek``) reinforce the memories matching ``query``.

        ``vector``: the query's embedding when the caller already has it.
        """
        if vector is None:
            vector = self.query_vector(query.text)
        if query.depth == "deep" and self.reranker is None:
            raise ConfigError("deep recall needs a reranker (none is configured)")
        # Rank in a read transaction and reinforce after, in a short write: ranking
        # under the write lock held every writer of the mind back for its whole length.
        with self.storage.transaction(write=False) as session:
            results = self.rank(session, query, self.clock.now(), vector)
        if results and not query.peek:
            with self.storage.transaction() as session:
                self._reinforce(session, query, results, self.clock.now())
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
        filters = _recall_filters(query)
        reference = query.as_of or now
        plan = understand(query.text, reference)
        fusion = query.fusion or self.config.fusion
        rng = random.Random(query.seed) if query.explore else None
        scored = self.candidates(session, query, now, vector, plan=plan, rng=rng)
        if not scored:
            return []
        if query.depth == "deep":
            scored = self._deepen(query.text, scored)
        if fusion == "weighted" and vector is not None:
            scored = self._diversify(session, scored, query.limit)
        if query.as_of is None and self.config.newer_wins:
            scored = newer_first(scored, query.limit)
        top = scored[: query.limit]
        # Contradicting memories come back together: partners that pass the filters
        # are appended after the top results, and each side lists the other.
        conflicts = self._conflicts(session, [s.memory.id for s in top])
        present = {s.memory.id for s in top}
        partners = sorted({p for m_id in present for p in conflicts.get(m_id, ())} - present)
        if partners:
            scored_by_id = {s.memory.id: s for s in scored}
            for memory in session.run(ops.GetMemories(self.mind.id, partners)):
                if _passes(memory, filters, query.as_of):
                    partner = scored_by_id.get(memory.id) or self._score(
                        _Candidate(memory),
                        plan,
                        fusion,
                        reference,
                        now,
                        vectors=vector is not None,
                        rng=rng,
                    )
                    top.append(partner)
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

    def candidates(
        self,
        session: Session,
        query: RecallQuery,
        now: datetime,
        vector: np.ndarray | None,
        *,
        plan: QueryPlan | None = None,
        rng: random.Random | None = None,
    ) -> list[_Scored]:
        """Every candidate the lanes found for ``query``, scored, best first.

        The benchmarks fit the fusion weights on these (their ``signals``).
        """
        filters = _recall_filters(query)
        reference = query.as_of or now
        if plan is None:
            plan = understand(query.text, reference)
        pool = max(query.limit * POOL_FACTOR, MIN_POOL)
        found: dict[str, _Candidate] = {}
        self._text_lane(session, query, plan, filters, pool, found)
        if vector is not None and self.embedder is not None:
            self._vector_lane(session, query, filters, pool, vector, found)
        self._graph_lane(session, query, filters, pool, found)
        fusion = query.fusion or self.config.fusion
        scored = [
            self._score(c, plan, fusion, reference, now, vectors=vector is not None, rng=rng)
            for c in found.values()
        ]
        # Ties break on the content hash, not the id (whose low bits are random), so
        # the same memories rank the same way in every store.
        scored.sort(key=_order)
        return scored

    def _text_lane(
        self,
        session: Session,
        query: RecallQuery,
        plan: QueryPlan,
        filters: RecallFilters,
        pool: int,
        found: dict[str, _Candidate],
    ) -> None:
        # Time expressions rank by date (the time signal), not by their words.
        terms = query_terms(plan.remainder if plan.windows else query.text)
        if not terms and plan.windows:
            # Only a time ("what happened last week?"): the memories of its windows.
            since = min(w.start for w in plan.windows)
            until = max(w.end for w in plan.windows)
            if filters.since is not None:
                since = max(since, filters.since)
            if filters.until is not None:
                until = min(until, filters.until)
            window = filters.model_copy(update={"since": since, "until": until})
            scanned = session.run(
                ops.ScanMemories(self.mind.id, window, query.as_of, order="recent", limit=pool)
            )
            for memory in scanned:
                found[memory.id] = _Candidate(memory)
            return
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
        strict = query.mode == "strict"
        for index in ("content", "keys"):
            hits = session.run(
                ops.SearchText(self.mind.id, terms, strict, filters, query.as_of, pool, index)
            )
            best = max((rank for _, rank in hits), default=0.0)
            for position, (memory, rank) in enumerate(hits, start=1):
                candidate = found.setdefault(memory.id, _Candidate(memory))
                signal = rank / best if best > 0 else 0.0
                if index == "content":
                    candidate.text = signal
                    candidate.ranks["text"] = position
                else:
                    candidate.keys = signal

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
        plan: QueryPlan,
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
        if candidate.keys:
            signals["keys"] = candidate.keys
        if plan.entities or plan.windows or plan.asks_when:
            facts = memory_facts(memory.content, memory.payload, memory.valid_from)
            if plan.entities:
                signals["entity"] = entity_signal(plan, facts)
            if plan.windows:
                signals["time"] = time_signal(plan, memory.valid_from, facts)
            if plan.asks_when:
                signals["dated"] = 1.0 if facts.dated else 0.0
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
            for name in weights:  # a weighted signal the query does not raise is 0
                signals.setdefault(name, 0.0)
            components = {name: weight * signals[name] for name, weight in weights.items()}
            if memory.feedback_count:
                components["feedback"] = feedback_adjustment(memory.feedback_mean)
        if rng is not None:
            # Thompson sampling: a draw from the confidence posterior, centred on its mean.
            draw = rng.betavariate(memory.alpha, memory.beta)
            components["exploration"] = EXPLORATION_WEIGHT * (draw - memory.confidence)
        return _Scored(memory, components, signals, weights)

    def _deepen(self, text: str, scored: list[_Scored]) -> list[_Scored]:
        """Add the reranker's spread score over the best ``deep.pool`` (``rerank``)."""
        assert self.reranker is not None
        deep = self.config.deep
        pool = scored[: deep.pool]
        raw = self.reranker.scores(text, [s.memory for s in pool])
        if len(raw) != len(pool):
            raise RuntimeFailure(
                f"reranker {self.reranker.name} gave {len(raw)} scores for {len(pool)} memories"
            )
        for item, value in zip(pool, spread(raw), strict=True):
            item.signals["rerank"] = value
            item.weights["rerank"] = deep.weight
            item.components["rerank"] = deep.weight * value
        pool.sort(key=_order)
        return pool + scored[deep.pool :]

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
        # Results ranked in an earlier transaction (deep recall, admitted peeks) may be
        # stale: another write may have reinforced them since. Reinforce the rows as
        # they are now, or that write's reinforcement is lost.
        current = {
            m.id: m
            for m in session.run(ops.GetMemories(self.mind.id, [r.memory.id for r in results]))
        }
        for result in results:
            memory = current.get(result.memory.id)
            if memory is None:  # purged since it was ranked
                continue
            changes = reinforcement(memory, now, self.config)
            updates.append((memory.id, changes))
            log.add(
                EventKind.MEMORY_RETRIEVED,
                memory_id=memory.id,
                payload={
                    "query": loggable(query.text, self.config.policy),
                    "rank": result.rank,
                    "score": result.score,
                    "components": result.components,
                    "activation": changes["activation"],
                },
            )
        if updates:
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


def newer_first(scored: list[_Scored], limit: int) -> list[_Scored]:
    """Rank the newer of two memories that disagree about one subject above the older.

    Two results disagree when they hold the same ``key``, or when they share a
    subject and most of their words while each holds a value of its own
    (``same_subject``). An older one that outranks its newer
    counterpart gets an ``outdated`` adjustment (a component, like ``diversity``)
    that puts it just below; under ``as_of`` the past is answered as it was, so
    this is not applied there. Only the top ``2 × limit`` are compared.
    """
    window = scored[: limit * 2]
    if len(window) < 2:
        return scored
    changed = False
    for newer in sorted(window, key=_age, reverse=True):
        for older in window:
            if older is newer or _age(older) >= _age(newer) or "outdated" in older.components:
                continue
            if older.score < newer.score or not same_subject(older.memory, newer.memory):
                continue
            older.components["outdated"] = newer.score - older.score - OUTDATED_MARGIN
            changed = True
    if not changed:
        return scored
    window.sort(key=_order)
    return window + scored[limit * 2 :]


def same_subject(a: Memory, b: Memory) -> bool:
    """Whether two memories give different values of one fact (see ``newer_first``).

    Same ``key``; or the same first content word (the subject: "Ada works at
    Initech" and "Rosa works at Initech" are about two people), a shared name,
    code or number, at least
    ``SUBJECT_OVERLAP`` of their content words in common (Jaccard), and where
    they differ, only values: each has words the other lacks, and all of them
    are numbers, names or codes ("runs PostgreSQL 15" and "runs PostgreSQL 16",
    "lives in Lisbon" and "lives in Porto"; not "the auth service runs
    PostgreSQL 16" and "the billing service runs PostgreSQL 12").
    """
    if a.content_hash == b.content_hash:
        return False
    if a.key is not None and a.key == b.key:
        return True
    first_a, words_a, values_a = _subject(a.content)
    first_b, words_b, values_b = _subject(b.content)
    if first_a != first_b or not values_a & values_b:
        return False
    if len(words_a) < SUBJECT_MIN_WORDS or len(words_b) < SUBJECT_MIN_WORDS:
        return False
    own_a, own_b = words_a - words_b, words_b - words_a
    # They differ in values only: each has one, and every word of its own is one.
    if not (own_a and own_b and own_a <= values_a and own_b <= values_b):
        return False
    return len(words_a & words_b) / len(words_a | words_b) >= SUBJECT_OVERLAP


@lru_cache(maxsize=65_536)
def _subject(content: str) -> tuple[str, frozenset[str], frozenset[str]]:
    """A text's first content word (where its subject stands), its content words,
    and its values: names, codes and numbers."""
    ordered = [w for w in (w.casefold() for w in _WORD.findall(content)) if w not in STOPWORDS]
    words = frozenset(ordered)
    values = {
        e.partition(":")[2] for e in extract_entities(content) if e.startswith(("name:", "code:"))
    }
    values.update(w for w in words if any(c.isdigit() for c in w))
    return (ordered[0] if ordered else ""), words, frozenset(values)


def _age(item: _Scored) -> tuple[datetime, datetime]:
    return item.memory.valid_from, item.memory.recorded_at


def _recall_filters(query: RecallQuery) -> RecallFilters:
    """The query's filters; ``as_of`` also admits what has been superseded since."""
    filters = query.filters
    if query.as_of is not None and filters.statuses == (Status.ACTIVE,):
        filters = filters.model_copy(update={"statuses": (Status.ACTIVE, Status.SUPERSEDED)})
    return filters


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
