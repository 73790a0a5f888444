"""Kueue's events into the service: a Workload changed, an AdmissionCheck appeared.

Theory of operation
-------------------
A Workload event (quota reserved, a check reset to Pending, Evicted, admitted) reconciles the
TrainingTopology in admission-check mode whose workloadRef names the Workload's owner, at once:
that reconcile plans, releases or answers the check (:mod:`~fabricfit.reconcile.admission`).
A Workload with fabricfit's check Pending but no such TrainingTopology keeps its check Pending,
with a message saying so (fabricfit never admits a job it was not asked to place). An
AdmissionCheck naming fabricfit's controller is marked ``Active=True``: Kueue keeps a
ClusterQueue inactive while one of its checks is not.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from fabricfit.api.constants import (
    KUEUE_COMPONENT_INDEX_ANNOTATION,
    KUEUE_JOB_OWNER_GVK_ANNOTATION,
    KUEUE_JOB_OWNER_NAME_ANNOTATION,
)
from fabricfit.api.status import rfc3339
from fabricfit.kube.kueue import patch_admission_check_status, patch_check_state
from fabricfit.kube.rest import ApiError
from fabricfit.kube.topologies import read_topology
from fabricfit.policy.kueuecheck import (
    PENDING,
    Stage,
    build_active_patch,
    build_check_patch,
    owner_of,
    read_kueue_workload,
    stage_of,
)
from fabricfit.reconcile import service
from fabricfit.reconcile.admission import ADMISSION_MODE
from fabricfit.reconcile.context import OperatorState, Views
from fabricfit.reconcile.inventory import Holding, TopologyKey
from fabricfit.reconcile.podevents import PodEventResult, ViewsOf

#: The Workload annotations fabricfit reads (the owner of a job's component, and its index).
_KUEUE_OWNER_KEYS = frozenset(
    {
        KUEUE_COMPONENT_INDEX_ANNOTATION,
        KUEUE_JOB_OWNER_GVK_ANNOTATION,
        KUEUE_JOB_OWNER_NAME_ANNOTATION,
    }
)


def workload_entry(body: Mapping[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]] | None:
    """The Kueue-workload index entry: (namespace, owner kind, owner name) -> the parts
    fabricfit reads (None for a Workload whose job Kueue does not name). A job Kueue admits
    in parts has one entry per part under the same key."""
    owner = owner_of(body)
    if owner is None:
        return None
    meta = body.get("metadata") or {}
    slim = {
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "resourceVersion": meta.get("resourceVersion"),
            "ownerReferences": list(meta.get("ownerReferences") or []),
            "annotations": {
                k: v for k, v in (meta.get("annotations") or {}).items() if k in _KUEUE_OWNER_KEYS
            },
        },
        "spec": {"podSets": [{"name": p.get("name")} for p in (body.get("spec") or {}).get(
            "podSets") or [] if isinstance(p, Mapping)],
                 # the run time the job declares (queuePolicy wait-if-faster, policy.waiting)
                 "maximumExecutionTimeSeconds": (body.get("spec") or {}).get(
                     "maximumExecutionTimeSeconds")},
        "status": dict(body.get("status") or {}),
    }  # fmt: skip
    return {(str(meta.get("namespace") or ""), owner[0], owner[1]): slim}


def topology_for(
    topologies: Mapping[TopologyKey, Holding], namespace: str, kind: str, name: str
) -> TopologyKey | None:
    """The admission-check TrainingTopology of ``namespace`` whose workloadRef is kind/name."""
    for key, holding in topologies.items():
        if (key[0], holding.mode, holding.kind, holding.workload) == (
            namespace, ADMISSION_MODE, kind, name,
        ):  # fmt: skip
            return key
    return None


async def on_workload_event(
    body: Mapping[str, Any], state: OperatorState, views_of: ViewsOf
) -> PodEventResult:
    """Reconcile the TrainingTopology of the Workload's job (see the module doc)."""
    owner = owner_of(body)
    if owner is None:
        return PodEventResult()
    views: Views = views_of()
    namespace = str((body.get("metadata") or {}).get("namespace") or "")
    key = topology_for(views.topologies, namespace, *owner)
    if key is None:
        await _note_unplanned(body, state, views, owner)
        return PodEventResult()
    found = await read_topology(state.rest, *key)
    if found is None:
        return PodEventResult()
    try:
        outcome = await service.reconcile(found, state, views_of)
    except ApiError as err:
        if err.status != 404:
            raise
        return PodEventResult()  # deleted meanwhile (its namespace too, often): nothing to do
    return PodEventResult(topology=found, outcome=outcome)


async def _note_unplanned(
    body: Mapping[str, Any], state: OperatorState, views: Views, owner: tuple[str, str]
) -> None:
    workload = read_kueue_workload(body, views.kueue.checks)
    if stage_of(workload) is not Stage.PLAN:
        return
    message = (
        f"no TrainingTopology in placement.mode {ADMISSION_MODE} names {owner[0]} "
        f"{workload.namespace}/{owner[1]}: fabricfit waits for one"
    )
    ops = build_check_patch(workload, PENDING, message, now=rfc3339(datetime.now(UTC)))
    if ops is not None:
        await patch_check_state(state.rest, workload.namespace, workload.name, ops)


async def activate(body: Mapping[str, Any], state: OperatorState) -> bool:
    """Mark one of fabricfit's AdmissionChecks Active; True when it was written."""
    patch = build_active_patch(body, now=rfc3339(datetime.now(UTC)))
    if patch is None:
        return False
    name = str((body.get("metadata") or {}).get("name") or "")
    return await patch_admission_check_status(state.rest, name, patch)
