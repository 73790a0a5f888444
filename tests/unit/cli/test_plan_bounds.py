"""``fabricfit plan``: the lower bound it prints is a bound, and efficiency is never above 100 %.

The issue's case: ``plan --fabric tpu-v5e`` with TP4 x DP4 in 2-chip pods printed
``predicted 770 ms; lower bound 1.41 s; efficiency 100.0%`` — the torus bound assumed two pods
of a tensor group never share a host, and efficiency was clamped to 1 without a word.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricfit.cli.main import main


def _tpu_hosts(count: int, fabric: str) -> dict[str, Any]:
    """``kubectl get nodes -o json`` of ``count`` 4-chip hosts of one TPU slice."""
    labels = {
        "topology.fabricfit.dev/nvlink-domain": "slice-a",
        "topology.fabricfit.dev/fabric": fabric,
    }
    items = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"tpu-host-{i:02d}", "labels": {**labels}},
            "status": {
                "allocatable": {"nvidia.com/gpu": "4"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
        for i in range(count)
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _plan(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fabric: str, *extra: str
) -> tuple[int, str]:
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(_tpu_hosts(16, fabric)), encoding="utf-8")
    topology = tmp_path / "tt.yaml"
    spec = {
        "workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "tpu-job"},
        "gpusPerPod": 2,
        "parallelism": {"tensor": 4, "data": 4},
        "model": {"parameters": 7_000_000_000, "hiddenSize": 4096, "layers": 32},
    }
    topology.write_text(yaml.safe_dump({"spec": spec}), encoding="utf-8")
    try:
        code = main(["plan", "--nodes", str(nodes), "--topology", str(topology), *extra])
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    return code, capsys.readouterr().out


@pytest.mark.parametrize("fabric", ["tpu-v5e", "tpu-v4", "tpu-v5p"])
def test_two_chip_pods_on_a_torus_predict_no_less_than_the_bound(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fabric: str
) -> None:
    code, out = _plan(capsys, tmp_path, fabric, "--fabric", fabric, "--json")
    result = json.loads(out)
    assert code == 0
    predicted = result["predicted"]
    assert result["lower_bound_seconds"] <= predicted["step_comm_seconds"] * (1 + 1e-9)
    assert 0 < result["efficiency"] <= 1
    assert result["warnings"] == []


def test_the_text_view_prints_the_unclamped_efficiency(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The text's efficiency is the JSON's bound ÷ prediction, unclamped: the two cannot
    disagree by a silent min(1, ...), and on this plan it is at most 100 %."""
    _, out = _plan(capsys, tmp_path, "tpu-v5e", "--fabric", "tpu-v5e", "--json")
    result = json.loads(out)
    ratio = result["lower_bound_seconds"] / result["predicted"]["step_comm_seconds"]
    code, out = _plan(capsys, tmp_path, "tpu-v5e", "--fabric", "tpu-v5e")
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("predicted step communication"))
    percent = float(line.rsplit("efficiency ", 1)[1].rstrip("%"))
    assert percent == pytest.approx(100 * ratio, abs=0.051)
    assert percent <= 100.0
    assert "warning:" not in out


def test_a_tpu_plan_needs_no_compute_domain(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Two 2-chip pods per host put data groups on two hosts of one slice: over ICI, not
    NVLink, so no NVIDIA ComputeDomain (the plan asked for one)."""
    code, out = _plan(capsys, tmp_path, "tpu-v5e", "--fabric", "tpu-v5e", "--json")
    assert code == 0
    assert json.loads(out)["compute_domain"]["needed"] is False
    code, out = _plan(capsys, tmp_path, "tpu-v5e", "--fabric", "tpu-v5e")
    assert "ComputeDomain" not in out


def test_the_docs_example_is_what_plan_prints(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """docs/concepts/bounds.md opens with this plan's line (the issue's TPU case, fixed)."""
    page = Path(__file__).resolve().parents[3] / "docs" / "concepts" / "bounds.md"
    example = next(
        line
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith("predicted step communication")
    )
    code, out = _plan(capsys, tmp_path, "tpu-v5e", "--fabric", "tpu-v5e")
    assert code == 0
    assert example in out.splitlines()
