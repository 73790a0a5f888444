"""The accuracy report: bands, latency ratios, fitted vs held-out rows, leave-one-source-out."""

from __future__ import annotations

import dataclasses

import pytest

from fabricfit.calibrate import accuracy
from fabricfit.calibrate.fit import Measurement, predict
from fabricfit.cost import Collective
from fabricfit.fabric.profiles import PRESETS, get_profile

H100 = get_profile("dgx-h100")
NVL72 = get_profile("gb200-nvl72")
AR = Collective.ALL_REDUCE


@pytest.mark.parametrize(
    ("size", "band"),
    [(8, "<=64KiB"), (64 << 10, "<=64KiB"), ((64 << 10) + 1, "64KiB-16MiB"),
     (16 << 20, "64KiB-16MiB"), (32 << 20, "16-256MiB"), (256 << 20, ">=256MiB")],
)  # fmt: skip
def test_size_bands(size: int, band: str) -> None:
    assert accuracy.size_band(size) == band


def test_scope_counts_nvlink_domains_not_nodes() -> None:
    rack = Measurement(AR, 1 << 30, 18, 4, 0.0, 1.0)
    assert accuracy.scope_of(rack, NVL72) == "1 domain"
    assert accuracy.scope_of(dataclasses.replace(rack, nodes=36), NVL72) == "2-4 domains"
    partitions = dataclasses.replace(rack, nodes=6, nodes_per_domain=2)
    assert accuracy.scope_of(partitions, NVL72) == "2-4 domains"
    assert accuracy.scope_of(dataclasses.replace(rack, nodes=8), H100) == ">=8 domains"
    assert accuracy.scope_of(dataclasses.replace(rack, nodes=6), H100) == "5-7 domains"


def _case(id_: str, size: int, factor: float, *, calibration: bool = False):  # type: ignore[no-untyped-def]
    """A case whose measured time is ``factor`` x the model's prediction."""
    m = Measurement(AR, size, 2, 8, 0.0, 1.0, "s")
    predicted = predict(H100, m).predicted_time_us
    return accuracy.Case(id_, "dgx-h100", dataclasses.replace(m, time_us=factor * predicted),
                         calibration=calibration)  # fmt: skip


def test_latency_rows_are_time_ratios_and_bands_split_fitted_rows() -> None:
    cases = [_case("a", 8, 2.0), _case("b", 8, 0.5, calibration=True), _case("c", 1 << 30, 1.2)]
    judged = accuracy.judge(cases, PRESETS)
    assert [j.score for j in judged] == pytest.approx([2.0, 2.0, 0.2])
    latency, large = accuracy.band_table(judged, PRESETS)
    assert (len(latency.held), len(latency.fitted)) == (1, 1)
    assert not latency.meets_targets()  # 2x is outside 1.5x
    assert large.meets_targets()  # one row, 20 % off
    assert "MISSED" in accuracy.render_bands([latency, large])


def test_leave_one_source_out_predicts_a_source_it_did_not_fit() -> None:
    truth = dataclasses.replace(H100, nic_efficiency=0.75)
    cases = []
    for source, nodes in (("two", 2), ("four", 4)):
        for size in (1 << 20, 64 << 20, 1 << 30):
            m = Measurement(Collective.ALL_GATHER, size, nodes, 8, 0.0, 1.0, source)
            t = predict(truth, m).predicted_time_us
            measured = dataclasses.replace(m, time_us=t)
            cases.append(accuracy.Case(f"{source}{size}", "dgx-h100", measured, calibration=True))
    transfers = accuracy.leave_one_source_out(cases, PRESETS)
    assert [t.what for t in transfers] == ["four", "two"]
    for t in transfers:
        assert t.fitted_rows == 3 and len(t.judged) == 3
        assert all(j.case.measurement.source == t.what for j in t.judged)
        assert t.stats()[2] < 0.05  # refitted NIC efficiency transfers to the other node count
