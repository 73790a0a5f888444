"""What calibrate prints about a fit: held-out rows marked, fields at a bound named."""

from __future__ import annotations

import dataclasses

from fabricfit.calibrate.fit import FitResult, Measurement, predict
from fabricfit.calibrate.report import render_bounds, render_table
from fabricfit.cost import Collective
from fabricfit.fabric.profiles import get_profile

A100 = get_profile("dgx-a100")


def _result(profile=A100, fitted=("nic_efficiency",)) -> FitResult:  # type: ignore[no-untyped-def]
    m = Measurement(Collective.ALL_REDUCE, 1 << 30, 2, 8, 1.0, 10_000.0, "x.log")
    row = predict(profile, m)
    rows = (dataclasses.replace(row, fitted=True), row)
    return FitResult(profile, rows, 0.1, 0.1, 0.1, 0.1, fitted, ())


def test_a_field_on_a_bound_of_its_range_is_named_and_explained() -> None:
    assert render_bounds(_result()) is None
    floor = dataclasses.replace(A100, nic_efficiency=0.3, nvlink_efficiency=1.0)
    line = render_bounds(_result(floor, ("nic_efficiency", "nvlink_efficiency")))
    assert line is not None
    assert line.startswith(
        "at a bound of their range: nic_efficiency 0.3 (lowest), nvlink_efficiency 1 (highest)"
    )
    assert "may not be the cluster's" in line


def test_held_out_rows_are_marked_and_summed_apart() -> None:
    table = render_table(_result()).splitlines()
    assert not table[1].endswith("held out") and table[2].endswith("  held out")
    assert table[-1].startswith("fitted 1 rows: ") and "; held out 1 rows" in table[-1]
