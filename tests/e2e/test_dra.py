"""GPUs through Dynamic Resource Allocation on the real control plane.

Four kwok nodes list no ``nvidia.com/gpu``; their GPUs are published as ResourceSlices of driver
``gpu.nvidia.com`` (8 devices each, in the driver's shape; the driver itself needs GPUs and does
not run here), with a DeviceClass ``gpu.nvidia.com`` selecting them as the driver's chart does.
Another tenant's pod claims all 8 GPUs of the first node and kube-scheduler allocates them. A
suspended Indexed Job whose pods claim 8 GPUs each through one ResourceClaimTemplate (no
``nvidia.com/gpu`` request, no ``gpusPerPod`` in the spec) is placed by fabricfit in pinned mode.
What the cluster shows afterwards is asserted: the plan leaves out the node the other claim
holds and keeps both pods in one rail group, every pod is bound to its planned node, and every
pod's ResourceClaim was allocated 8 devices of that node's pool (``status.allocation``): the
claim asks for whole GPUs of a known DeviceClass, so fabricfit allocates it itself
(``gpuChoice`` enforced, the devices ``status.pods`` names; ``test_dra_devices.py`` checks the
device choice and the NICs in detail).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from fabricfit_dev.cluster import fakenodes
from fabricfit_dev.e2e import dra
from fabricfit_dev.e2e.objects import (
    RAIL_GROUP,
    indexed_job,
    planned,
    read_topology,
    topology,
    wait_bound,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

DRA = ("resource.k8s.io", "v1")
DEVICE_CLASS = dra.GPU_CLASS


def dra_nodes(pool: str) -> list[dict[str, Any]]:
    """Four nodes, two rail groups of two, whose GPUs are not in their allocatable."""
    fabric = fakenodes.FakeFabric(
        prefix=pool, pool=pool, ids=pool, rail_groups_per_spine=2, nodes_per_rail_group=2
    )
    manifests = copy.deepcopy(fakenodes.node_manifests(fabric))
    for node in manifests:
        for field in ("capacity", "allocatable"):
            del node["status"][field]["nvidia.com/gpu"]
        node["metadata"]["labels"].pop("nvidia.com/gpu.count")
    return manifests


def resource_slice(node: str, gpus: int = 8) -> dict[str, Any]:
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {
                "type": {"string": "gpu"},
                "uuid": {"string": f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}/{i}')}"},
                "productName": {"string": "NVIDIA H100 80GB HBM3"},
                "architecture": {"string": "Hopper"},
                "cudaComputeCapability": {"version": "9.0.0"},
            },
            "capacity": {"memory": {"value": "81559Mi"}},
        }
        for i in range(gpus)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu.nvidia.com"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def claim_template(name: str, gpus: int) -> dict[str, Any]:
    request = {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": gpus}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": request}]}}},
    }


def claiming(pod_spec: dict[str, Any], template: str) -> dict[str, Any]:
    """``pod_spec`` with its GPUs claimed through ``template`` instead of nvidia.com/gpu."""
    pod_spec["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": template}]
    for container in pod_spec["containers"]:
        container["resources"] = {"claims": [{"name": "gpus"}]}
    return pod_spec


@pytest.fixture
def dra_objects(custom: Any) -> Iterator[list[str]]:
    """Create the DeviceClass (when absent) and remember the slices to delete afterwards."""
    from kubernetes.client.exceptions import ApiException

    try:
        custom.create_cluster_custom_object(*DRA, "deviceclasses", DEVICE_CLASS)
        created_class = True
    except ApiException as err:
        if err.status != 409:
            raise
        created_class = False
    slices: list[str] = []
    yield slices
    for name in slices:
        custom.delete_cluster_custom_object(*DRA, "resourceslices", name)
    if created_class:
        custom.delete_cluster_custom_object(*DRA, "deviceclasses", "gpu.nvidia.com")


def allocated_claim(custom: Any, namespace: str, pod: Any) -> dict[str, Any]:
    """The pod's ResourceClaim once kube-scheduler has allocated it."""
    statuses = pod.status.resource_claim_statuses or []
    (claim_name,) = [s.resource_claim_name for s in statuses if s.name == "gpus"]

    def check() -> dict[str, Any] | None:
        claim = custom.get_namespaced_custom_object(*DRA, namespace, "resourceclaims", claim_name)
        return dict(claim) if (claim.get("status") or {}).get("allocation") else None

    return wait_for(check, timeout_seconds=60, what=f"claim {claim_name} allocated")


def test_pinned_job_claiming_gpus_binds_where_planned_with_devices_allocated(
    operator: OperatorProcess,
    core: Any,
    custom: Any,
    batch: Any,
    namespace: str,
    dra_objects: list[str],
) -> None:
    pool = f"dra{uuid.uuid4().hex[:4]}"
    manifests = dra_nodes(pool)
    nodes = fakenodes.create_nodes(core, manifests)
    fakenodes.wait_ready(core, nodes)
    for node in nodes:
        body = resource_slice(node)
        custom.create_cluster_custom_object(*DRA, "resourceslices", body)
        dra_objects.append(body["metadata"]["name"])
    custom.create_namespaced_custom_object(
        *DRA, namespace, "resourceclaimtemplates", claim_template("eight-gpus", 8)
    )

    # Another tenant takes every GPU of the first node through a claim the scheduler allocates.
    tenant = {
        "metadata": {"name": "tenant"},
        "spec": claiming(
            {
                "nodeSelector": {"kubernetes.io/hostname": nodes[0]},
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "c", "image": "example.invalid/other:1"}],
            },
            "eight-gpus",
        ),
    }
    core.create_namespaced_pod(namespace, tenant)
    wait_for(
        lambda: core.read_namespaced_pod("tenant", namespace).spec.node_name,
        timeout_seconds=60,
        what="the tenant pod bound",
    )
    allocated_claim(custom, namespace, core.read_namespaced_pod("tenant", namespace))

    job = indexed_job("dra-train", 2, pool)
    claiming(job["spec"]["template"]["spec"], "eight-gpus")
    batch.create_namespaced_job(namespace, job)
    tt = topology("dra-train", "dra-train", {"tensor": 8, "data": 2})
    del tt["spec"]["gpusPerPod"]  # comes from the claim template
    tt["spec"]["placement"] = {"mode": "pinned", "tensor": "Required", "data": "Preferred"}
    custom.create_namespaced_custom_object(
        "fabricfit.dev", "v1alpha1", namespace, "trainingtopologies", tt
    )

    placed = wait_condition(custom, namespace, "dra-train", "Placed", "True", timeout=120)
    plan = planned(placed)
    rail_group = {m["metadata"]["name"]: m["metadata"]["labels"][RAIL_GROUP] for m in manifests}
    assert nodes[0] not in plan, plan  # its GPUs are allocated to the tenant's claim
    assert len({rail_group[n] for n in plan}) == 1, plan  # both pods in one rail group
    status = placed["status"]
    assert status["gpusPerPod"] == 8
    assert status["gpuAllocation"]["claims"] == ["ResourceClaimTemplate/eight-gpus"]
    assert status["gpuChoice"] == "enforced"
    assert "allocates each pod's claim" in status["gpuAllocation"]["message"]
    named = {p["index"]: p["devices"] for p in status["pods"]}

    pods = wait_bound(core, namespace, "dra-train", 2)
    for index, pod in pods.items():
        assert pod.spec.node_name == plan[index]
        claim = allocated_claim(custom, namespace, core.read_namespaced_pod(
            pod.metadata.name, namespace))  # fmt: skip
        results = claim["status"]["allocation"]["devices"]["results"]
        assert len(results) == 8
        assert {(r["driver"], r["pool"]) for r in results} == {("gpu.nvidia.com", plan[index])}
        assert [r["device"] for r in results] == named[index]
        assert [u["name"] for u in claim["status"]["reservedFor"]] == [pod.metadata.name]
    assert read_topology(custom, namespace, "dra-train")["status"]["summary"] == "Placed"
    # Gone before the fixture deletes the DeviceClasses and slices: a live topology would see
    # its claims' classes vanish and rewrite its status, in whatever test runs next.
    dra.delete_topologies(custom, namespace, "dra-train")
