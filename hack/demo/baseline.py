"""What a topology-blind scheduler would have done with the same job, priced by the cost model.

Theory of operation
-------------------
The default kube-scheduler scores nodes by how empty they are (LeastAllocated) and spreads a
workload's pods over the cluster; it knows nothing of ranks, rails or rail groups. The naive
placement here models that: pod *k* goes to the *k*-th rail group in turn (rail groups taken
alternately from each spine), on the least allocated node there with a free window, using the
free GPUs the job had (the cluster as it is now, minus the pods of this job and of the jobs
submitted after it). Both that placement and the
one fabricfit chose become :class:`PlacementDecision` values (same rank layout, same GPU
windows), priced with the same :func:`fabricfit.cost.step.estimate_step`, so the comparison is
the cost model's, not the demo's. This is demo code, not part of the product.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import zip_longest
from typing import Any

from fabricfit.api.models import TrainingTopologySpec
from fabricfit.cost.step import estimate_step
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement import (
    PlacementDecision,
    RankLayout,
    RankPlacement,
    StepTimes,
    build_layout,
)
from fabricfit.placement.slots import PodSlot, leaf_key, node_slots, node_sort_key

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"


@dataclass(frozen=True)
class JobView:
    """One job as the report shows it: fabricfit's placement, the naive one, the snapshot."""

    name: str
    spec: TrainingTopologySpec
    snapshot: ClusterSnapshot  # the cluster as the operator saw it when it placed the job
    planned: PlacementDecision  # predicted = what the operator wrote into status
    repriced: StepTimes  # the same placement priced here (a cross-check of the status)
    naive: PlacementDecision | None  # None when the free nodes cannot hold the job naively


def snapshot_without(
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    jobs: Collection[str],
    namespace: str,
    spec: TrainingTopologySpec,
) -> ClusterSnapshot:
    """The cluster without the pods of ``jobs`` (in ``namespace``)."""

    def left_out(pod: Mapping[str, Any]) -> bool:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        return meta.get("namespace") == namespace and labels.get(JOB_NAME_LABEL) in jobs

    others = [p for p in pods if not left_out(p)]
    return build_snapshot(
        nodes, others, scheme=spec.label_scheme or "auto", default_fabric=spec.fabric
    )


def _windows(snapshot: ClusterSnapshot, gpus_per_pod: int) -> dict[str, list[PodSlot]]:
    return {
        n.name: node_slots(n, gpus_per_pod, {})
        for n in sorted(snapshot.nodes, key=node_sort_key)
        if n.available
    }


def decision_for(
    pods: Sequence[str],
    snapshot: ClusterSnapshot,
    spec: TrainingTopologySpec,
    lower_bound_seconds: float | None = None,
) -> PlacementDecision:
    """``pods[k]`` = node of pod k; each pod takes the next free GPU window of its node."""
    layout = build_layout(spec.parallelism, spec.gpus_per_pod, spec.rank_order)
    windows = _windows(snapshot, spec.gpus_per_pod)
    used: dict[str, int] = {}
    assignments: list[RankPlacement] = []
    for pod, node in enumerate(pods):
        window = windows[node][used.get(node, 0)]
        used[node] = used.get(node, 0) + 1
        for local, rank in enumerate(layout.pod_ranks(pod)):
            assignments.append(RankPlacement(rank, node, window.gpus[local], pod, local))
    lower = StepTimes(lower_bound_seconds) if lower_bound_seconds is not None else None
    return PlacementDecision(
        feasible=True,
        fabric=spec.fabric or "",
        groups=layout.groups,
        pods=tuple(pods),
        assignments=tuple(sorted(assignments, key=lambda a: a.rank)),
        predicted=_price(layout, assignments, snapshot, spec),
        lower_bound=lower,
    )


def _price(
    layout: RankLayout,
    assignments: Sequence[RankPlacement],
    snapshot: ClusterSnapshot,
    spec: TrainingTopologySpec,
) -> StepTimes:
    ordered = sorted(assignments, key=lambda a: a.rank)
    slots = [snapshot.slot(a.node, a.gpu) for a in ordered]
    groups = {k: [list(g) for g in v] for k, v in layout.groups.items()}
    profile = get_profile(spec.fabric or "dgx-h100")
    estimate = estimate_step(groups, slots, spec.parallelism, spec.model, profile)
    return StepTimes(
        step_comm_seconds=float(estimate.step_comm_seconds),
        by_dimension={k: float(v) for k, v in estimate.by_dimension.items()},
    )


def naive_spread(snapshot: ClusterSnapshot, pod_count: int, gpus_per_pod: int) -> list[str] | None:
    """Node of each pod under topology-blind spreading (see module docstring)."""
    windows = _windows(snapshot, gpus_per_pod)
    ordered = sorted(snapshot.nodes, key=node_sort_key)
    leaves: dict[str, list[tuple[int, int, int, str]]] = {}
    spine_of: dict[str, str] = {}
    for order, node in enumerate(ordered):
        key, _ = leaf_key(node)
        spine_of[key] = node.place.spine
        # Least allocated first: every node's first free window (emptiest nodes first)
        # before any node's second one, as kube-scheduler's default scoring spreads pods.
        leaves.setdefault(key, []).extend(
            (turn, -node.free_gpus, order, node.name)
            for turn, _window in enumerate(windows.get(node.name, []))
        )
    by_spine: dict[str, list[str]] = {}
    for key in sorted(leaves):
        by_spine.setdefault(spine_of[key], []).append(key)
    cycle = [k for row in zip_longest(*by_spine.values()) for k in row if k is not None]
    queues = {k: [entry[-1] for entry in sorted(leaves[k])] for k in cycle}
    placed: list[str] = []
    turn = 0
    while len(placed) < pod_count and any(queues.values()):
        key = cycle[turn % len(cycle)]
        turn += 1
        if queues[key]:
            placed.append(queues[key].pop(0))
    return placed if len(placed) == pod_count else None


@dataclass(frozen=True)
class PlacedJob:
    """One demo job as the cluster shows it: its TrainingTopology and the nodes its pods are on."""

    name: str
    namespace: str
    spec: TrainingTopologySpec
    status: Mapping[str, Any]
    bound: Sequence[str]


def view_job(
    job: PlacedJob,
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    later: Collection[str] = (),
) -> JobView:
    """fabricfit's placement (as bound, with the status's prediction) and the naive one, both
    on the cluster the operator saw when it placed the job: without its own pods and without
    those of the ``later`` jobs (submitted after it)."""
    name, namespace, spec, status, bound = job.name, job.namespace, job.spec, job.status, job.bound
    snapshot = snapshot_without(nodes, pods, {name, *later}, namespace, spec)
    lower = status.get("lowerBoundSeconds")
    planned = decision_for(bound, snapshot, spec, lower)
    repriced = planned.predicted
    assert repriced is not None
    predicted = status.get("predicted") or {}
    if predicted:
        reported = StepTimes(
            step_comm_seconds=float(predicted["stepCommSeconds"]),
            by_dimension={k: float(v) for k, v in (predicted.get("byDimension") or {}).items()},
        )
        planned = replace(planned, predicted=reported)
    spread = naive_spread(snapshot, len(bound), spec.gpus_per_pod)
    naive = decision_for(spread, snapshot, spec, lower) if spread else None
    return JobView(name, spec, snapshot, planned, repriced, naive)
