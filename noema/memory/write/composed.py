"""Composed world embeddings and the worlds a query should look in first.

Each world keeps, per ``(model, dims)``, the sum of its memories' vectors and how
many there are (``ops.GetWorldVectors``): their mean is the world's composed
embedding. The sums are kept exact by deltas applied in the transaction that
changes a memory's vector:

- ``compose``, right *before* ``ops.PutVectors``: adds each new vector and takes
  away the one it replaces (a memory counts once, however often it is re-embedded);
- ``decompose``, right before ``ops.PurgeMemories``: takes purged memories away
  under every model a world vector is kept for;
- ``rebuild`` recomputes the sums from the stored vectors (stores written before
  composed vectors existed; ``noema reindex``). It is idempotent.

Every memory counts whatever its status: a retraction or supersession leaves the
vector where it was, only a purge removes it.

``best_worlds`` scores worlds against a query vector. ``mean`` pooling is the
cosine with the mean; ``attention`` pooling (no parameters to learn) weighs a
world's member vectors by ``softmax(q · v / ATTENTION_TEMPERATURE)`` and takes
the cosine with their weighted sum, for a shortlist of the best worlds by mean.
``worlds_first`` narrows a recall's filters to the best worlds
(``RecallQuery.strategy == "worlds-first"``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Literal

import numpy as np

from concepts import RecallFilters
from noema.storage import Session, ops

__all__ = [
    "ATTENTION_TEMPERATURE",
    "REBUILD_CHUNK",
    "SHORTLIST_FACTOR",
    "Pooling",
    "best_worlds",
    "compose",
    "decompose",
    "rebuild",
    "worlds_first",
]

#: How a world's member vectors pool into the one vector it is scored by.
Pooling = Literal["mean", "attention"]

#: Softmax temperature of attention pooling over cosine similarities, the best of
#: those measured on LoCoMo with e5 (docs/benchmarks.md, "Worlds-first recall").
ATTENTION_TEMPERATURE = 0.02
#: Attention pooling rescores this many times ``limit`` of the best worlds by mean.
SHORTLIST_FACTOR = 3
#: Memories read per step by ``rebuild`` and by attention pooling.
REBUILD_CHUNK = 1_000


def compose(
    session: Session,
    mind_id: str,
    model: str,
    ids: Sequence[str],
    vectors: np.ndarray,
    *,
    created: Mapping[str, str] | None = None,
) -> None:
    """Fold the vectors about to be stored for memories ``ids`` into their worlds' sums.

    Call it in the transaction of the ``ops.PutVectors(mind_id, model, ids,
    vectors)`` it accompanies, just before it: a vector the memory already had
    under ``(model, dims)`` is taken away, so the sums stay exact when a memory
    is re-embedded, and only a memory that had none adds to its world's count.
    Ids of memories the mind does not hold are ignored.

    ``created``: the world of each of ``ids`` that this transaction created. Such
    a memory can hold no vector yet, so neither it nor a vector is read back.
    """
    rows = np.asarray(vectors, dtype=np.float32)
    if not len(ids) or rows.ndim != 2 or rows.shape[0] != len(ids):
        return  # PutVectors reports the bad shape
    dims = int(rows.shape[1])
    new = dict(zip(ids, rows, strict=True))  # a repeated id: the last row is what is stored
    known = created or {}
    worlds = {m_id: known[m_id] for m_id in new if m_id in known}
    held = [m_id for m_id in new if m_id not in known]
    old: dict[str, np.ndarray] = {}
    if held:
        read = {m.id: m.world for m in session.run(ops.GetMemories(mind_id, held))}
        old = session.run(ops.GetVectors(mind_id, model, dims, list(read)))
        worlds.update(read)
    deltas: dict[str, tuple[np.ndarray, int]] = {}
    for memory_id, world in worlds.items():
        total, count = deltas.get(world, (np.zeros(dims), 0))
        total = total + new[memory_id].astype(np.float64)
        if memory_id in old:
            total = total - old[memory_id].astype(np.float64)
        else:
            count += 1
        deltas[world] = (total, count)
    if deltas:
        session.run(ops.AddWorldVectors(mind_id, model, dims, deltas))


def decompose(session: Session, mind_id: str, ids: Sequence[str]) -> None:
    """Take memories ``ids``, about to be purged, out of their worlds' sums (every model).

    Call it in the purge's transaction, before ``ops.PurgeMemories`` deletes
    the vectors it reads.
    """
    if not ids:
        return
    models = session.run(ops.WorldVectorModels(mind_id))
    if not models:
        return
    worlds = {m.id: m.world for m in session.run(ops.GetMemories(mind_id, list(ids)))}
    for model, dims in models:
        held = session.run(ops.GetVectors(mind_id, model, dims, list(worlds)))
        deltas: dict[str, tuple[np.ndarray, int]] = {}
        for memory_id, vector in held.items():
            world = worlds[memory_id]
            total, count = deltas.get(world, (np.zeros(dims), 0))
            deltas[world] = (total - vector.astype(np.float64), count - 1)
        if deltas:
            session.run(ops.AddWorldVectors(mind_id, model, dims, deltas))


def rebuild(session: Session, mind_id: str, model: str, dims: int) -> int:
    """Recompute every world's sum under ``(model, dims)`` from the stored vectors.

    Reads the mind's memories ``REBUILD_CHUNK`` at a time, in one (write)
    transaction so no write slips between reading and correcting, and applies
    only the difference to what is held: a second run changes nothing. Returns
    how many vectors were summed.
    """
    sums: dict[str, tuple[np.ndarray, int]] = {}
    after: str | None = None
    while True:
        page = session.run(ops.ScanMemories(mind_id, after_id=after, limit=REBUILD_CHUNK))
        if not page:
            break
        after = page[-1].id
        held = session.run(ops.GetVectors(mind_id, model, dims, [m.id for m in page]))
        for memory in page:
            vector = held.get(memory.id)
            if vector is None:
                continue
            total, count = sums.get(memory.world, (np.zeros(dims), 0))
            sums[memory.world] = (total + vector.astype(np.float64), count + 1)
    current = session.run(ops.GetWorldVectors(mind_id, model, dims))
    deltas: dict[str, tuple[np.ndarray, int]] = {}
    for world in sorted(set(sums) | set(current)):
        target, members = sums.get(world, (np.zeros(dims), 0))
        total, count = current.get(world, (np.zeros(dims), 0))
        if count != members or not np.array_equal(total, target):
            deltas[world] = (target - total, members - count)
    if deltas:
        session.run(ops.AddWorldVectors(mind_id, model, dims, deltas))
    return sum(count for _, count in sums.values())


def best_worlds(
    session: Session,
    mind_id: str,
    model: str,
    query_vector: np.ndarray,
    candidates: Collection[str] | None,
    limit: int,
    pooling: Pooling = "mean",
    *,
    filters: RecallFilters | None = None,
    as_of: datetime | None = None,
    temperature: float = ATTENTION_TEMPERATURE,
) -> list[tuple[str, float]]:
    """The ``limit`` worlds whose composed vectors best match ``query_vector``, best first.

    ``candidates``: the worlds to choose from (``None``: every world with a
    composed vector under ``(model, len(query_vector))``). ``mean`` scores each by
    the cosine of the query with its mean vector. ``attention`` rescores the best
    ``SHORTLIST_FACTOR * limit`` by mean with their members' vectors: those of the
    memories passing ``filters`` and ``as_of`` (default: the active ones),
    weighted by ``softmax(q · v / temperature)``. A world without a member left
    drops out. Ties go to the smaller world id.
    """
    query = _unit(query_vector)
    if query is None or limit < 1:
        return []
    dims = int(query.shape[0])
    if candidates is not None and not candidates:
        return []
    held = session.run(
        ops.GetWorldVectors(
            mind_id, model, dims, None if candidates is None else sorted(candidates)
        )
    )
    by_mean = _ranked(
        {
            world: float(query @ total) / norm
            for world, (total, count) in held.items()
            if count > 0 and (norm := float(np.linalg.norm(total))) > 0
        }
    )
    if pooling == "mean":
        return by_mean[:limit]
    shortlist = [world for world, _ in by_mean[: SHORTLIST_FACTOR * limit]]
    members = _member_vectors(session, mind_id, model, dims, shortlist, filters, as_of)
    scores: dict[str, float] = {}
    for world, matrix in members.items():
        similarity = matrix @ query
        weights = np.exp((similarity - similarity.max()) / temperature)
        pooled = (weights / weights.sum()) @ matrix
        norm = float(np.linalg.norm(pooled))
        if norm > 0:
            scores[world] = float(query @ pooled) / norm
    return _ranked(scores)[:limit]


def worlds_first(
    session: Session,
    mind_id: str,
    model: str,
    query_vector: np.ndarray,
    filters: RecallFilters,
    as_of: datetime | None,
    limit: int,
    pooling: Pooling,
) -> RecallFilters:
    """``filters`` narrowed to the ``limit`` best worlds for ``query_vector``.

    Within ``filters.worlds`` when it is set (the query's scope), else among all.
    When no world has a composed vector under the model (nothing embedded yet, or
    a store from before composed vectors that ``rebuild`` has not seen), the
    filters come back as they were: the recall stays flat.
    """
    scope = set(filters.worlds) if filters.worlds else None
    best = best_worlds(
        session, mind_id, model, query_vector, scope, limit, pooling, filters=filters, as_of=as_of
    )
    if not best:
        return filters
    return filters.model_copy(update={"worlds": tuple(sorted(world for world, _ in best))})


def _member_vectors(
    session: Session,
    mind_id: str,
    model: str,
    dims: int,
    worlds: Sequence[str],
    filters: RecallFilters | None,
    as_of: datetime | None,
) -> dict[str, np.ndarray]:
    """The vectors of the memories of ``worlds`` passing ``filters``, as a matrix per world."""
    if not worlds:
        return {}
    scoped = (filters or RecallFilters()).model_copy(update={"worlds": tuple(worlds)})
    rows: dict[str, list[np.ndarray]] = {}
    after: str | None = None
    while True:
        page = session.run(
            ops.ScanMemories(mind_id, scoped, as_of, after_id=after, limit=REBUILD_CHUNK)
        )
        if not page:
            break
        after = page[-1].id
        held = session.run(ops.GetVectors(mind_id, model, dims, [m.id for m in page]))
        for memory in page:
            if (vector := held.get(memory.id)) is not None:
                rows.setdefault(memory.world, []).append(vector)
        if len(page) < REBUILD_CHUNK:
            break
    return {world: np.stack(vectors).astype(np.float64) for world, vectors in rows.items()}


def _unit(vector: np.ndarray) -> np.ndarray | None:
    flat = np.asarray(vector, dtype=np.float64).reshape(-1)
    norm = float(np.linalg.norm(flat))
    return flat / norm if norm > 0 and np.isfinite(norm) else None


def _ranked(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
