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

:func:`release` runs on deletion: it drops the reservation and lifts the gate of every pod still
gated (the workload itself is kept), so nothing stays stuck behind a plan that no longer exists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from fabricfit.api.constants import TOPOLOGY_LABEL
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.kube.pods import RACES, patch_pod
from fabricfit.kube.rest import ApiError
from fabricfit.kube.topologies import read_topology
from fabricfit.kube.workloads import read_workload
from fabricfit.reconcile import computedomain, planning, service
from fabricfit.reconcile.context import OperatorState, Views
from fabricfit.reconcile.inventory import TopologyKey
from fabricfit.render.pods import build_pin_patch, build_ungate_patch, is_gated, planned_node_of
from fabricfit.render.workload import PINNING_MODES
from fabricfit.workloads import kind_named, pod_index

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
    return await reconcile_by_name(state, views_of, str(meta.get("namespace") or ""), owner)


async def reconcile_by_name(
    state: OperatorState, views_of: ViewsOf, namespace: str, name: str
) -> PodEventResult:
    """Read a TrainingTopology that has a plan and reconcile it (nothing when it has none)."""
    found = await read_topology(state.rest, namespace, name)
    if found is None or not (found.get("status") or {}).get("pods"):
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
        if holding is None or not holding.current or holding.mode not in PINNING_MODES:
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
        for pod in await _pods_to_release(body, key, state, views_of):
            if not is_gated(pod):
                continue
            meta = pod.get("metadata") or {}
            try:
                await patch_pod(state.rest, key[0], str(meta.get("name")), build_ungate_patch(pod))
            except ApiError as err:
                if err.status not in RACES:
                    raise
    state.object_locks.pop(key, None)


async def _pods_to_release(
    body: Mapping[str, Any], key: TopologyKey, state: OperatorState, views_of: ViewsOf
) -> list[Mapping[str, Any]]:
    """Pods carrying our label, plus, for plain-Pod workloads, the pods the selector matches
    (they may never have been labelled if no plan was made)."""
    pods = service.workload_pods(key, "", None, views_of())
    try:
        spec = TrainingTopologySpec.model_validate(body.get("spec") or {})
    except ValidationError:
        return pods
    ref = spec.workload_ref
    if ref is not None and service.selects_pods(ref.kind) and ref.pod_selector:
        group = await read_workload(state.rest, ref, key[0])
        names = {(p.get("metadata") or {}).get("name") for p in pods}
        pods += [p for p in (group or {}).get("items") or [] if p["metadata"]["name"] not in names]
    return pods
