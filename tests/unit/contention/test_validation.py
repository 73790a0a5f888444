"""The validation rows price with the planner's code, and the profile's sharing efficiencies
are the fit of the rows marked ``fit`` (benchmarks/contention_accuracy.py --fit)."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricfit.contention.validation import (
    Efficiencies,
    Trials,
    fit_efficiencies,
    measured_slowdown,
    predicted_slowdown,
)
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.profiles.profile import (
    FABRIC_SHARING_EFFICIENCY,
    NIC_SHARING_EFFICIENCY,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "contention"
DEFAULTS = Efficiencies(nic=NIC_SHARING_EFFICIENCY, fabric=FABRIC_SHARING_EFFICIENCY)


def rows() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = yaml.safe_load((FIXTURES / "rows.yaml").read_text())["rows"]
    return found


def trials() -> Trials:
    found: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    lines = (FIXTURES / "mccs.csv").read_text().splitlines()[1:]
    for line in lines:
        file, solution, app, _, value = line.split(",")
        found[(file.rsplit("/", 1)[-1], solution, app)].append(float(value))
    return found


def test_the_profile_defaults_are_the_fit() -> None:
    assert fit_efficiencies(rows(), trials(), Efficiencies(0.5, 0.5)) == DEFAULTS
    assert get_profile("dgx-h100").fabric_sharing_efficiency == DEFAULTS.fabric


def test_every_row_has_a_source_a_split_and_finite_slowdowns() -> None:
    sources = (FIXTURES / "SOURCES.md").read_text()
    for row in rows():
        assert row["split"] in ("fit", "held-out", "outside")
        assert f"## {row['source']} " in sources, row["id"]
        measured, predicted = measured_slowdown(row, trials()), predicted_slowdown(row, DEFAULTS)
        assert math.isfinite(measured) and measured > 0.9
        assert 1.0 <= predicted < 10


@pytest.mark.parametrize("row_id", ["G4", "G5"])
def test_negative_controls_predict_no_slowdown(row_id: str) -> None:
    row = next(r for r in rows() if r["id"] == row_id)
    assert predicted_slowdown(row, DEFAULTS) == pytest.approx(1.0)
    assert measured_slowdown(row, trials()) == pytest.approx(1.0, abs=0.01)


def test_fit_rows_are_fitted_on_more_than_one_row_per_efficiency() -> None:
    fit = [r for r in rows() if r["split"] == "fit"]
    per_class = defaultdict(list)
    for row in fit:
        (kind,) = {k for k, _ in row["links"].values()}
        per_class[kind].append(row["id"])
    assert all(len(ids) >= 2 for ids in per_class.values()), per_class
