"""Pod slots: where on the eligible nodes a pod of the job can go, grouped by fabric domain.

Theory of operation
-------------------
A pod never spans nodes, so the search works on *pod slots*: a window of ``gpusPerPod`` free
GPUs on one node. The snapshot only counts free GPUs, so we fix a convention that every view
shares: GPUs already taken by running pods are the lowest indices of the node, GPUs reserved by
other plans come next, and the rest are free. When ``gpusPerPod`` divides the node's GPU count,
windows are aligned (window *p* covers GPUs ``p·g … p·g+g−1``) so that local GPU *j* of every pod
in window *p* sits on the same rail on every node — the property that keeps a data-parallel ring
on one leaf switch. Otherwise windows are cut back to back from the first free GPU.

Where the planner chooses the very devices (DRA, ``NodeInfo.held_gpus`` known) the convention
gives way to the facts: a window is free when none of its positions is held, whatever its
place; GPUs other plans reserve by count alone then take the lowest free windows.

Slots are grouped by *leaf domain*: the rail group when the node has one (one leaf hop between
same-rail GPUs), else the rack, else the node itself. Leaf domains belong to a spine. Everything
is sorted by fabric position first and name last, so nodes interleaved by name across rail groups
still come out grouped by rail group.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from fabricfit.fabric.topology import NodeInfo
from fabricfit.placement.constraints import free_after_reservations


@dataclass(frozen=True, slots=True)
class PodSlot:
    """One window of free GPUs that can hold one pod."""

    node: str
    position: int
    gpus: tuple[int, ...]
    spine: str
    leaf: str
    rack: str
    nvlink_domain: str
    rail_group: str | None = None


@dataclass(frozen=True, slots=True)
class LeafDomain:
    """The slots of one leaf domain (rail group, or rack / node without rail groups)."""

    key: str
    spine: str
    has_rails: bool
    slots: tuple[PodSlot, ...]

    @property
    def capacity(self) -> int:
        return len(self.slots)

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.node for s in self.slots))


def leaf_key(node: NodeInfo) -> tuple[str, bool]:
    """The leaf domain of ``node`` and whether it is a real rail group."""
    place = node.place
    if place.rail_group is not None:
        return f"{place.spine}|rg:{place.rail_group}", True
    if place.rack is not None:
        return f"{place.spine}|rack:{place.rack}", False
    return f"{place.spine}|node:{node.name}", False


def node_sort_key(node: NodeInfo) -> tuple[str, str, str, str, str]:
    place = node.place
    return (
        place.spine,
        place.rail_group or "",
        place.rack or "",
        place.nvlink_domain or node.name,
        node.name,
    )


def slot_starts(
    node: NodeInfo, gpus_per_pod: int, reservations: Mapping[str, int]
) -> Sequence[int]:
    """First GPU of each entirely free pod window of ``node``, lowest first: aligned windows
    when the pod size divides the node, else consecutive ones from the first free GPU."""
    if node.held_gpus is not None:
        return _known_starts(node, node.held_gpus, gpus_per_pod, reservations)
    first_free = node.gpus - free_after_reservations(node, reservations)
    if node.gpus % gpus_per_pod == 0:
        first = -(-first_free // gpus_per_pod) * gpus_per_pod  # the first aligned start >= it
        return range(max(0, first), node.gpus, gpus_per_pod)
    return range(first_free, node.gpus - gpus_per_pod + 1, gpus_per_pod)


def _known_starts(
    node: NodeInfo, held: frozenset[int], gpus_per_pod: int, reservations: Mapping[str, int]
) -> tuple[int, ...]:
    """Windows none of whose positions is held; reservations by count take the lowest."""
    step = gpus_per_pod if node.gpus % gpus_per_pod == 0 else 1
    starts: list[int] = []
    start = 0
    while start + gpus_per_pod <= node.gpus:
        if held.isdisjoint(range(start, start + gpus_per_pod)):
            starts.append(start)
            start += gpus_per_pod
        else:
            start += step
    fits = free_after_reservations(node, reservations) // gpus_per_pod
    return tuple(starts[len(starts) - fits :]) if fits > 0 else ()


def node_slots(node: NodeInfo, gpus_per_pod: int, reservations: Mapping[str, int]) -> list[PodSlot]:
    """The pod windows of ``node`` that are entirely free, lowest GPU first."""
    starts = slot_starts(node, gpus_per_pod, reservations)
    return _windows(node, leaf_key(node)[0], starts, gpus_per_pod) if starts else []


def _windows(node: NodeInfo, key: str, starts: Sequence[int], gpus_per_pod: int) -> list[PodSlot]:
    place = node.place
    name, spine, rack = node.name, place.spine, place.rack or ""
    domain, rail_group = place.nvlink_domain or node.name, place.rail_group
    return [
        PodSlot(
            name,
            start // gpus_per_pod,
            tuple(range(start, start + gpus_per_pod)),
            spine,
            key,
            rack,
            domain,
            rail_group,
        )
        for start in starts
    ]


def build_leaf_domains(
    nodes: Iterable[NodeInfo], gpus_per_pod: int, reservations: Mapping[str, int]
) -> tuple[LeafDomain, ...]:
    """Leaf domains of the eligible nodes, sorted by key; slots in node-major fabric order."""
    grouped: dict[str, list[PodSlot]] = {}
    meta: dict[str, tuple[str, bool]] = {}
    for node in sorted(nodes, key=node_sort_key):
        starts = slot_starts(node, gpus_per_pod, reservations)
        if not starts:
            continue
        key, has_rails = leaf_key(node)
        found = grouped.get(key)
        if found is None:
            found = grouped[key] = []
            meta[key] = (node.place.spine, has_rails)
        found.extend(_windows(node, key, starts, gpus_per_pod))
    return tuple(
        LeafDomain(key=k, spine=meta[k][0], has_rails=meta[k][1], slots=tuple(grouped[k]))
        for k in sorted(grouped)
    )


def position_major(slots: Iterable[PodSlot]) -> tuple[PodSlot, ...]:
    """Slots ordered highest window first, then fabric order: pods taken one per node first,
    on the same window (the same rails) of every node."""
    return _descending(slots, lambda slot: slot.position)


def fullest_first(slots: Iterable[PodSlot]) -> tuple[PodSlot, ...]:
    """Slots of the nodes with the most free windows first (node-major, fabric order within),
    so a job lands on as few nodes as possible and pods share NVLink and NICs."""
    listed = list(slots)
    per_node: dict[str, int] = {}
    for slot in listed:
        per_node[slot.node] = per_node.get(slot.node, 0) + 1
    return _descending(listed, lambda slot: per_node[slot.node])


def _descending(slots: Iterable[PodSlot], rank: Callable[[PodSlot], int]) -> tuple[PodSlot, ...]:
    """``slots`` by descending ``rank``, in their given order within a rank: a stable sort in
    one pass, as ranks are a few small numbers (windows of a node) and the cluster-wide domain
    holds every slot of the cluster."""
    buckets: dict[int, list[PodSlot]] = {}
    for slot in slots:
        buckets.setdefault(rank(slot), []).append(slot)
    return tuple(slot for key in sorted(buckets, reverse=True) for slot in buckets[key])


def ordered_slots(slots: Iterable[PodSlot], order: str) -> tuple[PodSlot, ...]:
    """``slots`` in one of the candidate orders: node, position or dense."""
    if order == "position":
        return position_major(slots)
    if order == "dense":
        return fullest_first(slots)
    return tuple(slots)
