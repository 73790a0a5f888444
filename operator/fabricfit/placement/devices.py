"""Device-exact placement: the DRA GPUs and RDMA NICs every pod of a plan runs on (pure).

Theory of operation
-------------------
When fabricfit makes the cluster use the devices it chose (``gpu_choice`` enforced: the pods
claim their GPUs through DRA and the operator allocates each pod's claim itself, see
``reconcile.devices``), a window of the plan is not a convention but a set of devices, so the
planner must see which devices are really free. :func:`device_view` gives it a snapshot in
which every DRA node knows its held positions (``NodeInfo.held_gpus``, ``fabric.devices``):

* GPUs an allocated ResourceClaim holds, in any namespace, whoever allocated it;
* GPUs other fabricfit plans chose and have not been allocated yet (``held_devices``);
* when the pods ask for RDMA NICs too, positions whose NIC on the GPU's PCIe root is held or
  missing: a GPU is only usable with its own NIC.

The search then picks windows of free positions, its rail-aligned candidates putting local GPU
*j* of data/expert-parallel peers on the same rail of every node (``placement.slots``), and
:func:`name_devices` turns the chosen positions into device names: rank *r* on position *p* of
its node runs on GPU ``gpus[p]`` and, when NICs are asked for, sends on NIC ``nics[p]``.
:func:`pod_devices` regroups them per pod, in local-rank order, as the claim allocation lists
them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from fabricfit.fabric.devices import NodeDevices
from fabricfit.fabric.topology import ClusterSnapshot, NodeInfo
from fabricfit.placement.decision import PlacementDecision
from fabricfit.placement.request import ENFORCED, PlacementRequest

NO_HELD: Mapping[str, frozenset[str]] = {}


@dataclass(frozen=True, slots=True)
class PodDevices:
    """The devices one pod runs on: its GPUs in local-rank order, then its NICs."""

    node: str
    gpus: tuple[str, ...]
    nics: tuple[str, ...] = ()


def enforces_devices(request: PlacementRequest, snapshot: ClusterSnapshot) -> bool:
    """Whether the plan chooses device names: an enforced request on a snapshot with DRA
    devices."""
    return request.gpu_choice == ENFORCED and snapshot.devices is not None


def device_view(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    held_devices: Mapping[str, frozenset[str]] = NO_HELD,
) -> ClusterSnapshot:
    """``snapshot`` with every DRA node's held positions known (see the module doc);
    ``held_devices`` maps a node to GPU device names other plans hold there."""
    if not enforces_devices(request, snapshot) or snapshot.devices is None:
        return snapshot
    nodes = tuple(
        _held_view(node, snapshot.devices.of(node.name), request, held_devices)
        for node in snapshot.nodes
    )
    return replace(snapshot, nodes=nodes)


def _held_view(
    node: NodeInfo,
    devices: NodeDevices | None,
    request: PlacementRequest,
    held_devices: Mapping[str, frozenset[str]],
) -> NodeInfo:
    if devices is None or not node.dra:
        return node
    held = set(devices.held) | set(node.held_gpus or ())  # idempotent: a view of a view
    if request.nics_per_pod:
        held |= devices.nic_held
        held |= {p for p, nic in enumerate(devices.nics) if nic is None}
    for name in held_devices.get(node.name, frozenset()):
        position = devices.position_of(name)
        if position is not None:
            held.add(position)
    free = max(0, min(node.free_gpus, node.gpus - len(held)))
    return replace(node, held_gpus=frozenset(held), free_gpus=free)


def name_devices(
    decision: PlacementDecision, snapshot: ClusterSnapshot, request: PlacementRequest
) -> PlacementDecision:
    """``decision`` with the DRA device (and NIC) of every rank named, choice enforced."""
    if not decision.feasible or snapshot.devices is None:
        return decision
    named = []
    for placed in decision.assignments:
        devices = snapshot.devices.of(placed.node)
        if devices is None or placed.gpu >= len(devices.gpus):
            return decision  # not a DRA node: nothing to name, nothing enforced
        nic = devices.nics[placed.gpu] if request.nics_per_pod else None
        named.append(
            replace(
                placed,
                device=devices.gpus[placed.gpu].name,
                nic=nic.name if nic is not None else None,
            )
        )
    return replace(decision, assignments=tuple(named), gpu_choice=ENFORCED)


def pod_devices(decision: PlacementDecision, nics_per_pod: int) -> tuple[PodDevices, ...]:
    """Per pod index, the devices its ranks were given (empty when none were named): GPUs in
    local-rank order, then the distinct NICs of those GPUs, the first ``nics_per_pod``."""
    if not decision.assignments:
        return ()
    per_pod: dict[int, list[tuple[int, str, str | None]]] = {}
    for placed in decision.assignments:
        if placed.device is None:
            return ()
        per_pod.setdefault(placed.pod, []).append((placed.local, placed.device, placed.nic))
    out: list[PodDevices] = []
    for pod, node in enumerate(decision.pods):
        ranks = sorted(per_pod.get(pod, []))
        nics = [nic for _, _, nic in ranks if nic is not None]
        out.append(
            PodDevices(
                node=node,
                gpus=tuple(device for _, device, _ in ranks),
                nics=tuple(dict.fromkeys(nics))[:nics_per_pod],
            )
        )
    return tuple(out)
