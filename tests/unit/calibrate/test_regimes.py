"""Regimes: size bands, scopes, one regime's summary and the document ``fabricfit cost`` reads."""

from __future__ import annotations

import dataclasses
import math

import pytest

from fabricfit.calibrate import regimes
from fabricfit.calibrate.regimes import RegimeAccuracy
from fabricfit.fabric.profiles import FabricProfile, get_profile

H100 = get_profile("dgx-h100")
NVL72 = get_profile("gb200-nvl72")
V5E = get_profile("tpu-v5e")


@pytest.mark.parametrize(
    ("nodes", "profile", "domains", "scope"),
    [(1, H100, 1, "1 domain"), (4, H100, 4, "2-4 domains"), (5, H100, 5, "5-7 domains"),
     (7, H100, 7, "5-7 domains"), (8, H100, 8, ">=8 domains"), (18, NVL72, 1, "1 domain"),
     (19, NVL72, 2, "2-4 domains"), (36 * 4, NVL72, 8, ">=8 domains"), (4, V5E, 0, "tpu")],
)  # fmt: skip
def test_scope_counts_whole_nvlink_domains(
    nodes: int, profile: FabricProfile, domains: int, scope: str
) -> None:
    if domains:
        assert regimes.domains_spanned(nodes, profile) == domains
    assert regimes.scope(regimes.domains_spanned(nodes, profile), profile) == scope


def test_a_run_partitioned_smaller_than_the_domain_counts_its_partitions() -> None:
    assert regimes.domains_spanned(6, NVL72, nodes_per_domain=2) == 3


def _regime(size: str, rows: int, median: float, worst: float, fitted: int = 0) -> RegimeAccuracy:
    held = math.nan if fitted == rows else median
    return RegimeAccuracy(
        size, "2-4 domains", "all-reduce", rows, fitted, median, worst, held, worst
    )


@pytest.mark.parametrize(
    ("regime", "met"),
    [(_regime("16-256MiB", 5, 0.10, 0.30), True), (_regime("16-256MiB", 5, 0.11, 0.2), False),
     (_regime("16-256MiB", 2, 0.25, 0.29), True), (_regime("16-256MiB", 1, 0.31, 0.31), False),
     (_regime("<=64KiB", 9, 1.4, 1.5), True), (_regime("<=64KiB", 9, 1.1, 1.51), False)],
)  # fmt: skip
def test_targets_median_on_three_rows_or_more_worst_always(
    regime: RegimeAccuracy, met: bool
) -> None:
    assert regime.meets_targets is met


def test_describe_names_the_metric_whose_rows_and_a_miss_held_out_apart() -> None:
    regime = dataclasses.replace(
        _regime("16-256MiB", 16, 0.085, 0.41, fitted=4), fitted_median=0.007, fitted_worst=0.015
    )
    line = regime.describe("of dgx-h100's hardware")
    assert line.startswith(
        "busbw error median 8.5%, worst 41.0% over 16 published rows of dgx-h100's hardware"
        " in this regime (16-256MiB, 2-4 domains, all-reduce): 12 held out (median 8.5%,"
        " worst 41.0%), 4 fitted (median 0.7%, worst 1.5%)"
    )
    assert line.endswith("; targets MISSED")
    one = _regime("<=64KiB", 1, 1.2, 1.2).describe()
    assert "time ratio median 1.20x, worst 1.20x over 1 published row in this regime" in one
    assert "MISSED" not in one and "fitted" not in one


@pytest.mark.parametrize(
    ("ratios", "says"),
    [((1.3, 1.1, 2.0), "has been optimistic: on 3 held-out rows of 2 sources it predicted 1.30x"),
     ((0.9, 0.7, 1.4), "can be optimistic: on 3 held-out rows of 2 sources it predicted up to"),
     ((0.9, 0.7, 0.95), "has not been optimistic on 3 held-out rows")],
)  # fmt: skip
def test_the_caveat_at_scale_says_what_the_held_out_rows_say(
    ratios: tuple[float, float, float], says: str
) -> None:
    median, least, worst = ratios
    caveat = regimes.ScaleCaveat(3, 2, int(worst > 1) + int(median > 1), median, least, worst)
    assert caveat.describe().startswith("at >=8 domains for 4-256 MiB the model ")
    assert says in caveat.describe() and caveat.record()["statement"] == caveat.describe()
    assert caveat.applies(4 << 20, ">=8 domains") and caveat.applies((256 << 20) - 1, ">=8 domains")
    assert not caveat.applies(256 << 20, ">=8 domains")
    assert not caveat.applies(64 << 20, "5-7 domains") and not caveat.applies(
        1 << 20, ">=8 domains"
    )
