"""CPU timing for the tests that guard against slow algorithms.

The machines the suite runs on differ severalfold in speed, so no test asserts a fixed
time: linearity is a ratio between two input sizes, and a budget is a Python loop timed
on the same machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def cpu_seconds(
    function: Callable[..., Any], *args: Any, repeat: int = 1, best_of: int = 1
) -> float:
    """CPU seconds a call takes: the mean of `repeat` calls, the best of `best_of` such runs."""
    runs = []
    for _ in range(best_of):
        started = time.process_time()
        for _ in range(repeat):
            function(*args)
        runs.append((time.process_time() - started) / repeat)
    return min(runs)


def _count(steps: int) -> int:
    total = 0
    for step in range(steps):
        total += step
    return total


def loop_seconds(steps: int) -> float:
    """CPU seconds this machine takes for a Python loop of `steps` additions.

    A loop of 20,000 steps takes about a millisecond on a typical machine.
    """
    return cpu_seconds(_count, steps, best_of=5)


def grows_linearly(function: Callable[[str], Any], text: str) -> bool:
    """Whether `function` on `text` costs less than 30 times what it costs on a tenth of it.

    Linear work grows tenfold from a tenth to the whole; quadratic work a hundredfold.
    """
    tenth = cpu_seconds(function, text[: len(text) // 10], best_of=3)
    whole = cpu_seconds(function, text, best_of=2)
    return whole < 30 * tenth
