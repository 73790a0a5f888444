"""DRA objects in the shapes the drivers publish them, for unit and e2e tests (plain dicts).

GPUs as NVIDIA's DRA driver publishes them (kubernetes-sigs/dra-driver-nvidia-gpu @95932046,
``cmd/gpu-kubelet-plugin/deviceinfo.go``): driver ``gpu.nvidia.com``, one pool per node named
after it, devices ``gpu-<minor>`` with ``type``, ``uuid``, ``productName``, ``brand``,
``architecture``, ``cudaComputeCapability``, ``driverVersion``, ``cudaDriverVersion`` and the
standard ``resource.kubernetes.io/pciBusID`` and ``resource.kubernetes.io/pcieRoot``. RDMA NICs
as dranet publishes them (kubernetes-sigs/dranet @f258477c, ``pkg/apis/attributes.go``,
``pkg/inventory/db.go``): driver ``dra.net``, pool = node, devices ``pci-<domain>-<bus>-<dev>-<fn>``
with ``dra.net/ifName``, ``dra.net/pciAddress``, ``dra.net/mac``, ``dra.net/rdma``,
``dra.net/rdmaDevice``, ``dra.net/numaNode``, ``dra.net/virtual`` and the standard
``resource.kubernetes.io/pcieRoot``.

The board: ``roots`` PCIe root complexes, each with ``gpus_per_root`` GPUs and as many RDMA NICs
(two of each under one switch, as on a DGX A100; one each is a DGX H100). GPU minors follow PCI
order. ``shuffled`` lists the devices of a slice out of that order, so a test can tell a choice
made by position from one made by listing order (kube-scheduler's allocator takes the first
devices listed).
"""

from __future__ import annotations

import uuid
from typing import Any

ROOT_BUSES = (0x15, 0x37, 0x5D, 0x89, 0xA8, 0xB8, 0xCA, 0xDA)
GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.nvidia.com"},
    "spec": {
        "selectors": [
            {
                "cel": {
                    "expression": "device.driver == 'gpu.nvidia.com' && "
                    "device.attributes['gpu.nvidia.com'].type == 'gpu'"
                }
            }
        ]
    },
}
NIC_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "dranet"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "dra.net"'}}]},
}
RDMA_SELECTOR = {"cel": {"expression": 'device.attributes["dra.net"].rdma == true'}}


def pci(root: int, k: int, nic: bool) -> str:
    """The bus id of device ``k`` (GPU or NIC) under root ``root``."""
    bus = ROOT_BUSES[root] + 1 + 2 * k + (0 if nic else 1)
    return f"0000:{bus:02x}:00.0"


def root_of(root: int) -> str:
    return f"pci0000:{ROOT_BUSES[root]:02x}"


def gpu_devices(node: str, roots: int = 4, gpus_per_root: int = 2) -> list[dict[str, Any]]:
    devices = []
    for r in range(roots):
        for k in range(gpus_per_root):
            minor = r * gpus_per_root + k
            attributes = {
                "type": {"string": "gpu"},
                "uuid": {"string": f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}/{minor}')}"},
                "productName": {"string": "NVIDIA H100 80GB HBM3"},
                "brand": {"string": "Nvidia"},
                "architecture": {"string": "Hopper"},
                "cudaComputeCapability": {"version": "9.0.0"},
                "driverVersion": {"version": "570.124.6"},
                "cudaDriverVersion": {"version": "12.8.0"},
                "resource.kubernetes.io/pciBusID": {"string": pci(r, k, nic=False)},
                "resource.kubernetes.io/pcieRoot": {"string": root_of(r)},
            }
            devices.append(
                {
                    "name": f"gpu-{minor}",
                    "attributes": attributes,
                    "capacity": {"memory": {"value": "81559Mi"}},
                }
            )
    return devices


def nic_devices(node: str, roots: int = 4, nics_per_root: int = 2) -> list[dict[str, Any]]:
    devices = []
    for r in range(roots):
        for k in range(nics_per_root):
            address = pci(r, k, nic=True)
            index = r * nics_per_root + k
            attributes = {
                "dra.net/ifName": {"string": f"ibp{int(address[5:7], 16)}s0"},
                "dra.net/pciAddress": {"string": address},
                "dra.net/mac": {"string": f"02:00:00:00:{index:02x}:01"},
                "dra.net/rdma": {"bool": True},
                "dra.net/rdmaDevice": {"string": f"mlx5_{index}"},
                "dra.net/numaNode": {"int": 0 if r < roots // 2 else 1},
                "dra.net/virtual": {"bool": False},
                "resource.kubernetes.io/pcieRoot": {"string": root_of(r)},
            }
            name = "pci-" + address.replace(":", "-").replace(".", "-")
            devices.append({"name": name, "attributes": attributes})
    # The node's Ethernet management port: no RDMA, not on a GPU's root.
    devices.append(
        {
            "name": "eth0",
            "attributes": {
                "dra.net/ifName": {"string": "eth0"},
                "dra.net/rdma": {"bool": False},
                "dra.net/virtual": {"bool": False},
            },
        }
    )
    return devices


def resource_slice(
    node: str, driver: str, devices: list[dict[str, Any]], *, shuffled: bool = False
) -> dict[str, Any]:
    listed = devices[::-1] if shuffled else devices
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{driver}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": listed,
        },
    }


def node_slices(
    node: str, roots: int = 4, per_root: int = 2, *, nics: bool = True, shuffled: bool = False
) -> list[dict[str, Any]]:
    """The GPU slice (and the NIC slice) of one node."""
    found = [
        resource_slice(
            node, "gpu.nvidia.com", gpu_devices(node, roots, per_root), shuffled=shuffled
        )
    ]
    if nics:
        found.append(
            resource_slice(node, "dra.net", nic_devices(node, roots, per_root), shuffled=shuffled)
        )
    return found


def claim_template(name: str, gpus: int, nics: int = 0) -> dict[str, Any]:
    """A ResourceClaimTemplate asking for ``gpus`` GPUs and ``nics`` RDMA NICs."""
    requests: list[dict[str, Any]] = [
        {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": gpus}}
    ]
    if nics:
        exact = {"deviceClassName": "dranet", "count": nics, "selectors": [RDMA_SELECTOR]}
        requests.append({"name": "nics", "exactly": exact})
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": {"devices": {"requests": requests}}},
    }


def claiming(pod_spec: dict[str, Any], template: str, entry: str = "devices") -> dict[str, Any]:
    """``pod_spec`` with its devices claimed through ``template`` (no nvidia.com/gpu)."""
    pod_spec["resourceClaims"] = [{"name": entry, "resourceClaimTemplateName": template}]
    for container in pod_spec["containers"]:
        resources = container.setdefault("resources", {})
        for kind in ("requests", "limits"):
            (resources.get(kind) or {}).pop("nvidia.com/gpu", None)
        resources["claims"] = [{"name": entry}]
    return pod_spec


def dra_nodes(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Node manifests whose GPUs are not in their allocatable (they come from ResourceSlices)."""
    out = []
    for given in manifests:
        node = {**given, "metadata": dict(given["metadata"]), "status": dict(given["status"])}
        node["metadata"]["labels"] = {
            k: v for k, v in node["metadata"]["labels"].items() if k != "nvidia.com/gpu.count"
        }
        for field in ("capacity", "allocatable"):
            node["status"][field] = {
                k: v for k, v in node["status"][field].items() if k != "nvidia.com/gpu"
            }
        out.append(node)
    return out


def allocated_claim(
    name: str, node: str, gpus: list[str], namespace: str = "other"
) -> dict[str, Any]:
    """A claim kube-scheduler allocated ``gpus`` of ``node`` (another tenant's)."""
    results = [
        {"request": "gpus", "driver": "gpu.nvidia.com", "pool": node, "device": g} for g in gpus
    ]
    selector = {"key": "metadata.name", "operator": "In", "values": [node]}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": []}},
        "status": {
            "allocation": {
                "devices": {"results": results},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [selector]}]},
            }
        },
    }


def delete_topologies(custom: Any, namespace: str, name: str) -> None:
    """Delete TrainingTopology ``name`` and wait until ``namespace`` holds none (its operator
    releases what it held before the test's fixtures delete the DeviceClasses and slices)."""
    from fabricfit_dev.waiting import wait_for

    custom.delete_namespaced_custom_object(
        "fabricfit.dev", "v1alpha1", namespace, "trainingtopologies", name
    )
    wait_for(
        lambda: (
            not custom.list_namespaced_custom_object(
                "fabricfit.dev", "v1alpha1", namespace, "trainingtopologies"
            )["items"]
        ),
        timeout_seconds=60,
        what="the TrainingTopology deleted",
    )
