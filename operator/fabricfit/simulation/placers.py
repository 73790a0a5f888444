"""The placers a simulation compares: fabricfit's search and the peers, behind one signature.

Each placer takes the cluster as it is now and one job, and returns where its pods go (one node
name per pod, in rank order) with the cost model's prediction for that placement, or ``None``
when it cannot place the job now. fabricfit's plan carries its own prediction; a peer's
placement is priced by the same ``StepModel`` on the same snapshot, so only the choice differs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.constraints import eligible_nodes
from fabricfit.placement.costing import StepModel
from fabricfit.placement.decision import StepTimes
from fabricfit.placement.layout import build_layout
from fabricfit.placement.peers import PEERS, Peer
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.search import plan_placement
from fabricfit.placement.slots import build_leaf_domains

FABRICFIT = "fabricfit"


@dataclass(frozen=True, slots=True)
class Placed:
    """One job's placement: the node of every pod and its predicted step communication."""

    pods: tuple[str, ...]
    predicted: StepTimes


Placer = Callable[[ClusterSnapshot, PlacementRequest, FabricProfile], Placed | None]


def place_fabricfit(
    snapshot: ClusterSnapshot, request: PlacementRequest, profile: FabricProfile
) -> Placed | None:
    decision = plan_placement(snapshot, request, profile)
    if not decision.feasible or decision.predicted is None:
        return None
    return Placed(pods=decision.pods, predicted=decision.predicted)


def peer_placer(peer: Peer) -> Placer:
    """A placer that asks ``peer`` for slots among the nodes the job may use, then prices them."""

    def place(
        snapshot: ClusterSnapshot, request: PlacementRequest, profile: FabricProfile
    ) -> Placed | None:
        layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
        nodes, _ = eligible_nodes(snapshot, request, {})
        domains = build_leaf_domains(nodes, request.gpus_per_pod, {})
        slots = peer(domains, layout.pods)
        if slots is None:
            return None
        model = StepModel(snapshot, layout, request, profile)
        return Placed(
            pods=tuple(s.node for s in slots), predicted=model.predict(model.rank_slots(slots))
        )

    return place


#: Every placer by the name ``simulate --placer`` takes, fabricfit first.
PLACERS: dict[str, Placer] = {
    FABRICFIT: place_fabricfit,
    **{name: peer_placer(peer) for name, peer in PEERS.items()},
}
