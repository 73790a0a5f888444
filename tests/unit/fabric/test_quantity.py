"""GPU counts from Kubernetes quantities: exact, whole, bounded, never raising."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricfit.fabric.quantity import MAX_GPUS_PER_NODE, parse_gpu_count, parse_quantity


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8", Decimal(8)),
        ("+8", Decimal(8)),
        ("8.0", Decimal(8)),
        ("8e0", Decimal(8)),
        ("1E1", Decimal(10)),
        ("500m", Decimal("0.5")),
        ("1k", Decimal(1000)),
        ("1Ki", Decimal(1024)),
        ("2Mi", Decimal(2 * 1024**2)),
        (".5", Decimal("0.5")),
        (" 8 ", Decimal(8)),
        ("-1", Decimal(-1)),
    ],
)
def test_parse_quantity_accepts_kubernetes_forms(text: str, expected: Decimal) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "8 GPUs", "8x", "1.2.3", "0x10", "8K", "e5", "8e"])
def test_parse_quantity_rejects_garbage(text: str) -> None:
    assert parse_quantity(text) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [("8", 8), ("0", 0), ("8.0", 8), (8, 8), (4.0, 4), ("4096", 4096), (None, 0)],
)
def test_gpu_count_accepts_whole_numbers(value: object, expected: int) -> None:
    assert parse_gpu_count(value) == (expected, None)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("-1", "negative"),
        ("500m", "whole number"),
        ("7.5", "whole number"),
        ("8k", "exceeds"),
        ("1Gi", "exceeds"),
        (str(MAX_GPUS_PER_NODE + 1), "exceeds"),
        ("eight", "not a Kubernetes quantity"),
        (True, "not a number"),
        ([8], "not a Kubernetes quantity"),
        (float("nan"), "not a Kubernetes quantity"),
        (float("inf"), "not a Kubernetes quantity"),
        ("1e9999", "exceeds"),
    ],
)
def test_gpu_count_rejects_unusable_values_as_zero(value: object, problem: str) -> None:
    count, message = parse_gpu_count(value)
    assert count == 0
    assert message is not None and problem in message


@given(st.one_of(st.text(max_size=12), st.integers(), st.floats(), st.none(), st.booleans()))
def test_gpu_count_is_total_and_bounded(value: object) -> None:
    count, _ = parse_gpu_count(value)
    assert 0 <= count <= MAX_GPUS_PER_NODE
