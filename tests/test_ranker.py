"""The stages after fusion: the neighbour lift and the learned ranker."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from concepts import MemoryInput
from noema import Mind
from noema.config import MindConfig, RecallWeights
from noema.memory.recall import ranker as ranker_module
from noema.memory.recall.ranker import (
    FEATURES,
    SIGNAL_FEATURES,
    THREAD_FEATURES,
    feature_matrix,
    load_ranker,
)

CHAT = [
    "Alice: I finally went to the pottery class downtown",
    "Bob: How was it? What did you make there?",
    "Alice: A small blue bowl, it came out lopsided but I love it",
    "Bob: My cousin is getting married in June",
    "Alice: Congratulations to them! Where is the wedding?",
    "Bob: In Porto, by the river",
    "Alice: I adopted a grey cat from the shelter",
    "Bob: Lovely, what is its name?",
    "Alice: Pixel, because she is tiny",
    "Bob: The hiking trip got cancelled because of rain",
]


def _chat(mind: Mind, thread: str | None = "chat-1") -> None:
    mind.remember_many(
        [MemoryInput(content=text, kind="episodic", epistemic="observation") for text in CHAT],
        thread=thread,
    )


def test_a_hits_reply_is_lifted_below_its_hit(open_mind: Callable[..., Mind]) -> None:
    mind = open_mind(config=MindConfig(ranker=False))
    _chat(mind)
    # "make" finds the reply (a weak candidate); the lift raises it next to its hit.
    results = mind.recall("pottery class make", limit=3, peek=True)
    contents = [r.memory.content for r in results]
    assert contents[0] == CHAT[0]
    reply = next(r for r in results if r.memory.content == CHAT[1])
    assert reply.components["context"] > 0
    assert reply.score < results[0].score
    assert abs(sum(reply.components.values()) - reply.score) < 1e-9


def test_no_lift_without_a_thread_or_a_weight(open_mind: Callable[..., Mind]) -> None:
    mind = open_mind(config=MindConfig(ranker=False, weights=RecallWeights(context=0.0)))
    _chat(mind)
    results = mind.recall("pottery class", limit=3, peek=True)
    assert all("context" not in r.components for r in results)


def test_shipped_models_load_and_rank_a_higher_fused_score_higher() -> None:
    for vectors in (True, False):
        model = load_ranker(vectors)
        assert model is not None
        assert model.features == FEATURES
        assert model.coef[FEATURES.index("share")] > 0  # a better fused score ranks higher
        assert model.head >= 10


def _features(n: int, *, threads: bool) -> np.ndarray:
    scores = np.linspace(1.0, 0.1, n)
    signals = np.tile(np.linspace(0.0, 1.0, len(SIGNAL_FEATURES)), (n, 1))
    names = ["t"] * n if threads else [""] * n
    positions: list[int | None] = list(range(n)) if threads else [None] * n
    return feature_matrix(
        scores,
        signals,
        np.zeros(n),
        names,
        positions,
        np.full(n, 8.0),
        asks_when=False,
        list_question=True,
    )


def test_thread_features_are_zero_without_threads() -> None:
    without = _features(5, threads=False)
    with_threads = _features(5, threads=True)
    assert without.shape == (5, len(FEATURES))
    columns = [FEATURES.index(name) for name in THREAD_FEATURES]
    assert not without[:, columns].any()
    assert with_threads[:, columns].any()
    assert np.isfinite(without).all()
    assert feature_matrix(
        np.zeros(0),
        np.zeros((0, len(SIGNAL_FEATURES))),
        np.zeros(0),
        [],
        [],
        np.zeros(0),
        asks_when=True,
        list_question=False,
    ).shape == (0, len(FEATURES))


@pytest.mark.parametrize("threaded", [True, False])
def test_the_ranker_explains_itself_in_a_small_mind(tmp_path: Path, threaded: bool) -> None:
    with Mind.open(f"sqlite:///{tmp_path / 'm.db'}", "small", embedder="hash") as mind:
        _chat(mind, "chat-1" if threaded else None)
        if not threaded:
            mind.remember("A lone note about the pottery glaze")
        results = mind.recall("What did Alice make at the pottery class?", limit=10, peek=True)
    assert results
    assert any("ranker" in r.components for r in results)
    for r in results:
        assert abs(sum(r.components.values()) - r.score) < 1e-9
    scores = [r.score for r in results if "ranker" in r.components]
    assert scores == sorted(scores, reverse=True)


def test_without_vectors_the_text_model_ranks(tmp_path: Path) -> None:
    with Mind.open(f"sqlite:///{tmp_path / 'm.db'}", "plain") as mind:
        _chat(mind)
        results = mind.recall("Where is the cousin's wedding?", limit=5, peek=True)
    assert len(results) >= 2 and all("ranker" in r.components for r in results)
    assert "vector" not in results[0].signals


def test_without_a_model_the_fused_order_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Mind.open(f"sqlite:///{tmp_path / 'm.db'}", "plain") as mind:
        _chat(mind)
        monkeypatch.setattr(ranker_module, "load_ranker", lambda vectors: None)
        import noema.memory.recall.pipeline as pipeline

        monkeypatch.setattr(pipeline, "load_ranker", lambda vectors: None)
        plain = mind.recall("Where is the wedding?", limit=5, peek=True)
    assert all("ranker" not in r.components for r in plain)
    assert [r.score for r in plain] == sorted((r.score for r in plain), reverse=True)
