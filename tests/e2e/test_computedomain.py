"""ComputeDomains on a real control plane: a job on GB200 NVL72 trays, with and without the CRD.

NVIDIA's DRA driver needs GPUs and does not run here. Its CRD is installed from the project's
own test fixture (``tests/fixtures/computedomain``: the driver's Go module is refused by the
module proxy), and the test plays the two parts of the driver a pod's scheduling depends on: the
controller's ResourceClaimTemplate for the channel, and the kubelet plugin's ResourceSlice of one
``channel`` device per node. Everything else is real: the operator creates the ComputeDomain,
the claim controller stamps a ResourceClaim per pod, kube-scheduler's DRA allocator allocates each
pod's channel on its node, kwok runs the pods, and garbage collection/finalizers clean up. What
is only checked as objects: the driver's IMEX daemons and channel injection.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.cluster import TT, get_tt, make_pool, planned, topology, wait_bound, wait_condition
from helpers.operator import OperatorProcess
from helpers.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "tests/fixtures/computedomain/computedomains.resource.nvidia.com.yaml"
CRD = "computedomains.resource.nvidia.com"
CD = ("resource.nvidia.com", "v1beta1", "computedomains")
DRA = ("resource.k8s.io", "v1")
#: As the driver names them (its chart's DeviceClass and the kubelet plugin's driver name).
CHANNEL_CLASS = "compute-domain-default-channel.nvidia.com"
CHANNEL_DRIVER = "compute-domain.nvidia.com"
GB200 = {
    "rail_groups_per_spine": 1,
    "nodes_per_rail_group": 18,
    "nodes_per_rack": 18,
    "nvlink_domain_nodes": 18,
    "gpus_per_node": 4,
    "nics_per_node": 4,
    "fabric": "gb200-nvl72",
}


def tray_job(name: str, pods: int, pool: str, channel: str | None) -> dict[str, Any]:
    """An Indexed Job of 4-GPU pods, claiming the ComputeDomain's channel when ``channel``."""
    container: dict[str, Any] = {
        "name": "train",
        "image": "example.invalid/train:1",
        "resources": {"limits": {"nvidia.com/gpu": "4"}},
    }
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": {"fabricfit.dev/pool": pool},
        "containers": [container],
    }
    if channel:
        spec["resourceClaims"] = [{"name": "nvlink-channel", "resourceClaimTemplateName": channel}]
        container["resources"]["claims"] = [{"name": "nvlink-channel"}]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"suspend": True, "completionMode": "Indexed", "completions": pods,
                 "parallelism": pods, "backoffLimit": 100, "template": {"spec": spec}},
    }  # fmt: skip


def kubectl_ok(kubectl: list[str], *args: str) -> None:
    subprocess.run([*kubectl, *args], check=True, capture_output=True)


def remove_crd(kubectl: list[str]) -> None:
    kubectl_ok(kubectl, "delete", f"crd/{CRD}", "--ignore-not-found", "--wait=true")


@pytest.fixture
def crd(kubectl: list[str]) -> Iterator[None]:
    kubectl_ok(kubectl, "apply", "-f", str(CRD_FILE))
    kubectl_ok(kubectl, "wait", "--for=condition=Established", f"crd/{CRD}", "--timeout=60s")
    yield
    remove_crd(kubectl)


def publish_channels(custom: Any, nodes: list[str]) -> None:
    """The kubelet plugin's part: one channel device per node, and the driver's DeviceClass."""
    from kubernetes.client.exceptions import ApiException

    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CHANNEL_CLASS},
        "spec": {"selectors": [{"cel": {"expression": (
            f"device.driver == '{CHANNEL_DRIVER}' && "
            f"device.attributes['{CHANNEL_DRIVER}'].type == 'channel'"
        )}}]},
    }  # fmt: skip
    objects = [("deviceclasses", device_class)]
    for node in nodes:
        objects.append(("resourceslices", {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-channels"},
            "spec": {
                "driver": CHANNEL_DRIVER, "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "channel-0", "attributes": {
                    "type": {"string": "channel"}, "id": {"int": 0}}}],
            },
        }))  # fmt: skip
    for plural, body in objects:
        try:
            custom.create_cluster_custom_object(*DRA, plural, body)
        except ApiException as err:
            if err.status != 409:
                raise


def channel_template(name: str) -> dict[str, Any]:
    """The controller's part: the channel's ResourceClaimTemplate, named by the ComputeDomain."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "channel", "exactly": {"deviceClassName": CHANNEL_CLASS}}]}}},
    }  # fmt: skip


def test_a_job_spanning_trays_gets_its_compute_domain_and_pods_bind_with_channels(
    operator: OperatorProcess, crd: None, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    nodes = [n["metadata"]["name"] for n in make_pool(core, "cd", **GB200)]
    publish_channels(custom, nodes)
    channel = "llm-channel"
    batch.create_namespaced_job(namespace, tray_job("llm", 4, "cd", channel))
    tt_body = topology("llm", "llm", {"tensor": 8, "data": 2}, gpusPerPod=4)
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], tt_body)

    tt = wait_condition(custom, namespace, "llm", "ComputeDomain", "True")
    plan = planned(tt)
    cd = custom.get_namespaced_custom_object(*CD[:2], namespace, CD[2], "llm")
    assert cd["spec"]["numNodes"] == len(set(plan)) == 4
    assert cd["spec"]["channel"]["resourceClaimTemplate"]["name"] == channel
    (owner,) = cd["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "TrainingTopology", "llm", tt["metadata"]["uid"],
    )  # fmt: skip
    report = tt["status"]["computeDomain"]
    assert (report["name"], report["numNodes"], report["claimed"]) == ("llm", 4, True)
    assert report["state"] == "Pending"  # no driver writes its status here

    # The driver's controller would now create the channel template; pods wait for it.
    custom.create_namespaced_custom_object(*DRA, namespace, "resourceclaimtemplates",
                                           channel_template(channel))  # fmt: skip
    pods = wait_bound(core, namespace, "llm", 4)
    assert {i: p.spec.node_name for i, p in pods.items()} == dict(enumerate(plan))
    for pod in pods.values():
        (claim_status,) = pod.status.resource_claim_statuses
        claim = custom.get_namespaced_custom_object(
            *DRA, namespace, "resourceclaims", claim_status.resource_claim_name
        )
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        # kube-scheduler allocated the channel of the very node fabricfit planned.
        assert (result["driver"], result["pool"], result["device"]) == (
            CHANNEL_DRIVER, pod.spec.node_name, "channel-0",
        )  # fmt: skip
    wait_condition(custom, namespace, "llm", "Placed", "True")

    custom.delete_namespaced_custom_object(*TT[:2], namespace, TT[2], "llm")

    def gone() -> bool:
        found = custom.list_namespaced_custom_object(*CD[:2], namespace, CD[2])["items"]
        return not found

    wait_for(gone, timeout_seconds=60, what="the ComputeDomain deleted with its TrainingTopology")


def test_without_the_crd_the_condition_says_so_and_the_job_still_lands(
    operator: OperatorProcess,
    kubectl: list[str],
    core: Any,
    custom: Any,
    batch: Any,
    namespace: str,
) -> None:
    remove_crd(kubectl)
    make_pool(core, "nocd", **GB200)
    batch.create_namespaced_job(namespace, tray_job("moe", 4, "nocd", None))
    tt_body = topology("moe", "moe", {"tensor": 4, "data": 4, "expert": 4}, gpusPerPod=4)
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], tt_body)

    tt = wait_condition(custom, namespace, "moe", "Placed", "True")
    done = next(c for c in tt["status"]["conditions"] if c["type"] == "ComputeDomain")
    assert (done["status"], done["reason"]) == ("False", "ComputeDomainUnavailable")
    assert "falls back to the network" in done["message"]
    assert tt["status"]["computeDomain"]["state"] == "Unavailable"
    pods = wait_bound(core, namespace, "moe", 4)
    assert {i: p.spec.node_name for i, p in pods.items()} == dict(enumerate(planned(tt)))
    assert get_tt(custom, namespace, "moe")["status"]["summary"] == "Placed"


def test_a_suspended_jobs_template_takes_no_new_claim_so_the_workload_declares_it(
    batch: Any, namespace: str
) -> None:
    """Why fabricfit checks the channel claim instead of adding it: the API server refuses."""
    from kubernetes.client.exceptions import ApiException

    batch.create_namespaced_job(namespace, tray_job("late", 2, "none", None))
    claim = [{"name": "nvlink-channel", "resourceClaimTemplateName": "late-channel"}]
    patch = {"spec": {"template": {"spec": {"resourceClaims": claim}}}}
    with pytest.raises(ApiException) as refused:
        batch.patch_namespaced_job("late", namespace, patch)
    assert refused.value.status == 422 and "field is immutable" in refused.value.body
    # What fabricfit does write onto a suspended Job's template is accepted (a gate).
    gates = {"spec": {"template": {"spec": {"schedulingGates": [{"name": "x.dev/hold"}]}}}}
    batch.patch_namespaced_job("late", namespace, gates)
