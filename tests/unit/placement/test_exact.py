"""The heuristic against the exhaustive optimum on clusters of ≤ 16 nodes (within 2 %)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.exact import ExactSearchTooLargeError, exact_optimum
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.search import plan_placement
from unit.placement.clusters import full_except, make_cluster

PROFILE = get_profile("dgx-h100")
MODEL = ModelShape(parameters=7_000_000_000, hidden_size=4096, layers=32, micro_batches=8)

CASES = [
    (
        "two rail groups, dense",
        make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=4),
        8,
        Parallelism(tensor=8, pipeline=2, data=2),
    ),
    (
        "interleaved, scattered free",
        make_cluster(
            rail_groups_per_spine=2,
            nodes_per_rail_group=6,
            interleave=True,
            used=full_except(12, ("n000", "n001", "n002", "n005", "n007", "n009", "n011")),
        ),
        8,
        Parallelism(tensor=8, data=3),
    ),
    (
        "half-node pods, fragmented",
        make_cluster(
            rail_groups_per_spine=2, nodes_per_rail_group=3, used={"n000": 4, "n004": 4, "n005": 8}
        ),
        4,
        Parallelism(tensor=4, data=4),
    ),
    (
        "two spines",
        make_cluster(
            spines=2,
            rail_groups_per_spine=2,
            nodes_per_rail_group=3,
            used={"n000": 8, "n003": 8, "n004": 8},
        ),
        8,
        Parallelism(tensor=8, pipeline=3, data=2),
    ),
    (
        "tp across trays",
        make_cluster(
            rail_groups_per_spine=2,
            nodes_per_rail_group=4,
            gpus=4,
            rails=4,
            domain_nodes=2,
            used={"n001": 4},
        ),
        4,
        Parallelism(tensor=8, data=2),
    ),
    (
        "moe",
        make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=4, used={"n002": 8}),
        8,
        Parallelism(tensor=4, data=4, expert=2),
    ),
]


@pytest.mark.parametrize(
    ("label", "snapshot", "gpus_per_pod", "parallelism"), CASES, ids=[c[0] for c in CASES]
)
def test_heuristic_within_two_percent_of_optimum(
    label: str, snapshot: ClusterSnapshot, gpus_per_pod: int, parallelism: Parallelism
) -> None:
    model = MODEL.model_copy(update={"experts": 8, "top_k": 2}) if parallelism.expert > 1 else MODEL
    request = PlacementRequest(parallelism=parallelism, gpus_per_pod=gpus_per_pod, model=model)
    exact = exact_optimum(snapshot, request, PROFILE)
    decision = plan_placement(snapshot, request, PROFILE)
    assert exact.seconds is not None and decision.predicted is not None
    assert exact.evaluations > 1
    assert decision.predicted.step_comm_seconds <= exact.seconds * 1.02, label
    assert decision.predicted.step_comm_seconds >= exact.seconds * (1 - 1e-9)


def test_exact_refuses_large_clusters() -> None:
    snapshot = make_cluster(rail_groups_per_spine=3, nodes_per_rail_group=6)
    request = PlacementRequest(parallelism=Parallelism(tensor=8, data=2), gpus_per_pod=8)
    with pytest.raises(ExactSearchTooLargeError):
        exact_optimum(snapshot, request, PROFILE)


def test_exact_infeasible_returns_none() -> None:
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=2)
    request = PlacementRequest(parallelism=Parallelism(tensor=8, data=3), gpus_per_pod=8)
    assert exact_optimum(snapshot, request, PROFILE).seconds is None


TAPERED = replace(PROFILE, name="tapered", leaf_oversubscription=2.0, spine_oversubscription=4.0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spines=st.integers(1, 2),
    groups=st.integers(1, 2),
    per_group=st.integers(2, 4),
    used=st.lists(st.sampled_from([0, 0, 4, 8]), min_size=16, max_size=16),
    shape=st.sampled_from(
        [(8, 8, 1, 2), (8, 8, 2, 2), (4, 4, 1, 4), (4, 2, 2, 2), (8, 4, 1, 4), (8, 4, 1, 3)]
    ),
    tapered=st.booleans(),
)
def test_heuristic_matches_exact_on_random_small_clusters(
    spines: int,
    groups: int,
    per_group: int,
    used: list[int],
    shape: tuple[int, int, int, int],
    tapered: bool,
) -> None:
    gpus_per_pod, tensor, pipeline, data = shape
    snapshot = make_cluster(
        spines=spines,
        rail_groups_per_spine=groups,
        nodes_per_rail_group=per_group,
        used={f"n{i:03d}": u for i, u in enumerate(used)},
    )
    request = PlacementRequest(
        parallelism=Parallelism(tensor=tensor, pipeline=pipeline, data=data),
        gpus_per_pod=gpus_per_pod,
        model=MODEL,
    )
    assume(spines * groups * per_group <= 8)
    profile = TAPERED if tapered else PROFILE
    exact = exact_optimum(snapshot, request, profile)
    decision = plan_placement(snapshot, request, profile)
    assert decision.feasible == (exact.seconds is not None)
    if exact.seconds is not None and decision.predicted is not None:
        assert decision.predicted.step_comm_seconds <= exact.seconds * 1.02
