"""A placed job's traffic, for the link load of the running jobs (pure).

The operator (from a plan it wrote), ``fabricfit plan --running`` (from a dump of
TrainingTopologies) and ``fabricfit simulate`` (from the jobs it started) all turn a placed job
into the :class:`~fabricfit.contention.JobTraffic` a :class:`~fabricfit.contention.LinkLoad`
adds the same way, here: the pods' nodes are located with the convention of recorded plans
(``quality.plan_slots``: the m-th pod of the job on a node takes the node's m-th window), the
ranks follow the job's rank layout, the traffic comes from the cost model
(``contention.traffic``) and the step time is compute (declared, or ``contention.duty``) plus
the communication the plan predicted (:func:`recorded_comm_seconds`: the one its status records,
or the cost model's price of the plan when it records none). NIC links are recorded only on
nodes the job does not fill: nobody else can share the NICs of a node it holds whole, and
leaving them out keeps the load small on a large cluster.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from fabricfit.contention import JobTraffic, dimension_traffic
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot, GpuSlot
from fabricfit.placement.costing import StepModel
from fabricfit.placement.layout import build_layout
from fabricfit.placement.neighbours import compute_seconds
from fabricfit.placement.quality import plan_slots
from fabricfit.placement.request import PlacementRequest


def job_traffic(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    profile: FabricProfile,
    pods: Sequence[str],
    *,
    key: str,
    comm_seconds: float,
) -> JobTraffic | None:
    """The traffic of the job ``request`` placed as ``pods`` (node per pod index), its step
    taking ``comm_seconds`` of communication; None when it uses no shared link or a planned
    node is not in ``snapshot``."""
    if len(pods) != request.pods:
        return None
    slots = plan_slots(snapshot, pods, request.gpus_per_pod)
    if slots is None:
        return None
    ranks = [snapshot.slot(s.node, g) for s in slots for g in s.gpus]
    return located_traffic(snapshot, request, profile, ranks, key=key, comm_seconds=comm_seconds)


def located_traffic(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    profile: FabricProfile,
    ranks: Sequence[GpuSlot],
    *,
    key: str,
    comm_seconds: float,
) -> JobTraffic | None:
    """:func:`job_traffic` of a job whose every rank is already located (``ranks[r]``)."""
    layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
    held = Counter(slot.node for slot in ranks)
    shared = {n for n, gpus in held.items() if gpus < snapshot.node(n).gpus}
    dims = dimension_traffic(
        layout.groups, ranks, request.parallelism, request.model, profile, nic_nodes=shared
    )
    dims = tuple(d for d in dims if d.bytes_per_step)
    if not dims:
        return None
    step = compute_seconds(request, profile) + comm_seconds
    step = max(step, sum(d.net_seconds for d in dims))
    return JobTraffic(key=key, gpus=request.world_size, step_seconds=step, dimensions=dims)


def recorded_comm_seconds(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    profile: FabricProfile,
    pods: Sequence[str],
    recorded: float | None,
) -> float | None:
    """The step communication of a recorded plan: ``recorded`` (what its status says) when
    given, else the cost model's price of the plan; None when it cannot be located."""
    if recorded is not None:
        return recorded
    if len(pods) != request.pods:
        return None
    slots = plan_slots(snapshot, pods, request.gpus_per_pod)
    if slots is None:
        return None
    layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
    model = StepModel(snapshot, layout, request, profile)
    return model.predict(model.rank_slots(slots)).step_comm_seconds
