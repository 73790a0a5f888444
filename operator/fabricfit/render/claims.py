"""A pod's ResourceClaim allocated with the devices the plan chose: pure builders and checks.

Theory of operation
-------------------
Kubernetes 1.36 lets a third party allocate a claim: kube-scheduler honours an allocation it
did not make (``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`` @v1.36.3:
PreFilter turns ``allocation.nodeSelector`` into a node filter, Reserve skips allocated claims).
What the API server checks is little (``pkg/apis/resource/validation/validation.go``): each
result names a request of the claim, a driver, a pool and a device; the allocation may be set
once (nil → set, set → nil) and never edited. Device names, counts, pools and duplicates across
claims are *not* checked, so fabricfit checks them itself (``placement.devices``,
``fabric.deviceask``) and looks for double booking after writing (:func:`conflicting_claims`).

:func:`allocated_claim` builds the status body that binds on a 1.36.3 control plane: the
results, the node selector ``metadata.name In [node]``, ``allocationTimestamp`` (without it,
and without ``reservedFor``, the scheduler's PreBind adds the timestamp to an allocation the API
server then refuses to change, and retries for ever), and ``reservedFor`` naming the pod (so
PreBind has nothing to write). Config is copied as the scheduler writes it: each DeviceClass's
entries (``FromClass``) for the requests naming it, then the claim's own (``FromClaim``).
:func:`with_finalizer` adds ``resource.kubernetes.io/delete-protection`` first, as the
scheduler does, so the claim controller can deallocate the claim when its pod is gone.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fabricfit.fabric.deviceask import DeviceAsk
from fabricfit.fabric.objects import list_at, mapping_at, str_at
from fabricfit.placement.devices import PodDevices
from fabricfit.render.pods import node_requirement

DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"

Device = tuple[str, str, str]  # (driver, pool, device)


@dataclass(frozen=True, slots=True)
class Result:
    """One allocation result: the claim's request it answers, and the device."""

    request: str
    driver: str
    pool: str
    device: str

    def to_body(self) -> dict[str, str]:
        return {
            "request": self.request,
            "driver": self.driver,
            "pool": self.pool,
            "device": self.device,
        }


def claim_name_of(pod: Mapping[str, Any], entry: str) -> str | None:
    """The name of the ResourceClaim the claim controller made for the pod's ``entry``."""
    for status in list_at(pod, "status", "resourceClaimStatuses"):
        if str_at(status, "name") == entry:
            return str_at(status, "resourceClaimName")
    return None


def owned_by(claim: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Whether the claim was made for this very pod (its controller owner is the pod's UID): a
    recreated pod of the same name has another UID, and so does its claim's owner."""
    uid = str_at(pod, "metadata", "uid")
    return bool(uid) and any(
        str_at(ref, "uid") == uid and str_at(ref, "kind") == "Pod"
        for ref in list_at(claim, "metadata", "ownerReferences")
    )


def results_for(
    devices: PodDevices, ask: DeviceAsk, pools: Mapping[tuple[str, str], str]
) -> tuple[Result, ...] | None:
    """The results answering the claim's requests with ``devices``; ``pools`` maps
    (driver, device) to the pool that publishes it on the pod's node (None: one is unknown)."""
    wanted = [(ask.gpu_request, "gpu.nvidia.com", name) for name in devices.gpus]
    if ask.nic_request:
        nics = devices.nics[: ask.nics]  # the distinct NICs of the pod's GPUs, in local order
        if len(nics) != ask.nics:
            return None
        wanted += [(ask.nic_request, "dra.net", name) for name in nics]
    found: list[Result] = []
    for request, driver, name in wanted:
        pool = pools.get((driver, name))
        if pool is None:
            return None
        found.append(Result(request, driver, pool, name))
    return tuple(found)


def with_finalizer(claim: Mapping[str, Any]) -> dict[str, Any] | None:
    """The claim with the delete-protection finalizer added (None: it has it already)."""
    finalizers = [f for f in list_at(claim, "metadata", "finalizers") if isinstance(f, str)]
    if DELETE_PROTECTION in finalizers:
        return None
    body = copy.deepcopy(dict(claim))
    body.setdefault("metadata", {})["finalizers"] = [*finalizers, DELETE_PROTECTION]
    return body


def allocated_claim(
    claim: Mapping[str, Any],
    pod: Mapping[str, Any],
    node: str,
    results: Iterable[Result],
    *,
    ask: DeviceAsk,
    timestamp: str,
) -> dict[str, Any]:
    """The claim with ``status`` allocating ``results`` on ``node`` to ``pod`` (see the module
    doc); its ``resourceVersion`` guards the write."""
    allocation: dict[str, Any] = {
        "devices": {"results": [r.to_body() for r in results]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [node_requirement(node)]}]},
        "allocationTimestamp": timestamp,
    }
    config = [
        {"source": c.source, "requests": list(c.requests), "opaque": dict(c.opaque)}
        for c in ask.config
    ]
    if config:
        allocation["devices"]["config"] = config
    body = copy.deepcopy(dict(claim))
    body["status"] = {
        **mapping_at(claim, "status"),
        "allocation": allocation,
        "reservedFor": [
            {
                "resource": "pods",
                "name": str_at(pod, "metadata", "name"),
                "uid": str_at(pod, "metadata", "uid"),
            }
        ],
    }
    return body


def released_claim(claim: Mapping[str, Any]) -> dict[str, Any]:
    """The claim with our allocation taken back (allocation and reservedFor removed)."""
    body = copy.deepcopy(dict(claim))
    status = dict(mapping_at(claim, "status"))
    status.pop("allocation", None)
    status.pop("reservedFor", None)
    body["status"] = status
    return body


def allocated_devices(claim: Mapping[str, Any]) -> frozenset[Device]:
    """(driver, pool, device) of every result the claim's allocation holds (admin access
    results hold nothing)."""
    return frozenset(
        (str_at(r, "driver") or "", str_at(r, "pool") or "", str_at(r, "device") or "")
        for r in list_at(claim, "status", "allocation", "devices", "results")
        if mapping_at(r).get("adminAccess") is not True
    )


def conflicting_claims(
    claims: Iterable[Mapping[str, Any]], mine: Mapping[str, Any], results: Iterable[Result]
) -> tuple[str, ...]:
    """namespace/name of every other claim that holds one of ``results``' devices."""
    ours = {(r.driver, r.pool, r.device) for r in results}
    me = (str_at(mine, "metadata", "namespace"), str_at(mine, "metadata", "name"))
    found: list[str] = []
    for claim in claims:
        key = (str_at(claim, "metadata", "namespace"), str_at(claim, "metadata", "name"))
        if key != me and allocated_devices(claim) & ours:
            found.append(f"{key[0]}/{key[1]}")
    return tuple(sorted(found))
