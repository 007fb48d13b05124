"""Co-occurrence: memories recalled or held together, as an edge and a recall component."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from concepts import Relation, score_reproduces
from noema import Mind
from noema.clock import ManualClock
from noema.memory.recall import cooccurrence
from noema.storage import ops


def edges(mind: Mind) -> dict[tuple[str, str], float]:
    with mind.storage.transaction(write=False) as session:
        return {(a, b): w for a, b, w, _ in session.run(ops.ScanCooccurrence(mind.id))}


def pair(a: str, b: str) -> tuple[str, str]:
    return (min(a, b), max(a, b))


def test_a_recall_joins_its_best_results_and_a_peek_joins_none(mind: Mind) -> None:
    found = [mind.remember(f"harbour note {i}: the tide tables") for i in range(7)]
    mind.recall("harbour tide tables", peek=True)
    assert edges(mind) == {}
    results = mind.recall("harbour tide tables", limit=7)
    top = [r.memory.id for r in results[: cooccurrence.TOGETHER]]
    expected = {pair(a, b): 1.0 for i, a in enumerate(top) for b in top[i + 1 :]}
    assert edges(mind) == expected  # only the best five, each pair once
    assert len(found) == 7 and len(expected) == 10
    mind.recall("harbour tide tables", limit=7)
    assert set(edges(mind).values()) == {2.0}


def test_weights_decay_from_their_last_update(mind: Mind, clock: ManualClock) -> None:
    a = mind.remember("the lighthouse keeper logs the weather")
    b = mind.remember("the lighthouse keeper logs the ships")
    mind.recall("lighthouse keeper logs")
    clock.advance(timedelta(days=30))  # one half-life
    mind.recall("lighthouse keeper logs")
    assert edges(mind) == {pair(a.id, b.id): pytest.approx(1.5)}


def test_the_cooccurrence_component_is_the_saturated_weight_to_strong_results(
    mind: Mind,
) -> None:
    a = mind.remember("the orchard's apple harvest starts in September")
    b = mind.remember("the orchard's cider press needs cleaning")
    c = mind.remember("the orchard's pear trees need pruning")
    for _ in range(3):
        mind.recall("orchard apple cider", limit=2)  # a and b come back together
    results = {r.memory.id: r for r in mind.recall("orchard", peek=True)}
    weight = edges(mind)[pair(a.id, b.id)]
    assert weight == 3.0
    for memory in (a, b):
        result = results[memory.id]
        assert result.signals["cooccurrence"] == pytest.approx(1 - math.exp(-0.6 * weight))
        assert result.components["cooccurrence"] == pytest.approx(
            0.05 * result.signals["cooccurrence"]
        )
        assert score_reproduces(result)
    assert results[c.id].components["cooccurrence"] == 0.0


def test_admitting_to_working_memory_joins_what_is_held(mind: Mind) -> None:
    held = mind.remember("the ferry schedule changed in May")
    new = mind.remember("the ferry now leaves from pier 4")
    [result] = mind.recall("pier 4", peek=True)
    mind._recaller.admit([result], "pier 4", together=[held.id])
    assert edges(mind) == {pair(held.id, new.id): 1.0}


def test_dense_clusters_are_distillation_candidates(mind: Mind, clock: ManualClock) -> None:
    team = [mind.remember(f"the night shift rota, week {i}") for i in range(6)]
    loose = [mind.remember(f"a loose note about gardens {i}") for i in range(6)]
    for _ in range(4):
        mind.recall("night shift rota week", limit=6)
        # each recall joins only the best five: rotate which ones are best
        mind.recall("night shift rota", limit=6)
    mind.recall("loose note gardens", limit=6)  # weight 1: not dense
    with mind.storage.transaction(write=False) as session:
        clusters = cooccurrence.dense_clusters(session, mind.id, clock.now(), 30.0)
    assert clusters, edges(mind)
    members = set(clusters[0])
    assert members <= {m.id for m in team} and len(members) >= cooccurrence.CLUSTER_MIN_SIZE
    assert not members & {m.id for m in loose}
    clock.advance(timedelta(days=120))  # four half-lives: the weights fade below 3
    with mind.storage.transaction(write=False) as session:
        assert cooccurrence.dense_clusters(session, mind.id, clock.now(), 30.0) == []


def test_purging_a_memory_takes_its_edges(mind: Mind) -> None:
    a = mind.remember("the bakery opens at six")
    b = mind.remember("the bakery sells rye")
    mind.recall("bakery")
    assert edges(mind)
    mind.forget(a.id)
    assert edges(mind) == {}
    assert mind.get(b.id) is not None


def test_reflect_distils_a_dense_cluster_once(mind: Mind) -> None:
    rota = [
        mind.remember(f"The night shift rota lists {name} on the harbour crane")
        for name in ("Ana", "Bo", "Cy", "Di", "Ed", "Fay")
    ]
    for _ in range(4):
        mind.recall("night shift rota harbour crane", limit=6)
        mind.recall("night shift rota", limit=6)
    first = mind.consolidate()
    [summary] = first.created
    sources = {e.dst for e in mind.relationships(summary.id) if e.relation == Relation.DERIVED_FROM}
    assert sources <= {m.id for m in rota} and len(sources) >= cooccurrence.CLUSTER_MIN_SIZE
    assert summary.lifecycle == "candidate"
    assert mind.consolidate().created == ()  # distilled already: nothing new
    assert mind.verify().ok
