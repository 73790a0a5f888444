"""kube-scheduler's default placement of a job's pods: no topology, most free node first.

Theory of operation
-------------------
The default profile scores nodes with NodeResourcesFit ``LeastAllocated`` (and spreads pods of one
workload), so each pod, in index order, goes to the node with the most free GPU windows left,
ties by node name; the device plugin hands the pod the node's lowest free GPUs. Ranks follow the
pod index. It knows nothing of rails, rail groups or NVLink domains.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabricfit.placement.slots import LeafDomain, PodSlot


def spread(domains: Sequence[LeafDomain], pods: int) -> tuple[PodSlot, ...] | None:
    """Most free node first for every pod, lowest free GPUs first; None when it cannot fit."""
    per_node: dict[str, list[PodSlot]] = {}
    for domain in domains:
        for slot in domain.slots:
            per_node.setdefault(slot.node, []).append(slot)
    for free in per_node.values():
        free.sort(key=lambda s: s.gpus)
    chosen: list[PodSlot] = []
    for _ in range(pods):
        candidates = [n for n, free in per_node.items() if free]
        if not candidates:
            return None
        node = min(candidates, key=lambda n: (-len(per_node[n]), n))
        chosen.append(per_node[node].pop(0))
    return tuple(chosen)
