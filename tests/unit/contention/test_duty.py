"""Compute seconds per step: 6 x parameters x tokens over the GPUs' delivered FLOP/s."""

from __future__ import annotations

import dataclasses

import pytest

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.contention import compute_seconds_per_step
from fabricfit.fabric.profiles import get_profile

H100 = get_profile("dgx-h100")


def test_a_70b_step_on_1024_h100s() -> None:
    model = ModelShape(parameters=70_000_000_000, micro_batches=16, sequence_length=4096)
    parallelism = Parallelism(tensor=8, pipeline=4, data=32)
    tokens = 32 * 1 * 16 * 4096
    expected = 6 * 70e9 * tokens / (1024 * 989.4e12 * 0.4)
    assert compute_seconds_per_step(parallelism, model, H100) == pytest.approx(expected)
    assert 2.0 < expected < 2.3  # about 2.2 s, a plausible 70B step


def test_more_data_parallel_replicas_keep_the_step_time() -> None:
    model = ModelShape()
    one = compute_seconds_per_step(Parallelism(tensor=8, data=2), model, H100)
    two = compute_seconds_per_step(Parallelism(tensor=8, data=4), model, H100)
    assert one == pytest.approx(two)


def test_no_peak_no_compute_time() -> None:
    unknown = dataclasses.replace(H100, gpu_peak_tflops=0.0)
    assert compute_seconds_per_step(Parallelism(data=2), None, unknown) == 0.0
