"""Co-occurrence: memories recalled or held together grow a weighted, decaying edge.

Every time a recall returns memories together (its ``TOGETHER`` best results),
or a memory enters working memory beside others, each pair's weight grows by
one; weights halve every ``cooccurrence_half_life_days`` from their last
update. Recall turns the weight between a candidate and the query's other
strong results into the ``cooccurrence`` signal ``1 - exp(-0.6 * w)`` (the
normalisation of FormicOS); reflect distils dense clusters (at least
``CLUSTER_MIN_SIZE`` memories whose edges weigh more than ``CLUSTER_MIN_MEAN``
on average).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import datetime
from itertools import combinations

from noema.memory.records.activation import SECONDS_PER_DAY
from noema.storage import Session, ops

__all__ = [
    "CLUSTER_MIN_MEAN",
    "CLUSTER_MIN_SIZE",
    "SIGNAL_RATE",
    "STRONG_RESULTS",
    "TOGETHER",
    "dense_clusters",
    "pair_weights",
    "record",
    "signal",
    "together",
]

#: How many of a recall's best results count as returned together.
TOGETHER = 5
#: How many of a query's best-scored candidates the signal is measured against.
STRONG_RESULTS = 10
#: The rate of the signal's saturation: ``1 - exp(-SIGNAL_RATE * weight)``.
SIGNAL_RATE = 0.6
#: A cluster reflect distils: at least this many memories, edges heavier than this.
CLUSTER_MIN_SIZE = 5
CLUSTER_MIN_MEAN = 3.0
#: Most pairs one recording writes (``TOGETHER`` results make 10).
_MAX_PAIRS = 200
#: Edges read per page when looking for clusters.
_PAGE = 10_000


def decayed(weight: float, updated_at: datetime, now: datetime, half_life_days: float) -> float:
    """``weight`` stored at ``updated_at``, as it stands at ``now``."""
    age = max((now - updated_at).total_seconds(), 0.0) / SECONDS_PER_DAY
    return weight * math.pow(0.5, age / half_life_days)


def signal(weight: float) -> float:
    """The ``cooccurrence`` signal in [0, 1) of a total edge weight."""
    return 1.0 - math.exp(-SIGNAL_RATE * max(weight, 0.0))


def record(
    session: Session,
    mind_id: str,
    pairs: Iterable[tuple[str, str]],
    now: datetime,
    half_life_days: float,
) -> int:
    """Add one to the weight of each pair (after decay to ``now``); returns the pairs written.

    Args:
        session: A write session.
        mind_id: The mind the memories belong to.
        pairs: Pairs of memory ids, in any order; a pair of one memory is skipped.
        now: The time of the co-occurrence.
        half_life_days: The mind's half-life of co-occurrence weights.

    Returns:
        How many distinct pairs were written.
    """
    wanted = sorted({(min(a, b), max(a, b)) for a, b in pairs if a != b})[:_MAX_PAIRS]
    if not wanted:
        return 0
    ids = sorted({i for pair in wanted for i in pair})
    held = {
        (a, b): decayed(w, at, now, half_life_days)
        for a, b, w, at in session.run(ops.GetCooccurrence(mind_id, ids))
    }
    edges = [(a, b, held.get((a, b), 0.0) + 1.0, now) for a, b in wanted]
    session.run(ops.PutCooccurrence(mind_id, edges))
    return len(edges)


def together(ids: Sequence[str]) -> list[tuple[str, str]]:
    """Every pair among ``ids``."""
    return list(combinations(dict.fromkeys(ids), 2))


def pair_weights(
    session: Session, mind_id: str, ids: Sequence[str], now: datetime, half_life_days: float
) -> dict[str, dict[str, float]]:
    """Each of ``ids`` to its co-occurrence partners among ``ids``, with decayed weights."""
    weights: dict[str, dict[str, float]] = {}
    for a, b, w, at in session.run(ops.GetCooccurrence(mind_id, ids)):
        weight = decayed(w, at, now, half_life_days)
        weights.setdefault(a, {})[b] = weight
        weights.setdefault(b, {})[a] = weight
    return weights


def dense_clusters(
    session: Session,
    mind_id: str,
    now: datetime,
    half_life_days: float,
    *,
    min_size: int = CLUSTER_MIN_SIZE,
    min_mean: float = CLUSTER_MIN_MEAN,
) -> list[list[str]]:
    """Groups of memories often recalled together: reflect's distillation candidates.

    Edges are read page by page (only those stored heavier than ``min_mean``
    can still be); communities of the weighted graph (networkx's greedy
    modularity) with at least ``min_size`` members and a mean decayed edge
    weight above ``min_mean`` are returned, largest first, each sorted by id.
    """
    import networkx as nx  # type: ignore[import-untyped]  # only reflect and health need it

    graph = nx.Graph()
    after: tuple[str, str] | None = None
    while True:
        page = session.run(
            ops.ScanCooccurrence(mind_id, min_weight=min_mean, after=after, limit=_PAGE)
        )
        for a, b, w, at in page:
            weight = decayed(w, at, now, half_life_days)
            if weight > min_mean:
                graph.add_edge(a, b, weight=weight)
        if len(page) < _PAGE:
            break
        after = (page[-1][0], page[-1][1])
    clusters: list[list[str]] = []
    for component in nx.connected_components(graph):
        if len(component) < min_size:
            continue
        sub = graph.subgraph(component)
        for community in nx.community.greedy_modularity_communities(sub, weight="weight"):
            members = sorted(community)
            inner = sub.subgraph(members)
            if len(members) < min_size or not inner.number_of_edges():
                continue
            mean = inner.size(weight="weight") / inner.number_of_edges()
            if mean > min_mean:
                clusters.append(members)
    clusters.sort(key=lambda members: (-len(members), members[0]))
    return clusters
