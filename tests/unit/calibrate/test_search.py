"""The one-dimensional search: finds a minimum in range, in log space too, and keeps the current
value unless the gain is worth it."""

from __future__ import annotations

import math

import pytest

from fabricfit.calibrate.search import best_value, golden, grid, round4


def test_grid_spans_the_range_evenly_or_in_log_space() -> None:
    assert grid(0.0, 8.0, False) == [float(i) for i in range(9)]
    logs = grid(0.01, 100.0, True)
    assert logs[0] == pytest.approx(0.01) and logs[-1] == pytest.approx(100.0)
    assert logs[4] == pytest.approx(1.0)


def test_golden_finds_the_minimum_of_a_bowl() -> None:
    assert golden(lambda x: (x - 0.3) ** 2, 0.0, 1.0) == pytest.approx(0.3, abs=1e-3)


@pytest.mark.parametrize(("target", "log_space"), [(2.5, False), (0.37, True), (40.0, True)])
def test_best_value_is_the_rounded_minimum(target: float, log_space: bool) -> None:
    def score(v: float) -> float:
        return abs(math.log(v / target)) if log_space else abs(v - target)

    found = best_value(score, 1.0, (0.01, 100.0) if log_space else (0.0, 8.0), log_space, 1e-6)
    assert found == pytest.approx(target, rel=1e-3)
    assert found == round4(found)


def test_a_gain_below_the_minimum_keeps_the_current_value() -> None:
    def score(v: float) -> float:
        return 1e-3 * abs(v - 2.0)

    assert best_value(score, 2.5, (0.0, 8.0), False, 1e-2) == 2.5  # gain 5e-4 < 1e-2
    assert best_value(score, 2.5, (0.0, 8.0), False, 1e-4) == pytest.approx(2.0, rel=1e-3)


def test_the_range_widens_to_hold_the_current_value() -> None:
    assert best_value(lambda v: abs(v - 12.0), 12.0, (0.0, 8.0), False, 1e-6) == 12.0
