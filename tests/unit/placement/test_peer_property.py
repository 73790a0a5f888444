"""fabricfit against Kueue TAS BestFit: what holds by construction, and what the search adds.

The search adds the peer's placements (``placement.peers.kueue_bestfit`` with the job preferred
or required at each topology level: spine, rail group, rack, hostname) to its candidates and
never returns a plan that prices above any of them (``kueuefloor.no_worse_than_peer``). So
"fabricfit never predicts more than Kueue" holds *by construction*: the property test below
checks that the emulation stays among the candidates and the guard stays in place, not that the
search is good. Two tests here can fail for the search itself: with the emulation taken out of
the candidates (a broken search), the independently priced emulation beats the plan on a cluster
found by measurement, so the guard is load-bearing; and where BestFit ignores rails and tapers,
the plan must beat the emulation by a wide margin, which only the search's own candidates can
do. Quality against the exhaustive optimum is ``test_exact.py``.

Hypothesis draws leaf/spine clusters with rail groups, racks, NVLink domains of one or several
nodes and GPUs already in use on random nodes (fragmentation), jobs of every common shape and
pod size, and the full-bisection, 2:1 and rail-only fabrics.
"""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.fabric.profiles import FabricProfile, get_profile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement import kueuefloor
from fabricfit.placement.costing import StepModel
from fabricfit.placement.handout import Handout
from fabricfit.placement.layout import build_layout
from fabricfit.placement.peers import kueue_bestfit
from fabricfit.placement.peers.kueue_bestfit import LEVELS
from fabricfit.placement.pricing import price_pods
from fabricfit.placement.request import ENFORCED, GPU_CHOICES, PlacementRequest
from fabricfit.placement.scoring import price_slots
from fabricfit.placement.search import plan_placement
from fabricfit.placement.slots import build_leaf_domains
from unit.placement.clusters import full_except, make_cluster

PROFILES = ["dgx-h100", "h100-leaf-spine-2to1", "h100-rail-only", "gb200-nvl72"]
ORDERS = ["tp-cp-ep-dp-pp", "tp-pp-dp", "tp-dp-pp"]


@st.composite
def jobs(draw: st.DrawFn, gpus: int) -> PlacementRequest:
    gpus_per_pod = draw(st.sampled_from([g for g in (1, 2, 4, 8) if g <= gpus]))
    tensor = draw(st.sampled_from([1, 2, 4, 8]))
    pipeline = draw(st.integers(1, 4))
    expert = draw(st.sampled_from([1, 1, 2, 4]))
    data = expert * draw(st.integers(1, 4))
    if (tensor * pipeline * data) % gpus_per_pod:
        gpus_per_pod = 1
    moe = expert > 1
    return PlacementRequest(
        gpu_choice=draw(st.sampled_from(GPU_CHOICES)),
        parallelism=Parallelism(tensor=tensor, pipeline=pipeline, data=data, expert=expert),
        gpus_per_pod=gpus_per_pod,
        rank_order=draw(st.sampled_from(ORDERS)),
        model=ModelShape(
            layers=max(pipeline, 8),
            hidden_size=draw(st.sampled_from([2048, 4096, 8192])),
            experts=expert * 4 if moe else 0,
            top_k=2 if moe else 0,
            zero_stage=draw(st.sampled_from([0, 1, 3])),
        ),
    )


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_fabricfit_never_predicts_more_than_kueue_bestfit(data: st.DataObject) -> None:
    """By construction (module docstring): fails only if the emulation leaves the candidates
    or the guard goes, as ``test_a_search_without_the_emulation_loses_to_it_here`` shows."""
    gpus = 8
    nodes_per_rail_group = data.draw(st.integers(2, 8), label="nodes per rail group")
    spines, groups = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 3))
    total = spines * groups * nodes_per_rail_group
    names = [f"n{i:03d}" for i in range(total)]
    used = data.draw(
        st.dictionaries(st.sampled_from(names), st.sampled_from([1, 2, 4, 6, 8]), max_size=total),
        label="used GPUs",
    )
    snapshot = make_cluster(
        spines=spines,
        rail_groups_per_spine=groups,
        nodes_per_rail_group=nodes_per_rail_group,
        rack_nodes=2,
        gpus=gpus,
        domain_nodes=data.draw(st.sampled_from([1, 1, 2, 4])),
        interleave=data.draw(st.booleans()),
        used=used,
    )
    request = data.draw(jobs(gpus), label="job")
    profile = get_profile(data.draw(st.sampled_from(PROFILES), label="profile"))
    compared = ours_and_theirs(snapshot, request, profile)
    if compared is None:
        return
    ours, theirs = compared
    assert ours <= theirs * (1 + 1e-9), (ours, theirs)


def ours_and_theirs(
    snapshot: ClusterSnapshot, request: PlacementRequest, profile: FabricProfile
) -> tuple[float, float] | None:
    """Predicted step communication of fabricfit's plan and of the cheapest of Kueue BestFit's
    placements with the job preferred at each level."""
    layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
    g = request.gpus_per_pod
    domains = build_leaf_domains([n for n in snapshot.nodes if n.free_gpus >= g], g, {})
    peers = [kueue_bestfit(domains, layout.pods, level=level) for level in LEVELS]
    decision = plan_placement(snapshot, request, profile)
    if None in peers or not decision.feasible or decision.predicted is None:
        return None
    model = StepModel(snapshot, layout, request, profile)
    # Both priced on the GPUs the pods get: the plan's own windows when fabricfit enforces them,
    # else the device plugin's hand-out (placement.handout), Kueue's pods and ours alike.
    handout = None if request.gpu_choice == ENFORCED else Handout(domains)
    theirs = min(price_slots(model, handout, p).predicted.step_comm_seconds for p in peers if p)
    return decision.predicted.step_comm_seconds, theirs


def test_small_plugins_do_not_outvote_communication_against_the_peer() -> None:
    """Found by the property above before the peer was a candidate: 3 rail groups of 2 nodes,
    12 one-GPU pods, PP4 x DP3; fabricfit's plan predicted 55.0 ms against Kueue's 50.0 ms.
    Since then it holds by construction (the guard ``kueuefloor.no_worse_than_peer``), like the
    property."""
    snapshot = make_cluster(rail_groups_per_spine=3, nodes_per_rail_group=2, rack_nodes=2)
    request = PlacementRequest(
        parallelism=Parallelism(tensor=1, pipeline=4, data=3),
        gpus_per_pod=1,
        rank_order="tp-pp-dp",
        model=ModelShape(hidden_size=2048, layers=8),
    )
    compared = ours_and_theirs(snapshot, request, get_profile("dgx-h100"))
    assert compared is not None
    ours, theirs = compared
    assert ours <= theirs * (1 + 1e-9)


def test_a_job_over_two_spines_is_split_on_the_fewest_rail_groups_as_kueue_does() -> None:
    """Found by the side-by-side benchmark against real Kueue v0.19.2 on gb200-nvl72 (TP4·DP48
    in one-tray pods): no spine held the job, fabricfit filled the fullest spine and put one pod
    behind the other (26 + 21 + 1 pods on three rail groups, 239 ms) while Kueue took the two
    roomiest rail groups (26 + 22, 116 ms). Here: free trays 4 + 5 | 5 + 1, 10 pods; Kueue takes
    5 + 5 (n006-n010, n012-n016). What can fail here is the split across spines and the
    emulation's choice; "no more than Kueue" at the end holds by construction."""
    free = {0: 4, 1: 5, 2: 5, 3: 1}  # rail group -> free trays, 6 trays each, 2 per spine
    names = tuple(f"n{g * 6 + i:03d}" for g, count in free.items() for i in range(count))
    snapshot = make_cluster(
        spines=2,
        rail_groups_per_spine=2,
        nodes_per_rail_group=6,
        rack_nodes=6,
        domain_nodes=6,
        gpus=4,
        used=full_except(24, names, gpus=4),
    )
    request = PlacementRequest(
        parallelism=Parallelism(tensor=4, data=10),
        gpus_per_pod=4,
        model=ModelShape(parameters=7_000_000_000, hidden_size=4096, layers=32),
    )
    kueue = [f"n{i:03d}" for i in (6, 7, 8, 9, 10, 12, 13, 14, 15, 16)]
    domains = build_leaf_domains([n for n in snapshot.nodes if n.free_gpus >= 4], 4, {})
    for level in LEVELS[:2]:  # preferred (or required) spine, preferred rail group
        peer = kueue_bestfit(domains, 10, level=level)
        assert peer is not None
        assert [s.node for s in peer] == kueue
    for name in PROFILES:
        profile = get_profile(name)
        theirs = price_pods(snapshot, request, profile, kueue).predicted
        decision = plan_placement(snapshot, request, profile)
        assert decision.predicted is not None
        spines = {n.name: n.place.spine for n in snapshot.nodes}
        assert sorted(spines[n] for n in decision.pods).count("s1") > 1, name
        assert decision.predicted.step_comm_seconds <= theirs.step_comm_seconds * (1 + 1e-9), name


def test_a_search_without_the_emulation_loses_to_it_here() -> None:
    """The property above, with the search broken on purpose: Kueue's placements taken out of
    its candidates. Found by measuring 300 random cases of the property's distribution that way
    (5 lost, by up to 2.04x): six 2-GPU pods of PP3 x DP4 in rank order tp-pp-dp, on five 8-GPU
    nodes, one its own NVLink domain each. The search packs four pods on the empty node and two
    on the next, so every DP group is 3 + 1 ranks and drives one NIC out of its emptier node;
    BestFit's 3 + 3 pods split each DP group 2 + 2. The emulation priced on its own catches it."""
    snapshot = make_cluster(
        rail_groups_per_spine=1,
        nodes_per_rail_group=5,
        rack_nodes=2,
        used={"n001": 6, "n002": 1, "n003": 1, "n004": 4},
    )
    request = PlacementRequest(
        parallelism=Parallelism(tensor=1, pipeline=3, data=4),
        gpus_per_pod=2,
        rank_order="tp-pp-dp",
        model=ModelShape(hidden_size=2048, layers=8, zero_stage=3),
    )
    profile = get_profile("gb200-nvl72")
    with patch.object(kueuefloor, "peer_candidates", lambda domains, pods: []):
        broken = ours_and_theirs(snapshot, request, profile)
    assert broken is not None
    assert broken[0] > broken[1] * 1.5, broken
    intact = ours_and_theirs(snapshot, request, profile)
    assert intact is not None
    assert intact[0] <= intact[1] * (1 + 1e-9)


@pytest.mark.parametrize(
    ("fabric", "cluster", "used", "job", "rank_order"),
    [
        (  # 2:1 above the leaf; BestFit fills nodes in name order across both spines
            "h100-leaf-spine-2to1",
            {"spines": 2, "rail_groups_per_spine": 2, "nodes_per_rail_group": 2, "domain_nodes": 1},
            {"n001": 4, "n003": 8, "n004": 8, "n005": 1, "n006": 6},
            Parallelism(tensor=1, pipeline=4, data=6, expert=2),
            "tp-dp-pp",
        ),
        (  # rail-only, interleaved rail groups: name order jumps rail groups at every node
            "h100-rail-only",
            {
                "spines": 2,
                "rail_groups_per_spine": 3,
                "nodes_per_rail_group": 3,
                "interleave": True,
            },
            {"n003": 2, "n010": 1, "n013": 2},
            Parallelism(tensor=2, pipeline=4, data=8, expert=4),
            "tp-cp-ep-dp-pp",
        ),
    ],
    ids=["tapered-two-spines", "rail-only-interleaved"],
)
def test_the_search_beats_bestfit_where_bestfit_ignores_the_fabric(
    fabric: str,
    cluster: dict[str, Any],
    used: dict[str, int],
    job: Parallelism,
    rank_order: str,
) -> None:
    """Strictly better than every Kueue candidate means the search's own candidates won: the
    emulation cannot beat itself. Measured on 300 random cases: 57 strictly better, by up to
    13.7x; here 9.4x and 10.4x, asserted at 2x."""
    snapshot = make_cluster(rack_nodes=2, gpus=8, used=used, **cluster)
    request = PlacementRequest(
        parallelism=job,
        gpus_per_pod=2,
        rank_order=rank_order,
        model=ModelShape(hidden_size=2048, layers=8, experts=4 * job.expert, top_k=2, zero_stage=3),
    )
    compared = ours_and_theirs(snapshot, request, get_profile(fabric))
    assert compared is not None
    ours, theirs = compared
    assert ours * 2 <= theirs, (ours, theirs)
