"""A placed job's bytes per shared link and network seconds, from the cost model."""

from __future__ import annotations

import pytest

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.contention import DOWN, LEAF, NIC, SPINE, UP, Link, dimension_traffic
from fabricfit.cost.step import estimate_step
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import ClusterSnapshot, GpuSlot
from fabricfit.placement.layout import build_layout
from unit.placement.clusters import make_cluster

TWO_TO_ONE = get_profile("h100-leaf-spine-2to1")
SNAPSHOT = make_cluster(spines=2, rail_groups_per_spine=2, nodes_per_rail_group=2)
DENSE = ModelShape(parameters=13_000_000_000, hidden_size=5120, layers=40)


def ranks_on(snapshot: ClusterSnapshot, nodes: list[str]) -> list[GpuSlot]:
    return [snapshot.slot(n, g) for n in nodes for g in range(8)]


def traffic(parallelism: Parallelism, nodes: list[str], model: ModelShape = DENSE) -> dict:
    layout = build_layout(parallelism, 8, "tp-cp-ep-dp-pp")
    ranks = ranks_on(SNAPSHOT, nodes)
    dims = dimension_traffic(layout.groups, ranks, parallelism, model, TWO_TO_ONE)
    return {d.dimension: d for d in dims}


def test_a_data_ring_inside_one_rail_group_uses_nics_only() -> None:
    data = traffic(Parallelism(tensor=8, data=2), ["n000", "n001"])["data"]
    assert {link.kind for link in data.bytes_per_step} == {NIC}
    assert data.net_seconds > 0


def test_a_rail_aligned_ring_climbs_once_per_rail_group_on_every_rail() -> None:
    parallelism = Parallelism(tensor=8, data=4)
    data = traffic(parallelism, ["n000", "n001", "n002", "n003"])["data"]
    leaf = {k: v for k, v in data.bytes_per_step.items() if k.kind == LEAF}
    assert set(leaf) == {
        Link(LEAF, f"s0/rg{g}", rail, d) for g in (0, 1) for rail in range(8) for d in (UP, DOWN)
    }
    assert len(set(leaf.values())) == 1  # the same bytes on every rail and direction
    # the bytes climbing equal the cost model's spine bytes for the dimension
    layout = build_layout(parallelism, 8, "tp-cp-ep-dp-pp")
    ranks = ranks_on(SNAPSHOT, ["n000", "n001", "n002", "n003"])
    spine = estimate_step(layout.groups, ranks, parallelism, DENSE, TWO_TO_ONE)
    climbing = sum(v for k, v in leaf.items() if k.direction == UP)
    assert climbing == pytest.approx(spine.spine_bytes_per_step)
    assert not any(k.kind == SPINE for k in data.bytes_per_step)


def test_crossing_spine_blocks_loads_both_blocks_spine_links() -> None:
    data = traffic(Parallelism(tensor=8, data=2), ["n000", "n004"])["data"]
    spine = {k: v for k, v in data.bytes_per_step.items() if k.kind == SPINE}
    assert set(spine) == {Link(SPINE, s, -1, d) for s in ("s0", "s1") for d in (UP, DOWN)}


def test_network_seconds_ignore_the_oversubscription() -> None:
    """The flows push at line rate when no uplink is in their way: less than the price."""
    parallelism = Parallelism(tensor=8, data=4)
    nodes = ["n000", "n001", "n002", "n003"]
    data = traffic(parallelism, nodes)["data"]
    layout = build_layout(parallelism, 8, "tp-cp-ep-dp-pp")
    price = estimate_step(layout.groups, ranks_on(SNAPSHOT, nodes), parallelism, DENSE, TWO_TO_ONE)
    assert 0 < data.net_seconds < price.by_dimension["data"]


def test_an_all_to_all_sends_the_share_of_ranks_outside_each_rail_group() -> None:
    moe = ModelShape(parameters=47_000_000_000, hidden_size=4096, layers=32, experts=8, top_k=2)
    parallelism = Parallelism(tensor=8, data=4, expert=4)
    expert = traffic(parallelism, ["n000", "n001", "n002", "n003"], moe)["expert"]
    up = {k: v for k, v in expert.bytes_per_step.items() if k.kind == LEAF and k.direction == UP}
    nic = {k: v for k, v in expert.bytes_per_step.items() if k.kind == NIC and k.direction == UP}
    # a rail group holds 2 of the 4 ranks of each expert group: half of what each node sends
    # to other nodes (3 of 4 ranks) leaves its rail group: per rail, 2 nodes x 1/2 vs 3/4
    per_rail = sum(v for k, v in up.items() if k.place == "s0/rg0" and k.rail == 0)
    per_nic = nic[Link(NIC, "n000", 0, UP)]
    assert per_rail == pytest.approx(2 * per_nic * (2 / 4) / (3 / 4))


def test_pipeline_pairs_off_the_rail_leaf_climb() -> None:
    parallelism = Parallelism(tensor=8, pipeline=2)
    same = traffic(parallelism, ["n000", "n001"])["pipeline"]
    across = traffic(parallelism, ["n000", "n002"])["pipeline"]
    assert all(k.kind == NIC for k in same.bytes_per_step)
    assert Link(LEAF, "s0/rg0", 0, UP) in across.bytes_per_step
    assert Link(LEAF, "s0/rg1", 0, UP) in across.bytes_per_step  # the gradients back


def test_nic_links_only_on_the_nodes_asked_for_and_none_on_a_torus() -> None:
    parallelism = Parallelism(tensor=8, data=4)
    layout = build_layout(parallelism, 8, "tp-cp-ep-dp-pp")
    ranks = ranks_on(SNAPSHOT, ["n000", "n001", "n002", "n003"])
    dims = dimension_traffic(
        layout.groups, ranks, parallelism, DENSE, TWO_TO_ONE, nic_nodes={"n001"}
    )
    nic_places = {k.place for d in dims for k in d.bytes_per_step if k.kind == NIC}
    assert nic_places == {"n001"}
    tpu = get_profile("tpu-v4")
    assert dimension_traffic(layout.groups, ranks, parallelism, DENSE, tpu) == ()
