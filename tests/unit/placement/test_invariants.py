"""Hypothesis: hard constraints hold for every plan on random clusters and jobs."""

from __future__ import annotations

from collections import Counter
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricfit.api.models import Parallelism
from fabricfit.fabric.profiles import get_profile
from fabricfit.placement import search
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.search import plan_placement
from unit.placement.clusters import make_cluster

PROFILE = get_profile("dgx-h100")


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[object, ...]:
    groups = draw(st.integers(1, 3))
    per_group = draw(st.integers(1, 5))
    domain_nodes = draw(st.sampled_from([1, 2]))
    gpus = draw(st.sampled_from([4, 8]))
    names = [f"n{i:03d}" for i in range(groups * per_group)]
    used = draw(st.dictionaries(st.sampled_from(names), st.integers(0, gpus), max_size=len(names)))
    reservations = draw(st.dictionaries(st.sampled_from(names), st.integers(0, 4), max_size=3))
    gpus_per_pod = draw(st.sampled_from([g for g in (1, 2, 4, 8) if g <= gpus]))
    tensor = draw(
        st.sampled_from([t for t in (1, 2, 4, 8) if t % gpus_per_pod == 0 or gpus_per_pod % t == 0])
    )
    pipeline = draw(st.integers(1, 3))
    data = draw(st.integers(1, 4))
    snapshot = make_cluster(
        rail_groups_per_spine=groups,
        nodes_per_rail_group=per_group,
        gpus=gpus,
        domain_nodes=domain_nodes,
        rack_nodes=2,
        used=used,
        interleave=draw(st.booleans()),
    )
    order = draw(st.sampled_from(["tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp", "pp-tp-cp-ep-dp"]))
    expert = draw(st.sampled_from([e for e in (1, 2) if data % e == 0]))
    request = PlacementRequest(
        parallelism=Parallelism(tensor=tensor, pipeline=pipeline, data=data, expert=expert),
        gpus_per_pod=gpus_per_pod,
        rank_order=order,
        tensor_required=draw(st.booleans()),
    )
    return snapshot, request, reservations


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_plans_respect_hard_constraints(case: tuple[object, ...]) -> None:
    snapshot, request, reservations = case
    decision = plan_placement(snapshot, request, PROFILE, reservations=reservations)  # type: ignore[arg-type]
    again = plan_placement(snapshot, request, PROFILE, reservations=reservations)  # type: ignore[arg-type]
    assert decision == again
    if not decision.feasible:
        assert decision.reasons and not decision.assignments
        return
    world = request.world_size  # type: ignore[attr-defined]
    g = request.gpus_per_pod  # type: ignore[attr-defined]
    assert [a.rank for a in decision.assignments] == list(range(world))
    used = Counter((a.node, a.gpu) for a in decision.assignments)
    assert max(used.values()) == 1
    for a in decision.assignments:
        node = snapshot.node(a.node)  # type: ignore[attr-defined]
        first_free = node.gpus - node.free_gpus + reservations.get(a.node, 0)  # type: ignore[attr-defined]
        assert node.available and first_free <= a.gpu < node.gpus
        assert decision.pods[a.rank // g] == a.node
    if request.tensor_required:  # type: ignore[attr-defined]
        for group in decision.groups["tensor"]:
            domains = {
                snapshot.node(decision.assignments[r].node).place.nvlink_domain for r in group
            }  # type: ignore[attr-defined]
            assert len(domains) == 1
    assert decision.predicted is not None and decision.lower_bound is not None
    assert 0.0 < decision.efficiency <= 1.0
    bound = decision.lower_bound.step_comm_seconds
    assert bound <= decision.predicted.step_comm_seconds * (1 + 1e-9)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_the_packing_tie_break_keeps_the_predicted_communication(case: tuple[object, ...]) -> None:
    snapshot, request, reservations = case
    packed = plan_placement(snapshot, request, PROFILE, reservations=reservations)  # type: ignore[arg-type]
    with patch.object(search, "_best_packed", lambda chosen, *_: chosen):
        unpacked = plan_placement(snapshot, request, PROFILE, reservations=reservations)  # type: ignore[arg-type]
    assert packed.feasible == unpacked.feasible
    if packed.predicted is not None and unpacked.predicted is not None:
        packed_s = packed.predicted.step_comm_seconds
        assert packed_s <= unpacked.predicted.step_comm_seconds * (1 + 1e-9)
