"""Draining nodes in maintenance from plans: which pods, which wait to move, what is held."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.maintenance import (
    Move,
    drained,
    in_maintenance,
    pending_holds,
    waiting_moves,
)
from unit.placement.clusters import make_cluster


def cluster(maintenance: tuple[str, ...] = (), down: tuple[str, ...] = ()) -> ClusterSnapshot:
    snapshot = make_cluster(unavailable=down)
    return ClusterSnapshot(
        tuple(
            dataclasses.replace(n, available=False, maintenance=True)
            if n.name in maintenance
            else n
            for n in snapshot.nodes
        )
    )


def test_only_nodes_in_maintenance_are_drained() -> None:
    snapshot = cluster(maintenance=("n001",), down=("n002",))
    plan = ("n000", "n001", "n002", "n001", "gone")
    assert drained(plan, snapshot) == (1, 3)  # NotReady and deleted nodes wait for new pods
    assert in_maintenance(snapshot, "n001") and not in_maintenance(snapshot, "gone")


def test_pods_still_on_a_drained_node_wait_to_move() -> None:
    snapshot = cluster(maintenance=("n001",))
    plan = ("n000", "n005", "n006")
    bound = {0: "n000", 1: "n001", 2: "n003"}  # pod 2 is off plan, but not in maintenance
    assert waiting_moves(plan, bound, snapshot) == (Move(index=1, source="n001", target="n005"),)
    assert waiting_moves(plan, {1: "n005"}, snapshot) == ()
    assert waiting_moves(("n001",), {0: "n001"}, snapshot) == ()  # not re-placed yet


def test_pending_holds_count_the_jobs_pods_not_bound_where_planned() -> None:
    plan = ("n000", "n005", "n005", "n006")
    bound = {0: "n000", 1: "n001"}  # pod 1 still runs on its drained node; 2, 3 not bound
    assert pending_holds(plan, bound, lost=(), gpus_per_pod=4) == {"n005": 8, "n006": 4}
    assert pending_holds(plan, bound, lost=(3,), gpus_per_pod=4) == {"n005": 8}
    assert pending_holds(plan, dict(enumerate(plan)), lost=(), gpus_per_pod=4) == {}


@given(
    st.lists(st.sampled_from([f"n{i:03d}" for i in range(8)]), min_size=1, max_size=12),
    st.dictionaries(st.integers(0, 11), st.sampled_from([f"n{i:03d}" for i in range(8)])),
    st.sets(st.integers(0, 11)),
)
def test_pending_holds_cover_exactly_the_unbound_planned_pods(
    plan: list[str], bound: dict[int, str], lost: set[int]
) -> None:
    holds = pending_holds(plan, bound, lost, gpus_per_pod=2)
    expected = sum(1 for i, n in enumerate(plan) if i not in lost and bound.get(i) != n)
    assert sum(holds.values()) == 2 * expected
    assert set(holds) <= set(plan)
