"""GPUs a pod asks for through resource claims (Dynamic Resource Allocation), from plain dicts.

Theory of operation
-------------------
A pod that gets its GPUs through DRA requests no ``nvidia.com/gpu``; it lists claims in
``spec.resourceClaims`` — each either ``resourceClaimTemplateName`` (the claim controller
stamps one ResourceClaim per pod from that ResourceClaimTemplate, the usual way for the pods of
a Job) or ``resourceClaimName`` (one existing claim, shared by every pod naming it). The claim's
``spec.devices.requests[]`` say what it asks for: in ``resource.k8s.io/v1`` a request is
``exactly`` (``deviceClassName``, ``allocationMode`` ``ExactCount`` with ``count``, default 1,
or ``All``) or ``firstAvailable`` (alternatives, best first); v1beta1 wrote the ``exactly``
fields on the request itself. Requests of device class ``gpu.nvidia.com`` (the DeviceClass
NVIDIA's DRA driver installs: whole GPUs) count as GPUs.

What cannot be known from the objects is a problem, never a guess: ``All`` (every GPU of the
node it lands on), alternatives of different GPU counts, a bad count. A claim or template that
is not found is ``missing``, kept apart: it may be one that appears later and asks for no GPU
(the channel template NVIDIA's driver creates for a ComputeDomain). The caller decides what
they mean (``render.policy``: problems only when ``gpusPerPod`` must be derived from the
workload, missing sources only when nothing else gives it GPUs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fabricfit.api.constants import DRA_GPU_DEVICE_CLASS
from fabricfit.fabric.objects import list_at, mapping_at, shorten, str_at, value_at

TEMPLATE_KIND = "ResourceClaimTemplate"
CLAIM_KIND = "ResourceClaim"
MAX_COUNT = 4096


@dataclass(frozen=True)
class PodClaims:
    """What a pod template's resource claims ask for."""

    gpus: int = 0
    sources: tuple[str, ...] = ()  # "ResourceClaimTemplate/NAME" of every claim asking for GPUs
    problems: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()  # "ResourceClaimTemplate 'NAME' is not found"

    @property
    def uses_claims(self) -> bool:
        return bool(self.sources)


def claim_names(template: object) -> tuple[tuple[str, str], ...]:
    """(kind, name) of the claims ``template`` (a pod template or pod) lists."""
    found: list[tuple[str, str]] = []
    for entry in list_at(template, "spec", "resourceClaims"):
        template_name = str_at(entry, "resourceClaimTemplateName")
        claim_name = str_at(entry, "resourceClaimName")
        if template_name:
            found.append((TEMPLATE_KIND, template_name))
        elif claim_name:
            found.append((CLAIM_KIND, claim_name))
    return tuple(found)


def pod_claim_gpus(
    template: object, objects: Mapping[tuple[str, str], Mapping[str, object]]
) -> PodClaims:
    """GPUs one pod of ``template`` claims; ``objects`` holds the ResourceClaimTemplates and
    ResourceClaims of its namespace by (kind, name)."""
    gpus = 0
    sources: list[str] = []
    problems: list[str] = []
    missing: list[str] = []
    for kind, name in claim_names(template):
        obj = objects.get((kind, name))
        if obj is None:
            missing.append(f"{kind} {shorten(name)} is not found")
            continue
        spec = mapping_at(obj, "spec", "spec") if kind == TEMPLATE_KIND else mapping_at(obj, "spec")
        count, found = _requests_gpus(list_at(spec, "devices", "requests"), f"{kind} {name}")
        problems.extend(found)
        if count:
            gpus += count
            sources.append(f"{kind}/{name}")
    return PodClaims(
        gpus=gpus, sources=tuple(sources), problems=tuple(problems), missing=tuple(missing)
    )


def _requests_gpus(requests: Sequence[object], where: str) -> tuple[int, list[str]]:
    gpus = 0
    problems: list[str] = []
    for request in requests:
        name = str_at(request, "name") or "?"
        alternatives = list_at(request, "firstAvailable")
        if alternatives:
            counts = {_exact_gpus(a, f"{where} request {name}", problems) for a in alternatives}
            if len(counts) > 1:
                problems.append(
                    f"{where} request {name}: firstAvailable alternatives ask for different "
                    f"numbers of {DRA_GPU_DEVICE_CLASS} devices ({sorted(counts)})"
                )
                continue
            gpus += counts.pop()
            continue
        exact = mapping_at(request, "exactly") if "exactly" in mapping_at(request) else request
        gpus += _exact_gpus(exact, f"{where} request {name}", problems)
    return gpus, problems


def _exact_gpus(request: object, where: str, problems: list[str]) -> int:
    """GPUs of one exact request (0 for another device class)."""
    if str_at(request, "deviceClassName") != DRA_GPU_DEVICE_CLASS:
        return 0
    mode = str_at(request, "allocationMode") or "ExactCount"
    if mode not in ("ExactCount", "All"):
        problems.append(f"{where}: allocationMode {shorten(mode)} is not ExactCount or All")
        return 0
    if mode == "All":
        problems.append(
            f"{where}: allocationMode All takes every GPU of the node it lands on; set gpusPerPod"
        )
        return 0
    count = value_at(request, "count")
    if count is None:
        return 1
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        problems.append(f"{where}: count {shorten(count)} is not a whole number in 1..{MAX_COUNT}")
        return 0
    return count


@dataclass(frozen=True)
class ClaimRequest:
    """One request of a claim as the allocation must answer it."""

    name: str
    device_class: str
    count: int | None  # devices of an ExactCount request; None: All, alternatives, bad count
    selectors: tuple[str, ...] = ()
    admin_access: bool = False
    capacity: bool = False  # asks for consumable capacity (shares a device)


@dataclass(frozen=True)
class PodClaim:
    """One entry of a pod's ``spec.resourceClaims`` and what its claim asks for."""

    entry: str  # the pod's name for it (pod.status.resourceClaimStatuses[].name)
    kind: str  # TEMPLATE_KIND or CLAIM_KIND
    source: str  # its ResourceClaimTemplate or ResourceClaim name
    requests: tuple[ClaimRequest, ...] = ()
    constraints: int = 0  # spec.devices.constraints entries
    config: tuple[Mapping[str, object], ...] = ()  # spec.devices.config (FromClaim)
    found: bool = True


def pod_claims(
    template: object, objects: Mapping[tuple[str, str], Mapping[str, object]]
) -> tuple[PodClaim, ...]:
    """Every claim entry of ``template`` with the requests its claim (or template) makes."""
    found: list[PodClaim] = []
    for raw in list_at(template, "spec", "resourceClaims"):
        entry = str_at(raw, "name") or ""
        template_name = str_at(raw, "resourceClaimTemplateName")
        kind, name = (TEMPLATE_KIND, template_name) if template_name else (CLAIM_KIND, "")
        name = name or str_at(raw, "resourceClaimName") or ""
        obj = objects.get((kind, name))
        if obj is None:
            found.append(PodClaim(entry, kind, name, found=False))
            continue
        spec = mapping_at(obj, "spec", "spec") if kind == TEMPLATE_KIND else mapping_at(obj, "spec")
        devices = mapping_at(spec, "devices")
        found.append(
            PodClaim(
                entry=entry,
                kind=kind,
                source=name,
                requests=tuple(_request_of(r) for r in list_at(devices, "requests")),
                constraints=len(list_at(devices, "constraints")),
                config=tuple(c for c in list_at(devices, "config") if isinstance(c, Mapping)),
            )
        )
    return tuple(found)


def _request_of(raw: object) -> ClaimRequest:
    name = str_at(raw, "name") or ""
    if list_at(raw, "firstAvailable"):
        return ClaimRequest(name, "", None)
    exact = mapping_at(raw, "exactly") if "exactly" in mapping_at(raw) else mapping_at(raw)
    mode = str_at(exact, "allocationMode") or "ExactCount"
    count = value_at(exact, "count")
    if count is None:
        count = 1
    whole = isinstance(count, int) and not isinstance(count, bool) and 1 <= count <= MAX_COUNT
    selectors = []
    for selector in list_at(exact, "selectors"):
        expression = str_at(selector, "cel", "expression")
        if expression:
            selectors.append(expression)
    return ClaimRequest(
        name=name,
        device_class=str_at(exact, "deviceClassName") or "",
        count=count if mode == "ExactCount" and whole else None,  # type: ignore[arg-type]
        selectors=tuple(selectors),
        admin_access=value_at(exact, "adminAccess") is True,
        capacity=bool(mapping_at(exact, "capacity")),
    )
