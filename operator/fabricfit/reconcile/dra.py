"""ResourceSlices and ResourceClaims of the whole cluster, for GPUs handed out by DRA.

On a cluster whose GPUs come from NVIDIA's DRA driver, nodes list no ``nvidia.com/gpu``: the
snapshot needs the ResourceSlices (what each node publishes) and the allocated ResourceClaims
(what is taken). When the API server serves ``resource.k8s.io/v1`` (GA since Kubernetes 1.34),
start-up keeps a read-only copy of both (a ``kube.mirror.Mirror``: paged list, then watch,
listing again when a watch expires with 410 Gone or fails), slimmed to the GPU driver's part.
Without the API (older clusters, or DRA switched off) nothing is watched and every node's GPUs
come from its allocatable, as before; without read access the operator says so once and carries
on the same way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from fabricfit.api.constants import DRA_GPU_DRIVER, DRA_GROUP, DRA_NIC_DRIVER, DRA_VERSION
from fabricfit.kube.discovery import may_list, served_resources
from fabricfit.kube.mirror import Key, Mirror
from fabricfit.kube.rest import ApiError, Rest

logger = logging.getLogger(__name__)
API = f"{DRA_GROUP}/{DRA_VERSION}"
SYNC_TIMEOUT_SECONDS = 120.0
Slim = Callable[[Mapping[str, Any]], dict[str, Any] | None]


def slim_slice(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """A GPU or NIC driver's slice as the snapshot reads it (None: another driver's)."""
    spec = body.get("spec") or {}
    if spec.get("driver") not in (DRA_GPU_DRIVER, DRA_NIC_DRIVER):
        return None
    return {
        "metadata": {"name": (body.get("metadata") or {}).get("name")},
        "spec": {
            "driver": spec.get("driver"),
            "nodeName": spec.get("nodeName"),
            "pool": spec.get("pool"),
            "devices": spec.get("devices"),
        },
    }


def slim_claim(body: Mapping[str, Any]) -> dict[str, Any]:
    """A claim's allocation and users as the snapshot reads them, plus its requests (a pod's
    ``resourceClaimName`` may name it before anything is allocated, so every claim is kept)."""
    meta = body.get("metadata") or {}
    status = body.get("status") or {}
    return {
        "kind": "ResourceClaim",
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
        "spec": {"devices": ((body.get("spec") or {}).get("devices") or {})},
        "status": {
            "allocation": status.get("allocation"),
            "reservedFor": status.get("reservedFor"),
        },
    }


def dra_mirror(rest: Rest, plural: str, slim: Slim) -> Mirror:
    """A cluster-wide mirror of ``resource.k8s.io/v1`` ``plural``, keyed by namespace/name."""

    def keyed(obj: Mapping[str, Any]) -> tuple[Key, dict[str, Any] | None]:
        return _key(obj), slim(obj)

    return Mirror(rest, (API, plural), keyed)


class DraInventoryWatch:
    """The ResourceSlices and ResourceClaims mirrors, and their tasks."""

    def __init__(self, rest: Rest) -> None:
        self.slices = dra_mirror(rest, "resourceslices", slim_slice)
        self.claims = dra_mirror(rest, "resourceclaims", slim_claim)
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self.tasks = [asyncio.create_task(m.run()) for m in (self.slices, self.claims)]
        waits = [m.synced.wait() for m in (self.slices, self.claims)]
        await asyncio.wait_for(asyncio.gather(*waits), timeout=SYNC_TIMEOUT_SECONDS)

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def dra_served(rest: Rest) -> bool:
    """Whether ``resource.k8s.io/v1`` serves ResourceSlices and ResourceClaims readable by us."""
    try:
        names = await served_resources(rest, API)
    except ApiError as err:
        logger.warning("cannot discover %s (%s); DRA GPUs are not counted", API, err)
        return False
    if names is None or not {"resourceslices", "resourceclaims"} <= names:
        return False
    for plural in ("resourceslices", "resourceclaims"):
        if not await may_list(rest, API, plural):
            logger.error(
                "%s is served but %s cannot be listed: GPUs handed out by DRA are not "
                "counted; grant list and watch on %s cluster-wide (the Helm chart does)",
                API,
                plural,
                plural,
            )
            return False
    return True


def _key(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")
