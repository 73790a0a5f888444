"""How good a plan is on the fabric, and how fragmented the free GPUs are (pure).

Theory of operation
-------------------
Both measures feed the operator's Prometheus metrics; neither decides anything.

*Plan quality* re-locates a plan as the operator stores it (``status.pods``: pod index → node)
on a snapshot: the m-th pod of the job on a node takes the node's m-th ``gpusPerPod`` window,
the same aligned-window convention the search uses for free nodes, so local GPU j of every pod
sits on the same rail. The ranks are then located with the search's own
:meth:`~fabricfit.placement.costing.StepModel.rank_slots` and priced once with the cost model
for the bytes one step sends across the spine. A tensor group *crosses its NVLink domain* when
its ranks sit in more than one domain; a data-parallel group *crosses a rail group* when its
ranks sit on more than one node and those nodes do not all share one rail group (a node without
a rail-group label shares none: its inter-node traffic goes over the spine).

*Fragmentation* looks at the free GPUs (after other plans' reservations) tier by tier, coarse to
fine: how many GPUs the emptiest single domain of the tier still offers (the largest job that
fits without crossing it), how many pods of a given size fit there in whole windows, and how
many domains are entirely free. Nodes that are unavailable (NotReady, cordoned, tainted) count
for nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot, GpuSlot, NodeInfo
from fabricfit.placement.constraints import NO_RESERVATIONS, free_after_reservations
from fabricfit.placement.costing import StepModel
from fabricfit.placement.decision import PlacementDecision
from fabricfit.placement.handout import Handout
from fabricfit.placement.layout import RankLayout
from fabricfit.placement.request import ENFORCED, PlacementRequest
from fabricfit.placement.scoring import price_slots
from fabricfit.placement.slots import PodSlot, build_leaf_domains, leaf_key, slot_starts

TIERS: tuple[str, ...] = ("node", "nvlink_domain", "rail_group", "spine", "cluster")
POD_SIZES: tuple[int, ...] = (1, 2, 4, 8)


@dataclass(frozen=True, slots=True)
class PlanQuality:
    """Fabric-level facts about one placed job."""

    tensor_groups: int
    tensor_groups_crossing_nvlink: int
    data_groups: int
    data_groups_crossing_rail_group: int
    spine_bytes_per_step: float


@dataclass(frozen=True, slots=True)
class TierFragmentation:
    """Free capacity of one tier: the best single domain and the number of empty domains."""

    tier: str
    domains: int
    free_domains: int
    largest_free_gpus: int
    largest_free_pods: Mapping[int, int]


@dataclass(frozen=True, slots=True)
class FreeCapacity:
    """Free GPUs of the cluster and, per tier, how much of them one domain can still offer."""

    schedulable_gpus: int
    free_gpus: int
    tiers: tuple[TierFragmentation, ...] = field(default_factory=tuple)

    def tier(self, name: str) -> TierFragmentation:
        return next(t for t in self.tiers if t.tier == name)


def plan_slots(
    snapshot: ClusterSnapshot, pods: Sequence[str], gpus_per_pod: int
) -> tuple[PodSlot, ...] | None:
    """Pod slots of a stored plan (see the module doc); None when a planned node is gone."""
    taken: Counter[str] = Counter()
    slots: list[PodSlot] = []
    for name in pods:
        if not snapshot.has_node(name):
            return None
        node = snapshot.node(name)
        position = taken[name]
        taken[name] += 1
        start = position * gpus_per_pod
        width = max(node.gpus, gpus_per_pod)
        slots.append(
            PodSlot(
                node=name,
                position=position,
                gpus=tuple((start + j) % width for j in range(gpus_per_pod)),
                spine=node.place.spine,
                leaf=leaf_key(node)[0],
                rack=node.place.rack or "",
                nvlink_domain=node.place.nvlink_domain or name,
                rail_group=node.place.rail_group,
            )
        )
    return tuple(slots)


def assess_plan(
    snapshot: ClusterSnapshot,
    layout: RankLayout,
    request: PlacementRequest,
    profile: FabricProfile,
    pods: Sequence[str],
) -> PlanQuality | None:
    """Quality of the plan ``pods`` (node per pod index); None if it cannot be located."""
    if len(pods) != layout.pods:
        return None
    slots = plan_slots(snapshot, pods, layout.gpus_per_pod)
    if slots is None:
        return None
    model = StepModel(snapshot, layout, request, profile)
    handout = None
    if request.gpu_choice != ENFORCED:  # priced as the planner prices it: what is handed out
        nodes = [snapshot.node(n) for n in dict.fromkeys(pods)]
        handout = Handout(build_leaf_domains(nodes, layout.gpus_per_pod, NO_RESERVATIONS))
    evaluated = price_slots(model, handout, slots)
    return quality_of(layout.groups, evaluated.ranks, evaluated.predicted.spine_bytes_per_step)


def decision_quality(snapshot: ClusterSnapshot, decision: PlacementDecision) -> PlanQuality | None:
    """Quality of a decision the planner just made: its own rank assignments and prediction,
    located on the snapshot it was made on (nothing is priced again)."""
    if not decision.feasible or decision.predicted is None or not decision.assignments:
        return None
    ordered = sorted(decision.assignments, key=lambda a: a.rank)
    if any(not snapshot.has_node(a.node) for a in ordered):
        return None
    ranks = tuple(snapshot.slot(a.node, a.gpu, a.gpu - a.local) for a in ordered)
    return quality_of(decision.groups, ranks, decision.predicted.spine_bytes_per_step)


def quality_of(
    groups: Mapping[str, Sequence[Sequence[int]]],
    ranks: Sequence[GpuSlot],
    spine_bytes_per_step: float,
) -> PlanQuality:
    """Quality of located ranks (rank -> GPU slot) with the communicator ``groups``."""
    tensor = groups.get("tensor", ())
    data = groups.get("data", ())
    return PlanQuality(
        tensor_groups=len(tensor),
        tensor_groups_crossing_nvlink=sum(crosses_nvlink(g, ranks) for g in tensor),
        data_groups=len(data),
        data_groups_crossing_rail_group=sum(crosses_rail_group(g, ranks) for g in data),
        spine_bytes_per_step=spine_bytes_per_step,
    )


def crosses_nvlink(group: Sequence[int], ranks: Sequence[GpuSlot]) -> bool:
    return len({ranks[r].nvlink_domain for r in group}) > 1


def crosses_rail_group(group: Sequence[int], ranks: Sequence[GpuSlot]) -> bool:
    members = [ranks[r] for r in group]
    if len({m.node for m in members}) <= 1:
        return False
    rail_groups = {m.rail_group for m in members}
    return None in rail_groups or len(rail_groups) > 1


def domain_of(tier: str) -> Callable[[NodeInfo], str]:
    """The key of a node's domain at ``tier`` (one of ``TIERS``)."""
    keys: dict[str, Callable[[NodeInfo], str]] = {
        "node": lambda n: n.name,
        "nvlink_domain": lambda n: n.place.nvlink_domain or n.name,
        "rail_group": lambda n: leaf_key(n)[0],
        "spine": lambda n: n.place.spine,
        "cluster": lambda n: "",
    }
    return keys[tier]


def measure_fragmentation(
    snapshot: ClusterSnapshot,
    reservations: Mapping[str, int] = NO_RESERVATIONS,
    pod_sizes: Sequence[int] = POD_SIZES,
) -> FreeCapacity:
    """Free GPUs per tier of the available nodes (see the module doc)."""
    nodes = [n for n in snapshot.nodes if n.available and n.gpus > 0]
    free = {n.name: free_after_reservations(n, reservations) for n in nodes}
    # Per node: its free GPUs, whether it is entirely free, and its free windows per pod size.
    rows = [
        (
            n,
            free[n.name],
            free[n.name] == n.gpus,
            [len(slot_starts(n, size, reservations)) if free[n.name] >= size else 0
             for size in pod_sizes],
        )
        for n in nodes
    ]  # fmt: skip
    tiers = []
    for tier in TIERS:
        key = domain_of(tier)
        free_in: dict[str, int] = {}
        whole: dict[str, bool] = {}
        windows: dict[str, list[int]] = {}
        for node, node_free, entirely, counts in rows:
            domain = key(node)
            free_in[domain] = free_in.get(domain, 0) + node_free
            whole[domain] = whole.get(domain, True) and entirely
            acc = windows.setdefault(domain, [0] * len(pod_sizes))
            for i, count in enumerate(counts):
                acc[i] += count
        tiers.append(
            TierFragmentation(
                tier=tier,
                domains=len(free_in),
                free_domains=sum(whole.values()),
                largest_free_gpus=max(free_in.values(), default=0),
                largest_free_pods=MappingProxyType(
                    {
                        size: max((w[i] for w in windows.values()), default=0)
                        for i, size in enumerate(pod_sizes)
                    }
                ),
            )
        )
    return FreeCapacity(
        schedulable_gpus=sum(n.gpus for n in nodes),
        free_gpus=sum(free.values()),
        tiers=tuple(tiers),
    )
