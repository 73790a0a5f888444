"""One-dimensional search for the fitter: a coarse grid over a field's range, then golden-section
search around the best grid point (pure, deterministic, no dependencies).

A value is accepted only when it lowers the score by at least ``min_gain``: the fitter's
coordinate descent stops when a whole sweep accepts nothing, so a second run from its result
makes the same sweep and accepts nothing either (the fit is a fixpoint of itself).
"""

from __future__ import annotations

import math
from collections.abc import Callable

GRID_POINTS = 9
GOLDEN_STEPS = 16
_GOLD = (math.sqrt(5) - 1) / 2


def grid(low: float, high: float, log_space: bool) -> list[float]:
    """GRID_POINTS values spread over [low, high], evenly in log space when ``log_space``."""
    if log_space:
        a, b = math.log(low), math.log(high)
        return [math.exp(a + (b - a) * i / (GRID_POINTS - 1)) for i in range(GRID_POINTS)]
    return [low + (high - low) * i / (GRID_POINTS - 1) for i in range(GRID_POINTS)]


def golden(score: Callable[[float], float], a: float, b: float) -> float:
    """The minimum of ``score`` on [a, b] by golden-section search (GOLDEN_STEPS steps)."""
    c, d = b - _GOLD * (b - a), a + _GOLD * (b - a)
    fc, fd = score(c), score(d)
    for _ in range(GOLDEN_STEPS):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - _GOLD * (b - a)
            fc = score(c)
        else:
            a, c, fc = c, d, fd
            d = a + _GOLD * (b - a)
            fd = score(d)
    return c if fc <= fd else d


def round4(value: float) -> float:
    """Four significant digits: what a preset file keeps, so a reread profile is the same."""
    return float(f"{value:.4g}")


def best_value(
    score: Callable[[float], float],
    current: float,
    bounds: tuple[float, float],
    log_space: bool,
    min_gain: float,
) -> float:
    """The value in ``bounds`` (widened to hold ``current``) that minimises ``score``, rounded
    with :func:`round4`; ``current`` unless that lowers the score by at least ``min_gain``."""
    low, high = min(bounds[0], current), max(bounds[1], current)
    log_space = log_space and low > 0

    def at(x: float) -> float:
        return score(math.exp(x) if log_space else x)

    xs = [math.log(v) if log_space else v for v in grid(low, high, log_space)]
    scores = [at(x) for x in xs]
    best = min(range(len(xs)), key=lambda i: scores[i])
    x = golden(at, xs[max(best - 1, 0)], xs[min(best + 1, len(xs) - 1)])
    value = round4(math.exp(x) if log_space else x)
    return value if score(value) <= score(current) - min_gain else current
