"""Writing the plan onto the workload and pinning its pods.

Theory of operation
-------------------
``apply_to_workload`` rewrites the workload's pod templates for the placement mode (gate, labels,
Kueue annotations, rail-group affinity) and, in ``pinned`` mode without a Kueue queue, lifts the
workload's suspension once the templates carry the gate. Kubernetes only lets a Job's template
change while it is suspended and has never started, so an unsuspended workload is reported, not
forced. Plain-Pod workloads get fabricfit's label on each pod instead (pods must be created with
the gate themselves, since a running pod's gates can only be removed). In admission-check mode
a workload whose queued pod spec Kueue freezes (a LeaderWorkerSet) is not patched at all: it is
created with the gate, and Kueue puts fabricfit's label on its pods from the check's
podSetUpdates when it admits them (a template patch would roll its groups out). In kueue-tas
mode such a workload is not patched either: Kueue builds its Workloads from the templates once,
at creation, so one that lacks fabricfit's annotations is reported with what to create it with.

``pin_pods`` gives every gated pod a required node affinity for its planned node and removes the
gate in one JSON Patch guarded by a ``test`` of the gate, so a concurrent change fails the patch
instead of unpinning something else. A pod already pinned is never touched again, so an
operator restart between planning and pinning cannot pin a pod twice or somewhere else.

A pinned pod that kube-scheduler calls ``Unschedulable`` because something fabricfit does not
place took its node's GPUs (reservations are fabricfit's own bookkeeping: kube-scheduler does
not see them) cannot be moved: once its gate is gone its node affinity is immutable. After the
plan has moved it (``replacing.replace_stuck``), ``recreate_stuck`` deletes it, unbound, so its
controller recreates it from the gated template and the new pod is pinned to the new node. The
pod is read again first and deleted with ``uid`` and ``resourceVersion`` preconditions, so a pod
that was bound (or changed) meanwhile is never deleted. Plain Pods have no controller to
recreate them and are never deleted.

A template patch the API server refuses for what it says (validation: 400/422; an admission
webhook's denial: 403 naming the webhook) will be refused again for the same inputs, so the
refusal is remembered per TrainingTopology with a fingerprint of the patch, the workload's
generation and the spec: the same patch is not sent again before the resync period has passed
(pod events and updates would otherwise retry it hot); a changed workload or spec retries at
once. Any other error (RBAC, a webhook that could not be called) is raised, for kopf to retry.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fabricfit.api.constants import TOPOLOGY_LABEL
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.kube.pods import RACES, delete_pod, label_pod, patch_pod, read_pod
from fabricfit.kube.rest import ApiError, Rest
from fabricfit.kube.workloads import patch_workload
from fabricfit.placement.devices import PodDevices
from fabricfit.reconcile.admission import ADMISSION_MODE
from fabricfit.reconcile.context import Refusal, Target
from fabricfit.reconcile.devices import Step, release_onto_devices
from fabricfit.reconcile.inventory import TopologyKey
from fabricfit.render.kueue import fit_to_podset, group_podsets, podset_group_name
from fabricfit.render.pods import build_pin_patch, is_gated, planned_node_of, stuck_on
from fabricfit.render.workload import build_template_patch, build_workload_labels
from fabricfit.workloads import (
    allows_pod_affinity,
    build_unsuspend_patch,
    build_workload_patch,
    is_suspended,
    kind_named,
    pod_index,
    pod_spec_frozen,
    pod_templates,
    template_pod_count,
)
from fabricfit.workloads.deployment import assign_indices


@dataclass(frozen=True)
class Intent:
    """What the reconcile decided the workload must carry (see ``service.decide_intent``)."""

    plan: tuple[str, ...]
    rail_group_key: str | None
    kueue_annotations: Mapping[str, str]


#: How much of the server's refusal message a condition and its Event carry.
REFUSAL_MESSAGE_CHARS = 512
#: Part of the resync period after which a refused patch is tried again (timers drift a bit).
REFUSAL_RETRY_FRACTION = 0.9


@dataclass
class Applied:
    """What applying changed and what stopped it: ``blocked`` (a started workload that needs
    suspending) or ``rejected`` (the API server refused the patch)."""

    patched_workload: bool = False
    blocked: str | None = None
    rejected: str | None = None
    unmet: str | None = None  # what the workload must be created with (it cannot be patched)
    pinned: list[str] = field(default_factory=list)
    lost: set[int] = field(default_factory=set)


def build_patch_for(target: Target, intent: Intent, topology: str) -> dict[str, Any]:
    """The merge patch that puts ``intent`` on the workload's templates ({}: nothing to do)."""
    spec, ref, workload = target.spec, target.ref, target.workload or {}
    # The API server (or the kind's webhook) rejects pod-affinity changes of some workloads.
    may_change_affinity = allows_pod_affinity(ref.kind) and not pod_spec_frozen(ref.kind, workload)
    rail_group_key = intent.rail_group_key if may_change_affinity else None
    templates = pod_templates(ref.kind, workload)
    counts = [template_pod_count(ref.kind, workload, path) for path, _ in templates]
    per_podset = group_podsets(
        [fit_to_podset(intent.kueue_annotations, count) for count in counts],
        counts,
        podset_group_name(topology),
    )
    new = [
        (
            path,
            build_template_patch(
                topology_name=topology,
                mode=spec.placement.mode,
                queue_name=spec.queue_name,
                rail_group_key=rail_group_key,
                kueue_annotations=annotations,
                template=template,
            ),
        )
        for (path, template), annotations in zip(templates, per_podset, strict=True)
    ]
    body = build_workload_patch(ref.kind, workload, new)
    labels = build_workload_labels(spec.queue_name)
    if body and labels:
        body.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    return body


def is_refusal(err: ApiError) -> bool:
    """Whether the API server refused a write for its content (validation or an admission
    webhook's denial), so that the same write would be refused again."""
    if err.status in (400, 422):
        return True
    text = err.message.lower()
    return err.status == 403 and ("admission webhook" in text or "denied request" in text)


def describe_refusal(target: Target, namespace: str, err: ApiError) -> str:
    """The condition message of a refused patch: the workload and the server's words."""
    ref = target.ref
    return (
        f"{ref.kind} {namespace}/{ref.name} refused fabricfit's template patch "
        f"({err.status} {err.reason}): {err.message[:REFUSAL_MESSAGE_CHARS]}"
    )


def describe_unmet(target: Target, namespace: str, body: Mapping[str, Any]) -> str:
    """Why a queued LeaderWorkerSet is not patched in kueue-tas mode, and what to create it
    with: Kueue builds its groups' Workloads from the templates once, at creation."""
    ref = target.ref
    return (
        f"{ref.kind} {namespace}/{ref.name} lacks the pod-template metadata fabricfit chose for "
        "Kueue TAS; Kueue reads a queued LeaderWorkerSet's templates only when it creates the "
        "groups' Workloads (and a change would roll the groups out), so fabricfit does not "
        f"patch it. Create it with this merged in: {json.dumps(body, sort_keys=True)} "
        "(or use placement.mode admission-check)"
    )


def fingerprint_patch(target: Target, body: Mapping[str, Any]) -> int:
    """What a refusal depends on: the patch, the workload's identity and generation, the spec."""
    meta = (target.workload or {}).get("metadata") or {}
    identity = (meta.get("uid"), meta.get("generation"), target.spec.model_dump_json())
    return hash((json.dumps(body, sort_keys=True, default=str), identity))


async def apply_to_workload(
    rest: Rest,
    key: TopologyKey,
    target: Target,
    intent: Intent,
    *,
    refusals: dict[TopologyKey, Refusal] | None = None,
    retry_after_seconds: float = 0.0,
) -> Applied:
    """Patch the workload's templates for the mode, then lift its suspension when fabricfit
    alone gates it (pinned mode without a Kueue queue). ``refusals`` remembers refused
    patches (see the module doc); one is sent again after ``retry_after_seconds``."""
    spec, ref, workload = target.spec, target.ref, target.workload or {}
    namespace, name = key
    result = Applied()
    if spec.placement.mode == "advisory":
        return result
    frozen = pod_spec_frozen(ref.kind, workload)
    if spec.placement.mode == ADMISSION_MODE and frozen:
        # A queued LeaderWorkerSet: its pod spec is frozen (it was created with the gate, or
        # the admission refuses it), and a metadata patch would roll its groups out; the
        # check's podSetUpdates put fabricfit's label on the pods when Kueue admits them.
        return result
    kind = kind_named(ref.kind)
    if kind is not None and kind.selects_pods:
        await _label_pods(rest, namespace, name, workload.get("items") or [])
        return result
    body = build_patch_for(target, intent, name)
    if body and frozen and spec.placement.mode == "kueue-tas":
        return Applied(unmet=describe_unmet(target, namespace, body))
    if body:
        stopped = await _send_template_patch(
            rest,
            key,
            target,
            body,
            refusals={} if refusals is None else refusals,
            retry_after_seconds=retry_after_seconds,
        )
        if stopped is not None:
            return stopped
        result.patched_workload = True
    pinned_alone = spec.placement.mode == "pinned" and not spec.queue_name
    if pinned_alone and is_suspended(ref.kind, workload):
        unsuspend = build_unsuspend_patch(ref.kind)
        if unsuspend is not None:
            await patch_workload(rest, ref, namespace, unsuspend)
    return result


async def _send_template_patch(
    rest: Rest,
    key: TopologyKey,
    target: Target,
    body: Mapping[str, Any],
    *,
    refusals: dict[TopologyKey, Refusal],
    retry_after_seconds: float,
) -> Applied | None:
    """Send the template patch; what stopped it, or None when it was applied."""
    fingerprint = fingerprint_patch(target, body)
    known = refusals.get(key)
    now = time.monotonic()
    if known and known.fingerprint == fingerprint and now - known.at_seconds < retry_after_seconds:
        return Applied(rejected=known.message)  # refused for these very inputs: don't hammer
    try:
        await patch_workload(rest, target.ref, key[0], dict(body))
    except ApiError as err:
        if not is_refusal(err):
            raise
        ref, workload = target.ref, target.workload or {}
        if err.status == 422 and is_suspended(ref.kind, workload) is False:
            refusals.pop(key, None)  # the workload's own change (suspending it) retries
            return Applied(
                blocked=f"{ref.kind} {key[0]}/{ref.name} cannot take the placement (its pod "
                "template is immutable unless the workload is suspended and never started): "
                f"{err.message[:REFUSAL_MESSAGE_CHARS]}"
            )
        message = describe_refusal(target, key[0], err)
        refusals[key] = Refusal(fingerprint, now, message)
        return Applied(rejected=message)
    refusals.pop(key, None)
    return None


async def _label_pods(
    rest: Rest, namespace: str, name: str, pods: Sequence[Mapping[str, Any]]
) -> None:
    for pod in pods:
        meta = pod.get("metadata") or {}
        if (meta.get("labels") or {}).get(TOPOLOGY_LABEL) == name:
            continue
        try:
            await label_pod(rest, namespace, str(meta.get("name")), {TOPOLOGY_LABEL: name})
        except ApiError as err:
            if err.status != 404:
                raise


def pod_index_of(target: Target, pod: Mapping[str, Any]) -> int | None:
    """The pod's global index in the target's workload, or None."""
    ref = target.ref
    return pod_index(ref.kind, pod, workload=target.workload, index_label=ref.index_label)


def bound_pods(target: Target) -> dict[int, str]:
    """Pod index → the node it is bound to, for the target's live (not finished) pods."""
    bound: dict[int, str] = {}
    for pod in target.pods:
        if (pod.get("status") or {}).get("phase") in {"Succeeded", "Failed"}:
            continue
        index = pod_index_of(target, pod)
        node = (pod.get("spec") or {}).get("nodeName")
        if index is not None and node:
            bound[index] = node
    return bound


async def pin_pods(
    rest: Rest,
    target: Target,
    plan: Sequence[str],
    snapshot: ClusterSnapshot,
    devices: Sequence[PodDevices] = (),
) -> Applied:
    """Pin every gated pod to its planned node; report pods whose planned node is unusable.

    For a kind whose pods carry no index (a Deployment) a pod gets the next free one in the
    pin patch itself (``workloads.deployment``). The choice depends only on the pods' creation
    order and the indices their labels show, so a pod the watch still shows unpinned gets the
    same index again (and the patch, guarded by its resourceVersion, fails harmlessly).

    ``devices`` (per pod index, when fabricfit chose them): each pod's claim is allocated them
    before its gate is lifted (``reconcile.devices``)."""
    result = Applied()
    kind = kind_named(target.ref.kind)
    assigned: dict[str, int] = {}
    if kind is not None and kind.assigns_index:
        assigned = assign_indices(target.pods, len(plan))
    for pod in target.pods:
        if not is_gated(pod) or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        uid = str((pod.get("metadata") or {}).get("uid") or (pod.get("metadata") or {}).get("name"))
        index = pod_index_of(target, pod)
        labels = None
        if index is None and uid in assigned and kind is not None and kind.index_label:
            index, labels = assigned[uid], {kind.index_label: str(assigned[uid])}
        if index is None or index >= len(plan):
            continue
        node = plan[index]
        if not snapshot.has_node(node) or not snapshot.node(node).available:
            result.lost.add(index)
            continue
        if planned_node_of(pod) not in (None, node):
            continue  # pinned by an earlier plan; never re-pin a pod elsewhere
        meta = pod.get("metadata") or {}
        named = devices[index] if index < len(devices) else None
        ask = target.devices
        if named is not None and named.node == node and ask is not None and ask.enforced:
            step = await release_onto_devices(rest, pod, named, ask, snapshot)
            if step is Step.CONFLICT:
                result.lost.add(index)
            elif step is Step.RELEASED:
                result.pinned.append(meta.get("name") or "")
            continue
        try:
            await patch_pod(
                rest,
                meta.get("namespace") or "",
                meta.get("name") or "",
                build_pin_patch(pod, node, labels),
            )
        except ApiError as err:
            if err.status not in (404, 409, 422):
                raise
            continue  # changed underneath us: the next event or resync sees the new state
        result.pinned.append(meta.get("name") or "")
    return result


def stuck_pods(target: Target) -> dict[int, tuple[str, Mapping[str, Any]]]:
    """Pod index → (the node it is pinned to, the pod) for the target's pinned pods that
    kube-scheduler reports Unschedulable (``render.pods.stuck_on``)."""
    found: dict[int, tuple[str, Mapping[str, Any]]] = {}
    for pod in target.pods:
        node = stuck_on(pod)
        index = pod_index_of(target, pod) if node is not None else None
        if node is not None and index is not None:
            found[index] = (node, pod)
    return found


async def recreate_stuck(rest: Rest, pods: Sequence[Mapping[str, Any]]) -> list[str]:
    """Delete each pod that is still stuck where it was pinned when read again (see the module
    doc); the names deleted."""
    deleted: list[str] = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        fresh = await read_pod(rest, namespace, name)
        if fresh is None or stuck_on(fresh) is None or stuck_on(fresh) != stuck_on(pod):
            continue  # bound, gone or re-pinned since the views were taken
        seen = fresh.get("metadata") or {}
        try:
            await delete_pod(
                rest,
                namespace,
                name,
                uid=str(seen.get("uid") or ""),
                resource_version=str(seen.get("resourceVersion") or ""),
            )
        except ApiError as err:
            if err.status not in RACES:
                raise
            continue
        deleted.append(name)
    return deleted
