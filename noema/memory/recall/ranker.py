"""The learned ranker: a small linear model that reorders the head of a fused ranking.

Fusion (``noema.memory.recall.scoring``) weighs each signal on its own. The ranker
looks at a candidate among the others: its place in the ranking, how close it
is to the best score, and how its conversation scored (the neighbours before
and after it, the best of its thread). It is a logistic regression over the
documented ``FEATURES``, fitted by leave-one-conversation-out on LoCoMo
(``benchmarks/locomo_rank.py`` trains it and writes ``ranker.json`` beside this
module), with one model for recalls with vectors and one without.

The model gives each candidate of the head the probability that it is what
the query asks for; its new score is the best fused score times that
probability over the head's best, and the ``ranker`` component is the
difference from its fused score. So the components still sum to the score,
the order is the model's, and ``ranker`` says how far the model moved each
candidate. Only the best ``head``
candidates are reordered; the rest stay below them, in their fused order.

Without threads, the thread features are 0 for every candidate (the model was
also trained on candidates stripped of them); in a small mind the head is the
whole pool.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from noema.errors import ConfigError
from noema.memory.recall.query import QueryPlan
from noema.memory.recall.scoring import Scored, best_first

__all__ = [
    "FEATURES",
    "SIGNAL_FEATURES",
    "LinearRanker",
    "feature_matrix",
    "list_question",
    "load_ranker",
    "rerank_head",
]

#: Fused signals the model reads as they are (0 where a candidate lacks one).
SIGNAL_FEATURES = ("text", "keys", "vector", "cosine", "entity", "time", "dated", "recency")
#: Every feature, in the order of the model's coefficients.
FEATURES = (
    "share",  # the fused score over the best fused score
    "inverse_rank",  # 1 / rank in the fused order
    "log_rank",  # ln(rank)
    *SIGNAL_FEATURES,
    "context",  # the neighbour lift's signal (``noema.memory.recall.context``)
    "before",  # share of the memory just before it in its thread (0: not a candidate)
    "after",  # share of the memory just after it
    "near",  # best share within two places either side
    "thread_best",  # best share in its thread
    "thread_top3",  # mean of the three best shares in its thread
    "thread_first",  # 1 when it is its thread's best candidate
    "near_best",  # 1 / (1 + places from its thread's best candidate)
    "before_text",  # ``text`` of the memory just before it
    "after_text",  # ``text`` of the memory just after it
    "before_vector",  # ``vector`` of the memory just before it
    "after_vector",  # ``vector`` of the memory just after it
    "before_entity",  # ``entity`` of the memory just before it
    "after_entity",  # ``entity`` of the memory just after it
    "thread_rank",  # 1 / its rank among its thread's candidates
    "words",  # ln(1 + its words)
    "when_dated",  # a "when" question times ``dated``
    "when_time",  # a "when" question times ``time``
    "list_near",  # a list question ("and", "what ... does") times ``near``
    "entity_near",  # ``entity`` times ``near``
)
#: The threads' features, 0 where memories have no thread.
THREAD_FEATURES = (
    "before",
    "after",
    "near",
    "thread_best",
    "thread_top3",
    "thread_first",
    "near_best",
    "before_text",
    "after_text",
    "before_vector",
    "after_vector",
    "before_entity",
    "after_entity",
    "thread_rank",
)
_MODEL_FILE = "ranker.json"


@dataclass(frozen=True)
class LinearRanker:
    """One fitted model: standardisation, coefficients and the head it reorders."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    bias: float
    head: int

    def __post_init__(self) -> None:
        n = len(self.features)
        if self.features != FEATURES or not (
            self.mean.shape == self.scale.shape == self.coef.shape == (n,)
        ):
            raise ConfigError("the ranker's model does not match its features")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinearRanker:
        """The model of one entry of ``ranker.json``."""
        return cls(
            features=tuple(data["features"]),
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            coef=np.asarray(data["coef"], dtype=np.float64),
            bias=float(data["bias"]),
            head=int(data["head"]),
        )

    def to_dict(self) -> dict[str, Any]:
        """The entry of ``ranker.json`` for this model."""
        return {
            "features": list(self.features),
            "mean": [round(float(v), 6) for v in self.mean],
            "scale": [round(float(v), 6) for v in self.scale],
            "coef": [round(float(v), 6) for v in self.coef],
            "bias": round(self.bias, 6),
            "head": self.head,
        }

    def logits(self, x: np.ndarray) -> np.ndarray:
        """The model's score of each row of ``x``."""
        logits: np.ndarray = self.bias + ((x - self.mean) / self.scale) @ self.coef
        return logits

    def evidence(self, x: np.ndarray) -> np.ndarray:
        """The model's probability that each row of ``x`` is what the query asks for."""
        chance: np.ndarray = 1.0 / (1.0 + np.exp(-self.logits(x)))
        return chance


@cache
def load_ranker(vectors: bool) -> LinearRanker | None:
    """The shipped model for recalls with (or without) vectors; None when absent."""
    try:
        text = resources.files(__package__).joinpath(_MODEL_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    model = json.loads(text)["models"].get("vectors" if vectors else "text")
    try:
        return None if model is None else LinearRanker.from_dict(model)
    except ConfigError:  # a model of other features: the fused order stands
        return None


def list_question(text: str) -> bool:
    """Whether ``text`` asks for several things ("and", "what ... do")."""
    words = text.lower().split()
    return "and" in words or (bool(words) and words[0] == "what" and "do" in words[:4])


def feature_matrix(
    scores: np.ndarray,
    signals: np.ndarray,
    context: np.ndarray,
    threads: Sequence[str],
    positions: Sequence[int | None],
    words: np.ndarray,
    *,
    asks_when: bool,
    list_question: bool,
) -> np.ndarray:
    """The ``FEATURES`` of candidates in fused order (best first).

    ``signals`` has a column per ``SIGNAL_FEATURES``; ``threads`` holds "" for a
    memory in no thread. Neighbours are read among the candidates by their
    stored positions.
    """
    n = len(scores)
    top = float(scores[0]) if n and scores[0] > 0 else 1.0
    share = scores / top
    ranks = np.arange(1, n + 1, dtype=np.float64)
    place: dict[tuple[str, int], int] = {}
    members: dict[str, list[int]] = {}
    for i, (thread, position) in enumerate(zip(threads, positions, strict=True)):
        if thread and position is not None:
            place[thread, position] = i
            members.setdefault(thread, []).append(i)
    before, after, near = np.zeros(n), np.zeros(n), np.zeros(n)
    best, top3, first = np.zeros(n), np.zeros(n), np.zeros(n)
    near_best = np.zeros(n)
    text = SIGNAL_FEATURES.index("text")
    vector = SIGNAL_FEATURES.index("vector")
    entity = SIGNAL_FEATURES.index("entity")
    around = np.zeros((n, 6))  # before's and after's text, vector, then entity
    thread_rank = np.zeros(n)
    for thread, rows in members.items():
        shares = share[rows]  # rows are in fused order: best first
        best[rows] = shares[0]
        top3[rows] = shares[:3].mean()
        first[rows[0]] = 1.0
        lead = positions[rows[0]]
        assert lead is not None
        for place_in_thread, i in enumerate(rows, start=1):
            thread_rank[i] = 1.0 / place_in_thread
            position = positions[i]
            assert position is not None
            near_best[i] = 1.0 / (1.0 + abs(position - lead))
            found = [place.get((thread, position + d)) for d in (-2, -1, 1, 2)]
            values = [share[j] if j is not None else 0.0 for j in found]
            before[i], after[i] = values[1], values[2]
            near[i] = max(values)
            for k, (j, column) in enumerate(
                (
                    (found[1], text),
                    (found[2], text),
                    (found[1], vector),
                    (found[2], vector),
                    (found[1], entity),
                    (found[2], entity),
                )
            ):
                if j is not None:
                    around[i, k] = signals[j, column]
    columns = [
        share,
        1.0 / ranks,
        np.log(ranks),
        *signals.T,
        context,
        before,
        after,
        near,
        best,
        top3,
        first,
        near_best,
        *around.T,
        thread_rank,
        np.log1p(words),
        float(asks_when) * signals[:, SIGNAL_FEATURES.index("dated")],
        float(asks_when) * signals[:, SIGNAL_FEATURES.index("time")],
        float(list_question) * near,
        signals[:, SIGNAL_FEATURES.index("entity")] * near,
    ]
    return np.column_stack(columns) if n else np.zeros((0, len(FEATURES)))


def candidate_features(head: Sequence[Scored], plan: QueryPlan) -> np.ndarray:
    """``feature_matrix`` of scored candidates in fused order."""
    return feature_matrix(
        np.array([s.score for s in head], dtype=np.float64),
        np.array(
            [[s.signals.get(name, 0.0) for name in SIGNAL_FEATURES] for s in head],
            dtype=np.float64,
        ).reshape(len(head), len(SIGNAL_FEATURES)),
        np.array([s.signals.get("context", 0.0) for s in head], dtype=np.float64),
        [s.memory.thread for s in head],
        [s.memory.position for s in head],
        np.array([len(s.memory.content.split()) for s in head], dtype=np.float64),
        asks_when=plan.asks_when,
        list_question=list_question(plan.text),
    )


def rerank_head(ranker: LinearRanker, plan: QueryPlan, scored: list[Scored]) -> list[Scored]:
    """Reorder the best ``ranker.head`` of ``scored`` (best first) by the model.

    Each of them scores the model's probability over the best probability, times
    the best fused score; the ``ranker`` component (the weight of a signal of 1,
    as other adjustments) is that less its fused score.
    """
    head = scored[: ranker.head]
    if len(head) < 2:
        return scored
    chances = ranker.evidence(candidate_features(head, plan))
    scale = max(head[0].score, 0.0) / max(float(chances.max()), 1e-12)
    for item, chance in zip(head, chances, strict=True):
        moved = scale * float(chance) - item.score
        if math.isfinite(moved):  # an adjustment: its move is the weight of a signal of 1
            item.signals["ranker"] = 1.0
            item.weights["ranker"] = moved
            item.components["ranker"] = moved
    head.sort(key=best_first)
    return head + scored[ranker.head :]
