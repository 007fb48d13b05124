"""The ranker's training script: its regression and the model file it writes."""

from __future__ import annotations

import numpy as np

from benchmarks.locomo_rank import Model, logistic
from noema.memory.recall.ranker import FEATURES, LinearRanker


def test_logistic_regression_finds_the_feature_that_separates() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(4_000, 3))
    y = (x[:, 1] + 0.1 * rng.normal(size=4_000) > 0.5).astype(np.float64)
    model = logistic(x, y)
    assert model.coef[1] > 5 * abs(model.coef[0]) and model.coef[1] > 5 * abs(model.coef[2])
    z = (x - model.mean) / model.scale
    chance = 1 / (1 + np.exp(-(model.bias + z @ model.coef)))
    assert ((chance > 0.5) == (y == 1)).mean() > 0.95


def test_a_trained_model_round_trips_as_the_shipped_file_holds_it() -> None:
    n = len(FEATURES)
    model = Model(np.zeros(n), np.ones(n), np.linspace(-1, 1, n), 0.25, 100)
    ranker = model.as_ranker()
    again = LinearRanker.from_dict(ranker.to_dict())
    x = np.arange(2 * n, dtype=np.float64).reshape(2, n)
    assert np.allclose(again.evidence(x), ranker.evidence(x))
    assert again.head == 100
