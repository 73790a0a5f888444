"""What ``status`` says about who picks a pod's GPUs when they come from DRA (pure).

With the device plugin the kubelet hands a pod GPUs of its node; with Dynamic Resource
Allocation kube-scheduler's allocator picks the devices of the pod's claims on the node it binds
the pod to. A Job's pods share one pod template and so one ResourceClaimTemplate: a device
selector written there applies to every pod alike, so no selector can carry the plan's per-pod
choice. fabricfit therefore allocates each pod's own claim itself when it can
(``fabric.deviceask``: ``gpuChoice`` enforced) and says so in ``status.gpuAllocation``; when it
cannot, the message says why and that the scheduler picks.
"""

from __future__ import annotations

from typing import Any

from fabricfit.api.constants import DRA_GPU_DEVICE_CLASS
from fabricfit.fabric.deviceask import DeviceAsk
from fabricfit.fabric.podclaims import PodClaims

MAX_CLAIMS = 16


def gpu_allocation(claims: PodClaims, ask: DeviceAsk | None = None) -> dict[str, Any] | None:
    """``status.gpuAllocation`` for pods whose claims ask for GPUs (None: they ask for none)."""
    if not claims.uses_claims:
        return None
    sources = ", ".join(claims.sources)
    if ask is not None and ask.enforced:
        message = (
            f"each pod gets its {claims.gpus} GPUs through DRA ({sources}, device class "
            f"{DRA_GPU_DEVICE_CLASS}): {ask.reason}, before the pod is ungated; "
            "kube-scheduler binds the pod and keeps that allocation"
        )
    else:
        why = f" ({ask.reason})" if ask is not None else ""
        message = (
            f"each pod gets its {claims.gpus} GPUs through DRA ({sources}, device class "
            f"{DRA_GPU_DEVICE_CLASS}): fabricfit pins every pod to its planned node and "
            "kube-scheduler's DRA allocator picks the devices on that node. The pods share their "
            "claims' template, so no per-pod device selector can carry the plan's GPU choice, "
            f"and fabricfit does not allocate the claims itself{why}"
        )
    return {
        "via": "DynamicResourceAllocation",
        "deviceClass": DRA_GPU_DEVICE_CLASS,
        "claims": list(claims.sources[:MAX_CLAIMS]),
        "message": message[:1024],
    }
