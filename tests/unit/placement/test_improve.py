"""Local moves: hill climbing repairs a split data-parallel group within its budget."""

from __future__ import annotations

from dataclasses import replace

from fabricfit.api.models import Parallelism
from fabricfit.fabric.profiles import get_profile
from fabricfit.placement.costing import StepModel
from fabricfit.placement.improve import default_move_budget, free_representatives, improve
from fabricfit.placement.layout import build_layout
from fabricfit.placement.plugins import DEFAULT_PLUGINS, PlanContext
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.scoring import Scored, Scorer
from fabricfit.placement.slots import LeafDomain, build_leaf_domains
from unit.placement.clusters import make_cluster

TAPERED = replace(get_profile("dgx-h100"), name="tapered", leaf_oversubscription=4.0)


def _scorer() -> tuple[Scorer, list[LeafDomain]]:
    snapshot = make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=2)
    request = PlacementRequest(parallelism=Parallelism(tensor=8, data=2), gpus_per_pod=8)
    layout = build_layout(request.parallelism, 8, request.rank_order)
    domains = build_leaf_domains(snapshot.nodes, 8, {})
    model = StepModel(snapshot, layout, request, TAPERED)
    ctx = PlanContext(
        request=request, layout=layout, domains=domains, lower_bound=model.lower_bound()
    )
    return Scorer(ctx, DEFAULT_PLUGINS, model), list(domains)


def test_moves_bring_dp_peers_into_one_rail_group() -> None:
    scorer, domains = _scorer()
    split = (domains[0].slots[0], domains[1].slots[0])  # n000 and n002: two rail groups
    start = scorer.evaluate("split", split)
    assert isinstance(start, Scored)
    best, spent = improve(scorer, start, domains, [0, 1], budget=50)
    assert best.predicted_seconds < start.predicted_seconds
    assert len({s.rail_group for s in best.evaluated.slots}) == 1
    assert 0 < spent <= 50
    stuck, none_spent = improve(scorer, start, domains, [0, 1], budget=0)
    assert stuck is start and none_spent == 0


def test_representatives_skip_used_slots_and_duplicates() -> None:
    _, domains = _scorer()
    used = (domains[0].slots[0],)
    reps = free_representatives(domains, used)
    assert used[0] not in reps
    assert len(reps) == len({(s.leaf, s.rack) for s in reps})


def test_budget_shrinks_with_job_size() -> None:
    assert default_move_budget(8) > default_move_budget(32) > default_move_budget(64) == 0
