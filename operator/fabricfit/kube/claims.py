"""ResourceClaims and DeviceClasses (``resource.k8s.io/v1``) as device-exact placement uses them.

Every write is a PUT of the object read, carrying its ``resourceVersion``: a claim that changed
underneath (the scheduler, the claim controller, another writer) fails with 409 instead of being
overwritten. Writing ``status.allocation`` and ``status.reservedFor`` needs, besides
``update`` on ``resourceclaims/status``, the same verb on the synthetic ``resourceclaims/binding``
at cluster scope (Kubernetes 1.36, DRAResourceClaimGranularStatusAuthorization: the chart's
ClusterRole grants both).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from fabricfit.api.constants import DRA_GROUP, DRA_VERSION
from fabricfit.kube.rest import Rest, path_for

API = f"{DRA_GROUP}/{DRA_VERSION}"


async def read_claim(rest: Rest, namespace: str, name: str) -> dict[str, Any] | None:
    return await rest.get(path_for(API, "resourceclaims", namespace, name))


async def replace_claim(rest: Rest, claim: Mapping[str, Any]) -> dict[str, Any]:
    """PUT the claim (its metadata: the finalizer)."""
    meta = claim.get("metadata") or {}
    path = path_for(API, "resourceclaims", meta.get("namespace"), meta.get("name"))
    return await rest.replace(path, claim)


async def replace_claim_status(rest: Rest, claim: Mapping[str, Any]) -> dict[str, Any]:
    """PUT the claim's status (allocation and reservedFor)."""
    meta = claim.get("metadata") or {}
    path = path_for(API, "resourceclaims", meta.get("namespace"), meta.get("name"), "status")
    return await rest.replace(path, claim)


async def list_claims(rest: Rest) -> list[dict[str, Any]]:
    """Every ResourceClaim of the cluster, as the API server has them now."""
    return await rest.list(path_for(API, "resourceclaims"))


async def read_device_classes(rest: Rest, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The DeviceClasses of ``names`` that exist (404: left out)."""
    found: dict[str, dict[str, Any]] = {}
    for name in sorted(set(names)):
        device_class = await rest.get(path_for(API, "deviceclasses", None, name))
        if device_class is not None:
            found[name] = device_class
    return found
