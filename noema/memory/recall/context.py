"""The neighbour lift: the memories around a strong hit in its conversation.

In a conversation the answer is often not the turn that matches the question's
words but the reply after it, or the remark before. Memories written as part of
a thread know their place in it (``Memory.thread``, ``Memory.position``); the
lift reads the nearest ``CONTEXT_SPAN`` memories either side of the best
``CONTEXT_HITS`` results (``ops.Neighbours``, which skips what was purged) and
gives each a ``context`` signal: its hit's share of the best score, halved two
places away. Its component is the ``context`` weight times the signal, capped
so that a neighbour never rises above its hit (the signal is then what the cap
leaves). Only candidates are lifted: a neighbour no lane found shares nothing
with the query, and ``recall(..., context=N)`` is the way to read it beside its
hit.
"""

from __future__ import annotations

from collections.abc import Sequence

from concepts import RecallFilters
from noema.memory.recall.scoring import Scored, best_first
from noema.storage import Session, ops

__all__ = ["CONTEXT_HITS", "CONTEXT_SPAN", "DISTANCE_FACTOR", "lift", "lift_neighbours"]

#: The hits whose neighbours are lifted, and how far either side.
CONTEXT_HITS = 3
CONTEXT_SPAN = 2
#: The share of the signal at each distance from the hit.
DISTANCE_FACTOR = {1: 1.0, 2: 0.5}
#: A lifted neighbour stays at least this far below its hit.
BELOW_HIT = 0.001


def lift(scored: Sequence[Scored], pairs: Sequence[tuple[int, int, int]], weight: float) -> None:
    """Add the ``context`` signal and component to neighbours in ``scored``.

    ``pairs``: (hit index, neighbour index, distance) into ``scored``. A
    neighbour of several hits takes the strongest lift.
    """
    top = scored[0].score if scored and scored[0].score > 0 else 1.0
    best: dict[int, tuple[float, float]] = {}  # neighbour -> (signal, its hit's score)
    for hit, neighbour, distance in pairs:
        hit_score = scored[hit].score
        signal = DISTANCE_FACTOR[distance] * max(hit_score, 0.0) / top
        if signal > best.get(neighbour, (0.0, 0.0))[0]:
            best[neighbour] = (signal, hit_score)
    for index, (signal, hit_score) in best.items():
        item = scored[index]
        room = max(hit_score - BELOW_HIT - item.score, 0.0)
        if weight * signal > room:  # capped below its hit: the signal it could take
            signal = room / weight
        item.signals["context"] = signal
        item.weights["context"] = weight
        item.components["context"] = weight * signal


def lift_neighbours(
    session: Session,
    mind_id: str,
    scored: list[Scored],
    weight: float,
    filters: RecallFilters,
) -> list[Scored]:
    """Lift the neighbours of the best ``CONTEXT_HITS`` of ``scored`` (best first).

    Only neighbours among the candidates are lifted: a memory no lane found
    shares nothing with the query. Returns the candidates, re-sorted best first.
    """
    hits = [s for s in scored[:CONTEXT_HITS] if s.memory.thread]
    if weight <= 0 or not hits:
        return scored
    around = session.run(
        ops.Neighbours(mind_id, [h.memory.id for h in hits], CONTEXT_SPAN, filters.statuses)
    )
    index = {s.memory.id: i for i, s in enumerate(scored)}
    pairs: list[tuple[int, int, int]] = []
    for hit in hits:
        before, after = around.get(hit.memory.id, ((), ()))
        for distance, memory in [*enumerate(reversed(before), 1), *enumerate(after, 1)]:
            if memory.id in index:
                pairs.append((index[hit.memory.id], index[memory.id], distance))
    lift(scored, pairs, weight)
    scored.sort(key=best_first)
    return scored
