"""Recall v1: fused, filtered, explained (docs/architecture.md, "Recall").

``Recaller`` runs one recall from end to end; the parts live apart:

- ``noema.memory.recall.lanes``: the candidate lanes (text, vector, graph);
- ``noema.memory.recall.scoring``: fusion of their signals into components;
- ``noema.memory.recall.adjust``: deep rerank, diversity and newer-wins adjustments;
- ``noema.memory.recall.reinforce``: what a returned result does to its memory;
- ``noema.memory.language.terms``: the words of a query the text lane searches.

Here: the pool's size, the order of the steps, contradicting partners brought
along, and the explained results. Signals are normalised to [0, 1]; a result's
``components`` are the weighted signals and its ``score`` is their sum, so every
ranking explains itself.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from concepts import (
    EventKind,
    RecallFilters,
    RecallQuery,
    RecallResult,
    Relation,
    RelationStatus,
    Status,
)
from noema.config import DEFAULT_WEIGHTS, MindConfig
from noema.errors import ConfigError
from noema.memory.language.terms import MAX_TERMS, STOPWORDS, query_terms

# Names that moved out of this module stay importable from it.
from noema.memory.recall.adjust import (
    DIVERSITY_COST,
    DIVERSITY_THRESHOLD,
    OUTDATED_MARGIN,
    SUBJECT_MIN_WORDS,
    SUBJECT_OVERLAP,
    deepen,
    diversify,
    newer_first,
    same_subject,
)
from noema.memory.recall.context import lift_neighbours
from noema.memory.recall.cooccurrence import (
    STRONG_RESULTS,
    pair_weights,
    signal as cooccurrence_signal,
)
from noema.memory.recall.history import as_known
from noema.memory.recall.lanes import (
    HOP_FACTOR,
    LANES,
    Hit,
    graph_lane,
    text_lane,
    vector_lane,
    vector_search,
)
from noema.memory.recall.query import QueryPlan, understand
from noema.memory.recall.ranker import load_ranker, rerank_head
from noema.memory.recall.reinforce import reinforce_results
from noema.memory.recall.rerank import Reranker
from noema.memory.recall.scoring import (
    EXPLORATION_WEIGHT,
    FEEDBACK_BOOST,
    FEEDBACK_PENALTY,
    Scored,
    best_first,
    confidence_fade,
    feedback_adjustment,
    score,
)
from noema.memory.records.events import EventLog
from noema.memory.write.composed import worlds_first
from noema.memory.write.parts import Parts
from noema.memory.write.policy import loggable
from noema.memory.write.worlds import DESCENDANT_SIGNAL, LINK_FACTOR, load_tree
from noema.storage import Session, ops

__all__ = [
    "DIVERSITY_COST",
    "DIVERSITY_THRESHOLD",
    "EXPLORATION_WEIGHT",
    "FEEDBACK_BOOST",
    "FEEDBACK_PENALTY",
    "HOP_FACTOR",
    "LANES",
    "MAX_TERMS",
    "OUTDATED_MARGIN",
    "POOL_MIN_RESULTS",
    "STOPWORDS",
    "SUBJECT_MIN_WORDS",
    "SUBJECT_OVERLAP",
    "Recaller",
    "candidate_pool",
    "confidence_fade",
    "feedback_adjustment",
    "newer_first",
    "query_terms",
    "same_subject",
]

#: A limit under this counts as this many results when the candidate pool is sized.
POOL_MIN_RESULTS = 10


def candidate_pool(limit: int, config: MindConfig) -> int:
    """Candidates each lane offers for ``limit`` results (``candidates_per_result`` each)."""
    return max(limit, POOL_MIN_RESULTS) * config.candidates_per_result


class Recaller:
    """Answers recall queries for one mind and reinforces what it returns.

    Lanes: text (full-text rank), vector (cosine, when an embedder is set) and
    graph (entities shared with the query, one hop along ``refers_to`` and
    ``same_as``). ``weighted`` fusion sums weighted signals; ``rrf`` sums
    ``1 / (k + rank)`` over the lanes. Either way ``components`` sum to ``score``.

    Args:
        parts: the mind's store, identity, configuration, clock and embedder
            (without one, no vector lane).
        reranker: what reorders a deep recall's pool; without one, deep recalls
            are refused.
    """

    def __init__(self, parts: Parts, reranker: Reranker | None = None) -> None:
        self.parts = parts
        self.reranker = reranker

    def recall(self, query: RecallQuery, vector: np.ndarray | None = None) -> list[RecallResult]:
        """Rank, explain and (unless ``peek``) reinforce the memories matching ``query``.

        ``vector``: the query's embedding when the caller already has it.
        """
        if vector is None:
            vector = self.query_vector(query.text)
        self.check(query)
        # Rank in a read transaction and reinforce after, in a short write: ranking
        # under the write lock held every writer of the mind back for its whole length.
        with self.parts.storage.transaction(write=False) as session:
            results = self.rank(session, query, self.parts.clock.now(), vector)
        self.settle(query, results)
        return results

    def check(self, query: RecallQuery) -> None:
        """Refuse a query this recaller cannot answer, before any transaction.

        A deep recall without a reranker is the fast ranking, whose learned ranker
        took the place of the built-in lexical reranker (ADR 0042).

        Raises:
            ConfigError: a deep recall with neither a reranker nor the learned ranker.
        """
        if query.depth == "deep" and self.reranker is None and not self._learned(query):
            raise ConfigError(
                "deep recall needs a reranker or the learned ranker (neither is configured)"
            )

    def _learned(self, query: RecallQuery) -> bool:
        """Whether the learned ranker reorders ``query``'s head.

        Under weighted fusion with the weights it was trained with
        (``DEFAULT_WEIGHTS``), when not exploring.
        """
        config = self.parts.config
        return (
            (query.fusion or config.fusion) == "weighted"
            and config.ranker
            and config.weights == DEFAULT_WEIGHTS
            and not query.explore
            and load_ranker(vectors=True) is not None
        )

    def settle(self, query: RecallQuery, results: Sequence[RecallResult]) -> None:
        """What a recall writes once ranked (unless ``peek``): reinforcement, or a gap."""
        if results and not query.peek:
            with self.parts.storage.transaction() as session:
                reinforce_results(
                    session,
                    self.parts.mind.id,
                    self.parts.config,
                    query.text,
                    results,
                    self.parts.clock.now(),
                )
        elif not query.peek and query.text.strip():
            # Nothing came back: the health report's coverage gaps read these.
            with self.parts.storage.transaction() as session:
                log = EventLog(self.parts.mind.id, self.parts.clock.now())
                log.add(
                    EventKind.RECALL_EMPTY,
                    payload={"query": loggable(query.text, self.parts.config.policy)},
                )
                log.flush(session)

    def query_vector(self, text: str) -> np.ndarray | None:
        """The query's embedding (before any transaction: embedding is slow), if any."""
        if self.parts.embedder is None or not text.strip():
            return None
        return self.parts.embedder.query(text)

    def admit(
        self, results: Sequence[RecallResult], query: str, together: Sequence[str] = ()
    ) -> None:
        """Reinforce results recalled with ``peek`` that were admitted later (by attention).

        Each gets the same ``memory_retrieved`` event, with its components, as a
        normal recall would have written. ``together``: the memories already in
        working memory, which each admitted one now co-occurs with.
        """
        if not results:
            return
        text = RecallQuery(text=query).text  # checked as any query's text is
        with self.parts.storage.transaction() as session:
            reinforce_results(
                session,
                self.parts.mind.id,
                self.parts.config,
                text,
                results,
                self.parts.clock.now(),
                together=together,
            )

    # ------------------------------------------------------------ ranking

    def rank(
        self, session: Session, query: RecallQuery, now: datetime, vector: np.ndarray | None
    ) -> list[RecallResult]:
        """The ranked, explained results of ``query`` (nothing is written)."""
        scope = self.scope(session, query)
        filters = scope.filters
        reference = query.as_of or now
        plan = understand(query.text, reference)
        fusion = query.fusion or self.parts.config.fusion
        rng = random.Random(query.seed) if query.explore else None
        scored = self.candidates(session, query, now, vector, plan=plan, rng=rng, scope=scope)
        if not scored:
            return []
        config = self.parts.config
        if fusion == "weighted" and config.weights.cooccurrence > 0:
            scored = self._cooccurring(session, scored, now)
        if fusion == "weighted" and config.weights.context > 0:
            scored = lift_neighbours(
                session, self.parts.mind.id, scored, config.weights.context, filters
            )
        if self._learned(query):
            ranker = load_ranker(vectors=vector is not None)
            if ranker is not None:
                scored = rerank_head(ranker, plan, scored)
        if query.depth == "deep" and self.reranker is not None:
            scored = deepen(self.reranker, self.parts.config.deep, query.text, scored)
        if fusion == "weighted" and vector is not None:
            assert self.parts.embedder is not None
            scored = diversify(
                session, self.parts.mind.id, self.parts.embedder, scored, query.limit
            )
        if query.as_of is None and self.parts.config.newer_wins:
            scored = newer_first(scored, query.limit, plan)
        top = scored[: query.limit]
        # Contradicting memories come back together: partners that pass the filters
        # are appended after the top results, and each side lists the other.
        conflicts = self._conflicts(session, [s.memory.id for s in top])
        present = {s.memory.id for s in top}
        partners = sorted({p for m_id in present for p in conflicts.get(m_id, ())} - present)
        if partners:
            scored_by_id = {s.memory.id: s for s in scored}
            held = session.run(ops.GetMemories(self.parts.mind.id, partners))
            for memory in as_known(session, self.parts.mind.id, held, filters.known_at):
                if filters.matches(memory, query.as_of):
                    partner = scored_by_id.get(memory.id) or scope.place(
                        score(
                            Hit(memory),
                            plan,
                            fusion,
                            reference,
                            now,
                            self.parts.config,
                            vectors=vector is not None,
                            rng=rng,
                        ),
                        self.parts.config.weights.world,
                    )
                    top.append(partner)
                    present.add(memory.id)
        # Each result's neighbours in its thread, with the statuses the query allows.
        near = (
            session.run(
                ops.Neighbours(
                    self.parts.mind.id,
                    [s.memory.id for s in top],
                    query.context,
                    filters.statuses or tuple(Status),
                )
            )
            if query.context
            else {}
        )
        return [
            RecallResult(
                memory=s.memory,
                rank=index,
                score=sum(s.components.values()),
                components=s.components,
                signals=s.signals,
                weights=s.weights,
                conflicts=tuple(sorted(conflicts.get(s.memory.id, set()) & present)),
                before=near.get(s.memory.id, ((), ()))[0],
                after=near.get(s.memory.id, ((), ()))[1],
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
        scope: Scope | None = None,
    ) -> list[Scored]:
        """Every candidate the lanes found for ``query``, scored, best first.

        The benchmarks fit the fusion weights on these (their ``signals``).
        ``worlds-first`` (``query.strategy``) runs the lanes inside the
        ``config.worlds_first_limit`` worlds whose composed vectors best match the
        query (``noema.memory.write.composed``); without an embedder or a query vector,
        or before any world has a composed vector, it is a flat recall. ``scope``:
        the query's worlds, when the caller has them already.
        """
        if scope is None:
            scope = self.scope(session, query)
        filters = scope.filters
        if filters.worlds == _NOWHERE:
            return []
        reference = query.as_of or now
        if plan is None:
            plan = understand(query.text, reference)
        pool = candidate_pool(query.limit, self.parts.config)
        found: dict[str, Hit] = {}
        mind, embedder = self.parts.mind.id, self.parts.embedder
        if query.strategy == "worlds-first" and vector is not None and embedder is not None:
            limit, pooling = self.parts.config.worlds_first_limit, self.parts.config.world_pooling
            filters = worlds_first(
                session, mind, embedder.model, vector, filters, query.as_of, limit, pooling
            )
        searched = None
        if vector is not None and embedder is not None:
            # Submitted first: a backend that can runs it while the text lane runs.
            searched = vector_search(session, mind, embedder.model, query, filters, pool, vector)
        text_lane(
            session, mind, query, plan, filters, pool, found, has_embedder=embedder is not None
        )
        if searched is not None and vector is not None and embedder is not None:
            vector_lane(session, mind, embedder.model, searched, vector, found)
        graph_lane(session, mind, query, filters, pool, found)
        if filters.known_at is not None:  # what the mind believed then, not what it knows now
            hits = list(found.values())
            for hit, memory in zip(
                hits,
                as_known(session, mind, [h.memory for h in hits], filters.known_at),
                strict=True,
            ):
                hit.memory = memory
        fusion, vectors = query.fusion or self.parts.config.fusion, vector is not None
        weight = self.parts.config.weights.world
        scored = [
            scope.place(
                score(c, plan, fusion, reference, now, self.parts.config, vectors=vectors, rng=rng),
                weight,
            )
            for c in found.values()
        ]
        scored.sort(key=best_first)
        return scored

    def scope(self, session: Session, query: RecallQuery) -> Scope:
        """The filters of ``query`` with its world's scope (``noema.memory.write.worlds``).

        Raises:
            NotFound: the mind has no world at ``query.world``.
        """
        filters = _recall_filters(query)
        if not query.world:  # the root: the whole mind, no world is nearer than another
            return Scope(filters)
        tree = load_tree(session, self.parts.mind.id)
        home = tree.get(query.world)
        hops = tree.scope(home)
        worlds = set(hops) if not filters.worlds else set(hops) & set(filters.worlds)
        filters = filters.model_copy(update={"worlds": tuple(sorted(worlds)) or _NOWHERE})
        return Scope(filters, home, {w: hops[w] for w in worlds})

    def _cooccurring(self, session: Session, scored: list[Scored], now: datetime) -> list[Scored]:
        """Set each candidate's ``cooccurrence`` with the query's other strong results.

        Fusion scored it 0; here the weight of its edges to the best
        ``STRONG_RESULTS`` candidates (itself apart) gives the signal.
        """
        strong = {s.memory.id for s in scored[:STRONG_RESULTS]}
        pool = [s.memory.id for s in scored[: candidate_pool(STRONG_RESULTS, self.parts.config)]]
        partners = pair_weights(
            session, self.parts.mind.id, pool, now, self.parts.config.cooccurrence_half_life_days
        )
        if not partners:
            return scored
        weight = self.parts.config.weights.cooccurrence
        for item in scored:
            edges = partners.get(item.memory.id)
            if not edges:
                continue
            total = sum(w for other, w in edges.items() if other in strong)
            if total > 0:
                item.signals["cooccurrence"] = cooccurrence_signal(total)
                item.components["cooccurrence"] = weight * item.signals["cooccurrence"]
        scored.sort(key=best_first)
        return scored

    def _conflicts(self, session: Session, ids: Sequence[str]) -> dict[str, set[str]]:
        """Each of ``ids`` to the memories an active ``contradicts`` edge joins it to."""
        if not ids:
            return {}
        edges = session.run(
            ops.FindRelationships(
                self.parts.mind.id,
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


#: The worlds filter of a scope that holds none of the worlds asked for.
_NOWHERE = ("\x00",)


@dataclass(frozen=True)
class Scope:
    """What a recall may see: its filters, and inside a world, where each world lies.

    ``home`` is the world asked for; ``hops`` maps each world in sight to the
    links followed to reach it (0 for the home world and its descendants).
    """

    filters: RecallFilters
    home: str | None = None
    hops: dict[str, int] = field(default_factory=dict)

    def place(self, item: Scored, weight: float) -> Scored:
        """Add the ``world`` bonus and, through a link, the ``link`` discount to ``item``.

        The bonus is ``weight`` in the home world, ``DESCENDANT_SIGNAL`` of it
        below, nothing through a link. A memory ``h`` links away keeps
        ``LINK_FACTOR ** h`` of its score: the ``link`` component is the rest, negative.
        """
        if self.home is None:
            return item
        world = item.memory.world
        hops = self.hops.get(world, 0)
        signal = 1.0 if world == self.home else DESCENDANT_SIGNAL if hops == 0 else 0.0
        item.signals["world"] = signal
        item.weights["world"] = weight
        item.components["world"] = weight * signal
        if hops:
            item.signals["link"] = float(hops)
            item.components["link"] = -(1.0 - LINK_FACTOR**hops) * item.score
        return item


def _recall_filters(query: RecallQuery) -> RecallFilters:
    """The query's filters; ``as_of`` also admits what has been superseded since."""
    filters = query.filters
    if query.as_of is not None and filters.statuses == (Status.ACTIVE,):
        filters = filters.model_copy(update={"statuses": (Status.ACTIVE, Status.SUPERSEDED)})
    return filters
