"""Fake GPU nodes for the local control plane, described compactly and created through the API.

``node_manifests`` is pure: a ``FakeFabric`` in, Node dicts out (labels for one label scheme,
``status.allocatable`` with ``nvidia.com/gpu``, the kwok annotation). ``create_nodes`` posts them
and ``wait_ready`` waits until kwok has made them Ready and the controller-manager has lifted the
``node.kubernetes.io/not-ready`` taint, so kube-scheduler will bind pods to them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from fabricfit.api.constants import LABEL_PREFIX
from fabricfit_dev.kube import delete_if_present, exists
from fabricfit_dev.waiting import wait_for

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
NATIVE = LABEL_PREFIX
#: GPU Feature Discovery's product label per fabric preset (H100 for the rest).
PRODUCTS = {"gb200-nvl72": "NVIDIA-GB200"}
SCHEMES = ("native", "topograph", "gke", "eks", "oke", "coreweave")
#: Label of the node pool a fake node belongs to (``FakeFabric.pool``), to fence tests apart.
POOL_LABEL = "fabricfit.dev/pool"
CLIQUE_LABEL = "nvidia.com/gpu.clique"


@dataclass(frozen=True)
class Position:
    """Where a node sits; global indices count from the fabric's ``origin``."""

    spine: int
    rail_group: int  # global index
    rack: int  # global index
    domain: int  # global NVLink domain index
    index: int  # global node index


ORIGIN = Position(0, 0, 0, 0, 0)


@dataclass(frozen=True)
class FakeFabric:
    """spines × rail groups per spine × nodes per rail group; racks of ``nodes_per_rack``."""

    spines: int = 1
    rail_groups_per_spine: int = 2
    nodes_per_rail_group: int = 16
    nodes_per_rack: int = 4
    gpus_per_node: int = 8
    nics_per_node: int = 8
    nvlink_domain_nodes: int = 1
    scheme: str = "native"
    fabric: str | None = "dgx-h100"
    prefix: str = "gpu"
    pool: str | None = None  # value of POOL_LABEL, to fence tests off each other
    # Prefixed to every spine, rail group, rack and NVLink domain id: pools that share a
    # cluster get ids of their own, as disjoint parts of a real fabric do (the link load of
    # one pool's jobs is never priced on another pool's spine of the same number).
    ids: str = ""
    # The first node's position: a second fabric placed after another (``following``) gets
    # spine, rail group, rack, domain and node numbers of its own.
    origin: Position = ORIGIN
    # Label every node of a multi-node NVLink domain with GPU Feature Discovery's
    # ``nvidia.com/gpu.clique`` as well, as the GPU Operator does on GB200 whatever the cloud:
    # the schemes without an NVLink-domain label of their own read the domain from it.
    clique: bool = False

    def __post_init__(self) -> None:
        if self.scheme not in SCHEMES:
            raise ValueError(
                f"unknown label scheme {self.scheme!r}; expected one of {', '.join(SCHEMES)}"
            )
        for name in (
            "spines",
            "rail_groups_per_spine",
            "nodes_per_rail_group",
            "nodes_per_rack",
            "nvlink_domain_nodes",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.gpus_per_node < 0 or self.nics_per_node < 0:
            raise ValueError("gpus_per_node and nics_per_node must not be negative")

    @property
    def node_count(self) -> int:
        return self.spines * self.rail_groups_per_spine * self.nodes_per_rail_group


def following(fabric: FakeFabric) -> Position:
    """The origin of a fabric that comes after ``fabric``: the next spine, rail group, rack,
    NVLink domain and node index."""
    groups = fabric.spines * fabric.rail_groups_per_spine
    racks, domains = _per_group(fabric)
    o = fabric.origin
    return Position(
        spine=o.spine + fabric.spines,
        rail_group=o.rail_group + groups,
        rack=o.rack + groups * racks,
        domain=o.domain + groups * domains,
        index=o.index + fabric.node_count,
    )


def _per_group(fabric: FakeFabric) -> tuple[int, int]:
    """Racks and NVLink domains per rail group."""
    nodes = fabric.nodes_per_rail_group
    return -(-nodes // fabric.nodes_per_rack), -(-nodes // fabric.nvlink_domain_nodes)


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:12]


def positions(fabric: FakeFabric) -> list[Position]:
    result = []
    o = fabric.origin
    racks_per_group, domains_per_group = _per_group(fabric)
    for i in range(fabric.node_count):
        group, within = divmod(i, fabric.nodes_per_rail_group)
        result.append(
            Position(
                spine=o.spine + group // fabric.rail_groups_per_spine,
                rail_group=o.rail_group + group,
                rack=o.rack + group * racks_per_group + within // fabric.nodes_per_rack,
                domain=o.domain + group * domains_per_group + within // fabric.nvlink_domain_nodes,
                index=o.index + i,
            )
        )
    return result


def scheme_labels(fabric: FakeFabric, pos: Position) -> dict[str, str]:
    q = f"{fabric.ids}-" if fabric.ids else ""
    spine, group, rack = f"{q}spine-{pos.spine}", f"{q}rg-{pos.rail_group}", f"{q}rack-{pos.rack}"
    nvl = f"{q}nvl-{pos.domain}" if fabric.nvlink_domain_nodes > 1 else None
    if fabric.scheme == "native":
        labels = {
            NATIVE + "spine": spine,
            NATIVE + "rail-group": group,
            NATIVE + "rack": rack,
            NATIVE + "rails": str(fabric.nics_per_node),
        }
        if nvl:
            labels[NATIVE + "nvlink-domain"] = nvl
        if fabric.fabric:
            labels[NATIVE + "fabric"] = fabric.fabric
        return labels
    if fabric.scheme == "topograph":
        labels = {
            "fabric.topograph.run/tier-0": f"{q}leaf-{pos.rail_group}",
            "fabric.topograph.run/tier-1": spine,
        }
        if nvl:
            labels["accelerator.topograph.run/domain"] = nvl
        return labels
    if fabric.scheme == "gke":
        return {
            "cloud.google.com/gce-topology-block": _hash(spine),
            "cloud.google.com/gce-topology-subblock": _hash(group),
            "cloud.google.com/gce-topology-host": _hash(f"{q}host-{pos.index}"),
        }
    if fabric.scheme == "eks":
        return {
            "topology.k8s.aws/network-node-layer-1": "nn-" + _hash(f"{q}core"),
            "topology.k8s.aws/network-node-layer-2": "nn-" + _hash(spine),
            "topology.k8s.aws/network-node-layer-3": "nn-" + _hash(group),
        }
    if fabric.scheme == "oke":
        return {
            "oci.oraclecloud.com/rdma.hpc_island_id": _hash(f"{q}island"),
            "oci.oraclecloud.com/rdma.network_block_id": _hash(spine),
            "oci.oraclecloud.com/rdma.local_block_id": _hash(group),
        }
    return {
        "ib.coreweave.cloud/fabric": f"{q}fabric-0",
        "ib.coreweave.cloud/superpod": f"{q}{pos.spine}",
        "ib.coreweave.cloud/leafgroup": str(pos.rail_group),
        "node.coreweave.cloud/rack": str(pos.rack),
    }


def clique_label(fabric: FakeFabric, pos: Position) -> dict[str, str]:
    """``nvidia.com/gpu.clique`` = ``<ClusterUUID>.<CliqueID>``: one ClusterUUID per NVLink
    domain (an NVL72 rack), one clique (NVLink partition) in it."""
    if not fabric.clique or fabric.nvlink_domain_nodes <= 1:
        return {}
    digest = hashlib.sha256(f"{fabric.ids}nvl-{pos.domain}".encode()).hexdigest()
    uuid = "-".join(digest[a:b] for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32)))
    return {CLIQUE_LABEL: f"{uuid}.1"}


def node_name(fabric: FakeFabric, pos: Position) -> str:
    return f"{fabric.prefix}-s{pos.spine}-g{pos.rail_group}-n{pos.index:04d}"


def node_manifest(fabric: FakeFabric, pos: Position) -> dict[str, Any]:
    name = node_name(fabric, pos)
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "fake-gpu",
        "nvidia.com/gpu.count": str(fabric.gpus_per_node),
        "nvidia.com/gpu.product": PRODUCTS.get(fabric.fabric or "", "NVIDIA-H100-80GB-HBM3"),
        "fabricfit.dev/fake": "true",
        **({POOL_LABEL: fabric.pool} if fabric.pool else {}),
        **scheme_labels(fabric, pos),
        **clique_label(fabric, pos),
    }
    resources = {
        "cpu": "224",
        "memory": "2Ti",
        "pods": "110",
        "nvidia.com/gpu": str(fabric.gpus_per_node),
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {KWOK_ANNOTATION: "fake"}},
        "spec": {"providerID": f"kwok://{name}"},
        "status": {"capacity": dict(resources), "allocatable": dict(resources)},
    }


def node_manifests(fabric: FakeFabric) -> list[dict[str, Any]]:
    return [node_manifest(fabric, pos) for pos in positions(fabric)]


def as_ready(manifest: dict[str, Any]) -> dict[str, Any]:
    """The node as kwok shows it once Ready (for in-memory clusters, where no kwok runs)."""
    ready = [{"type": "Ready", "status": "True"}]
    return {**manifest, "status": {**manifest["status"], "conditions": ready}}


def create_nodes(core: Any, manifests: Iterable[dict[str, Any]]) -> list[str]:
    """Create (or replace) the nodes; ``core`` is a kubernetes.client.CoreV1Api."""
    from kubernetes.client.exceptions import ApiException

    names = []
    for manifest in manifests:
        name = manifest["metadata"]["name"]
        try:
            core.create_node(manifest)
        except ApiException as err:
            if err.status != 409:
                raise
            core.delete_node(name)
            _wait_gone(core, name)
            core.create_node(manifest)
        names.append(name)
    return names


def _wait_gone(core: Any, name: str, timeout_seconds: float = 60) -> None:
    wait_for(
        lambda: not exists(lambda: core.read_node(name)),
        timeout_seconds,
        0.2,
        f"node {name} to be deleted",
    )


def node_schedulable(node: Any) -> bool:
    conditions = {c.type: c.status for c in (node.status.conditions or [])}
    taints = [t.key for t in (node.spec.taints or [])]
    return conditions.get("Ready") == "True" and "node.kubernetes.io/not-ready" not in taints


def wait_ready(core: Any, names: Sequence[str], timeout_seconds: float = 120) -> None:
    """Wait until every named node is Ready and free of the not-ready taint."""
    wanted, ready = set(names), set[str]()

    def all_ready() -> bool:
        nonlocal ready
        nodes = core.list_node(label_selector="fabricfit.dev/fake=true").items
        ready = {n.metadata.name for n in nodes if node_schedulable(n)}
        return wanted <= ready

    wait_for(
        all_ready,
        timeout_seconds,
        0.5,
        lambda: f"{len(wanted - ready)} of {len(wanted)} fake nodes to be Ready",
    )


def delete_nodes(core: Any, names: Iterable[str]) -> None:
    for name in names:
        delete_if_present(partial(core.delete_node, name))
