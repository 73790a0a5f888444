"""Why a job cannot be placed, and the largest job of the same shape that could be, right now.

Theory of operation
-------------------
Infeasibility is data, not an exception (as in Kueue, failure reasons surface in conditions).
Three kinds of reasons exist: the parallel layout itself is invalid (``layout.validate_layout``),
the eligible nodes do not hold enough pods (reported with the rejection phrases counted over the
other nodes), or every candidate violates a required locality rule. The largest fitting job keeps
tensor, pipeline and context fixed and shrinks data parallelism in steps of ``expert`` until the
world size is a multiple of ``gpusPerPod`` and its pods fit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from fabricfit.api.constants import GPU_RESOURCE
from fabricfit.fabric.topology import ClusterSnapshot, NodeInfo
from fabricfit.placement.decision import LargestFit
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.scopes import unit_capacity
from fabricfit.placement.slots import LeafDomain

MAX_LISTED_REJECTIONS = 4


def max_domain_gpus(nodes: Iterable[NodeInfo]) -> int | None:
    """GPUs in the largest NVLink domain among available nodes (None: no available node has
    a GPU — then the shortfall of GPUs is the reason to give, not the size of a domain)."""
    per_domain: Counter[str] = Counter()
    for node in nodes:
        if node.available and node.gpus > 0:
            per_domain[node.place.nvlink_domain or node.name] += node.gpus
    return max(per_domain.values()) if per_domain else None


def capacity_in_units(domains: Sequence[LeafDomain], unit_pods: int) -> int:
    return sum(unit_capacity(d.slots, unit_pods) for d in domains)


def largest_fit(request: PlacementRequest, units: int, unit_pods: int) -> LargestFit:
    """The largest job with the same tensor/pipeline/context that fits ``units`` units."""
    p = request.parallelism
    pods_free = units * unit_pods
    per_replica = p.tensor * p.pipeline * p.context
    data = (pods_free * request.gpus_per_pod) // per_replica
    data -= data % p.expert
    while data > 0 and (per_replica * data) % request.gpus_per_pod:
        data -= p.expert
    world = per_replica * max(0, data)
    return LargestFit(pods=world // request.gpus_per_pod, world_size=world, data=max(0, data))


def capacity_reasons(
    request: PlacementRequest,
    snapshot: ClusterSnapshot,
    *,
    units_needed: int,
    units_free: int,
    unit_pods: int,
    rejected: Counter[str],
) -> tuple[str, ...]:
    """One sentence on the shortfall, one on excluded nodes."""
    need_pods = units_needed * unit_pods
    have_pods = units_free * unit_pods
    what = f"{need_pods} pods of {request.gpus_per_pod} GPUs"
    if unit_pods > 1:
        what += f" in NVLink-domain groups of {unit_pods} pods"
    reasons = [
        f"the job needs {what}; the {snapshot_size(snapshot)} nodes hold only {have_pods} now"
    ]
    if not any(node.gpus > 0 for node in snapshot.nodes):
        reasons.append(
            f"no node has GPUs: none lists {GPU_RESOURCE} in status.allocatable "
            "or GPUs in DRA ResourceSlices"
        )
    if rejected:
        listed = ", ".join(
            f"{count} {phrase}" for phrase, count in rejected.most_common(MAX_LISTED_REJECTIONS)
        )
        reasons.append(f"nodes excluded: {listed}")
    return tuple(reasons)


def snapshot_size(snapshot: ClusterSnapshot) -> str:
    return f"{len(snapshot.nodes):,}"
