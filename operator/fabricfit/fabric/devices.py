"""Which DRA device is which rail: GPUs and RDMA NICs of each node, in rail order (pure).

Theory of operation
-------------------
The placement engine speaks of a node's GPUs by *position*: local GPU ``j`` of a pod in window
``p·g … p·g+g−1`` sends its inter-node traffic on rail ``NodeInfo.rail_of(position)``. On a
rail-optimised node (DGX/HGX) GPU ``i`` and NIC ``i`` share a PCIe switch and NIC ``i`` is
cabled to leaf switch ``i``, and both are numbered in PCI order. DRA publishes the devices by
name, not by position, so positions come from the attributes the drivers publish:

* GPUs (driver ``gpu.nvidia.com``, whole GPUs of type ``gpu``; devices ``gpu-<minor>``,
  kubernetes-sigs/dra-driver-nvidia-gpu ``cmd/gpu-kubelet-plugin/deviceinfo.go``): ordered by
  the standard ``resource.kubernetes.io/pcieRoot`` (the root complex, ``pci<domain>:<bus>``,
  KEP-4381), then ``resource.kubernetes.io/pciBusID`` (older driver releases wrote
  ``pcieBusID``), then the minor in the name. Position ``i`` is the ``i``-th GPU in that order:
  the PCI order NVIDIA's driver also numbers minors in. The driver no longer publishes
  ``index`` (issue #563), so nothing here uses it.
* NICs (driver ``dra.net``, kubernetes-sigs/dranet; ``dra.net/rdma: true`` only): ordered by
  ``pcieRoot`` then ``dra.net/pciAddress``. A GPU's NIC is the NIC on its own PCIe root; when a
  root holds several GPUs and NICs (two of each under one switch on a DGX A100) the ``k``-th GPU
  of the root takes its ``k``-th NIC (its ``k mod n``-th when the root has fewer NICs). A GPU
  whose root has no RDMA NIC, or that publishes no root, has none.

``held`` is the set of positions of a node whose GPU an allocated ResourceClaim holds (any
namespace, any driver's claim naming it), and ``nic_held`` those whose paired NIC one holds:
device-exact placement leaves both alone, as kube-scheduler's allocator would.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fabricfit.api.constants import (
    DRA_GPU_DRIVER,
    DRA_NIC_DRIVER,
    PCI_BUS_ID_ATTRIBUTE,
    PCIE_ROOT_ATTRIBUTE,
)
from fabricfit.fabric.resourceslices import DraDevice, DraInventory

_MINOR = re.compile(r"(\d+)$")
LEGACY_BUS_ID = "pcieBusID"  # the GPU driver's own attribute before the standard one
NIC_PCI_ADDRESS = "pciAddress"  # dra.net/pciAddress, its domain removed when read
NIC_RDMA = "rdma"  # dra.net/rdma


@dataclass(frozen=True, slots=True)
class NodeDevices:
    """One node's DRA GPUs by position and, per position, the RDMA NIC on its PCIe root."""

    node: str
    gpus: tuple[DraDevice, ...]
    nics: tuple[DraDevice | None, ...]
    held: frozenset[int] = frozenset()
    nic_held: frozenset[int] = frozenset()

    def position_of(self, device: str) -> int | None:
        return next((i for i, d in enumerate(self.gpus) if d.name == device), None)

    @property
    def has_nics(self) -> bool:
        return any(nic is not None for nic in self.nics)


@dataclass(frozen=True)
class DeviceMap:
    """Every DRA node's devices by position (empty: no node's GPUs come from DRA)."""

    nodes: Mapping[str, NodeDevices] = field(default_factory=lambda: MappingProxyType({}))

    def of(self, node: str) -> NodeDevices | None:
        return self.nodes.get(node)


NO_DEVICES = DeviceMap()


def build_device_map(
    gpus: DraInventory, nics: DraInventory, allocated: Iterable[tuple[str, str, str]] = ()
) -> DeviceMap:
    """Positions of every node's whole GPUs, their NICs, and what allocated claims hold."""
    taken = frozenset(allocated)
    per_node: dict[str, list[DraDevice]] = {}
    for device in gpus.devices:
        if device.is_gpu:
            per_node.setdefault(device.node, []).append(device)
    rdma: dict[str, list[DraDevice]] = {}
    for nic in nics.devices:
        if nic.attributes.get(NIC_RDMA) is True:
            rdma.setdefault(nic.node, []).append(nic)
    nodes = {
        node: _node_devices(node, devices, rdma.get(node, []), taken)
        for node, devices in sorted(per_node.items())
    }
    return DeviceMap(nodes=MappingProxyType(nodes))


def _node_devices(
    node: str,
    gpus: list[DraDevice],
    nics: list[DraDevice],
    taken: frozenset[tuple[str, str, str]],
) -> NodeDevices:
    ordered = tuple(sorted(gpus, key=_gpu_key))
    paired = _pair_nics(ordered, sorted(nics, key=_nic_key))
    held = frozenset(i for i, d in enumerate(ordered) if (DRA_GPU_DRIVER, d.pool, d.name) in taken)
    nic_held = frozenset(
        i
        for i, nic in enumerate(paired)
        if nic is not None and (DRA_NIC_DRIVER, nic.pool, nic.name) in taken
    )
    return NodeDevices(node=node, gpus=ordered, nics=paired, held=held, nic_held=nic_held)


def _pair_nics(gpus: tuple[DraDevice, ...], nics: list[DraDevice]) -> tuple[DraDevice | None, ...]:
    by_root: dict[str, list[DraDevice]] = {}
    for nic in nics:
        root = pcie_root(nic)
        if root:
            by_root.setdefault(root, []).append(nic)
    seen: dict[str, int] = {}
    paired: list[DraDevice | None] = []
    for gpu in gpus:
        root = pcie_root(gpu)
        on_root = by_root.get(root, []) if root else []
        k = seen.get(root, 0)
        seen[root] = k + 1
        paired.append(on_root[k % len(on_root)] if on_root else None)
    return tuple(paired)


def pcie_root(device: DraDevice) -> str:
    value = device.attributes.get(PCIE_ROOT_ATTRIBUTE)
    return value.lower() if isinstance(value, str) else ""


def _gpu_key(device: DraDevice) -> tuple[str, str, int, str]:
    bus = device.attributes.get(PCI_BUS_ID_ATTRIBUTE, device.attributes.get(LEGACY_BUS_ID))
    minor = _MINOR.search(device.name)
    return (
        pcie_root(device),
        bus.lower() if isinstance(bus, str) else "",
        int(minor.group(1)) if minor else 0,
        device.name,
    )


def _nic_key(device: DraDevice) -> tuple[str, str, str]:
    address = device.attributes.get(NIC_PCI_ADDRESS)
    return (pcie_root(device), address.lower() if isinstance(address, str) else "", device.name)
