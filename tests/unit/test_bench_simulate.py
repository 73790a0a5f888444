"""The cluster-level benchmark runs: its tables for the small trace, and its count of the trace
targets over generator draws (the 32-draw run is ``benchmarks/simulate.py --draws 16-47``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

import simulate as bench  # noqa: E402


def test_quick_run_prints_every_placer_and_the_wait_row(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert bench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert out.count("trace small.yaml (10 jobs)") == len(bench.FABRICS)
    for row in ("fabricfit ", "kueue-bestfit ", "spread ", "fabricfit+wait "):
        assert sum(line.startswith(row) for line in out.splitlines()) == len(bench.FABRICS)


def test_draws_count_the_targets_per_fabric_and_queue(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--draws", "17-17"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("  17 ") for line in out) == len(bench.FABRICS)
    summary = out[out.index("1 draw, seeds 17-17; fabricfit against kueue-bestfit") + 2 :]
    assert len(summary) == 2 * len(bench.FABRICS)
    for line in summary:
        fabric, queue, met, lower, waits, ratio = line.split()
        assert fabric in bench.FABRICS and queue in ("fabricfit", "fabricfit+wait")
        assert 0 <= int(met) <= min(int(lower), int(waits)) <= 1 and float(ratio) > 0


@pytest.mark.parametrize("draws", ["5-2", "x-3", "7"])
def test_a_bad_range_is_a_usage_error(draws: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        bench.main(["--draws", draws])
    assert done.value.code == 2 and "expected FIRST-LAST seeds" in capsys.readouterr().err
