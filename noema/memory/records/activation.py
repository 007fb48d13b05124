"""Activation: rises on each admitted recall, decays with a half-life slowed by importance."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta

SECONDS_PER_DAY = 86_400.0


def half_life_days(base_days: float, importance: float) -> float:
    """The half-life of one memory: ``base × (1 + importance)`` (14 to 28 days by default)."""
    return base_days * (1.0 + importance)


def decayed(
    activation: float, since: datetime, now: datetime, importance: float, base_days: float
) -> float:
    """Activation at ``now`` of a memory whose activation was ``activation`` at ``since``.

    Exponential decay composes: decaying in two steps equals one step, so running the
    decay job more often never changes the result.
    """
    elapsed_days = max((now - since).total_seconds(), 0.0) / SECONDS_PER_DAY
    if elapsed_days == 0.0:
        return activation
    return activation * math.pow(0.5, elapsed_days / half_life_days(base_days, importance))


def reinforced(current: float, gain: float) -> float:
    """One admitted recall closes ``gain`` of the distance to 1 (never above 1)."""
    return min(1.0, current + (1.0 - current) * gain)


def recency(since: datetime, now: datetime, scale_days: float) -> float:
    """``exp(-age / scale)`` of a memory valid ``since`` then: 1 from now (or the future)."""
    age_days = max((now - since).total_seconds(), 0.0) / SECONDS_PER_DAY
    return math.exp(-age_days / scale_days)


def activation_series(
    points: Sequence[tuple[datetime, float]],
    now: datetime,
    importance: float,
    base_days: float,
    samples: int = 40,
) -> list[float]:
    """Activation sampled at ``samples`` even steps from the first point to ``now``.

    ``points`` are ``(time, activation)`` pairs in time order, such as a memory's
    creation and each admitted recall; between them activation decays.
    """
    if not points:
        return []
    start = points[0][0]
    span = max((now - start).total_seconds(), 0.0)
    series, index = [], 0
    for step in range(samples):
        at = start + timedelta(seconds=span * step / max(samples - 1, 1))
        while index + 1 < len(points) and points[index + 1][0] <= at:
            index += 1
        since, value = points[index]
        series.append(decayed(value, since, at, importance, base_days))
    return series
