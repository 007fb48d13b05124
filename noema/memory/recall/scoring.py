"""Fusion: what the lanes found, turned into signals, weights and components.

Every signal is normalised to [0, 1]. ``weighted`` fusion multiplies each by
its configured weight; ``rrf`` gives each lane ``1 / (k + rank)``. Either way a
result's ``components`` sum to its score, so every ranking explains itself.
Adjustments made after fusion (``noema.memory.recall.adjust``) are components too.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from concepts import (
    CONFIDENCE_HALF_LIFE_DAYS,
    LIFECYCLE_SIGNAL,
    ConfidenceTier,
    Memory,
    RecallResult,
    confidence_tier,
)
from noema.config import MindConfig
from noema.memory.recall.lanes import LANES, Hit
from noema.memory.recall.query import QueryPlan, entity_signal, memory_facts, time_signal
from noema.memory.records.activation import SECONDS_PER_DAY, decayed, recency

__all__ = [
    "EXPLORATION_WEIGHT",
    "FEEDBACK_BOOST",
    "FEEDBACK_PENALTY",
    "Scored",
    "best_first",
    "confidence_fade",
    "feedback_adjustment",
    "memory_tier",
    "result_tier",
    "score",
]

#: Feedback adjustment: mean feedback in [-1, 1] times these.
FEEDBACK_BOOST = 0.2
FEEDBACK_PENALTY = 0.3
#: Weight of the Thompson-sampling draw (centred on the posterior mean) when exploring.
EXPLORATION_WEIGHT = 0.1


@dataclass
class Scored:
    """A candidate with its signals, the weights applied to them and the components.

    ``vector``: the memory's stored vector when the vector lane read it.
    """

    memory: Memory
    components: dict[str, float]
    signals: dict[str, float]
    weights: dict[str, float]
    vector: np.ndarray | None = None

    @property
    def score(self) -> float:
        """The sum of the components."""
        return sum(self.components.values())


def best_first(item: Scored) -> tuple[float, str, str]:
    """Sort key: highest score first; ties break on the content hash, then the id.

    Not on the id alone (whose low bits are random), so the same memories rank
    the same way in every store.
    """
    return (-item.score, item.memory.content_hash, item.memory.id)


def score(
    candidate: Hit,
    plan: QueryPlan,
    fusion: str,
    reference: datetime,
    now: datetime,
    config: MindConfig,
    *,
    vectors: bool,
    rng: random.Random | None,
) -> Scored:
    """Signals, weights and components of one candidate.

    Args:
        candidate: What the lanes found of the memory.
        plan: The understood query (entities, time windows, "when" questions).
        fusion: ``weighted`` or ``rrf``.
        reference: The time recency and confidence fade are measured at (``as_of``
            or now).
        now: The present, for activation.
        config: The mind's weights, fusion constants and dynamics.
        vectors: Whether the query was embedded (the vector lane ran).
        rng: Set when exploring: adds a Thompson-sampling ``exploration`` component.

    Returns:
        The scored candidate; its components sum to its score.
    """
    memory = candidate.memory
    fade = confidence_fade(memory, reference)
    signals = {
        "text": candidate.text,
        "recency": recency(memory.valid_from, reference, config.recency_days),
        "activation": decayed(
            memory.activation,
            memory.activation_at,
            now,
            memory.importance,
            config.half_life_days,
        ),
        "importance": memory.importance,
        "credibility": memory.credibility * fade,
        "status": LIFECYCLE_SIGNAL[memory.lifecycle],
    }
    if candidate.keys:
        signals["keys"] = candidate.keys
    if plan.entities or plan.windows or plan.asks_when:
        dates = bool(plan.windows or plan.asks_when)
        facts = memory_facts(memory.content, memory.payload, memory.valid_from, dates=dates)
        if plan.entities:
            signals["entity"] = entity_signal(plan, facts)
        if plan.windows:
            signals["time"] = time_signal(plan, memory.valid_from, facts)
        if plan.asks_when:
            signals["dated"] = 1.0 if facts.dated else 0.0
    has_vector = vectors and candidate.vector is not None
    if has_vector:
        signals["vector"] = candidate.vector or 0.0
        signals["cosine"] = candidate.cosine or 0.0
    if candidate.graph:
        signals["graph"] = candidate.graph
    if fusion == "rrf":
        k = config.rrf_k
        weights = {lane: 1.0 for lane in LANES}
        components = {
            lane: 1.0 / (k + candidate.ranks[lane]) for lane in LANES if lane in candidate.ranks
        }
        # The lifecycle counts at the scale of one lane's first place.
        weights["status"] = config.weights.status / (k + 1)
        components["status"] = weights["status"] * signals["status"]
    else:
        weights = config.weights.effective(vectors=has_vector)
        # A weighted signal the query does not raise is 0.
        components = {
            name: weight * signals.setdefault(name, 0.0) for name, weight in weights.items()
        }
        if memory.feedback_count:
            components["feedback"] = feedback_adjustment(memory.feedback_mean)
    if rng is not None:
        # Thompson sampling: a draw from the confidence posterior, centred on its mean.
        draw = rng.betavariate(memory.alpha, memory.beta)
        components["exploration"] = EXPLORATION_WEIGHT * (draw - memory.confidence)
    return Scored(memory, components, signals, weights, candidate.stored)


def feedback_adjustment(mean: float) -> float:
    """Positive feedback boosts up to +0.2, negative penalises up to -0.3 (docs/architecture.md)."""
    return mean * (FEEDBACK_BOOST if mean > 0 else FEEDBACK_PENALTY)


def confidence_fade(memory: Memory, at: datetime) -> float:
    """How much of its confidence a memory keeps at ``at``, by its decay class."""
    half_life = CONFIDENCE_HALF_LIFE_DAYS[memory.decay]
    if half_life is None:
        return 1.0
    age_days = max((at - memory.valid_from).total_seconds(), 0.0) / SECONDS_PER_DAY
    return math.pow(0.5, age_days / half_life)


def memory_tier(memory: Memory, at: datetime | None = None) -> ConfidenceTier:
    """How far a memory's confidence can be relied on at ``at``.

    Its Beta posterior, faded by its decay class up to ``at``, and its lifecycle
    (``concepts.confidence_tier``).

    Args:
        memory: The memory.
        at: When (a face passes its mind's clock); the present when ``None``.

    Returns:
        ``high``, ``moderate``, ``low``, ``exploratory`` or ``stale``.
    """
    fade = confidence_fade(memory, at if at is not None else datetime.now(UTC))
    return confidence_tier(memory.alpha, memory.beta, fade=fade, lifecycle=memory.lifecycle)


def result_tier(result: RecallResult) -> ConfidenceTier:
    """A recall result's confidence tier, as of the recall.

    The fade is the one ``score`` applied to the memory's credibility (at the
    recall's ``as_of``, or the mind's present), so the tier agrees with the
    ranking whatever clock the reader keeps; the present's fade when the result
    holds no credibility signal.
    """
    memory = result.memory
    faded = result.signals.get("credibility")
    if faded is None or memory.credibility <= 0:
        return memory_tier(memory)
    fade = min(max(faded / memory.credibility, 0.0), 1.0)
    return confidence_tier(memory.alpha, memory.beta, fade=fade, lifecycle=memory.lifecycle)
