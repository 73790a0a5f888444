"""The cost model against published measurements, by regime (benchmarks/cost_accuracy.py prints
the same table with leave-one-source-out figures).

Rows: ``tests/fixtures/cost/measurements.yaml`` and the nccl-tests logs of
``tests/fixtures/nccl-tests/SOURCES.yaml``, each with its source; presets were fitted on the rows
marked ``calibration``. The printed targets are median |busbw error| <= 10 % per band of >= 3
rows, worst <= 30 %, latency within 1.5x; asserted here are looser limits (median 15 %, worst
45 %, latency 2.5x) so that one new data row does not break CI. The table is printed on every
run (capture disabled) and repeated in the assertion message. TPU rows (scope ``tpu``: a torus
model, not NCCL's) are printed with their verdict but not asserted here.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from fabricfit.calibrate import accuracy
from fabricfit.calibrate.published import build_document
from fabricfit.cli.regimes import ACCURACY_FILE
from fabricfit.fabric.profiles import PRESETS
from fabricfit_dev.dataset import load_cases, read_fixture

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MEDIAN_LIMIT, WORST_LIMIT, LATENCY_LIMIT = 0.15, 0.45, 2.5
# Bands the model is known to miss, with why: printed (MISSED in the table), reported in
# docs/benchmarks/cost-accuracy.md, exempt here so CI guards every other band. A band leaves this
# list when it is fixed.
KNOWN_MISS_BANDS: dict[tuple[str, str, str], str] = {
    ("16-256MiB", ">=8 domains", "all-gather"): "10 nodes x 2 and x 4 H100 (xxrjun, held out):"
    " up to 32 % faster than predicted at 32-256 MiB. The model charges every step of a ring"
    " across NICs the network step (~7 us on H100, LL128 or Simple: the steps run in lock-step),"
    " which the same cluster's 10x8 run bears out in LL128; at 2 and 4 GPUs per node the runs take"
    " 2-5 us per step. Its 10x8 Simple rows (256 MiB) run 41 % slower than predicted",
}


CASES = load_cases(read_fixture, PRESETS)
JUDGED = accuracy.judge([c for c in CASES if not c.reference], PRESETS)


def _violations(bands: list[accuracy.Band]) -> list[str]:
    bad = []
    for b in bands:
        if b.scope == "tpu" or (b.size, b.scope, b.collective) in KNOWN_MISS_BANDS:
            continue
        n, median, worst = b.stats()
        if b.latency and worst > LATENCY_LIMIT:
            bad.append(f"{b.size} {b.scope} {b.collective}: latency {worst:.2f}x")
        if not b.latency and (worst > WORST_LIMIT or (n >= 3 and median > MEDIAN_LIMIT)):
            bad.append(f"{b.size} {b.scope} {b.collective}: median {median:.0%} worst {worst:.0%}")
    return bad


def test_rows_cover_hardware_scopes_and_sizes() -> None:
    fabrics = {c.fabric for c in CASES}
    assert {"dgx-h100", "dgx-a100", "gb200-nvl72", "tpu-v5e"} <= fabrics
    bands = accuracy.band_table(JUDGED, PRESETS)
    assert {b.size for b in bands} == set(accuracy.SIZE_BANDS)
    assert {b.scope for b in bands} >= {"1 domain", "2-4 domains", ">=8 domains"}
    assert all(c.measurement.source for c in CASES)
    assert any(c.calibration for c in CASES) and any(not c.calibration for c in CASES)


def test_model_matches_published_measurements_by_regime(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bands = accuracy.band_table(JUDGED, PRESETS)
    table = accuracy.render_bands(bands)
    with capsys.disabled():  # shown with or without -s
        print("\n" + table)
    bad = _violations(bands)
    assert not bad, "\n".join([*bad, table])


def test_shipped_regime_summaries_are_current() -> None:
    """``fabricfit cost`` quotes the package's copy of this table: it must be today's."""
    fresh = json.loads(json.dumps(build_document(JUDGED, PRESETS)))
    shipped = FIXTURES.parents[1] / "operator" / "fabricfit" / "calibrate" / ACCURACY_FILE
    assert json.loads(shipped.read_text(encoding="utf-8")) == fresh, (
        "stale: run .venv/bin/python benchmarks/cost_accuracy.py --write-regimes"
    )


def test_accuracy_check_can_fail() -> None:
    """A wrong NIC efficiency (half the real one) must break the multi-node bands."""
    broken = {
        name: dataclasses.replace(p, nic_efficiency=p.nic_efficiency / 2) if not p.is_torus else p
        for name, p in PRESETS.items()
    }
    judged = accuracy.judge([c for c in CASES if not c.reference], broken)
    assert _violations(accuracy.band_table(judged, broken))
