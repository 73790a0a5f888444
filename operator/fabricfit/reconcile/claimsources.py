"""The ResourceClaimTemplates, ResourceClaims and DeviceClasses a workload's pods claim through.

A pod template names them (``spec.resourceClaims``); what they ask for settles ``gpusPerPod``,
says whether fabricfit can allocate the pods' claims itself (``fabric.deviceask``: the
DeviceClasses their requests name give the selectors and config) and goes into
``status.gpuAllocation`` (``render.devices``). Templates and DeviceClasses are read from the
API server; claims come from the DRA watch (``reconcile.dra``), which already holds every claim
of the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabricfit import policy
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.fabric.deviceask import DEVICE_CLASS_KIND
from fabricfit.fabric.podclaims import CLAIM_KIND, TEMPLATE_KIND, claim_names, pod_claims
from fabricfit.kube.claims import read_device_classes
from fabricfit.kube.rest import Rest
from fabricfit.kube.workloads import read_claim_templates
from fabricfit.reconcile.context import Views

ClaimObjects = dict[tuple[str, str], Mapping[str, Any]]


async def claim_sources(
    rest: Rest,
    namespace: str,
    spec: TrainingTopologySpec,
    workload: Mapping[str, Any] | None,
    views: Views,
) -> ClaimObjects:
    """(kind, name) -> object for every claim source the rank template names that exists."""
    ref = spec.workload_ref
    template = policy.rank_template(ref.kind, workload) if ref is not None else None
    names = claim_names(template) if template is not None else ()
    if not names:
        return {}
    wanted = {name for kind, name in names if kind == TEMPLATE_KIND}
    found: ClaimObjects = {
        (TEMPLATE_KIND, name): obj
        for name, obj in (await read_claim_templates(rest, namespace, wanted)).items()
    }
    claims = {name for kind, name in names if kind == CLAIM_KIND}
    for claim in views.claims:
        meta = claim.get("metadata") or {}
        if meta.get("namespace") == namespace and meta.get("name") in claims:
            found[(CLAIM_KIND, str(meta["name"]))] = claim
    classes = {r.device_class for c in pod_claims(template, found) for r in c.requests}
    for name, device_class in (await read_device_classes(rest, classes - {""})).items():
        found[(DEVICE_CLASS_KIND, name)] = device_class
    return found
