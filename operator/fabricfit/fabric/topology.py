"""Frozen value types describing where GPUs sit in the fabric.

Theory of operation
-------------------
A GPU cluster is a tree of tiers, coarse to fine: spine (block above the rail groups) ⊃ rail
group (nodes whose NIC *i* all attach to leaf switch *i*: one leaf hop between them on the same
rail) ⊃ rack ⊇ NVLink domain (node, or a whole NVL72 rack) ⊇ node ⊃ GPU. Every level is optional
on real clusters; label values are only unique within their parent level, so each level's id
here is already *qualified* by its parents (``spine/rail-group``), and two nodes share a level
exactly when their ids are equal. The NVLink domain is never missing: without a label it is the
node alone.

GPU *j* of a node with *r* rails uses rail ``j * r // gpus`` (rail-optimised wiring: GPU j and
NIC j share a PCIe switch). Two GPUs on different nodes talk over one leaf hop only when they are
on the same rail *and* in the same rail group; everything else crosses the spine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fabricfit.fabric.devices import DeviceMap

NO_SPINE = ""


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str  # NoSchedule | PreferNoSchedule | NoExecute


@dataclass(frozen=True, slots=True)
class FabricPlace:
    """A node's position in the fabric. Ids are qualified by their parent levels."""

    spine: str = NO_SPINE
    rail_group: str | None = None
    rack: str | None = None
    nvlink_domain: str = ""


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One Kubernetes node as the placement engine sees it."""

    name: str
    gpus: int
    free_gpus: int
    rails: int
    place: FabricPlace
    available: bool = True
    unavailable_reason: str | None = None
    fabric: str | None = None
    labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    taints: tuple[Taint, ...] = ()
    # GPUs published by DRA ResourceSlices (driver gpu.nvidia.com) instead of the device plugin:
    # pods claim them through ResourceClaims and kube-scheduler picks the devices on the node.
    dra: bool = False
    maintenance: bool = False  # cordoned or tainted for maintenance: drained from plans
    # Positions (fabric.devices) of GPUs known to be taken, when the planner must choose the
    # very devices (DRA, device-exact): windows avoid them. None: only the count is known.
    held_gpus: frozenset[int] | None = None

    def rail_of(self, gpu: int) -> int:
        """Rail (NIC index) that local GPU ``gpu`` sends inter-node traffic on."""
        if self.gpus <= 0 or self.rails <= 0:
            return 0
        return gpu * self.rails // self.gpus


@dataclass(frozen=True, slots=True)
class GpuSlot:
    """One GPU, located in the fabric: what the cost model needs to know about a rank."""

    node: str
    gpu: int
    rail: int
    nvlink_domain: str
    rail_group: str | None
    spine: str
    rack: str | None = None
    # Rail of the first GPU of the rank's pod: NCCL numbers a pod's GPUs from 0, and PXN sends
    # to a peer's local GPU k through this pod's GPU k (cost.step), so the windows decide rails.
    window_rail: int = 0


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """A problem found while reading the cluster (bad labels, bad quantities)."""

    node: str
    message: str
    severity: str = "warning"  # warning | error


@dataclass(frozen=True)
class ClusterSnapshot:
    """Every node of the cluster, sorted by name, plus the label scheme in use and diagnostics."""

    nodes: tuple[NodeInfo, ...]
    scheme: str = "native"
    diagnostics: tuple[Diagnostic, ...] = ()
    # GPUs allocated DRA claims hold per using pod (namespace, name); only claims of one pod.
    claimed_by_pod: Mapping[tuple[str, str], int] = field(
        default_factory=lambda: MappingProxyType({})
    )
    # DRA GPUs and RDMA NICs of each node by position (fabric.devices); None: no DRA devices.
    devices: DeviceMap | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {n.name: n for n in self.nodes})
        object.__setattr__(self, "_facts_token", object())

    @property
    def facts_token(self) -> object:
        """An object that two snapshots share only when every node's facts (all a ``NodeInfo``
        says but ``free_gpus``) and place are the same objects: what depends on those alone
        (the fabric vote, tier label keys, detected tiers) may be cached on it. Each snapshot
        gets its own unless ``fabric.snapshot.FactsMemo`` built it from unchanged nodes."""
        return self._facts_token  # type: ignore[attr-defined]

    def node(self, name: str) -> NodeInfo:
        by_name: dict[str, NodeInfo] = self._by_name  # type: ignore[attr-defined]
        return by_name[name]

    def has_node(self, name: str) -> bool:
        by_name: dict[str, NodeInfo] = self._by_name  # type: ignore[attr-defined]
        return name in by_name

    def slot(self, node: str, gpu: int, window: int = 0) -> GpuSlot:
        """The fabric location of GPU ``gpu`` on ``node``, in a pod whose first GPU is
        ``window``."""
        info = self.node(node)
        return GpuSlot(
            node=info.name,
            gpu=gpu,
            rail=info.rail_of(gpu),
            nvlink_domain=info.place.nvlink_domain,
            rail_group=info.place.rail_group,
            spine=info.place.spine,
            rack=info.place.rack,
            window_rail=info.rail_of(window),
        )
