"""Scale terms: what they do to a prediction, when the fitter may fit them, and that it recovers
them from rows they made; which rows a fit takes; the error by node count, fitted and held out.
Rail groups: calibrate lays a run out as ``fabricfit cost`` does."""

from __future__ import annotations

import dataclasses
import math

import pytest

from fabricfit.calibrate.fields import SCALE_FITTABLE, fittable_fields
from fabricfit.calibrate.fit import Measurement, fit_profile, predict, shape_of
from fabricfit.calibrate.scale import (
    MAX_FIT_ROWS,
    MAX_FOLDS,
    MIN_ROWS_PER_RUN,
    ROWS_PER_RUN,
    by_node_count,
    folds,
    split_rows,
)
from fabricfit.cli.cost import build_group
from fabricfit.cost import Collective
from fabricfit.cost.collectives import estimate_shape
from fabricfit.cost.shape import summarize_group
from fabricfit.fabric.profiles import get_profile

A100 = get_profile("dgx-a100")
H100 = get_profile("dgx-h100")
GIB = 1 << 30


def _busbw(profile, nodes: int, size: int = 4 * GIB) -> float:  # type: ignore[no-untyped-def]
    shape = summarize_group(build_group(profile, nodes, 8))
    return estimate_shape(Collective.ALL_GATHER, size, shape, profile).busbw_gb_per_s


def test_scaleout_decay_slows_the_network_beyond_two_domains_only() -> None:
    decayed = dataclasses.replace(A100, scaleout_decay=0.5)
    assert _busbw(decayed, 2) == _busbw(A100, 2)
    # a NIC-bound ring at 8 domains: each NIC at (2/8)^0.5 = half its rate (the latency and
    # the pipeline's fill, a few per cent at 4 GiB, do not halve)
    assert 0.48 < _busbw(decayed, 8) / _busbw(A100, 8) < 0.54
    assert _busbw(decayed, 16) < _busbw(decayed, 8)


def test_presets_carry_no_scale_decay_and_never_fit_one() -> None:
    assert A100.scaleout_decay == 0.0 and H100.scaleout_decay == 0.0
    assert not set(SCALE_FITTABLE) & set(fittable_fields(H100))
    assert set(SCALE_FITTABLE) <= set(fittable_fields(H100, scale=True))


def _rows(profile, nodes: int) -> list[Measurement]:  # type: ignore[no-untyped-def]
    out = []
    for size in (8, 1 << 20, 64 << 20, 1 * GIB, 4 * GIB):
        probe = Measurement(Collective.ALL_REDUCE, size, nodes, 8, 1.0, 1.0, f"{nodes}x8")
        row = predict(profile, probe)
        out.append(dataclasses.replace(probe, time_us=row.predicted_time_us))
    return out


def test_the_fit_recovers_a_decay_from_runs_at_several_node_counts() -> None:
    truth = dataclasses.replace(
        A100, scaleout_decay=0.3, nic_efficiency=0.8, net_hop_latency_us=4.0
    )
    rows = [m for n in (1, 2, 4, 8, 16) for m in _rows(truth, n)]
    result = fit_profile(A100, rows, scale=True)
    assert "scaleout_decay" in result.fitted_fields
    assert result.profile.scaleout_decay == pytest.approx(0.3, abs=0.02)
    assert result.profile.nic_efficiency == pytest.approx(0.8, rel=0.02)
    assert result.worst_abs_error < 0.03
    # without scale terms the same rows leave a flat fit that misses the largest node count
    flat = fit_profile(A100, rows)
    assert "scaleout_decay" not in flat.fitted_fields + tuple(n for n, _ in flat.kept_fields)
    assert flat.worst_abs_error > 2 * result.worst_abs_error


def test_one_multi_domain_count_cannot_separate_a_decay_from_the_nics() -> None:
    truth = dataclasses.replace(A100, scaleout_decay=0.3)
    rows = [*_rows(truth, 1), *_rows(truth, 10)]
    kept = dict(fit_profile(A100, rows, scale=True).kept_fields)
    assert "two or more domain counts" in kept["scaleout_decay"]
    assert "no row crosses a rail group" in kept["switch_hop_latency_us"]


def test_rail_group_terms_need_rows_on_both_sides_of_the_rail_group() -> None:
    truth = dataclasses.replace(A100, leaf_oversubscription=2.0, switch_hop_latency_us=3.0)
    rows = [*_rows(truth, 8), *_rows(truth, 16), *_rows(truth, 64)]
    result = fit_profile(A100, rows, scale=True)
    assert {"leaf_oversubscription", "switch_hop_latency_us"} <= set(result.fitted_fields)
    assert result.profile.leaf_oversubscription == pytest.approx(2.0, rel=0.05)
    assert result.profile.switch_hop_latency_us == pytest.approx(3.0, rel=0.05)
    above = fit_profile(A100, _rows(truth, 64), scale=True)
    why = dict(above.kept_fields)["switch_hop_latency_us"]
    assert "needs rows inside one rail group too" in why


@pytest.mark.parametrize(("name", "nodes"), [("dgx-h100", 40), ("gb200-nvl72", 90)])
def test_a_measured_run_crosses_rail_groups_where_cost_says_it_does(name: str, nodes: int) -> None:
    profile = get_profile(name)
    gpus = profile.gpus_per_node
    shape = shape_of(Measurement(Collective.ALL_REDUCE, 8, nodes, gpus, 1.0, 1.0), profile)
    assert shape == summarize_group(build_group(profile, nodes, gpus))
    assert shape.crosses_spine and shape.rail_groups == 2


def _run(source: str, sizes: list[int], nodes: int = 1) -> list[Measurement]:
    return [Measurement(Collective.ALL_GATHER, s, nodes, 8, 1.0, 10.0, source) for s in sizes]


def test_a_fit_takes_a_runs_rows_spread_over_log_size() -> None:
    dense = _run("dense.log", [i << 20 for i in range(1, 1025)])
    fit, held = split_rows(dense)
    assert len(fit) == ROWS_PER_RUN and len(held) == 1024 - ROWS_PER_RUN
    sizes = sorted(m.size_bytes for m in fit)
    assert sizes[0] == 1 << 20 and sizes[-1] == 1024 << 20  # both ends
    # evenly in log size: about as many picks below 32 MiB as above it
    assert 6 <= sum(s < 32 << 20 for s in sizes) <= 10
    short = _run("short.log", [8 << i for i in range(ROWS_PER_RUN)])
    assert split_rows(short) == (short, [])
    many = [m for r in range(40) for m in _run(f"r{r}.log", [8 << i for i in range(20)])]
    fit, held = split_rows(many)
    assert len(fit) == 40 * max(MIN_ROWS_PER_RUN, MAX_FIT_ROWS // 40) and len(fit) <= MAX_FIT_ROWS


def test_node_counts_are_left_out_one_at_a_time_or_in_eight_folds() -> None:
    assert folds([(1, 8), (2, 8), (2, 8)]) == [[(1, 8)], [(2, 8)]]
    counts = [(n, 8) for n in range(1, 21)]
    dealt = folds(counts)
    assert len(dealt) == MAX_FOLDS and sorted(k for f in dealt for k in f) == counts


def test_the_error_by_node_count_holds_each_count_out_of_its_own_fit() -> None:
    truth = dataclasses.replace(A100, scaleout_decay=0.3)
    rows = [m for n in (1, 4, 16) for m in _rows(truth, n)]
    result = fit_profile(A100, rows, scale=True)
    found = {e.label: e for e in by_node_count(A100, rows, [], result)}
    assert set(found) == {"1x8", "4x8", "16x8"}
    # fitted on every node count the model that made the rows is found again; the 16-node
    # rows, held out, are predicted from a decay fitted on 1 and 4 nodes only: no decay at all
    assert found["16x8"].fitted_worst < 0.03
    assert found["16x8"].held_out_worst > 0.2
    assert found["1x8"].held_out_worst < 0.03  # nothing about one node depends on the others
    single = by_node_count(A100, _rows(truth, 4), [], fit_profile(A100, _rows(truth, 4)))
    assert math.isnan(single[0].held_out_median)
