"""The placers a simulation compares: fabricfit's search and the peers, behind one signature.

Each placer takes the cluster as it is now, one job, and the running jobs' link load (or None
when the replay runs without contention), and returns where its pods go (one node name per
pod, in rank order) and where each rank sits, with the cost model's prediction for that
placement, or ``None`` when it cannot place the job now. fabricfit's plan carries its own
prediction, priced next to the running jobs when they are given (its search then also weighs
what it costs them); a peer's placement is chosen by the peer's own rule, blind to traffic as
the peer is, and priced by the same ``StepModel`` on the same snapshot with the same
neighbours, on the GPUs the device plugin hands out (the worse of two admission orders, as
fabricfit's own plan is priced unless the request enforces the choice), so only the choice
differs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot, GpuSlot
from fabricfit.placement.constraints import eligible_nodes
from fabricfit.placement.costing import StepModel
from fabricfit.placement.decision import StepTimes
from fabricfit.placement.handout import Handout
from fabricfit.placement.layout import build_layout
from fabricfit.placement.neighbours import Neighbours
from fabricfit.placement.peers import PEERS, Peer
from fabricfit.placement.request import ENFORCED, PlacementRequest
from fabricfit.placement.scoring import price_slots
from fabricfit.placement.search import plan_placement
from fabricfit.placement.slots import build_leaf_domains

FABRICFIT = "fabricfit"


@dataclass(frozen=True, slots=True)
class Placed:
    """One job's placement: the node of every pod, where every rank sits (empty when the
    placer does not say), and its predicted step communication."""

    pods: tuple[str, ...]
    predicted: StepTimes
    ranks: tuple[GpuSlot, ...] = ()


class Placer(Protocol):
    def __call__(
        self,
        snapshot: ClusterSnapshot,
        request: PlacementRequest,
        profile: FabricProfile,
        neighbours: Neighbours | None = None,
    ) -> Placed | None: ...


def place_fabricfit(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    profile: FabricProfile,
    neighbours: Neighbours | None = None,
) -> Placed | None:
    decision = plan_placement(snapshot, request, profile, neighbours=neighbours)
    if not decision.feasible or decision.predicted is None:
        return None
    ordered = sorted(decision.assignments, key=lambda a: a.rank)
    ranks = tuple(snapshot.slot(a.node, a.gpu) for a in ordered)
    return Placed(pods=decision.pods, predicted=decision.predicted, ranks=ranks)


def peer_placer(peer: Peer) -> Placer:
    """A placer that asks ``peer`` for slots among the nodes the job may use, then prices them."""

    def place(
        snapshot: ClusterSnapshot,
        request: PlacementRequest,
        profile: FabricProfile,
        neighbours: Neighbours | None = None,
    ) -> Placed | None:
        layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
        nodes, _ = eligible_nodes(snapshot, request, {})
        domains = build_leaf_domains(nodes, request.gpus_per_pod, {})
        slots = peer(domains, layout.pods)
        if slots is None:
            return None
        model = StepModel(snapshot, layout, request, profile, neighbours)
        handout = None if request.gpu_choice == ENFORCED else Handout(domains)
        evaluated = price_slots(model, handout, slots)
        return Placed(
            pods=tuple(s.node for s in evaluated.slots),
            predicted=evaluated.predicted,
            ranks=evaluated.ranks,
        )

    return place


#: Every placer by the name ``simulate --placer`` takes, fabricfit first.
PLACERS: dict[str, Placer] = {
    FABRICFIT: place_fabricfit,
    **{name: peer_placer(peer) for name, peer in PEERS.items()},
}
