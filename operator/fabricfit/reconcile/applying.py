"""Writing the plan onto the workload and pinning its pods.

Theory of operation
-------------------
``apply_to_workload`` rewrites the workload's pod templates for the placement mode (gate, labels,
Kueue annotations, rail-group affinity) and, in ``pinned`` mode without a Kueue queue, lifts the
workload's suspension once the templates carry the gate. Kubernetes only lets a Job's template
change while it is suspended and has never started, so an unsuspended workload is reported, not
forced. Plain-Pod workloads get fabricfit's label on each pod instead (pods must be created with
the gate themselves, since a running pod's gates can only be removed).

``pin_pods`` gives every gated pod a required node affinity for its planned node and removes the
gate in one JSON Patch guarded by a ``test`` of the gate, so a concurrent change fails the patch
instead of unpinning something else. A pod already pinned is never touched again, so an
operator restart between planning and pinning cannot pin a pod twice or somewhere else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fabricfit.api.constants import TOPOLOGY_LABEL
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.kube.rest import ApiError, Rest, path_for
from fabricfit.kube.workloads import patch_pod, patch_workload
from fabricfit.render.kinds import (
    allows_pod_affinity,
    build_unsuspend_patch,
    build_workload_patch,
    is_suspended,
    kind_named,
    pod_index,
    pod_templates,
    template_pod_count,
)
from fabricfit.render.kueue import fit_to_podset, group_podsets, podset_group_name
from fabricfit.render.pods import build_pin_patch, is_gated, planned_node_of
from fabricfit.render.workload import build_template_patch, build_workload_labels


@dataclass
class Applied:
    """What applying changed and what stopped it."""

    patched_workload: bool = False
    unsuspended: bool = False
    blocked: str | None = None
    pinned: list[str] = field(default_factory=list)
    lost: set[int] = field(default_factory=set)


async def apply_to_workload(
    rest: Rest,
    namespace: str,
    name: str,
    spec: TrainingTopologySpec,
    workload: Mapping[str, Any],
    *,
    rail_group_key: str | None,
    kueue_annotations: Mapping[str, str],
) -> Applied:
    ref = spec.workload_ref
    assert ref is not None
    mode = spec.placement.mode
    result = Applied()
    if mode == "advisory":
        return result
    kind = kind_named(ref.kind)
    if kind is not None and kind.selects_pods:
        await _label_pods(rest, namespace, name, workload.get("items") or [])
        return result
    templates = pod_templates(ref.kind, workload)
    if not allows_pod_affinity(ref.kind):
        rail_group_key = None  # the API server rejects pod-affinity changes to these templates
    counts = [template_pod_count(ref.kind, workload, path) for path, _ in templates]
    per_podset = group_podsets(
        [fit_to_podset(kueue_annotations, count) for count in counts],
        counts,
        podset_group_name(name),
    )
    new = [
        (
            path,
            build_template_patch(
                topology_name=name,
                mode=mode,
                queue_name=spec.queue_name,
                rail_group_key=rail_group_key,
                kueue_annotations=annotations,
                template=template,
            ),
        )
        for (path, template), annotations in zip(templates, per_podset, strict=True)
    ]
    body = build_workload_patch(ref.kind, workload, new)
    if body:
        labels = build_workload_labels(spec.queue_name)
        if labels:
            body.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
        try:
            await patch_workload(rest, ref, namespace, body)
        except ApiError as err:
            if err.status != 422:
                raise
            result.blocked = (
                f"{ref.kind} {ref.name} cannot take the placement (its pod template is "
                "immutable unless the workload is suspended and never started): "
                f"{err.message[:300]}"
            )
            return result
        result.patched_workload = True
    if mode == "pinned" and not spec.queue_name and is_suspended(ref.kind, workload):
        unsuspend = build_unsuspend_patch(ref.kind)
        if unsuspend is not None:
            await patch_workload(rest, ref, namespace, unsuspend)
            result.unsuspended = True
    return result


async def _label_pods(
    rest: Rest, namespace: str, name: str, pods: Sequence[Mapping[str, Any]]
) -> None:
    for pod in pods:
        meta = pod.get("metadata") or {}
        if (meta.get("labels") or {}).get(TOPOLOGY_LABEL) == name:
            continue
        body = {"metadata": {"labels": {TOPOLOGY_LABEL: name}}}
        try:
            await rest.patch(path_for("v1", "pods", namespace, meta.get("name")), body, "merge")
        except ApiError as err:
            if err.status != 404:
                raise


def pod_index_of(
    kind: str,
    pod: Mapping[str, Any],
    spec: TrainingTopologySpec,
    workload: Mapping[str, Any] | None,
) -> int | None:
    ref = spec.workload_ref
    index_label = ref.index_label if ref is not None else None
    return pod_index(kind, pod, workload=workload, index_label=index_label)


async def pin_pods(
    rest: Rest,
    spec: TrainingTopologySpec,
    pods: Sequence[Mapping[str, Any]],
    plan: Sequence[str],
    snapshot: ClusterSnapshot,
    workload: Mapping[str, Any] | None,
) -> Applied:
    """Pin every gated pod to its planned node; report pods whose planned node is unusable."""
    ref = spec.workload_ref
    assert ref is not None
    result = Applied()
    for pod in pods:
        if not is_gated(pod) or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        index = pod_index_of(ref.kind, pod, spec, workload)
        if index is None or index >= len(plan):
            continue
        node = plan[index]
        if not snapshot.has_node(node) or not snapshot.node(node).available:
            result.lost.add(index)
            continue
        if planned_node_of(pod) not in (None, node):
            continue  # pinned by an earlier plan; never re-pin a pod elsewhere
        meta = pod.get("metadata") or {}
        try:
            await patch_pod(
                rest,
                meta.get("namespace") or "",
                meta.get("name") or "",
                build_pin_patch(pod, node),
            )
        except ApiError as err:
            if err.status not in (404, 409, 422):
                raise
            continue  # changed underneath us: the next event or resync sees the new state
        result.pinned.append(meta.get("name") or "")
    return result
