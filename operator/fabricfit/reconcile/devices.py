"""Making a gated pod run on the devices its plan chose: its own ResourceClaim, allocated.

Theory of operation
-------------------
When fabricfit chooses the devices (``gpuChoice`` enforced), a pod of the plan is released in
five steps, each safe to repeat (a pod event or the resync picks up where one stopped):

1. **Pin**: the pod gets its required node affinity ``metadata.name In [node]`` and keeps its
   gate. The pin is what keeps the allocation: if the planned node cannot take the pod,
   kube-scheduler's PostFilter would otherwise clear an allocation it did not make and allocate
   elsewhere (``dynamicresources.go`` PostFilter @v1.36.3); with the pod pinned no other node
   fits, so the claim is kept and the pod waits.
2. **Find the claim**: the claim controller names the pod's claim in
   ``status.resourceClaimStatuses`` even while the pod is gated; until it does there is nothing
   to do. The claim must be owned by this pod (its UID: a recreated pod gets a new claim) and
   unallocated, or already hold exactly the plan's devices (a repeat).
3. **Finalizer**: ``resource.kubernetes.io/delete-protection``, as the scheduler adds it, so the
   claim controller deallocates the claim once the pod is gone.
4. **Allocate**: one status write (``render.claims.allocated_claim``) guarded by the claim's
   ``resourceVersion``. Nothing in the API server stops two writers booking one device, so every
   claim of the cluster is listed again right after: a device another claim holds is a conflict,
   the allocation is taken back and the pod reported lost (re-placed by the reconcile).
5. **Ungate**: the scheduler binds the pod to its node and keeps the allocation.

Devices the plan named that the slices no longer publish (pool unknown) are a conflict too.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from fabricfit.api.constants import DRA_GPU_DRIVER, DRA_NIC_DRIVER
from fabricfit.api.status import rfc3339
from fabricfit.fabric.deviceask import DeviceAsk
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.kube.claims import list_claims, read_claim, replace_claim, replace_claim_status
from fabricfit.kube.pods import RACES, patch_pod
from fabricfit.kube.rest import ApiError, Rest
from fabricfit.placement.devices import PodDevices
from fabricfit.render.claims import (
    Result,
    allocated_claim,
    allocated_devices,
    claim_name_of,
    conflicting_claims,
    owned_by,
    released_claim,
    results_for,
    with_finalizer,
)
from fabricfit.render.pods import build_pin_patch, build_ungate_patch

logger = logging.getLogger(__name__)


class Step(enum.Enum):
    """Where releasing one pod got to."""

    RELEASED = "released"  # claim allocated, gate lifted
    WAITING = "waiting"  # no claim yet, or the pod or claim changed underneath: next event
    CONFLICT = "conflict"  # the planned devices are not the pod's to have: re-place it


async def release_onto_devices(
    rest: Rest,
    pod: Mapping[str, Any],
    devices: PodDevices,
    ask: DeviceAsk,
    snapshot: ClusterSnapshot,
) -> Step:
    """Steps 1–5 of the module doc for one gated pod of an enforced plan."""
    meta = pod.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    try:
        pin = build_pin_patch(pod, devices.node, ungate=False)
        if pin:
            pod = await patch_pod(rest, namespace, name, pin)
        results = results_for(devices, ask, _pools(snapshot, devices.node))
        if results is None:
            return Step.CONFLICT
        claim_name = claim_name_of(pod, ask.entry)
        if not claim_name:
            return Step.WAITING
        step = await _allocate(rest, pod, claim_name, (devices.node, results), ask)
        if step is not Step.RELEASED:
            return step
        await patch_pod(rest, namespace, name, build_ungate_patch(pod))
    except ApiError as err:
        if err.status not in RACES:
            raise
        return Step.WAITING
    return Step.RELEASED


async def _allocate(
    rest: Rest,
    pod: Mapping[str, Any],
    claim_name: str,
    planned: tuple[str, tuple[Result, ...]],
    ask: DeviceAsk,
) -> Step:
    node, results = planned
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    claim = await read_claim(rest, namespace, claim_name)
    if claim is None or not owned_by(claim, pod):
        return Step.WAITING  # stale: the controller makes the pod's own claim next
    held = allocated_devices(claim)
    if held:
        if held == {(r.driver, r.pool, r.device) for r in results}:
            return Step.RELEASED  # a repeat: written before, the gate still to lift
        # An earlier plan's devices (the pod was re-placed while gated): an allocation is
        # never edited, only taken back; the next pass writes the new one.
        await replace_claim_status(rest, released_claim(claim))
        return Step.WAITING
    protected = with_finalizer(claim)
    if protected is not None:
        claim = await replace_claim(rest, protected)
    stamp = rfc3339(datetime.now(UTC))
    body = allocated_claim(claim, pod, node, results, ask=ask, timestamp=stamp)
    written = await replace_claim_status(rest, body)
    others = conflicting_claims(await list_claims(rest), written, results)
    if others:
        logger.warning(
            "claim %s/%s: the planned devices are held by %s too; taking the allocation back",
            namespace,
            claim_name,
            ", ".join(others),
        )
        await replace_claim_status(rest, released_claim(written))
        return Step.CONFLICT
    return Step.RELEASED


def devices_still_ours(
    devices: Sequence[PodDevices],
    claims: Iterable[Mapping[str, Any]],
    own_pods: Collection[str],
    others: Mapping[str, frozenset[str]],
) -> bool:
    """Whether a device-exact plan (not started) still has its devices: no other plan chose
    one of them, and no claim holds one unless it is the claim of one of the job's own pods
    (``own_pods``: their names; the job's claims count as used GPUs in the snapshot, so a
    count of free GPUs cannot tell). Pools are node names for both drivers."""
    mine = {(pod.node, name) for pod in devices for name in (*pod.gpus, *pod.nics)}
    if any(gpu in others.get(pod.node, ()) for pod in devices for gpu in pod.gpus):
        return False
    for claim in claims:
        users = {str(u.get("name")) for u in (claim.get("status") or {}).get("reservedFor") or []}
        held = {(pool, device) for _, pool, device in allocated_devices(claim)}
        if held & mine and not users <= set(own_pods):
            return False
    return True


def _pools(snapshot: ClusterSnapshot, node: str) -> dict[tuple[str, str], str]:
    """(driver, device) → pool for the devices the slices publish on ``node``."""
    found = snapshot.devices.of(node) if snapshot.devices is not None else None
    if found is None:
        return {}
    pools = {(DRA_GPU_DRIVER, g.name): g.pool for g in found.gpus}
    pools.update({(DRA_NIC_DRIVER, n.name): n.pool for n in found.nics if n is not None})
    return pools
