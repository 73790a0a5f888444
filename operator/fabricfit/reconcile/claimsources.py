"""The ResourceClaimTemplates and ResourceClaims a workload's pods claim GPUs through.

A pod template names them (``spec.resourceClaims``); what they ask for settles ``gpusPerPod``
and goes into ``status.gpuAllocation`` (``render.policy``, ``render.devices``). Templates are
read from the API server in the workload's namespace; claims come from the DRA watch
(``reconcile.dra``), which already holds every claim of the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabricfit import policy
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.fabric.podclaims import CLAIM_KIND, TEMPLATE_KIND, claim_names
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
    return found
