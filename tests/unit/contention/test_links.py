"""Link capacities follow the fabric profile the cost model prices with."""

from __future__ import annotations

import dataclasses

import pytest

from fabricfit.contention import LEAF, NIC, SPINE, UP, Link, link_capacities
from fabricfit.fabric.profiles import get_profile
from unit.placement.clusters import make_cluster

TWO_TO_ONE = get_profile("h100-leaf-spine-2to1")
LINE = 400e9 / 8  # one 400G NIC, bytes/s


def test_leaf_uplinks_carry_their_rail_members_over_the_oversubscription() -> None:
    snapshot = make_cluster(spines=2, rail_groups_per_spine=2, nodes_per_rail_group=4)
    caps = link_capacities(snapshot, TWO_TO_ONE)
    eta = TWO_TO_ONE.fabric_sharing_efficiency
    assert caps.of(Link(LEAF, "s0/rg0", 3, UP)) == pytest.approx(4 * LINE / 2 * eta)
    # a spine block's uplinks: its 8 nodes x 8 rails over max(leaf, spine) oversubscription
    assert caps.of(Link(SPINE, "s1", -1, UP)) == pytest.approx(64 * LINE / 2 * eta)
    assert caps.of(Link(NIC, "n000", 0, UP)) == pytest.approx(
        LINE * TWO_TO_ONE.nic_sharing_efficiency
    )


def test_a_node_without_rail_group_is_its_own_leaf() -> None:
    snapshot = make_cluster(nodes_per_rail_group=2, with_rail_groups=False)
    caps = link_capacities(snapshot, TWO_TO_ONE)
    one_node = LINE / 2 * TWO_TO_ONE.fabric_sharing_efficiency
    assert caps.of(Link(LEAF, "node:n001", 0, UP)) == pytest.approx(one_node)
    assert caps.of(Link(LEAF, "node:unknown", 0, UP)) == pytest.approx(one_node)


def test_the_spine_rule_is_the_larger_oversubscription() -> None:
    snapshot = make_cluster(spines=2, rail_groups_per_spine=1, nodes_per_rail_group=2)
    tapered = dataclasses.replace(TWO_TO_ONE, spine_oversubscription=4.0)
    caps = link_capacities(snapshot, tapered)
    assert caps.of(Link(SPINE, "s0", -1, UP)) == pytest.approx(
        16 * LINE / 4 * tapered.fabric_sharing_efficiency
    )
