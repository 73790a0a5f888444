"""What Kueue Topology-Aware Scheduling would have done with the same job, priced by the cost
model.

Theory of operation
-------------------
Clusters that would run fabricfit already run Kueue, so the demo's comparison is Kueue TAS, not
a topology-blind spread: the real Kueue when the demo runs one (:mod:`demo.peer` places the job
with it first and hands its nodes here), else the package's pure emulation of TAS BestFit
(:func:`fabricfit.placement.peers.kueue_bestfit`: the job preferred at the rail-group level,
the NVL72 job at its NVLink domain, most-free domains first and the last one best-fit, ranks
mapped to pods in lexicographic order of their topology values), run on the free GPUs the job
had (the nodes of its pool as they are now, minus the pods of this job and of the jobs
submitted after it).
``benchmarks/kueue_side_by_side.py`` makes the same comparison against a real Kueue. Both
placements become :class:`PlacementDecision` values (same rank layout, the pods of a node on
its lowest free GPU windows as the device plugin hands them out), priced with
:func:`fabricfit.placement.pricing.price_pods`, so the comparison is the cost model's, not the
demo's. This is demo code, not part of the product.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from fabricfit.api.models import TrainingTopologySpec
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement import (
    PlacementDecision,
    RankPlacement,
    StepTimes,
    build_layout,
    request_from_spec,
)
from fabricfit.placement.peers import kueue_bestfit
from fabricfit.placement.pricing import price_pods
from fabricfit.placement.slots import build_leaf_domains

PEER = "Kueue TAS"

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
#: The emulation's level for a tier the job prefers. Its tree (spine, rail group, rack, node)
#: has no NVLink-domain level: on the demo's NVL72 racks the rack is the NVLink domain.
EMULATED_LEVEL = {"spine": "spine", "rail_group": "rail-group", "rack": "rack",
                  "nvlink_domain": "rack"}  # fmt: skip


@dataclass(frozen=True)
class JobView:
    """One job as the report shows it: fabricfit's placement, Kueue's (emulated), the snapshot."""

    name: str
    spec: TrainingTopologySpec
    snapshot: ClusterSnapshot  # the cluster as the operator saw it when it placed the job
    planned: PlacementDecision  # predicted = what the operator wrote into status
    repriced: StepTimes  # the same placement priced here (a cross-check of the status)
    peer: PlacementDecision | None  # None when Kueue TAS could not hold the job
    peer_real: bool = False  # the real Kueue placed it (else the emulation)


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


def decision_for(
    pods: Sequence[str],
    snapshot: ClusterSnapshot,
    spec: TrainingTopologySpec,
    lower_bound_seconds: float | None = None,
) -> PlacementDecision:
    """``pods[k]`` = node of pod k; the pods of a node take its lowest free GPU windows as the
    device plugin hands them out (``pricing.price_pods``: the worse admission order)."""
    request = request_from_spec(spec)
    layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
    priced = price_pods(snapshot, request, get_profile(spec.fabric or "dgx-h100"), pods)
    assignments = [
        RankPlacement(rank, slot.node, slot.gpus[local], pod, local)
        for pod, slot in enumerate(priced.slots)
        for local, rank in enumerate(layout.pod_ranks(pod))
    ]
    lower = StepTimes(lower_bound_seconds) if lower_bound_seconds is not None else None
    return PlacementDecision(
        feasible=True,
        fabric=spec.fabric or "",
        groups=layout.groups,
        pods=tuple(pods),
        assignments=tuple(sorted(assignments, key=lambda a: a.rank)),
        predicted=priced.predicted,
        lower_bound=lower,
    )


def kueue_tas(
    snapshot: ClusterSnapshot, pod_count: int, gpus_per_pod: int, tier: str = "rail_group"
) -> list[str] | None:
    """Node of each pod (in rank order) under the Kueue TAS BestFit emulation, preferred at
    ``tier``; None when the free GPUs cannot hold the job."""
    available = [n for n in snapshot.nodes if n.available and n.free_gpus >= gpus_per_pod]
    domains = build_leaf_domains(available, gpus_per_pod, {})
    chosen = kueue_bestfit(domains, pod_count, level=EMULATED_LEVEL[tier])
    return [slot.node for slot in chosen] if chosen is not None else None


@dataclass(frozen=True)
class PlacedJob:
    """One demo job as the cluster shows it: its TrainingTopology and the nodes its pods are on."""

    name: str
    namespace: str
    spec: TrainingTopologySpec
    status: Mapping[str, Any]
    bound: Sequence[str]
    kueue_tier: str = "rail_group"  # the tier Kueue TAS is asked to prefer


def view_job(
    job: PlacedJob,
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    later: Collection[str] = (),
    peer_nodes: Sequence[str] | None = None,
) -> JobView:
    """fabricfit's placement (as bound, with the status's prediction) and Kueue TAS's, both
    on the cluster the operator saw when it placed the job: without its own pods and without
    those of the ``later`` jobs (submitted after it). ``peer_nodes``: where the real Kueue put
    each pod on that cluster; without them, the emulation places the job."""
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
    theirs = (
        list(peer_nodes)
        if peer_nodes is not None
        else kueue_tas(snapshot, len(bound), spec.gpus_per_pod, job.kueue_tier)
    )
    peer = decision_for(theirs, snapshot, spec, lower) if theirs else None
    return JobView(name, spec, snapshot, planned, repriced, peer, peer_nodes is not None)
