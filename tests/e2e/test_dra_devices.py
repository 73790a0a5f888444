"""Device-exact placement through DRA on the real control plane, with the real kube-scheduler.

Four kwok nodes in two rail groups whose GPUs and RDMA NICs are only in ResourceSlices, in the
shapes NVIDIA's DRA driver and dranet publish them (``fabricfit_dev.e2e.dra``: 8 GPUs and 8
NICs on four PCIe roots, listed in reverse order so the scheduler's own first-fit choice would
differ from a choice by position). Another tenant's pod takes four GPUs of one node through a claim
kube-scheduler allocates. A suspended Indexed Job of six 4-GPU pods asks, through one
ResourceClaimTemplate, for 4 GPUs and 4 RDMA NICs per pod (no nvidia.com/gpu); its
TrainingTopology (TP 4 · DP 6) spans both rail groups.

What the cluster shows afterwards is asserted: status says the choice is enforced and names
every pod's devices; every pod is bound to its planned node; every pod's ResourceClaim is
allocated exactly the GPUs and NICs the plan named (request, driver, pool, node selector,
``reservedFor`` = the pod, the delete-protection finalizer); each NIC is on its GPU's PCIe root;
no device is held by two claims and none of the tenant's was taken; data-parallel peers use the
same rails on every node.
"""

from __future__ import annotations

import time
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
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"


@pytest.fixture
def dra_objects(custom: Any) -> Iterator[list[str]]:
    """Create the DeviceClasses (when absent); delete them and the slices named afterwards."""
    from kubernetes.client.exceptions import ApiException

    created = []
    for device_class in (dra.GPU_CLASS, dra.NIC_CLASS):
        try:
            custom.create_cluster_custom_object(*DRA, "deviceclasses", device_class)
            created.append(device_class["metadata"]["name"])
        except ApiException as err:
            if err.status != 409:
                raise
    slices: list[str] = []
    yield slices
    for name in slices:
        custom.delete_cluster_custom_object(*DRA, "resourceslices", name)
    for name in created:
        custom.delete_cluster_custom_object(*DRA, "deviceclasses", name)


def claim_of(custom: Any, core: Any, namespace: str, pod_name: str) -> dict[str, Any]:
    """The pod's ResourceClaim once it is allocated."""

    def check() -> dict[str, Any] | None:
        pod = core.read_namespaced_pod(pod_name, namespace)
        statuses = pod.status.resource_claim_statuses or []
        names = [s.resource_claim_name for s in statuses if s.name == "devices"]
        if not names or not names[0]:
            return None
        claim = custom.get_namespaced_custom_object(*DRA, namespace, "resourceclaims", names[0])
        return dict(claim) if (claim.get("status") or {}).get("allocation") else None

    return wait_for(check, timeout_seconds=60, what=f"the claim of {pod_name} allocated")


def explain(custom: Any, core: Any, namespace: str) -> str:
    """What the TrainingTopology and the job's pods show, for a failure message."""
    status = read_topology(custom, namespace, "dra-exact").get("status") or {}
    conditions = [(c["type"], c["status"], c["reason"], c["message"][:300]) for c in
                  status.get("conditions") or []]  # fmt: skip
    pods = core.list_namespaced_pod(namespace, label_selector="job-name=dra-exact").items
    shown = [
        (p.metadata.name, p.spec.node_name, [g.name for g in p.spec.scheduling_gates or []],
         [(s.name, s.resource_claim_name) for s in p.status.resource_claim_statuses or []])
        for p in pods
    ]  # fmt: skip
    events = core.list_namespaced_event(namespace).items
    told = [(e.involved_object.name, e.reason, (e.message or "")[:200]) for e in events
            if e.involved_object.kind == "TrainingTopology"]  # fmt: skip
    return (
        f"conditions {conditions}; gpuChoice {status.get('gpuChoice')}; pods {shown}; events {told}"
    )


def device_roots(slices: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """(pool, device) -> PCIe root, for every device the slices publish."""
    roots = {}
    for piece in slices:
        pool = piece["spec"]["pool"]["name"]
        for device in piece["spec"]["devices"]:
            root = device["attributes"].get(PCIE_ROOT)
            if root:
                roots[(pool, device["name"])] = root["string"]
    return roots


def test_each_rank_runs_on_the_gpu_and_nic_the_plan_named(
    operator: OperatorProcess,
    core: Any,
    custom: Any,
    batch: Any,
    namespace: str,
    dra_objects: list[str],
) -> None:
    started = time.monotonic()
    pool = f"drd{uuid.uuid4().hex[:4]}"
    fabric = fakenodes.FakeFabric(
        prefix=pool, pool=pool, ids=pool, rail_groups_per_spine=2, nodes_per_rail_group=2
    )
    manifests = dra.dra_nodes(fakenodes.node_manifests(fabric))
    nodes = fakenodes.create_nodes(core, manifests)
    fakenodes.wait_ready(core, nodes)
    published = [s for n in nodes for s in dra.node_slices(n, shuffled=True)]
    for body in published:
        custom.create_cluster_custom_object(*DRA, "resourceslices", body)
        dra_objects.append(body["metadata"]["name"])
    templates = (
        ("four-gpus", dra.claim_template("four-gpus", 4)),
        (
            "gpus-nics",
            dra.claim_template("gpus-nics", 4, nics=4),
        ),
    )
    for _, template in templates:
        custom.create_namespaced_custom_object(*DRA, namespace, "resourceclaimtemplates", template)

    # Another tenant: kube-scheduler allocates its claim 4 GPUs of the first node.
    tenant = {
        "metadata": {"name": "tenant"},
        "spec": dra.claiming(
            {
                "nodeSelector": {"kubernetes.io/hostname": nodes[0]},
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "c", "image": "example.invalid/other:1"}],
            },
            "four-gpus",
        ),
    }
    core.create_namespaced_pod(namespace, tenant)
    tenant_claim = claim_of(custom, core, namespace, "tenant")
    tenant_devices = {
        (r["pool"], r["device"]) for r in tenant_claim["status"]["allocation"]["devices"]["results"]
    }

    job = indexed_job("dra-exact", 6, pool)
    dra.claiming(job["spec"]["template"]["spec"], "gpus-nics")
    batch.create_namespaced_job(namespace, job)
    tt = topology("dra-exact", "dra-exact", {"tensor": 4, "data": 6})
    del tt["spec"]["gpusPerPod"]  # 4, from the claim template
    tt["spec"]["placement"] = {"mode": "pinned", "tensor": "Required", "data": "Preferred"}
    custom.create_namespaced_custom_object(
        "fabricfit.dev", "v1alpha1", namespace, "trainingtopologies", tt
    )

    try:
        placed = wait_condition(custom, namespace, "dra-exact", "Placed", "True", timeout=120)
    except AssertionError as err:
        raise AssertionError(f"{err}: {explain(custom, core, namespace)}") from None
    status = placed["status"]
    assert status["gpuChoice"] == "enforced", status.get("gpuAllocation")
    assert "allocates each pod's claim" in status["gpuAllocation"]["message"]
    plan = planned(placed)
    rail_group = {m["metadata"]["name"]: m["metadata"]["labels"][RAIL_GROUP] for m in manifests}
    assert len({rail_group[n] for n in plan}) == 2, plan  # the job spans both rail groups
    recorded = {p["index"]: p for p in status["pods"]}
    roots = device_roots(published)

    pods = wait_bound(core, namespace, "dra-exact", 6)
    held: list[tuple[str, str]] = []
    for index, pod in pods.items():
        node = plan[index]
        assert pod.spec.node_name == node
        claim = claim_of(custom, core, namespace, pod.metadata.name)
        allocation = claim["status"]["allocation"]
        results = allocation["devices"]["results"]
        gpus = [r["device"] for r in results if r["request"] == "gpus"]
        nics = [r["device"] for r in results if r["request"] == "nics"]
        assert gpus == recorded[index]["devices"] and len(gpus) == 4
        assert nics == recorded[index]["nics"] and len(nics) == 4
        assert {r["pool"] for r in results} == {node}
        assert {r["driver"] for r in results} == {"gpu.nvidia.com", "dra.net"}
        selector = allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]
        assert selector["values"] == [node]
        assert [u["uid"] for u in claim["status"]["reservedFor"]] == [pod.metadata.uid]
        assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
        for gpu, nic in zip(gpus, nics, strict=True):  # each GPU's NIC on its own PCIe root
            assert roots[(node, gpu)] == roots[(node, nic)], (node, gpu, nic)
        held += [(node, d) for d in gpus + nics]
    assert len(held) == len(set(held)), "a device allocated twice"
    assert not tenant_devices & set(held), "the tenant's GPUs were taken"
    # data-parallel peers: local GPU j of every pod, on the same rails of every node it uses
    position = {f"gpu-{i}": i for i in range(8)}  # minors follow PCI order on this board
    for j in range(4):
        rails: dict[str, set[int]] = {}
        for index in range(6):
            node = plan[index]
            rails.setdefault(node, set()).add(position[recorded[index]["devices"][j]])
        assert len({frozenset(r) for r in rails.values()}) == 1, (j, rails)
    assert read_topology(custom, namespace, "dra-exact")["status"]["summary"] == "Placed"
    # Gone before the fixture deletes the DeviceClasses and slices: a live topology would see
    # its claims' classes vanish and rewrite its status, in whatever test runs next.
    dra.delete_topologies(custom, namespace, "dra-exact")
    print(f"device-exact placement of 6 pods: {time.monotonic() - started:.1f} s")
