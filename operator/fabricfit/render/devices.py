"""What ``status`` says about who picks a pod's GPUs when they come from DRA (pure).

With the device plugin the kubelet hands a pod any free GPUs of its node; with Dynamic Resource
Allocation kube-scheduler's allocator picks the devices of the pod's claims on the node it
binds the pod to. Either way fabricfit decides the node and not the GPU. DRA could narrow the
choice per pod with device selectors, but a Job's pods share one pod template and so one
ResourceClaimTemplate: a selector written there applies to every pod alike, so the plan's
per-pod choice cannot be expressed, and ``status.gpuAllocation`` says so.
"""

from __future__ import annotations

from typing import Any

from fabricfit.api.constants import DRA_GPU_DEVICE_CLASS
from fabricfit.fabric.podclaims import PodClaims

MAX_CLAIMS = 16


def gpu_allocation(claims: PodClaims) -> dict[str, Any] | None:
    """``status.gpuAllocation`` for pods whose claims ask for GPUs (None: they ask for none)."""
    if not claims.uses_claims:
        return None
    sources = ", ".join(claims.sources)
    message = (
        f"each pod gets its {claims.gpus} GPUs through DRA ({sources}, device class "
        f"{DRA_GPU_DEVICE_CLASS}): fabricfit pins every pod to its planned node and "
        "kube-scheduler's DRA allocator picks the devices on that node. The pods share their "
        "claims' template, so no per-pod device selector can carry the plan's GPU choice: "
        "which GPU of the node carries which local rank is up to that allocation"
    )
    return {
        "via": "DynamicResourceAllocation",
        "deviceClass": DRA_GPU_DEVICE_CLASS,
        "claims": list(claims.sources[:MAX_CLAIMS]),
        "message": message[:1024],
    }
