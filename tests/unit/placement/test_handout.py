"""What the device plugin hands out: a node's lowest free windows, in two orders of arrival."""

from __future__ import annotations

from fabricfit.placement.constraints import NO_RESERVATIONS
from fabricfit.placement.handout import Handout
from fabricfit.placement.slots import build_leaf_domains, node_slots
from unit.placement.clusters import make_cluster


def test_the_pods_of_a_node_take_its_lowest_free_windows() -> None:
    # n000 has GPUs 0-3 in use (the convention: running pods hold the lowest): one free window
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=3, used={"n000": 4})
    domains = build_leaf_domains(snapshot.nodes, 2, NO_RESERVATIONS)
    handout = Handout(domains)
    high = {n: node_slots(snapshot.node(n), 2, NO_RESERVATIONS) for n in ("n000", "n001")}
    asked = (high["n001"][3], high["n000"][1], high["n001"][2])  # the plan wanted high windows
    # n001 is the first node used and keeps pod-index order; n000, the second, holds one pod,
    # so the reversed order is the same hand-out: priced once
    (first,) = handout.orders(asked)
    assert [(s.node, s.gpus) for s in first] == [
        ("n001", (0, 1)),
        ("n000", (4, 5)),
        ("n001", (2, 3)),
    ]
    # with n000 first, n001 is the second node: its two pods may come in either order
    reordered = (asked[1], asked[0], asked[2])
    one, two = handout.orders(reordered)
    assert [(s.node, s.gpus) for s in one] == [("n000", (4, 5)), ("n001", (0, 1)), ("n001", (2, 3))]
    assert [(s.node, s.gpus) for s in two] == [("n000", (4, 5)), ("n001", (2, 3)), ("n001", (0, 1))]


def test_full_node_pods_have_one_order() -> None:
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=2)
    domains = build_leaf_domains(snapshot.nodes, 8, NO_RESERVATIONS)
    slots = tuple(s for d in domains for s in d.slots)
    assert Handout(domains).orders(slots) == (slots,)
