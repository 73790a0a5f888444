"""Plan quality (group crossings, spine bytes) and fragmentation of the free GPUs."""

from __future__ import annotations

import pytest

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.fabric.profiles import get_profile
from fabricfit.placement import build_layout
from fabricfit.placement.quality import (
    TIERS,
    assess_plan,
    decision_quality,
    measure_fragmentation,
    plan_slots,
)
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.search import plan_placement
from unit.placement.clusters import make_cluster

PROFILE = get_profile("dgx-h100")
MODEL = ModelShape(parameters=13_000_000_000, hidden_size=5120, layers=40)


def _request(gpus_per_pod: int = 8, **parallelism: int) -> PlacementRequest:
    return PlacementRequest(
        parallelism=Parallelism(**parallelism),  # type: ignore[arg-type]
        gpus_per_pod=gpus_per_pod,
        model=MODEL,
    )


def _assess(snapshot, request, pods):  # type: ignore[no-untyped-def]
    layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
    return assess_plan(snapshot, layout, request, PROFILE, pods)


def test_plan_in_one_rail_group_crosses_nothing_and_sends_nothing_over_the_spine() -> None:
    snapshot = make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=4)
    quality = _assess(snapshot, _request(tensor=8, data=4), ["n000", "n001", "n002", "n003"])
    assert quality is not None
    assert (quality.tensor_groups, quality.tensor_groups_crossing_nvlink) == (4, 0)
    assert (quality.data_groups, quality.data_groups_crossing_rail_group) == (8, 0)
    assert quality.spine_bytes_per_step == 0.0


def test_dp_ring_split_over_two_rail_groups_crosses_and_uses_the_spine() -> None:
    snapshot = make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=4)
    quality = _assess(snapshot, _request(tensor=8, data=4), ["n000", "n001", "n004", "n005"])
    assert quality is not None
    assert quality.data_groups_crossing_rail_group == 8  # every DP group spans rg0 and rg1
    assert quality.tensor_groups_crossing_nvlink == 0
    assert quality.spine_bytes_per_step > 0


def test_tensor_group_over_two_nodes_crosses_its_nvlink_domain() -> None:
    # TP 8 over pods of 4 GPUs: one TP group spans two pods; on two nodes it crosses NVLink.
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=4)
    request = _request(gpus_per_pod=4, tensor=8, data=2)
    split = _assess(snapshot, request, ["n000", "n001", "n002", "n003"])
    packed = _assess(snapshot, request, ["n000", "n000", "n001", "n001"])
    assert split is not None and packed is not None
    assert split.tensor_groups_crossing_nvlink == 2
    assert packed.tensor_groups_crossing_nvlink == 0


def test_nodes_without_rail_groups_always_cross() -> None:
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=4, with_rail_groups=False)
    quality = _assess(snapshot, _request(tensor=8, data=2), ["n000", "n001"])
    assert quality is not None and quality.data_groups_crossing_rail_group == 8


def test_assessed_spine_bytes_match_the_planner_for_its_own_plan() -> None:
    snapshot = make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=2)
    request = _request(tensor=8, data=4)
    decision = plan_placement(snapshot, request, PROFILE)
    assert decision.feasible and decision.predicted is not None
    quality = _assess(snapshot, request, list(decision.pods))
    assert quality is not None
    assert quality.spine_bytes_per_step == pytest.approx(decision.predicted.spine_bytes_per_step)
    assert quality.spine_bytes_per_step > 0  # 4 nodes over two rail groups of 2


def test_plan_with_a_missing_node_or_wrong_length_is_not_assessed() -> None:
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=2)
    assert _assess(snapshot, _request(tensor=8, data=2), ["n000", "gone"]) is None
    assert _assess(snapshot, _request(tensor=8, data=2), ["n000"]) is None


def test_pods_sharing_a_node_take_consecutive_windows() -> None:
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=2)
    slots = plan_slots(snapshot, ["n000", "n001", "n000", "n000"], 2)
    assert slots is not None
    assert [(s.node, s.gpus) for s in slots] == [
        ("n000", (0, 1)),
        ("n001", (0, 1)),
        ("n000", (2, 3)),
        ("n000", (4, 5)),
    ]


def test_fragmentation_per_tier() -> None:
    # 2 spines x 1 rail group x 2 nodes, NVLink domains of 2 nodes; 8 GPUs per node.
    snapshot = make_cluster(
        spines=2,
        rail_groups_per_spine=1,
        nodes_per_rail_group=2,
        domain_nodes=2,
        used={"n000": 8, "n001": 3, "n002": 1},
        unavailable=("n003",),
    )
    frag = measure_fragmentation(snapshot, reservations={"n002": 2})
    assert frag.schedulable_gpus == 24  # n003 is NotReady
    assert frag.free_gpus == 0 + 5 + 5
    node = frag.tier("node")
    assert (node.domains, node.free_domains, node.largest_free_gpus) == (3, 0, 5)
    # n001: 5 free → GPUs 3..7; aligned windows of 4: only 4..7. n002 likewise.
    assert dict(node.largest_free_pods) == {1: 5, 2: 2, 4: 1, 8: 0}
    spine = frag.tier("spine")
    assert (spine.domains, spine.largest_free_gpus) == (2, 5)
    cluster = frag.tier("cluster")
    assert (cluster.domains, cluster.largest_free_gpus) == (1, 10)
    assert dict(cluster.largest_free_pods) == {1: 10, 2: 4, 4: 2, 8: 0}
    assert [t.tier for t in frag.tiers] == list(TIERS)


def test_empty_cluster_is_all_free_and_whole() -> None:
    snapshot = make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=2, domain_nodes=2)
    frag = measure_fragmentation(snapshot)
    assert frag.free_gpus == frag.schedulable_gpus == 32
    assert frag.tier("node").free_domains == 4
    assert frag.tier("nvlink_domain").free_domains == 2
    assert frag.tier("nvlink_domain").largest_free_gpus == 16
    assert frag.tier("rail_group").largest_free_pods[8] == 2
    assert frag.tier("cluster").largest_free_pods[8] == 4


@pytest.mark.parametrize(
    ("gpus_per_pod", "parallelism"),
    [(8, {"tensor": 8, "data": 4}), (4, {"tensor": 8, "data": 2}), (8, {"tensor": 4, "data": 8})],
)
def test_a_fresh_decision_has_the_quality_of_its_recorded_plan(
    gpus_per_pod: int, parallelism: dict[str, int]
) -> None:
    # The operator reads a new plan's quality off the decision; a plan read back from status
    # is priced. Both must agree, or the metrics would change after an operator restart.
    snapshot = make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=4)
    request = _request(gpus_per_pod, **parallelism)
    decision = plan_placement(snapshot, request, PROFILE)
    assert decision.feasible
    fresh = decision_quality(snapshot, decision)
    recorded = _assess(snapshot, request, list(decision.pods))
    assert fresh is not None and recorded is not None
    assert fresh.tensor_groups_crossing_nvlink == recorded.tensor_groups_crossing_nvlink
    assert fresh.data_groups_crossing_rail_group == recorded.data_groups_crossing_rail_group
    assert fresh.spine_bytes_per_step == pytest.approx(recorded.spine_bytes_per_step)


def test_no_quality_for_an_infeasible_decision() -> None:
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=1)
    decision = plan_placement(snapshot, _request(tensor=8, data=64), PROFILE)
    assert not decision.feasible and decision_quality(snapshot, decision) is None
