"""Semantic recall (issue 4): embeddings keyed by model, fusion, lanes and adjustments.

Everything here runs on every backend through the ``backend`` fixture, with the
deterministic hash embedder; the test that needs the real MiniLM model skips
when the ``embeddings`` extra is not installed.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from concepts import (
    DecayClass,
    Memory,
    MemoryInput,
    RecallFilters,
    RecallResult,
    Relation,
    score_reproduces,
)
from noema import ConfigError, ManualClock, Mind
from noema.cli import run as main
from noema.config import DEFAULT_WEIGHTS, MindConfig, RecallWeights
from noema.embeddings import (
    E5_MODEL,
    Embedder,
    HashEmbedder,
    as_embedder,
    load_embedder,
    minilm_available,
)
from noema.memory.recall.adjust import diversify
from noema.memory.recall.lanes import Hit, vector_lane
from noema.memory.recall.pipeline import (
    DIVERSITY_COST,
    DIVERSITY_THRESHOLD,
    FEEDBACK_BOOST,
    FEEDBACK_PENALTY,
)
from noema.memory.recall.scoring import Scored
from noema.storage import Session, ops
from noema.storage._sqlite_vectors import VectorSearch

OpenMind = Callable[..., Mind]


def by_content(results: list[RecallResult]) -> dict[str, RecallResult]:
    return {r.memory.content: r for r in results}


def vector_count(mind: Mind, model: str, dims: int) -> tuple[int, int]:
    with mind.storage.transaction(write=False) as session:
        return session.run(ops.CountVectors(mind.id, model, dims))


# ---------------------------------------------------------------- embedders


def test_hash_embedder_is_deterministic_unit_and_lexical() -> None:
    embedder = HashEmbedder(64)
    a, b, c = embedder.encode(["the cat sat", "the cat sat", "quarterly revenue grew"])
    assert np.array_equal(a, b)
    assert math.isclose(float(np.linalg.norm(a)), 1.0, rel_tol=1e-6)
    near = float(embedder.encode(["the cat sat down"])[0] @ a)
    assert near > 0.5 > abs(float(c @ a))
    assert embedder.embed_query("the cat sat") == pytest.approx(a.tolist())


def test_embedder_names_and_errors() -> None:
    assert load_embedder("none") is None
    hashed = load_embedder("hash:32")
    assert hashed is not None and (hashed.model, hashed.dims) == ("hash-32", 32)
    for bad in ("word2vec", "hash:many", "hash:2"):
        with pytest.raises(ConfigError):
            load_embedder(bad)
    if not minilm_available():
        with pytest.raises(ConfigError, match="embeddings extra"):
            load_embedder("minilm")
    auto = load_embedder("auto")  # the best installed: e5 ships with the base install
    assert auto is not None and auto.model == E5_MODEL
    fake = DeterministicFakeEmbedding(size=12)
    with pytest.raises(ConfigError, match="model name"):
        as_embedder(fake)
    wrapped = as_embedder(fake, "fake-12")
    assert wrapped.dims == 12 and wrapped.documents(["x", "y"]).shape == (2, 12)


# ---------------------------------------------------------------- vectors keyed by model


def test_two_models_never_mix_and_recall_uses_only_the_configured_one(
    open_mind: OpenMind,
) -> None:
    first = open_mind(embedder="hash:64")
    first.remember("Ada lives in Lisbon")
    first.remember("Grace writes compilers")
    assert vector_count(first, "hash-64", 64) == (2, 2)

    second = open_mind(embedder="hash:32", config=MindConfig(embed_on_write=False))
    assert vector_count(second, "hash-32", 32) == (0, 2)
    # No vector under this model yet: recall reweights to text and shows no vector.
    result = second.recall("Lisbon", peek=True)[0]
    assert "vector" not in result.components
    assert result.weights["text"] == pytest.approx(DEFAULT_WEIGHTS.text + DEFAULT_WEIGHTS.vector)
    assert second.embed_missing() == 2
    assert second.embed_missing() == 0  # idempotent
    result = second.recall("Lisbon", peek=True)[0]
    assert result.weights["vector"] == DEFAULT_WEIGHTS.vector and result.signals["vector"] > 0
    # The first model's vectors are untouched.
    assert vector_count(second, "hash-64", 64) == (2, 2)
    assert vector_count(second, "hash-32", 32) == (2, 2)


def test_a_memory_without_a_vector_is_reweighted_to_text(open_mind: OpenMind) -> None:
    mind = open_mind(embedder="hash:64", config=MindConfig(embed_on_write=False))
    mind.remember("billing import failed on Monday")
    mind.embed_missing()
    mind.remember("billing import fixed on Tuesday")  # written without a vector
    results = by_content(mind.recall("billing import", peek=True))
    with_vector = results["billing import failed on Monday"]
    without = results["billing import fixed on Tuesday"]
    assert with_vector.weights["text"] == DEFAULT_WEIGHTS.text
    assert "vector" in with_vector.components and "vector" not in without.components
    assert without.weights["text"] == pytest.approx(DEFAULT_WEIGHTS.text + DEFAULT_WEIGHTS.vector)


def test_without_an_embedder_everything_works_on_text_graph_and_recency(mind: Mind) -> None:
    assert mind.embedder is None
    memory = mind.remember("Ada lives in Lisbon")
    results = mind.recall("Lisbon")
    assert [r.memory.id for r in results] == [memory.id]
    assert set(results[0].components) == set(DEFAULT_WEIGHTS.effective(vectors=False))
    assert "vector" not in results[0].components
    with pytest.raises(ConfigError, match="no embedder"):
        mind.embed_missing()


# ---------------------------------------------------------------- fusion


def test_weighted_components_are_weight_times_signal_and_sum_to_the_score(
    open_mind: OpenMind,
) -> None:
    mind = open_mind(embedder="hash:128")
    for text in ("the deploy broke billing", "billing runs nightly", "lunch was pasta"):
        mind.remember(text)
    results = mind.recall("billing deploy", peek=True)
    assert len(results) == 3  # the vector lane brings the third, which shares no word
    for result in results:
        assert score_reproduces(result)
        for name, weight in result.weights.items():
            assert result.components[name] == pytest.approx(weight * result.signals[name])
    assert results[0].memory.content == "the deploy broke billing"
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    # The vector signal spreads the pool's cosines over [0, 1]; the raw cosine is kept.
    spread = sorted(r.signals["vector"] for r in results)
    assert spread[0] == 0.0 and spread[-1] == 1.0
    cosines = {r.memory.id: r.signals["cosine"] for r in results}
    low, high = min(cosines.values()), max(cosines.values())
    for r in results:
        assert r.signals["vector"] == pytest.approx((cosines[r.memory.id] - low) / (high - low))


def test_rrf_sums_reciprocal_ranks_of_the_lanes(open_mind: OpenMind, clock: ManualClock) -> None:
    mind = open_mind(embedder="hash:128")
    contents = [
        "Caroline joined the pottery class",
        "pottery class starts in June",
        "the class was cancelled",
        "Caroline likes hiking",
    ]
    for text in contents:
        mind.remember(text)
        clock.advance(timedelta(minutes=1))
    results = mind.recall("Caroline pottery class", peek=True, fusion="rrf")
    assert results[0].memory.content == "Caroline joined the pottery class"
    for result in results:
        assert score_reproduces(result)
        assert set(result.components) <= {"text", "vector", "graph", "status"}
        # The lifecycle counts as its weight at a lane's first place (active: 0.8).
        assert result.components["status"] == pytest.approx(0.05 * 0.8 / 61)
        for lane, value in result.components.items():
            if lane == "status":
                continue
            rank = round(1 / value - 60)
            assert rank >= 1 and value == pytest.approx(1 / (60 + rank))
    # The top memory is first in the text and vector lanes (the graph lane ranks
    # the two Caroline memories by recency: the newer one first).
    top = results[0].components
    assert top["text"] == top["vector"] == pytest.approx(1 / 61)
    assert top["graph"] == pytest.approx(1 / 62)
    assert results == sorted(results, key=lambda r: -r.score)


def test_the_graph_lane_finds_what_text_and_vectors_miss(open_mind: OpenMind) -> None:
    mind = open_mind(embedder="hash:128")
    adopted = mind.remember("Caroline adopted a dog last spring")
    puppy = mind.remember("Her new puppy is named Luna")
    mind.remember("Dogs need daily walks")
    mind.relate(adopted.id, Relation.REFERS_TO, puppy.id)
    results = by_content(mind.recall("What did Caroline do?", peek=True))
    found = results["Her new puppy is named Luna"]
    assert found.signals["text"] == 0.0
    assert found.signals["cosine"] < 0.1
    # One hop from the entity match: half its graph signal.
    assert found.signals["graph"] == pytest.approx(results[adopted.content].signals["graph"] / 2)
    rrf = by_content(mind.recall("What did Caroline do?", peek=True, fusion="rrf"))
    assert "graph" in rrf["Her new puppy is named Luna"].components


def test_graph_weight_counts_in_the_weighted_sum(open_mind: OpenMind) -> None:
    weights = RecallWeights(graph=0.2)
    mind = open_mind(config=MindConfig(weights=weights))
    mind.remember("INC-4411 was caused by a full disk")
    result = mind.recall("INC-4411", peek=True)[0]
    assert result.signals["graph"] == 1.0
    assert result.components["graph"] == pytest.approx(0.2)
    assert score_reproduces(result)


# ---------------------------------------------------------------- adjustments


def test_near_duplicates_pay_the_diversity_penalty(open_mind: OpenMind) -> None:
    embedder = as_embedder(HashEmbedder(256))
    mind = open_mind(embedder=embedder)
    mind.remember("the quarterly report is due on friday")
    mind.remember("the quarterly report is due on friday!")
    mind.remember("report the broken printer")
    results = mind.recall("quarterly report", peek=True)
    first, second = results[0], results[1]
    assert "diversity" not in first.components
    a, b = embedder.documents([first.memory.content, second.memory.content])
    similarity = float(a @ b)
    assert similarity > DIVERSITY_THRESHOLD
    assert second.components["diversity"] == pytest.approx(
        -(similarity - DIVERSITY_THRESHOLD) * DIVERSITY_COST, abs=1e-5
    )
    assert score_reproduces(second)
    assert "diversity" not in results[2].components


def test_diversity_compares_the_vectors_the_lanes_read_and_reads_only_the_rest(
    open_mind: OpenMind,
) -> None:
    embedder = as_embedder(HashEmbedder(64))
    mind = open_mind(embedder=embedder)
    texts = ("alpha beta gamma", "alpha beta gamma!", "delta epsilon")
    first, second, third = (mind.remember(text) for text in texts)
    a, b, _ = embedder.documents(list(texts))

    def item(memory: Memory, score: float, vector: np.ndarray | None) -> Scored:
        return Scored(memory, {"text": score}, {"text": score}, {"text": 1.0}, vector)

    # The first two carry vectors, as the vector lane leaves them; the second
    # carries the first's, so it repeats the first whatever its stored vector says.
    window = [
        item(first, 0.9, a),
        item(third, 0.8, a),
        item(second, 0.7, None),  # carries none: its stored vector is read
    ]
    with mind.storage.transaction(write=False) as session:
        ranked = diversify(session, mind.id, embedder, window, limit=5)
    costs = {s.memory.id: s.components.get("diversity") for s in ranked}
    assert costs[first.id] is None
    assert costs[third.id] == pytest.approx(-(1.0 - DIVERSITY_THRESHOLD) * DIVERSITY_COST, abs=1e-5)
    similarity = float(a @ b)
    assert similarity > DIVERSITY_THRESHOLD
    assert costs[second.id] == pytest.approx(
        -(similarity - DIVERSITY_THRESHOLD) * DIVERSITY_COST, abs=1e-5
    )


def test_the_vector_lane_scores_alike_whether_the_search_is_still_running_or_done(
    open_mind: OpenMind,
) -> None:
    embedder = as_embedder(HashEmbedder(64))
    mind = open_mind(embedder=embedder)
    texts = ["invoice due friday", "invoice paid", "printer broken", "friday lunch", "tea"]
    memories = [mind.remember(text) for text in texts]
    query = embedder.query("invoice friday")
    search = ops.SearchVectors(mind.id, embedder.model, query, RecallFilters(), None, 2)

    def lane(session: Session, running: bool) -> dict[str, tuple[float | None, list[float]]]:
        # The text lane found the printer and the lunch; the search finds two others.
        found = {m.id: Hit(m) for m in (memories[2], memories[3])}
        hits: Future[list[ops.Nearest]] = Future()
        if running:  # answered while the lane reads the text hits' vectors
            threading.Timer(0.05, hits.set_result, [session.run(search)]).start()
        else:
            hits.set_result(session.run(search))
        vector_lane(session, mind.id, embedder.model, hits, query, found)
        return {
            i: (h.cosine, h.stored.tolist() if h.stored is not None else [])
            for i, h in found.items()
        }

    with mind.storage.transaction(write=False) as session:
        done, running = lane(session, running=False), lane(session, running=True)
    assert running == done
    with mind.storage.transaction(write=False) as session:
        nearest = {m.id for m, _, _ in session.run(search)}
    assert set(done) == nearest | {memories[2].id, memories[3].id} and len(done) > 2
    stored = embedder.documents(texts)
    for memory, row in zip(memories, stored, strict=True):
        if memory.id not in done:
            continue
        cosine, vector = done[memory.id]
        assert cosine == pytest.approx(float(row @ query), abs=1e-5)
        assert vector == pytest.approx(row.tolist(), abs=1e-6)


def test_feedback_boosts_and_penalises_within_bounds(mind: Mind) -> None:
    liked = mind.remember("the staging database is db-stage-2")
    disliked = mind.remember("the staging database is db-stage-1")
    mind.feedback(liked.id, 1.0)
    mind.feedback(disliked.id, -1.0)
    results = by_content(mind.recall("staging database", peek=True))
    assert results[liked.content].components["feedback"] == pytest.approx(FEEDBACK_BOOST)
    assert results[disliked.content].components["feedback"] == pytest.approx(-FEEDBACK_PENALTY)
    assert mind.recall("staging database", peek=True)[0].memory.id == liked.id
    # The minimum-feedback filter: no feedback counts as a mean of 0.
    neutral = mind.remember("the staging database is backed up nightly")
    kept = {r.memory.id for r in mind.recall("staging database", peek=True, min_feedback=0.0)}
    assert kept == {liked.id, neutral.id}
    # Confidence is the Beta posterior's mean, moved by the feedback.
    assert mind.get(liked.id).confidence > 0.8 > mind.get(disliked.id).confidence


def test_decay_classes_fade_confidence_at_query_time(mind: Mind, clock: ManualClock) -> None:
    fields = {"kind": "semantic", "epistemic": "claim"}
    ephemeral = mind.remember("parking spot 14 today", decay=DecayClass.EPHEMERAL, **fields)
    stable = mind.remember("parking spot 15 assigned", decay=DecayClass.STABLE, **fields)
    permanent = mind.remember("parking spot 16 owned", decay=DecayClass.PERMANENT, **fields)
    clock.advance(timedelta(days=7))
    results = by_content(mind.recall("parking spot", peek=True))
    base = permanent.credibility
    assert results[permanent.content].signals["credibility"] == pytest.approx(base)
    assert results[ephemeral.content].signals["credibility"] == pytest.approx(base / 2)
    assert results[stable.content].signals["credibility"] == pytest.approx(base * 0.5 ** (7 / 365))
    # Stored confidence never changes.
    assert mind.get(ephemeral.id).confidence == ephemeral.confidence


def test_thompson_sampling_explores_repeatably_with_a_seed(mind: Mind) -> None:
    for i in range(6):
        mind.remember(f"candidate answer number {i}")
    first = mind.recall("candidate answer", peek=True, explore=True, seed=7)
    again = mind.recall("candidate answer", peek=True, explore=True, seed=7)
    other = mind.recall("candidate answer", peek=True, explore=True, seed=8)
    assert [(r.memory.id, r.score) for r in first] == [(r.memory.id, r.score) for r in again]
    assert [r.components["exploration"] for r in first] != [
        r.components["exploration"] for r in other
    ]
    assert all(score_reproduces(r) and abs(r.components["exploration"]) < 0.1 for r in first)
    assert "exploration" not in mind.recall("candidate answer", peek=True)[0].components


# ---------------------------------------------------------------- writes and the CLI


def test_inline_embedding_writes_one_vector_per_new_memory(open_mind: OpenMind) -> None:
    mind = open_mind(embedder="hash:64")
    mind.remember_many([{"content": f"note {i}"} for i in range(20)])
    mind.remember("note 3")  # reinforced, not a new memory and not a new vector
    assert vector_count(mind, "hash-64", 64) == (20, 20)


def test_embed_missing_command(store_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", store_url, "--embedder", "none", "remember", "Ada codes"]) == 0
    assert main(["--db", store_url, "--embedder", "none", "embed-missing"]) == 2
    assert "no embedder" in capsys.readouterr().err
    assert main(["--db", store_url, "--embedder", "hash:16", "embed-missing", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"embedded": 1, "model": "hash-16", "dims": 16}
    assert main(["--db", store_url, "recall", "Ada", "--min-feedback", "2"]) == 2
    assert "min_feedback" in capsys.readouterr().err
    assert main(["--db", store_url, "--embedder", "bogus", "stats"]) == 2
    assert "unknown embedder 'bogus'" in capsys.readouterr().err
    args = ["--db", store_url, "--embedder", "hash:16", "recall", "Ada", "--fusion", "rrf"]
    assert main([*args, "--json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert set(result["components"]) == {"text", "vector", "graph", "status"}
    assert main([*args, "--tier", "summary"]) == 0
    assert "- Ada codes (claim, confidence 0.80)" in capsys.readouterr().out


def test_the_vector_index_is_saved_beside_the_database(tmp_path: Path, clock: ManualClock) -> None:
    url = f"sqlite:///{tmp_path / 'n.db'}"
    with Mind.open(url, "m", embedder="hash:32", clock=clock) as mind:
        mind.remember("Ada lives in Lisbon")
        before = [(r.memory.id, r.score) for r in mind.recall("Lisbon", peek=True)]
    assert list((tmp_path / "n.db.vectors").glob("*.usearch"))
    with Mind.open(url, "m", embedder="hash:32", clock=clock) as mind:
        assert [(r.memory.id, r.score) for r in mind.recall("Lisbon", peek=True)] == before


def test_a_sqlite_vector_search_looks_up_its_index_aside_and_answers_as_in_line(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = as_embedder(HashEmbedder(32))
    config = MindConfig(embed_inline_max=1_000)  # every vector written with its memory
    mind = Mind.open(
        f"sqlite:///{tmp_path / 'n.db'}", "m", embedder=embedder, clock=clock, config=config
    )
    kinds = ["procedural" if i % 40 == 0 else "episodic" for i in range(200)]
    mind.remember_many(
        [MemoryInput(content=f"note {i} about topic {i % 7}", kind=k) for i, k in enumerate(kinds)]
    )
    threads: list[threading.Thread] = []
    began, finished, go = threading.Event(), threading.Event(), threading.Event()
    look_up = VectorSearch.look_up

    def slow_look_up(search: VectorSearch) -> list[int]:
        threads.append(threading.current_thread())
        finished.clear()
        began.set()
        go.wait(30)  # held until the caller has got ahead of it
        keys = look_up(search)
        finished.set()
        return keys

    monkeypatch.setattr(VectorSearch, "look_up", slow_look_up)
    query = embedder.query("topic 3")

    def search(limit: int, **filters: object) -> ops.SearchVectors:
        return ops.SearchVectors(
            mind.id, embedder.model, query, RecallFilters(**filters), None, limit
        )

    def found(nearest: list[ops.Nearest]) -> list[tuple[str, float, list[float]]]:
        return [(m.id, s, v.tolist()) for m, s, v in nearest]

    # Plain, and filtered so that the index is searched again, wider (5 of 200 pass).
    for op in (search(10), search(4, kinds=("procedural",))):
        with mind.storage.transaction(write=False) as session:
            threads.clear()
            began.clear()
            go.clear()
            pending = session.submit(op)
            assert began.wait(5) and threads[0].name.startswith("noema-vectors")
            # The caller goes on while the index is searched.
            session.run(ops.GetVectors(mind.id, embedder.model, 32, []))
            assert not finished.is_set() and not pending.done()
            go.set()
            aside = found(pending.result())
            assert found(session.run(op)) == aside and aside
            assert threads[-1] is threading.current_thread()
    # Nothing to find: no look-up; a write session searches in line.
    with mind.storage.transaction(write=False) as session:
        threads.clear()
        zero = ops.SearchVectors(mind.id, embedder.model, query * 0, RecallFilters(), None, 5)
        assert session.submit(zero).result() == [] and threads == []
    with mind.storage.transaction() as session:
        assert found(session.submit(search(3)).result())
        assert threads == [threading.current_thread()]
    # A transaction ends only once its look-up has, asked for or not.
    with mind.storage.transaction(write=False) as session:
        session.submit(search(3))
    assert finished.is_set()
    worker = next(t for t in threads if t.name.startswith("noema-vectors"))
    # A look-up that fails raises where its result is asked for.
    monkeypatch.setattr(VectorSearch, "look_up", lambda _: 1 / 0)
    with mind.storage.transaction(write=False) as session:
        failing = session.submit(search(3))
        with pytest.raises(ZeroDivisionError):
            failing.result()
    mind.close()
    assert not worker.is_alive()


@pytest.mark.skipif(not minilm_available(), reason="the embeddings extra is not installed")
def test_minilm_finds_by_meaning_what_shares_no_word(open_mind: OpenMind) -> None:
    mind = open_mind(embedder="minilm")
    assert isinstance(mind.embedder, Embedder) and mind.embedder.dims == 384
    for text in ("The cat sleeps on the sofa", "Quarterly revenue grew 4%", "My favourite food"):
        mind.remember(text)
    top = mind.recall("pet resting on the couch", peek=True)[0]
    assert top.memory.content == "The cat sleeps on the sofa"
    assert top.signals["text"] == 0.0 and top.signals["vector"] > 0.3


def test_an_entity_more_memories_share_than_the_pool_holds_is_skipped(mind: Mind) -> None:
    mind.remember_many([{"content": f"Caroline wrote note {i}"} for i in range(60)])
    target = mind.remember("Caroline closed INC-7 today")
    # limit 1 -> a pool of 50 candidates: name:caroline (61 memories) cannot pick any.
    [result] = mind.recall("Caroline INC-7", limit=1, peek=True)
    assert result.memory.id == target.id
    assert result.signals["graph"] == pytest.approx(0.5)  # code:inc-7, one of two entities
    others = mind.recall("Caroline note", limit=5, peek=True)  # pool 50 again
    assert all("graph" not in r.signals for r in others)


def test_noema_run_schedules_embed_missing_only_with_an_embedder(open_mind: OpenMind) -> None:
    from noema.runtime import background_jobs

    plain = open_mind("plain")
    assert sorted(background_jobs(plain._engine).names) == ["decay:plain", "reflect:plain"]
    mind = open_mind("vectors", embedder="hash:16", config=MindConfig(embed_on_write=False))
    mind.remember_many([{"content": f"fact {i}"} for i in range(5)])
    scheduler = background_jobs(mind._engine)
    assert "embed-missing:vectors" in scheduler.names
    assert scheduler.interval("embed-missing:vectors") == 600.0
    scheduler.run_now("embed-missing:vectors")
    assert vector_count(mind, "hash-16", 16) == (5, 5)


def test_reindex_links_memories_written_without_entity_references(
    mind: Mind, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = mind.remember("Grace Hopper wrote the first compiler")
    if store_url.startswith("sqlite:///"):
        # As a database written before schema version 3 is: no entity references.
        with sqlite3.connect(store_url.removeprefix("sqlite:///")) as raw:
            raw.execute("DELETE FROM entity_refs")
        assert "graph" not in mind.recall("Grace Hopper", peek=True)[0].signals
    assert main(["--db", store_url, "reindex", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"memories": 1}
    assert mind.reindex() == 1  # idempotent
    result = mind.recall("Grace Hopper", peek=True)[0]
    assert result.memory.id == memory.id and result.signals["graph"] == 1.0
