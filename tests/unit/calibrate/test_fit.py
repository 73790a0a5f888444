"""The fitter: recovers parameters from data it generated, leaves unconstrained ones alone,
never fits on held-out rows, is deterministic, and reads parsed logs."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pytest

from fabricfit.calibrate.fields import LATENCY_MAX_BYTES, UNCONSTRAINED, fittable_fields
from fabricfit.calibrate.fit import (
    FitError,
    Measurement,
    fit_profile,
    fit_to_fixpoint,
    measurements_from_log,
    predict,
    row_timing,
)
from fabricfit.calibrate.logs import parse_log
from fabricfit.cost import Collective
from fabricfit.fabric.profiles import PRESETS, FabricProfile, get_profile
from fabricfit_dev.dataset import load_cases, read_fixture

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

H100 = get_profile("dgx-h100")
SIZES = [8, 1 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20, 1 << 30, 4 << 30]


def synthetic(profile, collective, nodes, gpus, sizes=SIZES):  # type: ignore[no-untyped-def]
    """Rows the model itself predicts on ``profile`` (what a perfect fit must reproduce)."""
    rows = []
    for size in sizes:
        probe = Measurement(collective, size, nodes, gpus, 1.0, 1.0, "synthetic")
        row = predict(profile, probe)
        rows.append(
            dataclasses.replace(
                probe, busbw_gb_per_s=row.predicted_busbw_gb_per_s, time_us=row.predicted_time_us
            )
        )
    return rows


def test_fit_recovers_the_parameters_that_made_the_data() -> None:
    truth = dataclasses.replace(
        H100, nic_efficiency=0.8, net_hop_latency_us=6.0, base_latency_us=4.0
    )
    rows = [
        *synthetic(truth, Collective.ALL_REDUCE, 1, 8),
        *synthetic(truth, Collective.ALL_GATHER, 4, 8),
        *synthetic(truth, Collective.SEND_RECV, 2, 1),
    ]
    result = fit_profile(H100, rows, name="mine")
    assert result.profile.name == "mine"
    assert result.median_abs_error < 0.02
    assert result.profile.nic_efficiency == pytest.approx(0.8, rel=0.03)
    assert "nic_efficiency" in result.fitted_fields
    assert all(r.fitted for r in result.rows)


def test_fields_the_rows_do_not_constrain_keep_their_base_value() -> None:
    rows = synthetic(dataclasses.replace(H100, nvlink_efficiency=0.7), Collective.ALL_GATHER, 1, 8)
    result = fit_profile(H100, rows)
    for name in ("nic_efficiency", "net_hop_latency_us", "alltoall_efficiency"):
        assert getattr(result.profile, name) == getattr(H100, name)
    assert result.profile.nvlink_efficiency == pytest.approx(0.7, rel=0.03)


def test_a_held_field_keeps_its_value_and_says_why() -> None:
    rows = synthetic(dataclasses.replace(H100, nvlink_efficiency=0.7), Collective.ALL_GATHER, 1, 8)
    held = fit_to_fixpoint(H100, rows, hold={"nvlink_efficiency"})
    assert held.profile.nvlink_efficiency == H100.nvlink_efficiency
    assert "nvlink_efficiency" not in held.fitted_fields
    assert ("nvlink_efficiency", "held: known from elsewhere") in held.kept_fields
    assert held.worst_abs_error > fit_profile(H100, rows).worst_abs_error


SMALL = [8, 1 << 10, 8 << 10, 32 << 10, LATENCY_MAX_BYTES]
BANDWIDTH_FIELDS = (
    "nvls_efficiency",
    "nic_efficiency",
    "pipeline_fill_loops",
    "stage_fill_loops",
    "nvls_tree_efficiency",
    "nvls_tree_stage_fill_loops",
)


def _fitted_values(profile: FabricProfile) -> dict[str, float]:
    return {name: getattr(profile, name) for name in fittable_fields(profile)}


def test_small_message_rows_never_move_bandwidth_or_fill_fields() -> None:
    """Latency rows (<= 64 KiB) of a fabric whose NICs, NVLS and tree fill differ from the base:
    only latencies are fitted; every efficiency and fill keeps the base's value, saying why."""
    # the tree fill two loops deeper than the base's: a deeper fill still adds a few µs to a
    # small call (tree LL fills with a few KiB), which the per-call latency then absorbs (the
    # fitted latency lands within 15 %: 44 µs for 40 at dgx-h100's fill)
    truth = dataclasses.replace(
        H100,
        nic_efficiency=0.7,
        stage_fill_loops=H100.stage_fill_loops + 2.0,
        nvls_efficiency=0.6,
        nvls_tree_efficiency=0.8,
        net_base_latency_us=40,
    )
    rows = synthetic(truth, Collective.ALL_REDUCE, 2, 8, SMALL)
    result = fit_profile(H100, rows)
    assert result.profile.net_base_latency_us == pytest.approx(40, rel=0.15)
    kept = dict(result.kept_fields)
    for name in BANDWIDTH_FIELDS:
        assert getattr(result.profile, name) == getattr(H100, name)
        assert name not in result.fitted_fields
        assert kept[name].startswith(UNCONSTRAINED)
    assert "net_base_latency_us" in result.fitted_fields


def test_a_field_no_row_moves_by_a_percent_is_kept() -> None:
    rows = synthetic(H100, Collective.ALL_REDUCE, 1, 8, [1 << 30, 4 << 30])
    result = fit_profile(dataclasses.replace(H100, nvls_efficiency=0.6), rows)
    assert "nvls_efficiency" in result.fitted_fields
    assert result.profile.nvls_efficiency == pytest.approx(H100.nvls_efficiency, rel=0.02)
    kept = dict(result.kept_fields)
    assert "a step moves no row by 1%" in kept["nic_efficiency"]  # one node: no NIC
    assert "no row > 64 KiB" not in kept["nic_efficiency"]


def test_a_fit_at_its_fixpoint_does_not_move_when_fitted_again() -> None:
    truth = dataclasses.replace(H100, nic_efficiency=0.8, net_hop_latency_us=4.0)
    rows = [
        *synthetic(truth, Collective.ALL_REDUCE, 2, 8),
        *synthetic(truth, Collective.ALL_GATHER, 4, 8, SIZES[:4]),
    ]
    start = dataclasses.replace(H100, nic_efficiency=0.95, base_latency_us=6.0)
    first = fit_to_fixpoint(start, rows, name="mine")
    again = fit_profile(first.profile, rows, name="mine")
    assert _fitted_values(again.profile) == _fitted_values(first.profile)
    assert again.fitted_fields == first.fitted_fields
    assert again.kept_fields == first.kept_fields


def test_a_cloud_preset_fitted_with_held_numbers_is_its_own_fit() -> None:
    """aws-p5 is fitted on every second row of its 2x8 sweep and its 1x8 rows <= 64 KiB, its
    NVLink numbers (dgx-h100's) and its cited NIC efficiency held: refitting it with them held
    changes nothing, and they stay what they were."""
    cases = load_cases(read_fixture, {"aws-p5"})
    rows = [c.measurement for c in cases if c.calibration]
    assert rows and max(m.size_bytes for m in rows) > LATENCY_MAX_BYTES
    preset = PRESETS["aws-p5"]
    hold = {"nvlink_efficiency", "nvls_efficiency", "pipeline_fill_loops", "nvls_tree_efficiency"}
    result = fit_to_fixpoint(preset, rows, name="aws-p5", hold={*hold, "nic_efficiency"})
    assert _fitted_values(result.profile) == _fitted_values(preset)
    assert all(getattr(preset, f) == getattr(PRESETS["dgx-h100"], f) for f in hold)
    assert preset.nic_efficiency == 0.965
    assert "stage_fill_loops" in result.fitted_fields


def test_held_out_rows_are_reported_but_never_fitted_on() -> None:
    truth = dataclasses.replace(H100, nic_efficiency=0.7)
    fit_rows = synthetic(truth, Collective.ALL_REDUCE, 2, 8)
    held = synthetic(truth, Collective.ALL_REDUCE, 8, 8)
    alone = fit_profile(H100, fit_rows)
    both = fit_profile(H100, fit_rows, held_out=held)
    assert both.profile == alone.profile  # deterministic and blind to held-out rows
    assert [r.fitted for r in both.rows] == [True] * len(fit_rows) + [False] * len(held)
    assert both.held_out_worst_abs_error >= both.held_out_median_abs_error >= 0


def test_error_is_signed_relative_busbw_error() -> None:
    m = Measurement(Collective.ALL_REDUCE, 1 << 30, 1, 8, 1.0, 1.0, "")
    row = predict(H100, m)
    slow = dataclasses.replace(m, time_us=2 * row.predicted_time_us)
    assert predict(H100, slow).error == pytest.approx(1.0)  # predicted busbw is twice measured
    busbw_only = dataclasses.replace(m, time_us=0.0, busbw_gb_per_s=row.predicted_busbw_gb_per_s)
    assert predict(H100, busbw_only).error == pytest.approx(0.0, abs=1e-9)


def test_torus_profiles_have_nothing_to_fit_and_bad_rows_are_refused() -> None:
    assert fittable_fields(get_profile("tpu-v5e")) == ()
    assert "nvls_latency_us" not in fittable_fields(get_profile("dgx-a100"))
    with pytest.raises(FitError):
        fit_profile(H100, [])
    with pytest.raises(FitError, match="2 ranks"):
        predict(H100, Measurement(Collective.ALL_REDUCE, 8, 1, 1, 0.0, 5.0))


@dataclass
class Row:
    size_bytes: int
    out_time_us: float
    out_busbw_gb_per_s: float
    in_time_us: float | None = None
    in_busbw_gb_per_s: float | None = None


@dataclass
class Log:
    path: str
    collective: Collective | None
    ranks: int | None
    nodes: int | None
    gpus_per_node: int | None
    rows: tuple[Row, ...]
    nccl_version: str | None = None


def test_measurements_from_a_parsed_log() -> None:
    log = Log("ar.log", Collective.ALL_REDUCE, 16, 2, None, (Row(0, 1.0, 0.0), Row(8, 30.0, 0.0)))
    (m,) = measurements_from_log(log)
    assert (m.nodes, m.gpus_per_node, m.size_bytes, m.time_us, m.source) == (
        2,
        8,
        8,
        30.0,
        "ar.log",
    )
    assert measurements_from_log(log, source="nccl#1")[0].source == "nccl#1"
    assert m.nccl_version is None
    (printed,) = measurements_from_log(dataclasses.replace(log, nccl_version="2.26.2"))
    assert printed.nccl_version == "2.26.2"
    (odd,) = measurements_from_log(dataclasses.replace(log, nccl_version="2.26"))
    assert odd.nccl_version is None
    with pytest.raises(FitError, match=r"ar\.log"):
        measurements_from_log(dataclasses.replace(log, collective=None))
    with pytest.raises(FitError, match="ranks"):
        measurements_from_log(log, nodes=3, gpus_per_node=8)
    with pytest.raises(FitError, match="--nodes"):
        measurements_from_log(dataclasses.replace(log, ranks=None, nodes=None))


def test_a_row_is_timed_at_the_faster_of_its_two_columns() -> None:
    """nccl-tests times each size twice (out-of-place, in-place); a stall in either only adds
    time, so a row is the faster of the two, whichever column it is in."""
    assert row_timing(Row(8, 68.5, 0.0, 24.7, 0.01)) == (0.01, 24.7)
    assert row_timing(Row(8, 24.7, 0.01, 68.5, 0.0)) == (0.01, 24.7)
    assert row_timing(Row(8, 30.0, 1.0)) == (1.0, 30.0)  # no in-place column
    assert row_timing(Row(8, 30.0, 1.0, 0.0, 0.0)) == (1.0, 30.0)  # in-place not run
    log = Log("ar.log", Collective.ALL_REDUCE, 16, 2, None, (Row(8, 68.5, 0.0, 24.7, 0.01),))
    (m,) = measurements_from_log(log)
    assert (m.time_us, m.busbw_gb_per_s) == (24.7, 0.01)


def test_a_published_warm_up_stall_does_not_make_the_row() -> None:
    """NVIDIA/nccl-tests#309, 2x8 H100: the first call (8 B) took 68.52 us out of place and
    24.70 us in place, its neighbours ~25 us."""
    text = (FIXTURES / "nccl-tests" / "h100-2x8-qoofyk-all-reduce.log").read_text()
    first = measurements_from_log(parse_log(text, "qoofyk.log", Collective.ALL_REDUCE))[0]
    assert (first.size_bytes, first.time_us) == (8, 24.70)


def test_one_thread_driving_several_gpus_is_launch_bound() -> None:
    """nccl-tests -g G: back-to-back calls take at least G launches; -g 1 runs are unaffected."""
    h100 = get_profile("dgx-h100")
    profile = dataclasses.replace(h100, launch_us_per_gpu=4.0, launch_us_per_channel=0.0)
    one = Measurement(Collective.ALL_GATHER, 1024, 1, 8, 0.0, 35.0)
    many = dataclasses.replace(one, gpus_per_thread=8)
    assert predict(profile, many).predicted_time_us == pytest.approx(32.0)
    assert predict(profile, one).predicted_time_us < 32.0


def test_each_launch_also_pays_for_the_channels_the_call_runs_on() -> None:
    """A call of 8 B runs on one channel, one of 1 MiB on all 24 of an H100 node (whatever the
    protocol): with 0.1 us per channel the floor of -g 8 rises from 8 x 4.1 to 8 x 6.4 us."""
    h100 = get_profile("dgx-h100")
    profile = dataclasses.replace(h100, launch_us_per_gpu=4.0, launch_us_per_channel=0.1)
    small = Measurement(Collective.ALL_GATHER, 8, 1, 8, 0.0, 35.0, gpus_per_thread=8)
    big = dataclasses.replace(small, size_bytes=1 << 20)
    assert predict(profile, small).predicted_time_us == pytest.approx(8 * 4.1)
    assert predict(profile, big).predicted_time_us == pytest.approx(8 * 6.4)
    assert predict(h100, dataclasses.replace(big, gpus_per_thread=1)).predicted_time_us < 30


def test_a_row_is_priced_with_the_nccl_release_it_ran() -> None:
    probe = Measurement(Collective.ALL_REDUCE, 4 << 20, 4, 8, 1.0, 1.0, "synthetic")
    old = dataclasses.replace(probe, nccl_version="2.26.2")
    on_old = dataclasses.replace(H100, nccl_version="2.26.2")
    assert predict(H100, old) == dataclasses.replace(predict(on_old, probe), measurement=old)
    assert predict(H100, old).predicted_time_us != predict(H100, probe).predicted_time_us


def test_a_run_is_priced_in_the_nccl_environment_it_was_made_with() -> None:
    """NCCL_ALGO=Ring prices a one-node all-reduce as ring, not NVLS; NCCL_NVLS_ENABLE=0 the
    same; NCCL_PROTO=LL keeps the ring in LL; without an environment the model picks NVLS."""
    h100 = get_profile("dgx-h100")
    free = Measurement(Collective.ALL_REDUCE, 1 << 30, 1, 8, 0.0, 1.0)
    ring = dataclasses.replace(free, algorithm="ring")
    as_ring = predict(h100, ring).predicted_time_us
    assert predict(h100, free).predicted_time_us < 0.9 * as_ring  # NVLS
    for env in ((("NCCL_ALGO", "Ring"),), (("NCCL_NVLS_ENABLE", "0."),)):
        priced = predict(h100, dataclasses.replace(free, nccl_env=env)).predicted_time_us
        assert priced == pytest.approx(as_ring)
    only_ll = dataclasses.replace(ring, nccl_env=(("NCCL_PROTO", "LL"),))
    assert predict(h100, only_ll).predicted_time_us > 1.5 * as_ring
