"""Price a placement someone else made: pod index → node in, predicted step communication out.

Theory of operation
-------------------
Comparing fabricfit with another scheduler (Kueue, kube-scheduler, a hand-written plan) means
pricing *its* placement with the same cost model. Another scheduler only says which node each
pod is bound to (``pod.spec.nodeName``); which GPUs of a shared node the pod gets is the device
plugin's choice. This module fixes that choice the way ``placement.slots`` does for the search:
on the snapshot the job was placed on (without the job's own pods), GPUs held by running pods are
the lowest indices of a node, and pod *k* takes the lowest entirely free ``gpusPerPod`` window
of its node that no lower-indexed pod of the job took (aligned windows when ``gpusPerPod``
divides the node's GPUs, so local GPU *j* of every pod sits on the same rail).

Which of a node's windows goes to which of the job's pods there is kubelet's admission order,
which nobody predicts: unless the request says the GPU choice is enforced (``gpu_choice``, DRA
claims fabricfit allocates), the placement is priced in the worse of the two hand-out orders
(``placement.handout``), as the search prices its own plans — so a placement fabricfit planned
and one another scheduler made are priced alike, and neither on a window nothing enforces.

Ranks then follow the job's rank layout (pod *k* holds ranks ``k·g … k·g+g−1``) and are priced
with :class:`~fabricfit.placement.costing.StepModel`, the search's own bridge to the cost
model; the result also carries the plan's quality (group crossings, spine bytes) and the rail
groups and spines it uses, so a benchmark or the demo can print both side by side.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.constraints import NO_RESERVATIONS
from fabricfit.placement.costing import StepModel
from fabricfit.placement.decision import StepTimes
from fabricfit.placement.handout import Handout
from fabricfit.placement.layout import build_layout
from fabricfit.placement.neighbours import Neighbours
from fabricfit.placement.quality import PlanQuality, quality_of
from fabricfit.placement.request import ENFORCED, PlacementRequest
from fabricfit.placement.scoring import price_slots
from fabricfit.placement.slots import PodSlot, build_leaf_domains, node_slots


@dataclass(frozen=True, slots=True)
class PricedPods:
    """One placement located and priced: pod k's slot, the prediction and the plan's quality."""

    slots: tuple[PodSlot, ...]
    predicted: StepTimes
    quality: PlanQuality

    @property
    def rail_groups(self) -> Mapping[str, int]:
        """Pods per rail group (a node without one counts under its leaf domain key)."""
        return dict(Counter(s.rail_group or s.leaf for s in self.slots))

    @property
    def spines(self) -> Mapping[str, int]:
        """Pods per spine."""
        return dict(Counter(s.spine for s in self.slots))


def locate_pods(
    snapshot: ClusterSnapshot, pods: Sequence[str], gpus_per_pod: int
) -> tuple[PodSlot, ...]:
    """The slot of every pod (``pods[k]`` = node of pod k; see the module doc).

    ValueError when a node is unknown or has no free window left for the pod.
    """
    windows: dict[str, list[PodSlot]] = {}
    slots: list[PodSlot] = []
    for index, name in enumerate(pods):
        if name not in windows:
            if not snapshot.has_node(name):
                raise ValueError(f"pod {index} is on node {name!r}, which the snapshot lacks")
            windows[name] = node_slots(snapshot.node(name), gpus_per_pod, NO_RESERVATIONS)
        free = windows[name]
        if not free:
            raise ValueError(
                f"pod {index} is on node {name!r}, which has no free window of "
                f"{gpus_per_pod} GPUs left for it"
            )
        slots.append(free.pop(0))
    return tuple(slots)


def price_pods(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    profile: FabricProfile,
    pods: Sequence[str],
    *,
    neighbours: Neighbours | None = None,
) -> PricedPods:
    """Price the placement ``pods`` (node of each pod index) of ``request`` on ``snapshot``,
    next to the running jobs' traffic when ``neighbours`` are given (the prediction then says
    what the links it shares cost it and what it adds to them, as the search prices it).

    ValueError when the placement has the wrong number of pods or cannot be located.
    """
    if len(pods) != request.pods:
        raise ValueError(f"the job has {request.pods} pods, the placement names {len(pods)}")
    layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
    slots = locate_pods(snapshot, pods, request.gpus_per_pod)
    model = StepModel(snapshot, layout, request, profile, neighbours)
    handout = None
    if request.gpu_choice != ENFORCED:
        nodes = [snapshot.node(n) for n in dict.fromkeys(pods)]
        handout = Handout(build_leaf_domains(nodes, request.gpus_per_pod, NO_RESERVATIONS))
    evaluated = price_slots(model, handout, slots)
    predicted = evaluated.predicted
    quality = quality_of(layout.groups, evaluated.ranks, predicted.spine_bytes_per_step)
    return PricedPods(slots=evaluated.slots, predicted=predicted, quality=quality)
