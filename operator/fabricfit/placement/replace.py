"""Re-placing the pods of a running job whose planned nodes failed.

Theory of operation
-------------------
Once a job runs, its healthy pods stay where they are: moving them would restart training. When
some pods lose their node (NotReady, cordoned, deleted) and are recreated with the same index,
or their node is cordoned for maintenance, each lost pod goes to the eligible node that keeps
the job's predicted step communication time lowest, with every other pod fixed. Lost pods are
placed one at a time in index order, each seeing the ones already re-placed, so the result is
deterministic. Candidate nodes are reduced to one representative per fabric position (rail
group, rack, NVLink domain, free GPUs, spare tier) — nodes that differ only by name cost the
same — and the first by name represents each.

Spares (:mod:`~fabricfit.placement.spares`) exist for exactly this, so candidates come in tiers
and the first tier with a node wins, by cost within it: (0) a spare of the lost pod's *home*
NVLink domain — the domain of its old node, or, when that node is gone, the domain most of its
tensor and expert peers run in — so tensor and expert groups stay inside the rack; (1) any node
that is not a spare; (2) a spare of another domain, the last resort (it belongs to that rack's
failover).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot, NodeInfo
from fabricfit.placement.constraints import free_after_reservations, node_rejection
from fabricfit.placement.costing import StepModel
from fabricfit.placement.decision import StepTimes
from fabricfit.placement.layout import Groups, RankLayout, build_layout
from fabricfit.placement.quality import PlanQuality, quality_of
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.slots import PodSlot
from fabricfit.placement.spares import NO_SPARES, SpareSet, spares_for

HOME_SPARE, ORDINARY, FOREIGN_SPARE = 0, 1, 2
NVLINK_BOUND = ("tensor", "expert")


@dataclass(frozen=True)
class Replacement:
    """Pod index → node for the whole job after re-placing ``moved`` pods."""

    pods: tuple[str, ...]
    moved: Mapping[int, str]
    predicted: StepTimes
    groups: Mapping[str, Groups]
    quality: PlanQuality
    spares: SpareSet = NO_SPARES  # the spares before the move
    home_domains: Mapping[int, str] = field(default_factory=dict)  # lost pod → its domain

    def to_spare(self, index: int) -> bool:
        """Whether lost pod ``index`` went to a spare of its home NVLink domain."""
        home = self.home_domains.get(index)
        node = self.moved.get(index)
        return home is not None and node in self.spares.by_domain.get(home, ())


def _slot(node: NodeInfo, offset: int, gpus_per_pod: int) -> PodSlot:
    gpus = tuple((offset + j) % max(node.gpus, 1) for j in range(gpus_per_pod))
    place = node.place
    return PodSlot(
        node=node.name,
        position=offset // gpus_per_pod,
        gpus=gpus,
        spine=place.spine,
        leaf=place.rail_group or place.rack or node.name,
        rack=place.rack or "",
        nvlink_domain=place.nvlink_domain,
        rail_group=place.rail_group,
    )


def _slots(snapshot: ClusterSnapshot, pods: Sequence[str], gpus_per_pod: int) -> list[PodSlot]:
    seen: Counter[str] = Counter()
    out = []
    for node in pods:
        out.append(_slot(snapshot.node(node), seen[node] * gpus_per_pod, gpus_per_pod))
        seen[node] += 1
    return out


def tier_of(node: NodeInfo, spares: SpareSet, home: str | None) -> int:
    """The candidate tier of ``node`` for a lost pod whose home domain is ``home``."""
    if node.name not in spares:
        return ORDINARY
    at_home = home is not None and node.name in spares.by_domain.get(home, ())
    return HOME_SPARE if at_home else FOREIGN_SPARE


def home_domain(
    snapshot: ClusterSnapshot, layout: RankLayout, pods: Sequence[str], index: int
) -> str | None:
    """The NVLink domain lost pod ``index`` belongs in (see the module doc), None if none is
    shared by several nodes."""
    shared = _shared_domains(snapshot)
    old = pods[index]
    if snapshot.has_node(old):
        domain = snapshot.node(old).place.nvlink_domain
        return domain if domain in shared else None
    peers: Counter[str] = Counter()
    ranks = set(layout.pod_ranks(index))
    for kind in NVLINK_BOUND:
        for group in layout.groups.get(kind, ()):
            if ranks.isdisjoint(group):
                continue
            for pod in {layout.pod_of(r) for r in group} - {index}:
                if snapshot.has_node(pods[pod]):
                    domain = snapshot.node(pods[pod]).place.nvlink_domain
                    peers[domain] += domain in shared
    best = sorted(((-n, d) for d, n in peers.items() if n > 0))
    return best[0][1] if best else None


def _shared_domains(snapshot: ClusterSnapshot) -> set[str]:
    counts = Counter(n.place.nvlink_domain for n in snapshot.nodes)
    return {d for d, n in counts.items() if n > 1 and d}


def _candidates(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    reservations: Mapping[str, int],
    tier: Mapping[str, int],
) -> list[NodeInfo]:
    """One representative node per fabric position and tier, only of the best tier present."""
    representatives: dict[tuple[object, ...], NodeInfo] = {}
    for node in snapshot.nodes:
        if node_rejection(node, request, reservations) is not None:
            continue
        place = node.place
        shared_domain = place.nvlink_domain if place.nvlink_domain != node.name else None
        free = free_after_reservations(node, reservations)
        level = tier.get(node.name, ORDINARY)
        key = (level, place.spine, place.rail_group, place.rack, free, shared_domain)
        representatives.setdefault(key, node)
    best = min((tier.get(n.name, ORDINARY) for n in representatives.values()), default=ORDINARY)
    return [n for n in representatives.values() if tier.get(n.name, ORDINARY) == best]


def replace_pods(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    profile: FabricProfile,
    current: Sequence[str],
    lost: Iterable[int],
    *,
    reservations: Mapping[str, int],
) -> Replacement | None:
    """Move each lost pod index to the best eligible node; None if one fits nowhere.

    ``current`` is the job's pod → node list; ``reservations`` the GPUs other plans hold. The
    snapshot must not count the lost pods (they are gone or on failed nodes).
    """
    layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
    model = StepModel(snapshot, layout, request, profile)
    spares = spares_for(snapshot, request, profile, reservations)
    pods = list(current)
    held = Counter(reservations)
    order = sorted(set(lost))
    homes = {i: home_domain(snapshot, layout, current, i) for i in order}
    tiers = {
        i: {n: tier_of(snapshot.node(n), spares, homes[i]) for n in spares.nodes} for i in order
    }
    for index in order:  # a feasible start, so every trial below is a complete assignment
        first = next(iter(_candidates(snapshot, request, held, tiers[index])), None)
        if first is None:
            return None
        pods[index] = first.name
        held[first.name] += request.gpus_per_pod
    for index in order:  # then the best node for each lost pod, the others fixed
        held[pods[index]] -= request.gpus_per_pod
        best: tuple[float, str] | None = None
        for node in _candidates(snapshot, request, held, tiers[index]):
            pods[index] = node.name
            seconds = model.predict(model.rank_slots(_slots(snapshot, pods, request.gpus_per_pod)))
            if best is None or (seconds.step_comm_seconds, node.name) < best:
                best = (seconds.step_comm_seconds, node.name)
        assert best is not None  # the start node itself is a candidate again
        pods[index] = best[1]
        held[best[1]] += request.gpus_per_pod
    ranks = model.rank_slots(_slots(snapshot, pods, request.gpus_per_pod))
    final = model.predict(ranks)
    return Replacement(
        pods=tuple(pods),
        moved={i: pods[i] for i in order},
        predicted=final,
        groups=layout.groups,
        quality=quality_of(layout.groups, ranks, final.spine_bytes_per_step),
        spares=spares,
        home_domains={i: d for i, d in homes.items() if d is not None},
    )
