"""Regimes: size bands, scopes, one regime's summary and the document ``fabricfit cost`` reads."""

from __future__ import annotations

import json
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


def test_describe_names_the_metric_the_rows_and_a_miss() -> None:
    line = _regime("16-256MiB", 16, 0.085, 0.41, fitted=4).describe()
    assert line.startswith("busbw error median 8.5%, worst 41.0% over 16 published rows (4 fitted)")
    assert line.endswith("(16-256MiB, 2-4 domains, all-reduce); targets MISSED")
    one = _regime("<=64KiB", 1, 1.2, 1.2).describe()
    assert "time ratio median 1.20x, worst 1.20x over 1 published row " in one
    assert "MISSED" not in one


def test_document_round_trips_through_json_with_nan_as_null() -> None:
    found = [_regime("16-256MiB", 3, 0.05, 0.1, fitted=3), _regime("<=64KiB", 4, 1.1, 1.3)]
    doc = json.loads(json.dumps(regimes.accuracy_document(found, rows=7)))
    assert doc["rows"] == 7 and doc["regimes"][0]["held_out_median"] is None
    back = regimes.parse_accuracy_document(doc)
    assert back[("<=64KiB", "2-4 domains", "all-reduce")] == found[1]
    first = back[("16-256MiB", "2-4 domains", "all-reduce")]
    assert math.isnan(first.held_out_median) and first.median == 0.05


def test_a_document_of_another_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="fabricfit-measured-accuracy"):
        regimes.parse_accuracy_document({"kind": "something-else", "regimes": []})
    with pytest.raises(ValueError):
        regimes.parse_accuracy_document([1, 2])
