"""The fittable fields: which rows can determine them, the probe steps, the prior."""

from __future__ import annotations

import dataclasses

import pytest

from fabricfit.calibrate.fields import FITTABLE, fittable_fields, prior_penalty, steps
from fabricfit.fabric.profiles import get_profile

H100 = get_profile("dgx-h100")


def test_efficiencies_and_fills_are_bandwidth_fields_latencies_are_not() -> None:
    bandwidth = {name for name, spec in FITTABLE.items() if spec.bandwidth}
    assert {"nic_efficiency", "nvls_efficiency", "stage_fill_loops", "p2p_fill_chunks"} <= bandwidth
    assert not any(name.endswith("_us") or name.endswith("_us_per_gpu") for name in bandwidth)


def test_every_fittable_field_is_a_profile_field_within_its_bounds_on_the_presets() -> None:
    names = {f.name for f in dataclasses.fields(H100)}
    assert set(FITTABLE) <= names
    for name in fittable_fields(H100):
        spec = FITTABLE[name]
        assert spec.low <= getattr(H100, name) <= spec.high, name


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [("nic_efficiency", 0.5, [0.55, 0.5 / 1.1]), ("stage_fill_loops", 1.0, [1.4, 0.6]),
     ("stage_fill_loops", 0.0, [0.4]), ("launch_us_per_gpu", 0.0, [2.5])],
)  # fmt: skip
def test_a_step_is_ten_percent_or_a_twentieth_of_the_range(
    name: str, value: float, expected: list[float]
) -> None:
    assert steps(name, value) == pytest.approx(expected)


def test_the_prior_is_zero_at_the_base_and_grows_with_the_change() -> None:
    names = fittable_fields(H100)
    assert prior_penalty(H100, H100, names) == 0.0
    near = dataclasses.replace(H100, nic_efficiency=H100.nic_efficiency * 0.95)
    far = dataclasses.replace(H100, nic_efficiency=H100.nic_efficiency * 0.8)
    assert 0 < prior_penalty(near, H100, names) < prior_penalty(far, H100, names)
