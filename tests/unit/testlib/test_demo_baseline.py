"""The demo's comparison column: Kueue TAS BestFit (emulated) on the same free GPUs."""

from __future__ import annotations

from typing import Any

import pytest

from fabricfit.api.models import TrainingTopologySpec
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit_dev.cluster import fakenodes
from fabricfit_dev.demo.baseline import decision_for, kueue_tas
from fabricfit_dev.demo.report import job_lines
from fabricfit_dev.demo.workloads import SMALL


def _snapshot(busy_node: str, gpus: int) -> ClusterSnapshot:
    fabric = fakenodes.FakeFabric(spines=2, rail_groups_per_spine=2, nodes_per_rail_group=2)
    nodes = fakenodes.node_manifests(fabric)
    for node in nodes:
        node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    limits = {"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
    busy = {
        "metadata": {"name": "t", "namespace": "x"},
        "status": {"phase": "Running"},
        "spec": {"nodeName": busy_node, "containers": [limits]},
    }
    return build_snapshot(nodes, [busy], scheme="native")


def test_kueue_takes_the_tightest_rail_group_that_holds_the_job() -> None:
    # rg-0 has three 4-GPU windows (n0000 half taken), every other rail group four: BestFit
    # takes rg-0, ranks in node order, the shared node's lowest free window first.
    snapshot = _snapshot("gpu-s0-g0-n0000", 4)
    assert kueue_tas(snapshot, 3, 4) == ["gpu-s0-g0-n0000", "gpu-s0-g0-n0001", "gpu-s0-g0-n0001"]


def test_a_job_no_spine_holds_takes_both_spines_then_the_roomiest_rail_groups_of_either() -> None:
    snapshot = _snapshot("gpu-s0-g0-n0000", 4)
    # Five whole nodes: no spine holds them, so Kueue takes both spines, then pools their rail
    # groups most-free first (rg-1, rg-2: two nodes each) and best-fits the fifth (rg-0's one).
    assert kueue_tas(snapshot, 5, 8) == [
        "gpu-s0-g0-n0001",
        "gpu-s0-g1-n0002",
        "gpu-s0-g1-n0003",
        "gpu-s1-g2-n0004",
        "gpu-s1-g2-n0005",
    ]
    assert kueue_tas(snapshot, 8, 8) is None  # n0000 has half a node free: only 7 fit


def _spec(job: Any) -> TrainingTopologySpec:
    body = {
        "workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": job.name},
        "gpusPerPod": job.gpus_per_pod,
        "parallelism": job.parallelism,
        "model": job.model,
        "fabric": "dgx-h100",
        "rankOrder": "tp-cp-ep-dp-pp",
    }
    return TrainingTopologySpec.model_validate(body)


def test_split_pods_price_worse_and_the_report_says_by_how_much() -> None:
    from fabricfit_dev.demo.baseline import JobView

    snapshot = _snapshot("gpu-s0-g0-n0000", 8)
    moe = SMALL[1]  # TP2 DP8 EP4 in 4-GPU pods: 4 pods
    spec = _spec(moe)
    together = decision_for(["gpu-s1-g2-n0004"] * 2 + ["gpu-s1-g2-n0005"] * 2, snapshot, spec)
    apart = decision_for(
        ["gpu-s0-g0-n0001", "gpu-s0-g1-n0002", "gpu-s1-g2-n0004", "gpu-s1-g3-n0006"],
        snapshot,
        spec,
    )
    assert together.predicted is not None and apart.predicted is not None
    ratio = apart.predicted.step_comm_seconds / together.predicted.step_comm_seconds
    assert ratio > 1.05
    view = JobView(moe.name, spec, snapshot, together, together.predicted, apart)
    lines = "\n".join(job_lines(moe, view))
    assert f"Kueue TAS is {ratio:.2f}× the communication time" in lines
    assert "Kueue TAS would use: rg-0 ×1, rg-1 ×1, rg-2 ×1, rg-3 ×1" in lines
    same = JobView(moe.name, spec, snapshot, together, together.predicted, together)
    assert "Kueue TAS ties (1.00×): no gain from fabricfit here" in "\n".join(job_lines(moe, same))


def test_a_placement_on_a_full_node_is_refused_in_one_sentence() -> None:
    snapshot = _snapshot("gpu-s0-g0-n0000", 8)
    with pytest.raises(ValueError, match="no free window of 8 GPUs"):
        decision_for(["gpu-s0-g0-n0000"] * 4, snapshot, _spec(SMALL[0]))
