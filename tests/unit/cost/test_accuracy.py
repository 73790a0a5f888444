"""The cost model against published measurements (table in measurements.py).

Fails when the median relative error over large-message bandwidth rows exceeds 15 %, any row is
off by more than 35 %, or a latency row (≤ 64 KiB) by more than 2.5×. The whole comparison table
is printed to the terminal on every run (capture disabled for it) and repeated in the assertion
message on failure.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


def _load() -> ModuleType:
    path = Path(__file__).with_name("measurements.py")
    spec = importlib.util.spec_from_file_location("fabricfit_cost_measurements", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


m = _load()


def test_table_covers_the_required_hardware_and_size() -> None:
    rows = m.ROWS
    assert len(rows) >= 15
    fabrics = {r.fabric for r in rows}
    assert {"dgx-h100", "dgx-a100", "gb200-nvl72", "tpu-v5e"} <= fabrics
    assert any(r.nodes > 1 and r.fabric.startswith("dgx") for r in rows), "multi-node IB rows"
    assert sum(r.latency for r in rows) >= 3, "latency rows"
    assert all(r.source for r in rows)


def test_model_matches_published_measurements(capsys: pytest.CaptureFixture[str]) -> None:
    comparisons, reference = m.run()
    table = m.render(comparisons, reference)
    with capsys.disabled():  # shown with or without -s
        print("\n" + table)
    failed = [c.row.id for c in comparisons if not c.passed]
    median = m.bandwidth_median(comparisons)
    assert not failed, f"rows out of tolerance: {failed}\n{table}"
    assert median <= m.MEDIAN_LIMIT, f"median error {median:.1%}\n{table}"


def test_accuracy_check_can_fail() -> None:
    """A wrong NIC efficiency (0.5 instead of ~0.965) must break the multi-node rows."""
    from fabricfit.fabric import profiles

    broken = dataclasses.replace(profiles.get_profile("dgx-a100"), nic_efficiency=0.5)
    row = next(r for r in m.ROWS if r.id == "V3")
    assert m.compare(row).passed
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            m,
            "get_profile",
            lambda name: broken if name == "dgx-a100" else profiles.get_profile(name),
        )
        assert not m.compare(row).passed
