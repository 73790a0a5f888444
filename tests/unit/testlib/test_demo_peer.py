"""The demo's real-Kueue comparison: which Kueue Topology it builds from the label scheme,
which level its user prefers, the option, and the report of a placement the real Kueue made."""

from __future__ import annotations

import pytest

from fabricfit_dev.cluster import fakenodes
from fabricfit_dev.cluster.kueueobjects import HOSTNAME
from fabricfit_dev.demo.baseline import JobView, PlacedJob, view_job
from fabricfit_dev.demo.options import OptionError, from_env
from fabricfit_dev.demo.peer import preferred_level, topology_levels
from fabricfit_dev.demo.report import job_lines
from fabricfit_dev.demo.workloads import SMALL
from unit.testlib.test_demo_baseline import _spec


def nodes(scheme: str, **shape: int) -> list[dict[str, object]]:
    return fakenodes.node_manifests(fakenodes.FakeFabric(scheme=scheme, **shape))


def test_the_topology_has_the_schemes_tiers_every_node_carries_highest_first() -> None:
    native = nodes("native", nodes_per_rack=2)
    assert topology_levels("native", native) == [
        "topology.fabricfit.dev/spine",
        "topology.fabricfit.dev/rail-group",
        "topology.fabricfit.dev/rack",
        HOSTNAME,
    ]
    assert preferred_level("native", topology_levels("native", native), native) == (
        "topology.fabricfit.dev/rail-group"
    )
    gb200 = nodes("native", gpus_per_node=4, nics_per_node=4, nodes_per_rack=18,
                  nodes_per_rail_group=18, nvlink_domain_nodes=18)  # fmt: skip
    levels = topology_levels("native", gb200)
    assert levels[-2:] == ["topology.fabricfit.dev/nvlink-domain", HOSTNAME]
    assert len(levels) == len(set(levels))
    # The NVL72 job prefers its NVLink domain: the scheme's own label, else GFD's clique.
    nvl72 = "nvlink_domain"
    assert preferred_level("native", levels, gb200, nvl72) == "topology.fabricfit.dev/nvlink-domain"
    racks = from_env({"FABRICFIT_DEMO_SCHEME": "gke"}).nvl72_fabric()
    assert racks is not None
    gke = fakenodes.node_manifests(racks)
    gke_levels = topology_levels("gke", gke)
    assert preferred_level("gke", gke_levels, gke, nvl72) == fakenodes.CLIQUE_LABEL
    for scheme in fakenodes.SCHEMES:
        found = topology_levels(scheme, nodes(scheme))
        assert found[-1] == HOSTNAME and len(found) >= 2, scheme


def test_the_peer_option() -> None:
    assert from_env({}).peer == "auto"
    assert from_env({"FABRICFIT_DEMO_PEER": "kueue"}).peer == "kueue"
    with pytest.raises(OptionError, match="FABRICFIT_DEMO_PEER must be one of auto, kueue"):
        from_env({"FABRICFIT_DEMO_PEER": "volcano"})


def test_a_placement_the_real_kueue_made_is_priced_and_said_so() -> None:
    moe = SMALL[1]
    spec = _spec(moe)
    mine = ["gpu-s1-g2-n0004"] * 2 + ["gpu-s1-g2-n0005"] * 2
    theirs = ["gpu-s0-g0-n0001", "gpu-s0-g1-n0002", "gpu-s1-g2-n0004", "gpu-s1-g3-n0006"]
    nodes_, pods = snapshot_objects()
    placed = PlacedJob(moe.name, "ns", spec, {"pods": []}, mine)
    view = view_job(placed, nodes_, pods, peer_nodes=theirs)
    assert view.peer_real and view.peer is not None and list(view.peer.pods) == theirs
    lines = "\n".join(job_lines(moe, view))
    assert "Kueue TAS used: rg-0 ×1, rg-1 ×1, rg-2 ×1, rg-3 ×1" in lines
    emulated = view_job(placed, nodes_, pods)
    assert not emulated.peer_real and isinstance(emulated, JobView)
    assert "Kueue TAS would use: " in "\n".join(job_lines(moe, emulated))


def snapshot_objects() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    fabric = fakenodes.FakeFabric(spines=2, rail_groups_per_spine=2, nodes_per_rail_group=2)
    found = fakenodes.node_manifests(fabric)
    for node in found:
        node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]  # type: ignore[index]
    busy = {
        "metadata": {"name": "t", "namespace": "x"},
        "status": {"phase": "Running"},
        "spec": {
            "nodeName": "gpu-s0-g0-n0000",
            "containers": [{"resources": {"limits": {"nvidia.com/gpu": "8"}}}],
        },
    }
    return found, [busy]  # fmt: skip
