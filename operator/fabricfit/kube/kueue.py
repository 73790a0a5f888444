"""Kueue's API as fabricfit's AdmissionCheck controller uses it: whether it is served, and the
two status writes (a Workload's check entry, an AdmissionCheck's ``Active`` condition)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes.config import ConfigException

from fabricfit.api.constants import KUEUE_GROUP, KUEUE_VERSION
from fabricfit.kube.rest import ApiError, Rest, load_credentials, path_for

logger = logging.getLogger(__name__)

KUEUE_API: str = f"{KUEUE_GROUP}/{KUEUE_VERSION}"
#: The resources the AdmissionCheck controller watches; all must be served to run it.
KUEUE_RESOURCES = ("workloads", "admissionchecks", "resourceflavors")
#: Answers to a guarded status write meaning "the object changed (or went) underneath us".
RACES = (404, 409, 422)


async def serves_kueue(rest: Rest) -> bool:
    """Whether the API server serves Kueue's Workloads, AdmissionChecks and ResourceFlavors
    at ``kueue.x-k8s.io/v1beta2`` (discovery; absent group or version: False)."""
    found = await rest.get(f"/apis/{KUEUE_API}")
    served = {str(r.get("name")) for r in (found or {}).get("resources") or []}
    return all(name in served for name in KUEUE_RESOURCES)


async def serves_kueue_at(kubeconfig: str | None) -> bool:
    """:func:`serves_kueue` on a fresh client for ``kubeconfig``. An API server that cannot be
    asked counts as not serving it (logged); kopf then reports the connection itself."""
    try:
        rest = Rest(load_credentials(kubeconfig))
    except (OSError, ConfigException) as err:
        logger.warning("cannot ask for Kueue's API: %s", err)
        return False
    try:
        return await serves_kueue(rest)
    except (ApiError, OSError) as err:
        logger.warning("cannot ask for Kueue's API: %s", err)
        return False
    finally:
        await rest.close()


async def patch_check_state(
    rest: Rest, namespace: str, name: str, ops: Sequence[Mapping[str, Any]]
) -> bool:
    """Apply a guarded JSON Patch to a Workload's status; False when a guard failed or the
    Workload is gone (the next Workload event decides again)."""
    path = path_for(KUEUE_API, "workloads", namespace, name, "status")
    try:
        await rest.patch(path, list(ops), "json")
    except ApiError as err:
        if err.status not in RACES:
            raise
        return False
    return True


async def patch_admission_check_status(rest: Rest, name: str, body: Mapping[str, Any]) -> bool:
    """Merge-patch an AdmissionCheck's status (``body`` carries the resourceVersion it read)."""
    path = path_for(KUEUE_API, "admissionchecks", None, name, "status")
    try:
        await rest.patch(path, dict(body), "merge")
    except ApiError as err:
        if err.status not in RACES:
            raise
        return False
    return True
