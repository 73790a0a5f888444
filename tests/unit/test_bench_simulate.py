"""The cluster-level benchmark runs: its tables for the small trace, and its count of the trace
targets over generator draws (the 32-draw run is ``benchmarks/simulate.py --draws 16-47``)."""

from __future__ import annotations

import pytest

import simulate as bench  # benchmarks/ is on the path (pytest: pythonpath)


def test_quick_run_prints_every_placer_and_the_wait_row(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert bench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    quick = [f for c in bench.CLUSTERS if c.quick for f in c.fabrics]
    assert quick == ["dgx-h100", "h100-leaf-spine-2to1", "h100-rail-only"]
    assert out.count("trace small.yaml (10 jobs)") == len(quick)
    assert "64 nodes / 512 GPUs" in out and "gb200-nvl72" not in out
    for row in ("fabricfit ", "kueue-bestfit ", "spread ", "fabricfit+wait "):
        assert sum(line.startswith(row) for line in out.splitlines()) == len(quick)


def test_the_gb200_mix_is_the_same_draws_in_tray_sized_pods() -> None:
    generate = bench.generator()
    h100 = generate.published_mix(seed=21)["jobs"]
    gb200 = generate.published_mix(seed=21, fabric=generate.NVL72)["jobs"]
    assert [j["name"] for j in h100] == [j["name"] for j in gb200]
    for a, b in zip(h100, gb200, strict=True):
        assert (a["duration"], a["parallelism"], a.get("model")) == (
            b["duration"],
            b["parallelism"],
            b.get("model"),
        )
        assert b["gpusPerPod"] == min(a["gpusPerPod"], 4)
    # the same offered load on 576 GPUs instead of 512: arrivals come 512/576 as far apart
    assert gb200[-1]["arrival"] == pytest.approx(h100[-1]["arrival"] * 512 / 576, rel=0.01)
    # the shipped files are what the generator writes
    shipped = (bench.TRACES / "published-mix-nvl72.yaml").read_text(encoding="utf-8")
    assert generate.yaml.safe_load(shipped) == generate.published_mix(fabric=generate.NVL72)


def test_draws_count_the_targets_per_fabric_and_queue(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--draws", "17-17"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("  17 ") for line in out) == len(bench.FABRICS)
    assert bench.FABRICS[-1] == "gb200-nvl72" and any("  17 gb200-nvl72 " in line for line in out)
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
