"""packing: free capacity per tier and the packing loss of a candidate (best fit, no scoring)."""

from __future__ import annotations

import pytest

from fabricfit.placement.packing import PACKING_TIERS, FreeCapacity, free_capacity, packing_loss
from fabricfit.placement.slots import PodSlot, build_leaf_domains
from unit.placement.clusters import make_cluster

NODE, NVLINK, RAIL_GROUP, SPINE = range(len(PACKING_TIERS))

# Two rail groups of four 8-GPU nodes: n000 has 1 GPU free, n001 4, n004 is full, the rest free.
USED = {"n000": 7, "n001": 4, "n004": 8}


def _free() -> FreeCapacity:
    return free_capacity(make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=4, used=USED))


def _slots(nodes: tuple[str, ...], gpus_per_pod: int) -> tuple[PodSlot, ...]:
    """One slot per named node (a node named twice gives two of its windows)."""
    snapshot = make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=4, used=USED)
    by_node: dict[str, list[PodSlot]] = {}
    for domain in build_leaf_domains(snapshot.nodes, gpus_per_pod, {}):
        for slot in domain.slots:
            by_node.setdefault(slot.node, []).append(slot)
    return tuple(by_node[n].pop() for n in nodes)


def test_tiers_count_free_gpus_at_the_node_and_whole_nodes_above() -> None:
    free = _free()
    assert PACKING_TIERS == ("node", "nvlink_domain", "rail_group", "spine")
    assert free.per_domain[NODE]["n000"] == 1
    assert free.per_domain[NODE]["n004"] == 0
    rail_group = free.per_domain[RAIL_GROUP]
    assert rail_group == {"s0|rg:s0/rg0": 16, "s0|rg:s0/rg1": 24}  # n002, n003 | n005-n007
    assert free.per_domain[SPINE] == {"s0": 40}
    assert free.whole["n001"] == 0 and free.whole["n002"] == 8


def test_reservations_and_unavailable_nodes_count_as_used() -> None:
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=3, unavailable=("n002",))
    free = free_capacity(snapshot, {"n001": 2})
    assert free.per_domain[NODE] == {"n000": 8, "n001": 6}
    assert free.per_domain[RAIL_GROUP] == {"s0|rg:s0/rg0": 8}


@pytest.mark.parametrize(
    ("tighter", "looser", "gpus_per_pod", "tier"),
    [
        # a pod that fits a half-used node breaks no whole node
        (("n000",), ("n002",), 1, NODE),
        (("n001",), ("n005",), 4, NODE),
        # whole nodes: the rail group with less whole-node room first
        (("n002",), ("n005",), 8, RAIL_GROUP),
        # a block from the tighter rail group rather than spread over two
        (("n002", "n003"), ("n002", "n005"), 8, RAIL_GROUP),
        # two half-node pods on one free node rather than half of two nodes
        (("n002", "n002"), ("n002", "n003"), 4, NODE),
    ],
)
def test_best_fit_has_the_lower_loss_at_the_deciding_tier(
    tighter: tuple[str, ...], looser: tuple[str, ...], gpus_per_pod: int, tier: int
) -> None:
    free = _free()
    better = packing_loss(free, _slots(tighter, gpus_per_pod), gpus_per_pod)
    worse = packing_loss(free, _slots(looser, gpus_per_pod), gpus_per_pod)
    assert better[:tier] == worse[:tier]
    assert better[tier] < worse[tier]
    assert better < worse


def test_loss_is_the_drop_in_squared_free_capacity() -> None:
    free = _free()
    # n001: 4 of 4 free GPUs (16 -> 0); no whole node broken
    assert packing_loss(free, _slots(("n001",), 4), 4) == (16, 0, 0, 0)
    # n002: 8 of 8 free; rail group rg0 16 -> 8 whole-node GPUs, spine 40 -> 32
    assert packing_loss(free, _slots(("n002",), 8), 8) == (64, 64, 256 - 64, 1600 - 1024)


def test_a_node_unknown_to_the_census_is_its_own_domain() -> None:
    free = free_capacity(make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=1))
    stranger = PodSlot(node="x", position=0, gpus=(0, 1), spine="s", leaf="l", rack="r",
                       nvlink_domain="x")  # fmt: skip
    assert packing_loss(free, (stranger,), 2) == (4, 0, 0, 0)
