"""The Beta distribution's CDF and quantiles, without scipy.

Trust in a peer (``noema.memory.recall.federation``) and an approach's success rate
(``noema.memory.knowledge.episodes``) are Beta posteriors; both need their quantiles.
"""

from __future__ import annotations

import functools
import math

__all__ = ["beta_quantile", "regularized_beta"]


def _continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (Numerical Recipes ``betacf``)."""
    tiny, epsilon = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    # Converges in O(sqrt(max(a, b))) steps; this bound covers a million feedbacks.
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1.0) < epsilon:
            break
    return h


def regularized_beta(x: float, a: float, b: float) -> float:
    """``I_x(a, b)``: the Beta(a, b) distribution's CDF at ``x`` (``a``, ``b`` > 0).

    Raises:
        ValueError: ``a`` or ``b`` is not positive.
    """
    if a <= 0.0 or b <= 0.0:
        raise ValueError(f"regularized_beta: a and b must be positive, got {a}, {b}")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    # The fraction converges fast below the mean; above it, use I_x(a,b) = 1 - I_{1-x}(b,a).
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _continued_fraction(a, b, x) / a
    return 1.0 - front * _continued_fraction(b, a, 1.0 - x) / b


@functools.lru_cache(maxsize=4096)
def beta_quantile(p: float, a: float, b: float) -> float:
    """The ``p`` quantile of Beta(a, b): the ``x`` with ``I_x(a, b) = p``, by bisection.

    Raises:
        ValueError: ``p`` is outside [0, 1], or ``a`` or ``b`` is not positive.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"beta_quantile: p must be in [0, 1], got {p}")
    low, high = 0.0, 1.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if regularized_beta(middle, a, b) < p:
            low = middle
        else:
            high = middle
        if high - low < 1e-13:
            break
    return (low + high) / 2.0
