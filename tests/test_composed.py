"""Composed world embeddings (noema.memory.write.composed) and worlds-first recall, on every
backend.

The world sums must equal, at every step, the sum recomputed from the stored
vectors: after inline and background embedding, re-embedding, purge and rebuild.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from concepts import Memory, MemoryInput, RecallFilters, RecallQuery
from noema import Mind
from noema.config import MindConfig
from noema.memory.write.composed import best_worlds, compose, rebuild, worlds_first
from noema.memory.write.worlds import load_tree
from noema.storage import ops

Sums = dict[str, tuple[np.ndarray, int]]

PETS = [
    "my greyhound Zephyr loves long walks",
    "Zephyr the greyhound sleeps on the sofa",
    "the vet said the greyhound is healthy",
]
COOKING = [
    "pineapple pizza with basil for dinner",
    "the pizza dough rests overnight",
    "basil grows on the kitchen window",
]
WORK = [
    "the quarterly report is due on Friday",
    "the report mentions the greyhound track sponsor",
]


def _inputs(by_world: Mapping[str, Sequence[str]]) -> list[MemoryInput]:
    return [
        MemoryInput(content=text, world=world)
        for world, texts in by_world.items()
        for text in texts
    ]


def _seed(mind: Mind) -> dict[str, str]:
    """Three worlds of memories (and one in the root); world path -> world id."""
    mind.remember_many(_inputs({"life/pets": PETS, "life/cooking": COOKING, "work": WORK}))
    mind.remember_many([MemoryInput(content="a note at the root about nothing")])
    return _world_ids(mind)


def _world_ids(mind: Mind) -> dict[str, str]:
    with mind.storage.transaction(write=False) as session:
        tree = load_tree(session, mind.id)
    return {tree.path(world_id): world_id for world_id in tree.worlds} | {"": ""}


def _held(mind: Mind, model: str | None = None, dims: int | None = None) -> Sums:
    assert mind.embedder is not None
    model, dims = model or mind.embedder.model, dims or mind.embedder.dims
    with mind.storage.transaction(write=False) as session:
        found: Sums = session.run(ops.GetWorldVectors(mind.id, model, dims))
    return found


def _recomputed(mind: Mind) -> Sums:
    """Every world's sum and count, from the memories' stored vectors."""
    assert mind.embedder is not None
    model, dims = mind.embedder.model, mind.embedder.dims
    with mind.storage.transaction(write=False) as session:
        memories = session.run(ops.ScanMemories(mind.id))
        vectors = session.run(ops.GetVectors(mind.id, model, dims, [m.id for m in memories]))
    sums: Sums = {}
    for memory in memories:
        if memory.id in vectors:
            total, count = sums.get(memory.world, (np.zeros(dims), 0))
            sums[memory.world] = (total + vectors[memory.id].astype(np.float64), count + 1)
    return sums


def _assert_exact(mind: Mind) -> None:
    held, expected = _held(mind), _recomputed(mind)
    live = {w: s for w, s in held.items() if s[1] > 0}
    assert set(live) == set(expected)
    for world, (total, count) in expected.items():
        assert live[world][1] == count, world
        np.testing.assert_allclose(live[world][0], total, atol=1e-9)
    for total, count in held.values():
        if count == 0:  # emptied by a purge: nothing left over
            np.testing.assert_allclose(total, 0.0, atol=1e-9)


def test_sums_are_exact_after_writes(open_mind: Callable[..., Mind]) -> None:
    mind = open_mind(embedder="hash:64")
    worlds = _seed(mind)
    _assert_exact(mind)
    held = _held(mind)
    assert held[worlds["life/pets"]][1] == 3
    assert held[worlds["work"]][1] == 2
    assert held[""][1] == 1
    assert worlds["life"] not in held  # a parent holds no memory of its own
    # Remembering the same content again reinforces it: no second vector, no new count.
    mind.remember_many(_inputs({"life/pets": PETS[:1]}))
    assert _held(mind)[worlds["life/pets"]][1] == 3
    _assert_exact(mind)


def test_background_and_later_embedding_compose(open_mind: Callable[..., Mind]) -> None:
    bulk = open_mind("bulk", embedder="hash:64", config=MindConfig(embed_inline_max=2))
    _seed(bulk)
    bulk.wait_for_embeddings()
    _assert_exact(bulk)
    later = open_mind("later", embedder="hash:64", config=MindConfig(embed_on_write=False))
    worlds = _seed(later)
    assert not _held(later)
    assert later.embed_missing() == len(PETS) + len(COOKING) + len(WORK) + 1
    _assert_exact(later)
    assert _held(later)[worlds["life/cooking"]][1] == 3
    assert later.embed_missing() == 0
    _assert_exact(later)


def test_re_embedding_replaces_the_old_vector(open_mind: Callable[..., Mind]) -> None:
    mind = open_mind(embedder="hash:64")
    worlds = _seed(mind)
    assert mind.embedder is not None
    model, dims = mind.embedder.model, mind.embedder.dims
    pets = [r.memory.id for r in mind.recall("greyhound Zephyr", peek=True, limit=10)]
    target = next(i for i in pets if mind.get(i).world == worlds["life/pets"])
    other = np.zeros((1, dims), dtype=np.float32)
    other[0, 0] = 1.0
    for _ in range(2):  # twice: the second replaces the first, the count stays
        with mind.storage.transaction() as session:
            compose(session, mind.id, model, [target], other)
            session.run(ops.PutVectors(mind.id, model, [target], other))
        _assert_exact(mind)
    assert _held(mind)[worlds["life/pets"]][1] == 3


def test_purge_takes_memories_out(open_mind: Callable[..., Mind]) -> None:
    mind = open_mind(embedder="hash:64")
    worlds = _seed(mind)
    work = [m.id for m in _members(mind, worlds["work"])]
    mind.forget(work[:1])
    _assert_exact(mind)
    assert _held(mind)[worlds["work"]][1] == 1
    mind.forget(work[1:])
    _assert_exact(mind)
    total, count = _held(mind)[worlds["work"]]
    assert count == 0 and not np.any(total)
    # A purge decomposes under every model world vectors are kept for.
    second = open_mind(embedder="hash:32")  # the same mind, another model
    second.embed_missing()
    assert second.embedder is not None
    assert _held(second)[worlds["life/pets"]][1] == 3
    mind.forget(containing="Zephyr")
    _assert_exact(mind)
    _assert_exact(second)
    assert _held(second)[worlds["life/pets"]][1] == 1


def test_rebuild_equals_incremental_and_is_idempotent(open_mind: Callable[..., Mind]) -> None:
    mind = open_mind(embedder="hash:64")
    _seed(mind)
    incremental = _held(mind)
    assert mind.embedder is not None
    model, dims = mind.embedder.model, mind.embedder.dims
    # A store from before composed vectors: none held, or stale ones.
    with mind.storage.transaction() as session:
        session.run(
            ops.AddWorldVectors(
                mind.id, model, dims, {w: (-t, -c) for w, (t, c) in incremental.items()}
            )
        )
        session.run(ops.AddWorldVectors(mind.id, model, dims, {"gone": (np.ones(dims), 4)}))
    assert mind.reindex() > 0
    rebuilt = _held(mind)
    assert rebuilt["gone"][1] == 0 and not np.any(rebuilt["gone"][0])
    for world, (total, count) in incremental.items():
        assert rebuilt[world][1] == count
        np.testing.assert_allclose(rebuilt[world][0], total, atol=1e-9)
    with mind.storage.transaction() as session:
        summed = rebuild(session, mind.id, model, dims)
    assert summed == sum(c for _, c in incremental.values())
    again = _held(mind)
    for world, (total, count) in rebuilt.items():
        assert again[world][1] == count
        assert np.array_equal(again[world][0], total)  # a second run changes nothing


def test_worlds_first_recalls_only_inside_the_best_worlds(open_mind: Callable[..., Mind]) -> None:
    mind = open_mind(embedder="hash:256", config=MindConfig(worlds_first_limit=1))
    worlds = _seed(mind)
    text = "greyhound Zephyr walks"
    flat = mind.recall(RecallQuery(text=text, limit=10, peek=True))
    assert worlds["work"] in {r.memory.world for r in flat}  # "greyhound" is said at work too
    first = mind.recall(RecallQuery(text=text, limit=10, peek=True, strategy="worlds-first"))
    assert first and {r.memory.world for r in first} == {worlds["life/pets"]}
    wider = open_mind(embedder="hash:256", config=MindConfig(worlds_first_limit=2))
    both = wider.recall(RecallQuery(text=text, limit=10, peek=True, strategy="worlds-first"))
    assert {r.memory.world for r in both} <= {worlds["life/pets"], worlds["work"]}
    assert len({r.memory.world for r in both}) == 2
    # Inside a scope, the best worlds are chosen among the scope's only.
    scope = RecallFilters(worlds=(worlds["work"], worlds["life/cooking"]))
    scoped = mind.recall(
        RecallQuery(text=text, limit=10, peek=True, strategy="worlds-first", filters=scope)
    )
    assert scoped and {r.memory.world for r in scoped} == {worlds["work"]}


def test_worlds_first_without_an_embedder_is_flat(open_mind: Callable[..., Mind]) -> None:
    mind = open_mind()
    _seed(mind)
    text = "greyhound report"
    flat = mind.recall(RecallQuery(text=text, limit=10, peek=True))
    first = mind.recall(RecallQuery(text=text, limit=10, peek=True, strategy="worlds-first"))
    assert flat and [r.memory.id for r in first] == [r.memory.id for r in flat]


def test_worlds_first_before_any_composed_vector_is_flat(open_mind: Callable[..., Mind]) -> None:
    mind = open_mind(embedder="hash:64")
    _seed(mind)
    assert mind.embedder is not None
    model, dims = mind.embedder.model, mind.embedder.dims
    held = _held(mind)
    with mind.storage.transaction() as session:
        session.run(
            ops.AddWorldVectors(mind.id, model, dims, {w: (-t, -c) for w, (t, c) in held.items()})
        )
        filters = RecallFilters()
        vector = mind.embedder.query("greyhound")
        assert worlds_first(session, mind.id, model, vector, filters, None, 3, "mean") is filters
    text = "greyhound report"
    flat = mind.recall(RecallQuery(text=text, limit=10, peek=True))
    first = mind.recall(RecallQuery(text=text, limit=10, peek=True, strategy="worlds-first"))
    assert [r.memory.id for r in first] == [r.memory.id for r in flat]


class TableEmbedder(Embeddings):
    """Fixed vectors by text (the query is ``"q"``): a case built by hand."""

    model_name = "table-3"

    def __init__(self, table: Mapping[str, Sequence[float]]) -> None:
        self.table = dict(table)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        # Anything else (the probe for the dimensions) lies on the third axis.
        return np.array([self.table.get(t, (0.0, 0.0, 1.0)) for t in texts], dtype=np.float32)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.encode(texts).tolist()  # type: ignore[no-any-return]

    def embed_query(self, text: str) -> list[float]:
        return self.encode([text])[0].tolist()  # type: ignore[no-any-return]


def test_attention_finds_the_one_close_member_that_mean_dilutes(
    open_mind: Callable[..., Mind],
) -> None:
    # "needle": one memory on the query's axis among four off it (mean cosine 0.24);
    # "middling": every memory at cosine 0.6. Mean prefers middling, attention needle.
    table = {"q": (1.0, 0.0, 0.0), "exact": (1.0, 0.0, 0.0)}
    table |= {f"off {i}": (0.0, 1.0, 0.0) for i in range(4)}
    table |= {f"mid {i}": (0.6, 0.0, 0.8) for i in range(3)}
    mind = open_mind(embedder=TableEmbedder(table))
    mind.remember_many(
        _inputs({"needle": ["exact", *(f"off {i}" for i in range(4))]})
        + _inputs({"middling": [f"mid {i}" for i in range(3)]})
    )
    worlds = _world_ids(mind)
    assert mind.embedder is not None
    query = mind.embedder.query("q")
    with mind.storage.transaction(write=False) as session:
        mean = best_worlds(session, mind.id, "table-3", query, None, 2, "mean")
        attention = best_worlds(session, mind.id, "table-3", query, None, 2, "attention")
        only = best_worlds(session, mind.id, "table-3", query, {worlds["needle"]}, 2, "mean")
    assert [w for w, _ in mean] == [worlds["middling"], worlds["needle"]]
    assert mean[0][1] == pytest.approx(0.6) and mean[1][1] == pytest.approx(1 / np.sqrt(17))
    assert [w for w, _ in attention] == [worlds["needle"], worlds["middling"]]
    assert attention[0][1] > 0.99 and attention[1][1] == pytest.approx(0.6)
    assert [w for w, _ in only] == [worlds["needle"]]
    for pooling, expected in (("mean", "middling"), ("attention", "needle")):
        config = MindConfig(worlds_first_limit=1, world_pooling=pooling)
        view = open_mind(embedder=TableEmbedder(table), config=config)
        results = view.recall(RecallQuery(text="q", limit=10, peek=True, strategy="worlds-first"))
        assert results and {r.memory.world for r in results} == {worlds[expected]}


def _members(mind: Mind, world: str) -> list[Memory]:
    with mind.storage.transaction(write=False) as session:
        found: list[Memory] = session.run(ops.ScanMemories(mind.id, RecallFilters(worlds=(world,))))
    return found
