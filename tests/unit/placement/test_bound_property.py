"""The lower bound is a bound: no placement of any job on any cluster predicts less.

Hypothesis draws a cluster (leaf-spine, NVLink domains of one or several nodes, interleaved
names, some GPUs in use), a job (every rank order, tensor/context/expert/data/pipeline sizes,
pod sizes that do and do not fill a node, dense or MoE), a fabric profile, and then an
*arbitrary* placement: pods dealt onto random free windows, not the search's choice. The cost
model's prediction for that placement must never fall below the bound the planner reports —
otherwise efficiency (bound ÷ predicted) would exceed 1, and the planner would stop searching
early on a placement it wrongly believes optimal.
"""

from __future__ import annotations

from itertools import permutations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.costing import StepModel
from fabricfit.placement.layout import build_layout
from fabricfit.placement.request import PlacementRequest
from unit.placement.clusters import make_cluster

ORDERS = ["-".join(p) for p in permutations(("tp", "cp", "ep", "dp", "pp"))]
PROFILES = ["dgx-h100", "dgx-a100", "dgx-b200", "gb200-nvl72"]
TRIED = {"placements": 0}


@st.composite
def jobs(draw: st.DrawFn, gpus: int) -> PlacementRequest:
    gpus_per_pod = draw(st.sampled_from([g for g in (1, 2, 4, 8) if g <= gpus]))
    tensor = draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
    context = draw(st.sampled_from([1, 1, 2]))
    pipeline = draw(st.integers(1, 4))
    expert = draw(st.sampled_from([1, 1, 2, 4]))
    data = expert * draw(st.integers(1, 3))
    world = tensor * context * pipeline * data
    if world % gpus_per_pod:
        gpus_per_pod = 1
    moe = expert > 1 or draw(st.booleans())
    model = ModelShape(
        layers=max(pipeline, 8),
        hidden_size=draw(st.sampled_from([1024, 4096, 8192])),
        experts=expert * 4 if moe else 0,
        top_k=2 if moe else 0,
        zero_stage=draw(st.integers(0, 3)),
    )
    return PlacementRequest(
        parallelism=Parallelism(
            tensor=tensor, context=context, pipeline=pipeline, data=data, expert=expert
        ),
        gpus_per_pod=gpus_per_pod,
        rank_order=draw(st.sampled_from(ORDERS)),
        model=model,
    )


def windows(snapshot: ClusterSnapshot, gpus_per_pod: int) -> list[tuple[str, tuple[int, ...]]]:
    """Every aligned window of free GPUs (used GPUs are the lowest indices)."""
    out = []
    for node in snapshot.nodes:
        first_free = node.gpus - node.free_gpus
        for start in range(0, node.gpus - gpus_per_pod + 1, gpus_per_pod):
            if start >= first_free:
                out.append((node.name, tuple(range(start, start + gpus_per_pod))))
    return out


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_no_placement_predicts_less_than_the_lower_bound(data: st.DataObject) -> None:
    gpus = data.draw(st.sampled_from([4, 8]), label="gpus per node")
    snapshot = make_cluster(
        spines=data.draw(st.integers(1, 2)),
        rail_groups_per_spine=data.draw(st.integers(1, 2)),
        nodes_per_rail_group=data.draw(st.integers(2, 18)),
        rack_nodes=2,
        gpus=gpus,
        domain_nodes=data.draw(st.sampled_from([1, 2, 4, 9, 18])),
        interleave=data.draw(st.booleans()),
        with_rail_groups=data.draw(st.booleans()),
        used=data.draw(st.dictionaries(st.sampled_from(["n000", "n001", "n003"]), st.just(4))),
    )
    request = data.draw(jobs(gpus), label="job")
    free = windows(snapshot, request.gpus_per_pod)
    pods = request.pods
    if pods > len(free):
        return
    chosen = data.draw(st.permutations(free), label="placement")[:pods]
    profile = get_profile(data.draw(st.sampled_from(PROFILES), label="profile"))
    layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
    model = StepModel(snapshot, layout, request, profile)
    ranks = [snapshot.slot(node, gpu) for node, gpu_ids in chosen for gpu in gpu_ids]
    predicted = model.predict(ranks)
    bound = model.lower_bound()
    TRIED["placements"] += 1
    assert bound.step_comm_seconds <= predicted.step_comm_seconds * (1 + 1e-9), (
        bound,
        predicted,
    )
    for kind, seconds in bound.by_dimension.items():
        assert seconds <= predicted.by_dimension.get(kind, 0.0) * (1 + 1e-9), kind


def test_report_placements_tried() -> None:
    print(f"\n[lower-bound] arbitrary placements checked: {TRIED['placements']}")
