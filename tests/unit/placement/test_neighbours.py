"""Planning next to running jobs: priced with their traffic, steered off their busy links."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.contention import DOWN, LEAF, NIC, UP, DimensionTraffic, JobTraffic, Link
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.neighbours import Neighbours, neighbours_of, quiet_spines
from fabricfit.placement.pricing import price_pods
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.running import job_traffic
from fabricfit.placement.search import plan_placement
from fabricfit.placement.slots import build_leaf_domains
from unit.placement.clusters import make_cluster

RAIL_ONLY = get_profile("h100-rail-only")
DENSE = ModelShape(parameters=13_000_000_000, hidden_size=5120, layers=40)
# Two spines of two rail groups of four nodes; two nodes of every rail group are taken.
TAKEN = ("n000", "n001", "n004", "n005", "n008", "n009", "n012", "n013")
SNAPSHOT = make_cluster(
    spines=2, rail_groups_per_spine=2, nodes_per_rail_group=4, used=dict.fromkeys(TAKEN, 8)
)
JOB = PlacementRequest(parallelism=Parallelism(tensor=8, data=4), model=DENSE)


def busy(places: tuple[str, ...], share: float, snapshot: ClusterSnapshot = SNAPSHOT) -> Neighbours:
    """A running job whose traffic loads every rail uplink of ``places`` to ``share`` of it."""
    empty = neighbours_of(snapshot, RAIL_ONLY)
    links = [Link(LEAF, p, r, d) for p in places for r in range(8) for d in (UP, DOWN)]
    amounts = {link: share * empty.capacities.of(link) for link in links}
    job = JobTraffic("team/busy", 32, 1.0, (DimensionTraffic("expert", 1.0, amounts),))
    return neighbours_of(snapshot, RAIL_ONLY, [job])


def spines_of(pods: tuple[str, ...]) -> set[str]:
    return {SNAPSHOT.node(p).place.spine for p in pods}


def test_without_neighbours_the_job_takes_the_tightest_spine() -> None:
    decision = plan_placement(SNAPSHOT, JOB, RAIL_ONLY)
    assert spines_of(decision.pods) == {"s0"}
    assert decision.predicted is not None
    assert decision.predicted.neighbour_slowdown_seconds is None


def test_an_empty_load_changes_nothing_but_says_so() -> None:
    alone = plan_placement(SNAPSHOT, JOB, RAIL_ONLY)
    quiet = plan_placement(SNAPSHOT, JOB, RAIL_ONLY, neighbours=neighbours_of(SNAPSHOT, RAIL_ONLY))
    assert quiet.pods == alone.pods and quiet.predicted is not None and alone.predicted
    assert quiet.predicted.step_comm_seconds == alone.predicted.step_comm_seconds
    assert quiet.predicted.neighbour_slowdown_seconds == 0.0
    assert quiet.to_json_dict()["predicted"]["slowdown_added_to_others_seconds"] == 0.0


def test_a_job_that_ties_alone_leaves_the_busy_spine() -> None:
    neighbours = busy(("s0/rg0", "s0/rg1"), 0.95)
    decision = plan_placement(SNAPSHOT, JOB, RAIL_ONLY, neighbours=neighbours)
    alone = plan_placement(SNAPSHOT, JOB, RAIL_ONLY)
    assert spines_of(decision.pods) == {"s1"}
    assert decision.predicted is not None and alone.predicted is not None
    assert decision.predicted.step_comm_seconds == pytest.approx(alone.predicted.step_comm_seconds)
    assert decision.predicted.neighbour_slowdown_seconds == 0.0


def test_with_no_quiet_spine_the_job_pays_its_neighbours_traffic() -> None:
    neighbours = busy(("s0/rg0", "s0/rg1", "s1/rg2", "s1/rg3"), 0.95)
    decision = plan_placement(SNAPSHOT, JOB, RAIL_ONLY, neighbours=neighbours)
    alone = plan_placement(SNAPSHOT, JOB, RAIL_ONLY)
    assert decision.predicted is not None and alone.predicted is not None
    slowdown = decision.predicted.neighbour_slowdown_seconds
    assert slowdown is not None and slowdown > 0
    assert decision.predicted.alone_step_comm_seconds == pytest.approx(
        alone.predicted.step_comm_seconds
    )
    added = decision.predicted.slowdown_added_to_others_seconds
    assert added is not None and added > 0
    assert decision.predicted.added_to_others_gpu_seconds > 0
    json = decision.to_json_dict()["predicted"]
    assert json["neighbour_slowdown_seconds"] == slowdown
    assert json["step_comm_seconds"] == pytest.approx(alone.predicted.step_comm_seconds + slowdown)


def test_quiet_spines_rank_by_their_busiest_leaf_uplink() -> None:
    domains = build_leaf_domains(SNAPSHOT.nodes, 8, {})
    assert quiet_spines(domains, busy(("s0/rg1",), 0.5), 2) == ("s1", "s0")
    assert quiet_spines(domains, busy(("s1/rg2",), 0.5), 1) == ("s0",)


def test_a_running_job_records_nic_links_only_on_nodes_it_shares() -> None:
    snapshot = make_cluster(spines=1, rail_groups_per_spine=2, nodes_per_rail_group=2)
    request = PlacementRequest(
        parallelism=Parallelism(tensor=4, data=4), gpus_per_pod=4, model=DENSE
    )
    pods = ("n000", "n000", "n002", "n003")  # whole n000; half of n002 and of n003
    comm = price_pods(snapshot, request, RAIL_ONLY, pods).predicted.step_comm_seconds
    traffic = job_traffic(snapshot, request, RAIL_ONLY, pods, key="ns/a", comm_seconds=comm)
    assert traffic is not None
    nic_nodes = {link.place for link in traffic.links if link.kind == NIC}
    assert nic_nodes == {"n002", "n003"}
    assert traffic.step_seconds > comm
    assert job_traffic(snapshot, request, RAIL_ONLY, ("n000",), key="x", comm_seconds=1) is None


@settings(max_examples=40)
@given(
    st.sets(st.sampled_from(["s0/rg0", "s0/rg1", "s1/rg2", "s1/rg3"]), min_size=1),
    st.floats(0.05, 1.5),
    st.integers(1, 6),
    st.sets(st.sampled_from([f"n{i:03d}" for i in range(16)]), max_size=8),
)
def test_neighbours_only_ever_add_and_never_overbook(
    places: set[str], share: float, data: int, full: set[str]
) -> None:
    """Next to any load a plan costs no less than alone on the same placement, what it adds
    is never negative, and it uses only free GPUs."""
    snapshot = make_cluster(
        spines=2, rail_groups_per_spine=2, nodes_per_rail_group=4, used=dict.fromkeys(full, 8)
    )
    request = PlacementRequest(parallelism=Parallelism(tensor=8, data=data), model=DENSE)
    neighbours = busy(tuple(sorted(places)), share, snapshot)
    decision = plan_placement(snapshot, request, RAIL_ONLY, neighbours=neighbours)
    if not decision.feasible:
        return
    predicted = decision.predicted
    assert predicted is not None
    assert (predicted.neighbour_slowdown_seconds or 0) >= 0
    assert (predicted.slowdown_added_to_others_seconds or 0) >= 0
    alone = price_pods(snapshot, request, RAIL_ONLY, decision.pods).predicted
    assert predicted.step_comm_seconds >= alone.step_comm_seconds * (1 - 1e-9)
    # Another scheduler's placement is priced next to them the same way (pricing.price_pods).
    again = price_pods(snapshot, request, RAIL_ONLY, decision.pods, neighbours=neighbours)
    assert again.predicted.step_comm_seconds == pytest.approx(predicted.step_comm_seconds)
    assert again.predicted.alone_step_comm_seconds == pytest.approx(alone.step_comm_seconds)
    assert not full & set(decision.pods)
    assert len(decision.pods) == len(set(decision.pods)) == data
