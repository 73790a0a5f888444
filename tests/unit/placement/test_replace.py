"""Re-placing lost pods keeps healthy pods fixed and picks the node that costs least."""

from __future__ import annotations

from fabricfit.api.models import Parallelism
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import ClusterSnapshot, FabricPlace, NodeInfo
from fabricfit.placement.replace import replace_pods
from fabricfit.placement.request import PlacementRequest

PROFILE = get_profile("dgx-h100")


def node(name: str, group: str, free: int = 8, available: bool = True) -> NodeInfo:
    place = FabricPlace(spine="s", rail_group=f"s/{group}", rack=f"s/{group}/r", nvlink_domain=name)
    return NodeInfo(name=name, gpus=8, free_gpus=free, rails=8, place=place, available=available)


def request(data: int) -> PlacementRequest:
    return PlacementRequest(parallelism=Parallelism(tensor=8, data=data), gpus_per_pod=8)


def cluster(lost_node_available: bool = False, spare_in_group: bool = True) -> ClusterSnapshot:
    nodes = [node(f"a{i}", "rg0", free=0) for i in range(1, 4)]  # running pods 1..3
    nodes.append(node("a0", "rg0", free=8, available=lost_node_available))
    if spare_in_group:
        nodes.append(node("a9", "rg0"))
    nodes += [node(f"b{i}", "rg1") for i in range(4)]
    return ClusterSnapshot(tuple(sorted(nodes, key=lambda n: n.name)))


def test_lost_pod_stays_in_the_rail_group_of_its_dp_peers() -> None:
    result = replace_pods(
        cluster(), request(4), PROFILE, ["a0", "a1", "a2", "a3"], {0}, reservations={}
    )
    assert result is not None
    assert result.pods == ("a9", "a1", "a2", "a3")
    assert result.moved == {0: "a9"}


def test_without_a_spare_in_the_group_it_crosses_the_spine_and_pays_for_it() -> None:
    snapshot = cluster(spare_in_group=False)
    result = replace_pods(
        snapshot, request(4), PROFILE, ["a0", "a1", "a2", "a3"], {0}, reservations={}
    )
    assert result is not None
    assert result.pods[0].startswith("b")
    in_group = replace_pods(
        cluster(), request(4), PROFILE, ["a0", "a1", "a2", "a3"], {0}, reservations={}
    )
    assert in_group is not None
    assert result.predicted.step_comm_seconds >= in_group.predicted.step_comm_seconds


def test_reservations_of_other_plans_are_respected() -> None:
    result = replace_pods(
        cluster(), request(4), PROFILE, ["a0", "a1", "a2", "a3"], {0}, reservations={"a9": 8}
    )
    assert result is not None
    assert result.pods[0] != "a9"


def test_two_lost_pods_never_share_one_node() -> None:
    snapshot = ClusterSnapshot(
        (node("a0", "rg0", available=False), node("a1", "rg0", available=False), node("c0", "rg0"))
    )
    assert (
        replace_pods(snapshot, request(2), PROFILE, ["a0", "a1"], {0, 1}, reservations={}) is None
    )


def test_deterministic() -> None:
    args = (cluster(), request(4), PROFILE, ["a0", "a1", "a2", "a3"], {0})
    assert replace_pods(*args, reservations={}) == replace_pods(*args, reservations={})
