"""Pricing a placement another scheduler made (pod index -> node), by fabricfit's cost model."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.fabric.profiles import get_profile
from fabricfit.placement.costing import StepModel
from fabricfit.placement.layout import build_layout
from fabricfit.placement.peers import kueue_bestfit
from fabricfit.placement.pricing import locate_pods, price_pods
from fabricfit.placement.request import ENFORCED, NOT_ENFORCED, PlacementRequest
from fabricfit.placement.search import plan_placement
from fabricfit.placement.slots import build_leaf_domains
from unit.placement.clusters import make_cluster

PROFILE = get_profile("h100-leaf-spine-2to1")
MODEL = ModelShape(parameters=8_000_000_000, hidden_size=4096, layers=32, zero_stage=3)


def _request(gpus_per_pod: int = 8, **parallelism: int) -> PlacementRequest:
    return PlacementRequest(
        parallelism=Parallelism(**parallelism),  # type: ignore[arg-type]
        gpus_per_pod=gpus_per_pod,
        model=MODEL,
    )


def test_fabricfits_own_plan_prices_as_it_predicted() -> None:
    snapshot = make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=4)
    request = _request(tensor=8, data=4)
    decision = plan_placement(snapshot, request, PROFILE)
    assert decision.predicted is not None
    priced = price_pods(snapshot, request, PROFILE, decision.pods)
    assert priced.predicted.step_comm_seconds == pytest.approx(
        decision.predicted.step_comm_seconds, rel=1e-9
    )
    assert sum(priced.rail_groups.values()) == 4 and len(priced.rail_groups) == 1
    assert priced.quality.data_groups_crossing_rail_group == 0


def test_pods_take_the_lowest_free_windows_of_their_node_in_index_order() -> None:
    # n000 has its lowest 4 GPUs taken by another tenant; n001 is empty.
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=2, used={"n000": 4})
    slots = locate_pods(snapshot, ["n001", "n000", "n001"], 4)
    assert [(s.node, s.gpus) for s in slots] == [
        ("n001", (0, 1, 2, 3)),
        ("n000", (4, 5, 6, 7)),
        ("n001", (4, 5, 6, 7)),
    ]


def test_a_placement_that_cannot_be_located_is_a_clear_value_error() -> None:
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=2, used={"n000": 4})
    with pytest.raises(ValueError, match="no free window of 4 GPUs"):
        locate_pods(snapshot, ["n000", "n000"], 4)
    with pytest.raises(ValueError, match="'nx', which the snapshot lacks"):
        locate_pods(snapshot, ["nx"], 8)
    with pytest.raises(ValueError, match="the job has 2 pods, the placement names 1"):
        price_pods(snapshot, _request(tensor=8, data=2), PROFILE, ["n001"])


def test_data_parallel_split_over_rail_groups_costs_more_on_an_oversubscribed_spine() -> None:
    snapshot = make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=4)
    request = _request(tensor=8, data=4)
    inside = price_pods(snapshot, request, PROFILE, ["n000", "n001", "n002", "n003"])
    split = price_pods(snapshot, request, PROFILE, ["n000", "n001", "n004", "n005"])
    assert split.predicted.step_comm_seconds > inside.predicted.step_comm_seconds
    assert len(split.rail_groups) == 2 and split.quality.data_groups_crossing_rail_group == 8
    assert split.spines == {"s0": 4}
    assert split.predicted.spine_bytes_per_step > 0 == inside.predicted.spine_bytes_per_step


def test_a_peers_slots_read_back_as_nodes_price_as_the_peer_predicted() -> None:
    # What a benchmark sees of Kueue is the node of each pod; the GPU convention must give back
    # the windows the emulation chose, so both views of the same placement price the same.
    used = {"n000": 4, "n001": 2, "n002": 8, "n005": 1, "n006": 4}
    snapshot = make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=4, used=used)
    request = _request(gpus_per_pod=4, tensor=4, data=5)
    layout = build_layout(request.parallelism, 4, request.rank_order)
    domains = build_leaf_domains([n for n in snapshot.nodes if n.free_gpus >= 4], 4, {})
    peer = kueue_bestfit(domains, layout.pods)
    assert peer is not None
    model = StepModel(snapshot, layout, request, PROFILE)
    expected = model.predict(model.rank_slots(peer)).step_comm_seconds
    priced = price_pods(snapshot, request, PROFILE, [s.node for s in peer])
    assert priced.slots == peer
    assert priced.predicted.step_comm_seconds == pytest.approx(expected, rel=1e-12)


def test_unenforced_gpus_are_priced_in_the_worse_hand_out_order() -> None:
    """Two 4-GPU pods on each of two nodes: kubelet admits them in either order, so unless the
    choice is enforced a data-parallel pair may start on different rails; never priced better
    than the windows in pod-index order, and here worse."""
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=2)
    request = _request(4, tensor=4, data=2, pipeline=2)
    pods = ["n001", "n000", "n001", "n000"]
    enforced = price_pods(snapshot, replace(request, gpu_choice=ENFORCED), PROFILE, pods)
    handed = price_pods(snapshot, replace(request, gpu_choice=NOT_ENFORCED), PROFILE, pods)
    assert [s.gpus for s in enforced.slots] == [(0, 1, 2, 3)] * 2 + [(4, 5, 6, 7)] * 2
    assert sorted(s.gpus for s in handed.slots) == sorted(s.gpus for s in enforced.slots)
    assert handed.predicted.step_comm_seconds > 1.2 * enforced.predicted.step_comm_seconds
    whole = _request(8, tensor=8, data=2)  # one window per node: one order, one price
    assert (
        price_pods(snapshot, whole, PROFILE, ["n000", "n001"]).predicted
        == price_pods(
            snapshot, replace(whole, gpu_choice=ENFORCED), PROFILE, ["n000", "n001"]
        ).predicted
    )
