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

from collections.abc import Iterator
from typing import Any

import pytest

from fabricfit_dev.e2e.computedomain import (
    CD,
    CHANNEL_DRIVER,
    DRA,
    GB200,
    channel_template,
    installed_crd,
    publish_channels,
    remove_crd,
    tray_job,
)
from fabricfit_dev.e2e.objects import (
    TT,
    make_pool,
    planned,
    read_topology,
    topology,
    wait_bound,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for


@pytest.fixture
def crd(kubectl: list[str]) -> Iterator[None]:
    with installed_crd(kubectl):
        yield


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
    assert read_topology(custom, namespace, "moe")["status"]["summary"] == "Placed"


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
