"""Pod events and deletion: pin a gated pod from the recorded plan, release on deletion.

Theory of operation
-------------------
A gated pod of a TrainingTopology appearing (a Job's pods are created after the plan, a pod
recreated after a failure) should be pinned at once, not at the next resync. :func:`on_pod_event`
first tries the fast path, :func:`pin_from_plan`: the plan the watch (or our own last write)
shows, the pod's index from its labels alone, one patch. When only a full reconcile can decide
(no current plan, a kind whose index needs the workload, a planned node that is unusable, a
plan that names the pods' DRA devices, whose claims the reconcile allocates first) it reads the
TrainingTopology and reconciles it, which re-places pods whose node is gone.

:func:`release` runs on deletion: it drops the reservation, removes fabricfit's gate from the
workload's pod templates where the API server lets them change, and lifts the gate of every pod
still gated (the workload itself is kept), so nothing stays stuck behind a plan that no longer
exists. A running workload's templates cannot change: a Job's template is immutable unless the
Job is suspended (``validatePodTemplateUpdate``, ``pkg/apis/batch/validation/validation.go``
@ Kubernetes v1.36.3), the JobSet webhook lets a template's gates change only while the JobSet is
suspended (jobset v0.12.0), a TrainJob's ``runtimePatches`` only while it is suspended (Kubeflow
Trainer v2.3.0), and any change to a LeaderWorkerSet's template rolls its groups out. So the pods
such a workload creates later (a retry, an eviction) still come with the gate: a gated pod whose
label names a TrainingTopology that is gone, or being deleted, is ungated when it appears
(:func:`on_pod_event`): nothing would ever pin it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from fabricfit.api.constants import TOPOLOGY_LABEL
from fabricfit.api.models import TrainingTopologySpec, WorkloadRef
from fabricfit.kube.pods import RACES, patch_pod
from fabricfit.kube.rest import ApiError
from fabricfit.kube.topologies import read_topology
from fabricfit.kube.workloads import UnsupportedWorkloadError, patch_workload, read_workload
from fabricfit.reconcile import computedomain, planning, service
from fabricfit.reconcile.applying import is_refusal
from fabricfit.reconcile.context import OperatorState, Views
from fabricfit.reconcile.inventory import TopologyKey
from fabricfit.render.pods import build_pin_patch, build_ungate_patch, is_gated, planned_node_of
from fabricfit.render.workload import PINNING_MODES, build_released_template
from fabricfit.workloads import (
    build_workload_patch,
    is_suspended,
    kind_named,
    pod_index,
    pod_templates,
)

# Conflicts a pod patch can meet when the pod changed underneath us; the next event sees it.


@dataclass(frozen=True)
class PodEventResult:
    """What a pod event did: pods pinned on the fast path, or the TrainingTopology it had to
    reconcile (its Events and metrics are the handler's to post)."""

    pinned: int = 0
    topology: Mapping[str, Any] | None = None
    outcome: service.Outcome | None = None


async def on_pod_event(
    pod: Mapping[str, Any], event_type: str | None, state: OperatorState, views_of: ViewsOf
) -> PodEventResult:
    """Pin a gated pod of a TrainingTopology (see the module doc); nothing for other pods."""
    if not (pod.get("spec") or {}).get("schedulingGates") or event_type == "DELETED":
        return PodEventResult()
    pinned = await pin_from_plan(pod, state, views_of)
    if pinned is not None:
        return PodEventResult(pinned=int(pinned))
    meta = pod.get("metadata") or {}
    owner = (meta.get("labels") or {}).get(TOPOLOGY_LABEL)
    if not owner:
        return PodEventResult()
    namespace = str(meta.get("namespace") or "")
    found = await read_topology(state.rest, namespace, owner)
    if found is None or (found.get("metadata") or {}).get("deletionTimestamp"):
        await _ungate(state, pod)  # its TrainingTopology is gone: nothing will pin it
        return PodEventResult()
    return await reconcile_found(state, views_of, found)


async def reconcile_by_name(
    state: OperatorState, views_of: ViewsOf, namespace: str, name: str
) -> PodEventResult:
    """Read a TrainingTopology that has a plan and reconcile it (nothing when it has none)."""
    found = await read_topology(state.rest, namespace, name)
    return PodEventResult() if found is None else await reconcile_found(state, views_of, found)


async def reconcile_found(
    state: OperatorState, views_of: ViewsOf, found: Mapping[str, Any]
) -> PodEventResult:
    """Reconcile a TrainingTopology as read, if it has a plan."""
    if not (found.get("status") or {}).get("pods"):
        return PodEventResult()
    outcome = await service.reconcile(found, state, views_of)
    return PodEventResult(topology=found, outcome=outcome)


ViewsOf = Callable[[], Views]


async def pin_from_plan(
    pod: Mapping[str, Any], state: OperatorState, views_of: ViewsOf
) -> bool | None:
    """Pin one gated pod straight from its TrainingTopology's recorded plan.

    True when the pod was pinned, False when it needs nothing; None when only a full
    reconcile can decide (see the module doc).
    """
    meta = pod.get("metadata") or {}
    key = (str(meta.get("namespace") or ""), str((meta.get("labels") or {}).get(TOPOLOGY_LABEL)))
    async with state.lock_for(key):
        holding = state.ledger.newest(key, views_of().topologies.get(key))
        if holding is None or not holding.current or holding.deleting:
            return None
        if holding.mode not in PINNING_MODES:
            return None
        if holding.plan.devices:
            return None  # device-exact: the pod's claim is allocated first (reconcile.devices)
        kind = kind_named(holding.kind)
        if kind is None or not kind.index_without_workload:
            return None
        planned = holding.plan.pods
        index = pod_index(holding.kind, pod, index_label=holding.index_label)
        if index is None or index >= len(planned):
            return None
        node = planned[index]
        if not planning.node_available(views_of(), node):
            return None
        if not is_gated(pod) or planned_node_of(pod) not in (None, node):
            return False
        try:
            await patch_pod(state.rest, key[0], str(meta.get("name")), build_pin_patch(pod, node))
        except ApiError as err:
            if err.status not in RACES:
                raise
            return False
        return True


async def release(body: Mapping[str, Any], state: OperatorState, views_of: ViewsOf) -> None:
    """On deletion: drop the reservation, delete our ComputeDomain and ungate pods still gated.
    The workload is kept."""
    key = service.key_of(body)
    async with state.lock_for(key):
        state.ledger.forget(key)
        state.infeasible.pop(key, None)
        state.refusals.pop(key, None)
        await computedomain.release(state.rest, *key)
        await _release_templates(state, key[0], body)
        for pod in await _pods_to_release(body, key, state, views_of):
            await _ungate(state, pod)
    state.object_locks.pop(key, None)


async def _ungate(state: OperatorState, pod: Mapping[str, Any]) -> None:
    """Remove fabricfit's gate from ``pod`` (guarded); a pod changed or gone is left alone."""
    if not is_gated(pod):
        return
    meta = pod.get("metadata") or {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name"))
    try:
        await patch_pod(state.rest, namespace, name, build_ungate_patch(pod))
    except ApiError as err:
        if err.status not in RACES:
            raise


async def _release_templates(state: OperatorState, namespace: str, body: Mapping[str, Any]) -> None:
    """Remove fabricfit's gate from the templates of a suspended workload (see the module doc).
    A running one is left as it is; a refusal is left too: its future pods are ungated as
    they appear."""
    spec = _spec_of(body)
    ref = spec.workload_ref if spec is not None else None
    if ref is None or service.selects_pods(ref.kind) or kind_named(ref.kind) is None:
        return
    workload = await _read_released(state, ref, namespace)
    if workload is None or is_suspended(ref.kind, workload) is not True:
        return
    templates = pod_templates(ref.kind, workload)
    new = [(path, build_released_template(template)) for path, template in templates]
    patch = build_workload_patch(ref.kind, workload, new)
    if not patch:
        return
    try:
        await patch_workload(state.rest, ref, namespace, patch)
    except ApiError as err:
        if err.status not in RACES and not is_refusal(err):
            raise


async def _read_released(
    state: OperatorState, ref: WorkloadRef, namespace: str
) -> dict[str, Any] | None:
    """The workload a deleted TrainingTopology pointed at; None when it is gone or the ref
    names a kind or API group fabricfit cannot address (it never gated such a workload, and
    the deletion must not wait on a spec that was wrong from the start)."""
    try:
        return await read_workload(state.rest, ref, namespace)
    except UnsupportedWorkloadError:
        return None


def _spec_of(body: Mapping[str, Any]) -> TrainingTopologySpec | None:
    try:
        return TrainingTopologySpec.model_validate(body.get("spec") or {})
    except ValidationError:
        return None


async def _pods_to_release(
    body: Mapping[str, Any], key: TopologyKey, state: OperatorState, views_of: ViewsOf
) -> list[Mapping[str, Any]]:
    """Pods carrying our label, plus, for plain-Pod workloads, the pods the selector matches
    (they may never have been labelled if no plan was made)."""
    pods = service.workload_pods(key, "", None, views_of())
    spec = _spec_of(body)
    ref = spec.workload_ref if spec is not None else None
    if ref is not None and service.selects_pods(ref.kind) and ref.pod_selector:
        group = await _read_released(state, ref, key[0])
        names = {(p.get("metadata") or {}).get("name") for p in pods}
        pods += [p for p in (group or {}).get("items") or [] if p["metadata"]["name"] not in names]
    return pods
