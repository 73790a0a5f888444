"""Whether fabricfit can make the cluster use the devices it plans, and how (pure).

Theory of operation
-------------------
Device-exact placement works by allocating each pod's own ResourceClaim — the one the claim
controller stamps from the pod's ResourceClaimTemplate — while the pod is still gated
(``reconcile.devices``). fabricfit then answers the whole claim itself, so it can do so only for
a claim it fully understands. :func:`device_ask` says whether the rank template's claims allow
it (``gpuChoice`` ``enforced``) or why not (``not-enforced``, priced on what kube-scheduler's
allocator hands out):

* GPUs come from exactly one claim entry stamped from a ResourceClaimTemplate (a shared
  ResourceClaim is one allocation for every pod: no per-pod choice), with one ExactCount
  request of device class ``gpu.nvidia.com`` for every GPU of the pod;
* the same claim may ask for RDMA NICs: one ExactCount request, at most one NIC per GPU, whose
  DeviceClass selects driver ``dra.net`` (``device.driver == "dra.net"`` among its selectors);
* nothing else: no other request (fabricfit would have to allocate devices it does not know),
  no ``constraints`` (not evaluated here), no admin access or consumable capacity, and every
  DeviceClass named must be known (its selectors and config are part of the answer).

Other claim entries of the pod (a ComputeDomain's channel) stay kube-scheduler's to allocate.
The selectors of the classes and requests are checked per device later
(:func:`unusable_devices`); a device whose selectors cannot be evaluated here makes the choice
not enforced, never a guess (``policy.devices.settle_devices``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fabricfit.api.constants import (
    DRA_GPU_DEVICE_CLASS,
    DRA_GPU_DRIVER,
    DRA_NIC_DRIVER,
    GPU_CHOICE_ENFORCED,
    GPU_CHOICE_NOT_ENFORCED,
)
from fabricfit.fabric.devices import DeviceMap, NodeDevices
from fabricfit.fabric.objects import list_at, mapping_at
from fabricfit.fabric.podclaims import TEMPLATE_KIND, ClaimRequest, PodClaim, pod_claims
from fabricfit.fabric.resourceslices import DraDevice
from fabricfit.fabric.selectors import device_matches, selectors_of

DEVICE_CLASS_KIND = "DeviceClass"
_DRIVER_IS = re.compile(r"""device\.driver\s*==\s*["']([^"']+)["']""")


@dataclass(frozen=True)
class ConfigEntry:
    """One ``status.allocation.devices.config`` entry: whose it is, for which requests."""

    source: str  # FromClass | FromClaim
    requests: tuple[str, ...]
    opaque: Mapping[str, Any]


@dataclass(frozen=True)
class DeviceAsk:
    """What the pods' GPU claim asks for, and whether fabricfit answers it (``choice``)."""

    choice: str
    reason: str
    entry: str = ""  # the pod's claim entry fabricfit allocates
    gpu_request: str = ""
    nic_request: str = ""  # "" when no NIC is asked for
    nics: int = 0
    gpu_selectors: tuple[str, ...] = ()
    nic_selectors: tuple[str, ...] = ()
    config: tuple[ConfigEntry, ...] = ()

    @property
    def enforced(self) -> bool:
        return self.choice == GPU_CHOICE_ENFORCED


def device_ask(
    template: object, objects: Mapping[tuple[str, str], Mapping[str, Any]], gpus_per_pod: int
) -> DeviceAsk:
    """Whether the GPU choice of ``template``'s pods can be enforced (see the module doc);
    ``objects`` holds the ResourceClaimTemplates, ResourceClaims and DeviceClasses by
    (kind, name)."""
    claims = [c for c in pod_claims(template, objects) if _asks_gpus(c)]
    if len(claims) != 1:
        why = "no claim asks for GPUs" if not claims else "GPUs come from several claims"
        return DeviceAsk(GPU_CHOICE_NOT_ENFORCED, why)
    claim = claims[0]
    problem = _claim_problem(claim, gpus_per_pod)
    if problem:
        return DeviceAsk(GPU_CHOICE_NOT_ENFORCED, problem)
    return _ask(claim, objects)


def _asks_gpus(claim: PodClaim) -> bool:
    return any(r.device_class == DRA_GPU_DEVICE_CLASS for r in claim.requests)


def _claim_problem(claim: PodClaim, gpus_per_pod: int) -> str:
    where = f"{claim.kind} {claim.source}"
    if claim.kind != TEMPLATE_KIND:
        return f"{where} is shared by every pod: one allocation, no per-pod choice"
    if claim.constraints:
        return f"{where} has constraints, which fabricfit does not evaluate"
    gpus = [r for r in claim.requests if r.device_class == DRA_GPU_DEVICE_CLASS]
    if len(gpus) != 1 or gpus[0].count != gpus_per_pod:
        return f"{where} does not ask for the pod's {gpus_per_pod} GPUs in one ExactCount request"
    for request in claim.requests:
        if request.count is None or request.admin_access or request.capacity:
            return (
                f"{where} request {request.name} is not a plain ExactCount request "
                "(All, firstAvailable, adminAccess or capacity)"
            )
    return ""


def _ask(claim: PodClaim, objects: Mapping[tuple[str, str], Mapping[str, Any]]) -> DeviceAsk:
    where = f"{claim.kind} {claim.source}"
    classes: dict[str, Mapping[str, Any]] = {}
    for request in claim.requests:
        found = objects.get((DEVICE_CLASS_KIND, request.device_class))
        if found is None:
            return DeviceAsk(
                GPU_CHOICE_NOT_ENFORCED, f"DeviceClass {request.device_class} is not known"
            )
        classes[request.device_class] = found
    gpu = next(r for r in claim.requests if r.device_class == DRA_GPU_DEVICE_CLASS)
    others = [r for r in claim.requests if r is not gpu]
    nic = others[0] if others else None
    if len(others) > 1 or (
        nic is not None and _driver(classes[nic.device_class]) != DRA_NIC_DRIVER
    ):
        return DeviceAsk(
            GPU_CHOICE_NOT_ENFORCED, f"{where} asks for devices other than GPUs and RDMA NICs"
        )
    if nic is not None and (nic.count or 0) > (gpu.count or 0):
        return DeviceAsk(GPU_CHOICE_NOT_ENFORCED, f"{where} asks for more NICs than GPUs")
    return DeviceAsk(
        GPU_CHOICE_ENFORCED,
        _enforced_words(where, gpu, nic),
        entry=claim.entry,
        gpu_request=gpu.name,
        nic_request=nic.name if nic is not None else "",
        nics=(nic.count or 0) if nic is not None else 0,
        gpu_selectors=_selectors(gpu, classes),
        nic_selectors=_selectors(nic, classes) if nic is not None else (),
        config=_config(claim, classes),
    )


def _enforced_words(where: str, gpu: ClaimRequest, nic: ClaimRequest | None) -> str:
    nics = f" and its {nic.count} RDMA NICs (request {nic.name})" if nic is not None else ""
    return (
        f"fabricfit allocates each pod's claim from {where} itself: the {gpu.count} GPUs "
        f"(request {gpu.name}){nics} the plan names, on the planned node"
    )


def _driver(device_class: Mapping[str, Any]) -> str:
    for expression in selectors_of(mapping_at(device_class, "spec")):
        found = _DRIVER_IS.search(expression)
        if found:
            return found.group(1)
    return ""


def _selectors(request: ClaimRequest, classes: Mapping[str, Mapping[str, Any]]) -> tuple[str, ...]:
    own = selectors_of(mapping_at(classes[request.device_class], "spec"))
    return own + request.selectors


def _config(claim: PodClaim, classes: Mapping[str, Mapping[str, Any]]) -> tuple[ConfigEntry, ...]:
    """Config the allocation carries, as kube-scheduler writes it: each class's entries for
    the requests naming it (FromClass), then the claim's own (FromClaim)."""
    entries: list[ConfigEntry] = []
    for name, device_class in classes.items():
        requests = tuple(r.name for r in claim.requests if r.device_class == name)
        for raw in list_at(device_class, "spec", "config"):
            opaque = mapping_at(raw, "opaque")
            if opaque:
                entries.append(ConfigEntry("FromClass", requests, dict(opaque)))
    for raw in claim.config:
        opaque = mapping_at(raw, "opaque")
        if opaque:
            named = tuple(r for r in list_at(raw, "requests") if isinstance(r, str))
            entries.append(ConfigEntry("FromClaim", named, dict(opaque)))
    return tuple(entries)


def unusable_devices(ask: DeviceAsk, devices: DeviceMap) -> dict[str, frozenset[str]] | None:
    """Per node, the GPUs the claim may not get (the GPU, or its NIC when NICs are asked for,
    fails a selector); None when a selector cannot be evaluated here."""
    out: dict[str, frozenset[str]] = {}
    for node, found in devices.nodes.items():
        bad: set[str] = set()
        for position, gpu in enumerate(found.gpus):
            verdict = _usable(ask, found, position, gpu)
            if verdict is None:
                return None
            if not verdict:
                bad.add(gpu.name)
        if bad:
            out[node] = frozenset(bad)
    return out


def _usable(ask: DeviceAsk, found: NodeDevices, position: int, gpu: DraDevice) -> bool | None:
    verdict = _matches(ask.gpu_selectors, DRA_GPU_DRIVER, gpu)
    if verdict is not True or not ask.nics:
        return verdict
    nic = found.nics[position]
    return True if nic is None else _matches(ask.nic_selectors, DRA_NIC_DRIVER, nic)


def _matches(selectors: tuple[str, ...], driver: str, device: DraDevice) -> bool | None:
    return device_matches(selectors, driver, device) if selectors else True
