"""The candidate lanes of recall: each finds memories for a query its own way.

- **text**: full-text rank (BM25) over the memories' content and, apart, over
  their expanded keys; a query that is only a time expression scans the
  memories of its windows instead.
- **vector**: cosine to the query's embedding, spread over the pool.
- **graph**: entities shared with the query, plus one hop along ``refers_to``
  and ``same_as``.

Every lane fills one ``found`` dict (memory id to ``Hit``) with what it says of
each memory it found; ``noema.memory.recall.scoring`` turns hits into signals. Each lane
asks storage for candidates that already pass the recall's filters; what a lane
fetches by id (one hop away) is checked with ``RecallFilters.matches``.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from concepts import Memory, RecallFilters, RecallQuery, Relation, RelationStatus
from noema.memory.language.entities import extract_entities
from noema.memory.language.terms import query_terms
from noema.memory.recall.history import as_known
from noema.memory.recall.query import QueryPlan
from noema.storage import Session, ops

__all__ = [
    "HOP_FACTOR",
    "LANES",
    "Hit",
    "graph_lane",
    "text_lane",
    "vector_lane",
    "vector_search",
]

#: The lanes that reciprocal-rank fusion combines.
LANES = ("text", "vector", "graph")
#: A memory one edge away from an entity match gets this share of its graph signal.
HOP_FACTOR = 0.5


@dataclass
class Hit:
    """One memory found by at least one lane, with what each lane said of it."""

    memory: Memory
    text: float = 0.0
    keys: float = 0.0  # the expanded keys' full-text rank, spread like ``text``
    vector: float | None = None  # spread cosine in [0, 1]; None when the memory has no vector
    cosine: float | None = None  # the raw cosine to the query
    graph: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)  # lane -> 1-based rank
    stored: np.ndarray | None = None  # the memory's vector, once the vector lane read it


def text_lane(
    session: Session,
    mind_id: str,
    query: RecallQuery,
    plan: QueryPlan,
    filters: RecallFilters,
    pool: int,
    found: dict[str, Hit],
    *,
    has_embedder: bool,
) -> None:
    """Full-text hits of the query's terms, over content and keys (at most ``pool`` each).

    ``has_embedder``: a query of symbols only is then left to the vector lane;
    without one, a query without words takes the most recent memories.
    """
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
            ops.ScanMemories(mind_id, window, query.as_of, order="recent", limit=pool)
        )
        for memory in scanned:
            found[memory.id] = Hit(memory)
        return
    if not terms:
        if query.text.strip() and has_embedder:
            return  # only punctuation or symbols: leave it to the vector lane
        # No words: the most recent memories, unranked by text.
        scanned = session.run(
            ops.ScanMemories(mind_id, filters, query.as_of, order="recent", limit=pool)
        )
        for memory in scanned:
            found[memory.id] = Hit(memory)
        return
    strict = query.mode == "strict"
    for index in ("content", "keys"):
        hits = session.run(
            ops.SearchText(mind_id, terms, strict, filters, query.as_of, pool, index)
        )
        best = max((rank for _, rank in hits), default=0.0)
        for position, (memory, rank) in enumerate(hits, start=1):
            candidate = found.setdefault(memory.id, Hit(memory))
            signal = rank / best if best > 0 else 0.0
            if index == "content":
                candidate.text = signal
                candidate.ranks["text"] = position
            else:
                candidate.keys = signal


def vector_search(
    session: Session,
    mind_id: str,
    model: str,
    query: RecallQuery,
    filters: RecallFilters,
    pool: int,
    vector: np.ndarray,
) -> Future[list[ops.Nearest]]:
    """The nearest memories to ``vector`` under ``model``, submitted to run beside the text lane.

    ``vector_lane`` takes its result.
    """
    return session.submit(ops.SearchVectors(mind_id, model, vector, filters, query.as_of, pool))


def vector_lane(
    session: Session,
    mind_id: str,
    model: str,
    search: Future[list[ops.Nearest]],
    vector: np.ndarray,
    found: dict[str, Hit],
) -> None:
    """The ``vector_search`` hits; every candidate gets its cosine to ``vector``.

    Hits of the other lanes are scored against their own stored vectors too, and
    all cosines of the pool are spread over [0, 1] (the ``vector`` signal). Each
    candidate keeps the stored vector it was scored by (``Hit.stored``). While
    the search still runs beside the session, the other lanes' vectors are read
    meanwhile; once it is done, only those of memories it did not find.
    """
    stored: dict[str, np.ndarray] = {}
    dims = int(vector.shape[0])
    if found and not search.done():
        stored = session.run(ops.GetVectors(mind_id, model, dims, list(found)))
    for position, (memory, similarity, row) in enumerate(search.result(), start=1):
        candidate = found.setdefault(memory.id, Hit(memory))
        candidate.vector = similarity
        candidate.stored = row
        candidate.ranks["vector"] = position
    missing = [
        c.memory.id for c in found.values() if c.vector is None and c.memory.id not in stored
    ]
    if missing:
        rest = session.run(ops.GetVectors(mind_id, model, dims, missing))
        stored.update(rest)
    for memory_id, row in stored.items():
        candidate = found[memory_id]
        if candidate.vector is None:
            candidate.vector = float(row @ vector)
            candidate.stored = row
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


def graph_lane(
    session: Session,
    mind_id: str,
    query: RecallQuery,
    filters: RecallFilters,
    pool: int,
    found: dict[str, Hit],
) -> None:
    """Memories sharing the query's entities (share matched), and one hop from them."""
    entities = extract_entities(query.text)
    if not entities:
        return
    # An entity that more memories refer to than the pool holds cannot pick
    # candidates (a speaker's name in a conversation): it is skipped.
    hits = session.run(
        ops.SearchEntities(mind_id, entities, filters, query.as_of, pool, max_refs=pool)
    )
    strength = {memory.id: count / len(entities) for memory, count in hits}
    memories = {memory.id: memory for memory, _ in hits}
    # One hop: what the matching memories refer to or are the same as.
    if hits:
        edges = session.run(
            ops.FindRelationships(
                mind_id,
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
            held = session.run(ops.GetMemories(mind_id, sorted(hop)))
            for memory in as_known(session, mind_id, held, filters.known_at):
                if filters.matches(memory, query.as_of):
                    strength[memory.id] = hop[memory.id]
                    memories[memory.id] = memory
    # Strongest first, then newest; content hashes break ties alike in every store.
    ordered = sorted(
        strength,
        key=lambda m_id: (
            -strength[m_id],
            -memories[m_id].valid_from.timestamp(),
            memories[m_id].content_hash,
        ),
    )
    for position, memory_id in enumerate(ordered, start=1):
        candidate = found.setdefault(memory_id, Hit(memories[memory_id]))
        candidate.graph = strength[memory_id]
        candidate.ranks["graph"] = position
