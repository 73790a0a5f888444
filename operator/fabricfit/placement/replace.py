"""Re-placing the pods of a running job whose planned nodes failed.

Theory of operation
-------------------
Once a job runs, its healthy pods stay where they are: moving them would restart training. When
some pods lose their node (NotReady, cordoned, deleted) and are recreated with the same index,
each lost pod goes to the eligible node that keeps the job's predicted step communication time
lowest, with every other pod fixed. Lost pods are placed one at a time in index order, each
seeing the ones already re-placed, so the result is deterministic. Candidate nodes are reduced
to one representative per fabric position (rail group, rack, NVLink domain, free GPUs) — nodes
that differ only by name cost the same — and the first by name represents each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot, NodeInfo
from fabricfit.placement.constraints import free_after_reservations, node_rejection
from fabricfit.placement.costing import StepModel
from fabricfit.placement.decision import StepTimes
from fabricfit.placement.layout import Groups, build_layout
from fabricfit.placement.quality import PlanQuality, quality_of
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.slots import PodSlot


@dataclass(frozen=True)
class Replacement:
    """Pod index → node for the whole job after re-placing ``moved`` pods."""

    pods: tuple[str, ...]
    moved: Mapping[int, str]
    predicted: StepTimes
    groups: Mapping[str, Groups]
    quality: PlanQuality


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


def _candidates(
    snapshot: ClusterSnapshot, request: PlacementRequest, reservations: Mapping[str, int]
) -> list[NodeInfo]:
    representatives: dict[tuple[object, ...], NodeInfo] = {}
    for node in snapshot.nodes:
        if node_rejection(node, request, reservations) is not None:
            continue
        place = node.place
        shared_domain = place.nvlink_domain if place.nvlink_domain != node.name else None
        free = free_after_reservations(node, reservations)
        key: tuple[object, ...] = (place.spine, place.rail_group, place.rack, free, shared_domain)
        representatives.setdefault(key, node)
    return list(representatives.values())


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
    pods = list(current)
    held = Counter(reservations)
    order = sorted(set(lost))
    for index in order:  # a feasible start, so every trial below is a complete assignment
        first = next(iter(_candidates(snapshot, request, held)), None)
        if first is None:
            return None
        pods[index] = first.name
        held[first.name] += request.gpus_per_pod
    for index in order:  # then the best node for each lost pod, the others fixed
        held[pods[index]] -= request.gpus_per_pod
        best: tuple[float, str] | None = None
        for node in _candidates(snapshot, request, held):
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
    )
