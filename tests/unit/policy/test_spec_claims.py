"""gpusPerPod from resource claims: settled from the claim template, a mismatch names both
numbers and the claim, an unknowable claim stops only a spec that leaves gpusPerPod out; the
request knows the pods claim their GPUs; status.gpuAllocation says who picks the devices."""

from __future__ import annotations

from typing import Any

from fabricfit.fabric.podclaims import pod_claim_gpus
from fabricfit.placement.request import DEVICE_PLUGIN, DRA
from fabricfit.policy import admit
from fabricfit.render.devices import gpu_allocation

CLAIM_TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "eight-gpus"},
    "spec": {
        "spec": {
            "devices": {
                "requests": [
                    {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}}
                ]
            }
        }
    },
}
CLAIMS = {("ResourceClaimTemplate", "eight-gpus"): CLAIM_TEMPLATE}


def job(*, plugin_gpus: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "resources": {"claims": [{"name": "gpus"}]}}
    if plugin_gpus:
        container["resources"]["limits"] = {"nvidia.com/gpu": str(plugin_gpus)}
    pod = {
        "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "eight-gpus"}],
        "containers": [container],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"completionMode": "Indexed", "completions": 2, "template": {"spec": pod}},
    }


def spec(**extra: Any) -> dict[str, Any]:
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "j"}
    return {"workloadRef": ref, "parallelism": {"tensor": 8, "data": 2}, **extra}


def test_gpus_per_pod_comes_from_the_claim_template() -> None:
    admission = admit(spec(), job(), claims=CLAIMS)
    assert admission.problems == ()
    assert admission.spec is not None and admission.spec.gpus_per_pod == 8
    assert admission.request is not None and admission.request.gpu_source == DRA


def test_a_different_gpus_per_pod_names_both_numbers_and_the_claim() -> None:
    admission = admit(spec(gpusPerPod=4), job(), claims=CLAIMS)
    assert admission.message == (
        "gpusPerPod is 4 but Job j requests 8 GPUs through ResourceClaimTemplate/eight-gpus per pod"
    )
    mixed = admit(spec(gpusPerPod=4), job(plugin_gpus=2), claims=CLAIMS)
    assert "requests 10 GPUs (2 nvidia.com/gpu, 8 through ResourceClaimTemplate/eight-gpus)" in (
        mixed.message
    )


def test_an_unknown_claim_stops_only_a_spec_without_gpus_per_pod() -> None:
    missing = admit(spec(), job(), claims={})
    assert missing.message == (
        "cannot tell the GPUs per pod: ResourceClaimTemplate 'eight-gpus' is not found"
    )
    given = admit(spec(gpusPerPod=8), job(), claims={})
    assert given.problems == () and given.request is not None
    assert given.request.gpu_source == DRA


def test_a_missing_template_beside_an_nvidia_gpu_request_is_no_problem() -> None:
    # e.g. the ComputeDomain channel template NVIDIA's driver creates once fabricfit made the
    # ComputeDomain: it must not stop the plan that creates it.
    admission = admit(spec(), job(plugin_gpus=8), claims={})
    assert admission.problems == () and admission.spec is not None
    assert admission.spec.gpus_per_pod == 8


def test_a_pod_requesting_nvidia_gpu_is_a_device_plugin_request() -> None:
    plain = job(plugin_gpus=8)
    del plain["spec"]["template"]["spec"]["resourceClaims"]
    admission = admit(spec(), plain)
    assert admission.request is not None and admission.request.gpu_source == DEVICE_PLUGIN


def test_status_says_who_picks_the_devices() -> None:
    template = job()["spec"]["template"]
    body = gpu_allocation(pod_claim_gpus(template, CLAIMS))
    assert body is not None
    assert (body["via"], body["deviceClass"], body["claims"]) == (
        "DynamicResourceAllocation",
        "gpu.nvidia.com",
        ["ResourceClaimTemplate/eight-gpus"],
    )
    assert "kube-scheduler's DRA allocator picks the devices on that node" in body["message"]
    assert "no per-pod device selector" in body["message"]
    assert gpu_allocation(pod_claim_gpus({"spec": {}}, {})) is None
