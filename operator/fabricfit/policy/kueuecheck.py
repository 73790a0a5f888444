"""fabricfit as a Kueue AdmissionCheck controller: reading a Workload, deciding, patching (pure).

Theory of operation
-------------------
In ``placement.mode: admission-check`` Kueue owns the queue: priorities, fair sharing, quota and
preemption. A ClusterQueue lists an AdmissionCheck whose ``spec.controllerName`` is
``fabricfit.dev/placement``; Kueue reserves quota for a Workload, puts the check's state in
``status.admissionChecks`` as ``Pending`` and waits for the controller. fabricfit then plans
the job on the nodes of the ResourceFlavor(s) Kueue assigned and answers:

* ``Ready``: the plan is reserved and the job's (still suspended) pod template carries
  fabricfit's scheduling gate. Kueue admits the Workload, applies the check's ``podSetUpdates``
  and the flavors' node labels and tolerations to the template, and unsuspends the job; its pods
  are created gated and fabricfit pins each to its planned node as in ``pinned`` mode. A
  PodSetUpdate carries labels, annotations, nodeSelector and tolerations but no scheduling gates,
  so the gate goes onto the job's template itself: Kueue's job/Workload equivalence compares pod
  counts, containers, init containers and (before admission) tolerations only, so adding a gate,
  labels or pod affinity to a suspended job does not make Kueue rebuild its Workload.
* ``Retry``: the job does not fit on the assigned flavors' nodes now. Kueue releases the quota
  and requeues the Workload (after ``requeueAfterSeconds``); the message says what is missing.
* ``Rejected``: the TrainingTopology cannot be planned as written (invalid spec or fabric);
  Kueue deactivates the Workload.

fabricfit holds a reservation only while Kueue holds quota: a Workload without quota, or one
Kueue evicted (preemption, a Retry of another check, deactivation), has its plan released at
once, and a requeued Workload is planned afresh. Which stage a Workload is in is
:func:`stage_of`; which nodes the plan may use is the pod template as Kueue will start it
(:func:`admitted_template`); the status write is a JSON Patch that replaces only fabricfit's
entry, guarded by ``test`` operations on its name and observed state, so a concurrent change
by Kueue fails the patch instead of being overwritten.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from fabricfit.api.conditions import Reason
from fabricfit.api.constants import (
    ADMISSION_CHECK_CONTROLLER,
    KUEUE_COMPONENT_INDEX_ANNOTATION,
    KUEUE_JOB_OWNER_GVK_ANNOTATION,
    KUEUE_JOB_OWNER_NAME_ANNOTATION,
    SCHEDULING_GATE,
    TOPOLOGY_LABEL,
)
from fabricfit.render.workload import thaw

PENDING: Final = "Pending"
READY: Final = "Ready"
RETRY: Final = "Retry"
REJECTED: Final = "Rejected"
#: Kueue's limit on an AdmissionCheckState message.
MESSAGE_MAX_CHARS: Final = 32768
#: Reason of the AdmissionCheck condition ``Active=True`` fabricfit sets on its checks.
ACTIVE_REASON: Final = "ControllerReady"


class Stage(Enum):
    """Where a Workload stands for fabricfit (see :func:`stage_of`)."""

    NO_CHECK = "no-check"  # its ClusterQueue lists no fabricfit check: nothing to gate
    WAITING = "waiting"  # no quota reserved (or evicted): fabricfit holds nothing
    PLAN = "plan"  # quota reserved, fabricfit's check Pending: plan on the flavors' nodes
    READY = "ready"  # fabricfit's check Ready: keep the plan, pin the pods
    DECIDED = "decided"  # Retry or Rejected set: Kueue evicts or deactivates it next
    FINISHED = "finished"  # the job finished: nothing to decide


@dataclass(frozen=True)
class KueueWorkload:
    """What fabricfit reads of a Kueue Workload (``kueue.x-k8s.io/v1beta2``)."""

    namespace: str
    name: str
    owner_kind: str = ""
    owner_name: str = ""
    check: str = ""  # the name of fabricfit's check ("" when the Workload has none)
    check_index: int = -1  # its position in status.admissionChecks
    check_state: str = ""
    check_message: str = ""
    check_since: str = ""  # its lastTransitionTime
    check_retries: int | None = None  # its retryCount (Kueue counts the Retry transitions)
    quota_reserved: bool = False
    evicted: str | None = None  # "reason: message" of Evicted=True
    finished: bool = False
    cluster_queue: str = ""
    podsets: tuple[str, ...] = ()
    flavors: tuple[str, ...] = ()  # assigned ResourceFlavors, distinct, in assignment order
    component: int = 0  # which of the job's Workloads (a LeaderWorkerSet's group index)
    # "reason: message" of QuotaReserved=False: Kueue tried and could not reserve quota
    quota_refused: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def is_ours(admission_check: Mapping[str, Any]) -> bool:
    """Whether an AdmissionCheck names fabricfit as its controller."""
    spec = admission_check.get("spec") or {}
    return spec.get("controllerName") == ADMISSION_CHECK_CONTROLLER


def owner_of(workload: Mapping[str, Any]) -> tuple[str, str] | None:
    """(kind, name) of the job Kueue made the Workload for: its controlling owner, or, for a
    Workload of one component of a job (Kueue makes one per LeaderWorkerSet group and owns it
    by a plain reference), the owner Kueue names in its annotations."""
    meta = workload.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("kind"):
            return str(ref["kind"]), str(ref.get("name") or "")
    annotations = meta.get("annotations") or {}
    gvk = annotations.get(KUEUE_JOB_OWNER_GVK_ANNOTATION)
    name = annotations.get(KUEUE_JOB_OWNER_NAME_ANNOTATION)
    # Kueue writes Go's GroupVersionKind.String(): "group/version, Kind=Kind".
    kind = gvk.rpartition("Kind=")[2].strip() if isinstance(gvk, str) and "Kind=" in gvk else ""
    if kind and isinstance(name, str) and name:
        return kind, name
    return None


def component_of(workload: Mapping[str, Any]) -> int:
    """Which of its job's Workloads this is (Kueue's component index; 0 when it has none)."""
    annotations = (workload.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(KUEUE_COMPONENT_INDEX_ANNOTATION)
    return int(value) if isinstance(value, str) and value.isdecimal() and len(value) < 10 else 0


def _condition(status: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for c in status.get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == type_:
            return c
    return None


def _is_true(status: Mapping[str, Any], type_: str) -> bool:
    found = _condition(status, type_)
    return found is not None and found.get("status") == "True"


def read_kueue_workload(body: Mapping[str, Any], checks: Collection[str]) -> KueueWorkload:
    """The parts of a Workload fabricfit decides on; ``checks`` are the names of the
    AdmissionChecks fabricfit controls (the first of them the Workload lists counts)."""
    meta = body.get("metadata") or {}
    spec = body.get("spec") or {}
    status = body.get("status") or {}
    owner = owner_of(body) or ("", "")
    index, entry = next(
        (
            (i, e)
            for i, e in enumerate(status.get("admissionChecks") or [])
            if isinstance(e, Mapping) and e.get("name") in checks
        ),
        (-1, {}),
    )
    retries = entry.get("retryCount")
    evicted = _condition(status, "Evicted")
    reserved = _condition(status, "QuotaReserved")
    admission = status.get("admission") or {}
    flavors: list[str] = []
    for assignment in admission.get("podSetAssignments") or []:
        for name in ((assignment or {}).get("flavors") or {}).values():
            if isinstance(name, str) and name not in flavors:
                flavors.append(name)
    return KueueWorkload(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        owner_kind=owner[0],
        owner_name=owner[1],
        check=str(entry.get("name") or ""),
        check_index=index,
        check_state=str(entry.get("state") or ""),
        check_message=str(entry.get("message") or ""),
        check_since=str(entry.get("lastTransitionTime") or ""),
        check_retries=retries if isinstance(retries, int) else None,
        quota_reserved=_is_true(status, "QuotaReserved") and bool(admission),
        evicted=(
            f"{evicted.get('reason') or 'Evicted'}: {evicted.get('message') or ''}".rstrip(": ")
            if evicted is not None and evicted.get("status") == "True"
            else None
        ),
        finished=_is_true(status, "Finished"),
        cluster_queue=str(admission.get("clusterQueue") or ""),
        podsets=tuple(
            str(p.get("name")) for p in spec.get("podSets") or [] if isinstance(p, Mapping)
        ),
        flavors=tuple(flavors),
        component=component_of(body),
        quota_refused=(
            f"{reserved.get('reason') or 'Pending'}: {reserved.get('message') or ''}".rstrip(": ")
            if reserved is not None and reserved.get("status") == "False"
            else None
        ),
    )


def stage_of(workload: KueueWorkload) -> Stage:
    """Where ``workload`` stands: fabricfit plans only with quota reserved and its check
    Pending, and holds nothing once the quota is gone or Kueue is evicting it."""
    if workload.finished:
        return Stage.FINISHED
    if not workload.check:
        return Stage.NO_CHECK
    if workload.evicted is not None or not workload.quota_reserved:
        return Stage.WAITING
    if workload.check_state == READY:
        return Stage.READY
    if workload.check_state in (RETRY, REJECTED):
        return Stage.DECIDED
    return Stage.PLAN


def waiting_message(workload: KueueWorkload) -> str:
    """Why fabricfit holds no plan for ``workload`` (a WAITING or NO_CHECK stage)."""
    if not workload.check:
        return (
            f"Workload {workload.key} has no AdmissionCheck with controllerName "
            f"{ADMISSION_CHECK_CONTROLLER}: its ClusterQueue must list one"
        )
    if workload.evicted is not None:
        return f"Kueue evicted Workload {workload.key} ({workload.evicted})"
    return f"waiting for Kueue to reserve quota for Workload {workload.key}"


def admitted_template(
    template: Mapping[str, Any] | None,
    flavors: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """The pod template as Kueue starts it on ``flavors`` (ResourceFlavor objects): the
    flavors' ``nodeLabels`` merged into the node selector and their ``tolerations`` added, so
    a plan made against it uses only nodes of the assigned flavors that the pods tolerate."""
    new: dict[str, Any] = thaw(template or {})
    spec = new.setdefault("spec", {})
    selector = dict(spec.get("nodeSelector") or {})
    tolerations = list(spec.get("tolerations") or [])
    for flavor in flavors:
        flavor_spec = flavor.get("spec") or {}
        selector.update({str(k): str(v) for k, v in (flavor_spec.get("nodeLabels") or {}).items()})
        tolerations += [
            thaw(t) for t in flavor_spec.get("tolerations") or [] if t not in tolerations
        ]
    if selector:
        spec["nodeSelector"] = selector
    if tolerations:
        spec["tolerations"] = tolerations
    return new


def missing_flavors(assigned: Sequence[str], known: Collection[str]) -> list[str]:
    """Assigned flavors fabricfit has not seen (it cannot tell their nodes)."""
    return [name for name in assigned if name not in known]


def build_podset_updates(workload: KueueWorkload, topology_name: str) -> list[dict[str, Any]]:
    """The ``podSetUpdates`` of a Ready check: fabricfit's topology label on every PodSet (the
    template already carries it and the gate; Kueue refuses an update that conflicts)."""
    return [{"name": name, "labels": {TOPOLOGY_LABEL: topology_name}} for name in workload.podsets]


def build_check_patch(
    workload: KueueWorkload,
    state: str,
    message: str,
    *,
    now: str,
    podset_updates: Sequence[Mapping[str, Any]] = (),
    requeue_after_seconds: int | None = None,
) -> list[dict[str, Any]] | None:
    """The JSON Patch setting fabricfit's check to ``state`` (None when it already shows it).

    It replaces only fabricfit's entry of ``status.admissionChecks``, after ``test``
    operations on that entry's name and observed state; the entry keeps Kueue's
    ``retryCount`` and, when the state stays, its transition time."""
    if workload.check_index < 0:
        return None
    message = message[:MESSAGE_MAX_CHARS]
    if workload.check_state == state and workload.check_message == message:
        return None
    entry: dict[str, Any] = {
        "name": workload.check,
        "state": state,
        "message": message,
        "lastTransitionTime": now,
    }
    if workload.check_state == state and workload.check_since:
        entry["lastTransitionTime"] = workload.check_since
    if workload.check_retries is not None:
        entry["retryCount"] = workload.check_retries
    if podset_updates:
        entry["podSetUpdates"] = [thaw(u) for u in podset_updates]
    if requeue_after_seconds is not None:
        entry["requeueAfterSeconds"] = max(0, int(requeue_after_seconds))
    path = f"/status/admissionChecks/{workload.check_index}"
    return [
        {"op": "test", "path": f"{path}/name", "value": workload.check},
        {"op": "test", "path": f"{path}/state", "value": workload.check_state},
        {"op": "replace", "path": path, "value": entry},
    ]


@dataclass(frozen=True)
class Verdict:
    """The check state fabricfit sets and its message."""

    state: str
    message: str


def decide_check(planned: Reason | None, message: str, *, gated: bool) -> Verdict | None:
    """What fabricfit's check says after planning, from the ``Planned`` condition's reason and
    message: Ready once the plan is reserved *and* the job's templates carry the gate (else
    the pods could start ungated: wait), Rejected for a spec that cannot be planned as
    written, Retry for a job that does not fit now or waits for a better placement
    (``queuePolicy: wait-if-faster``); None when there is nothing to say yet."""
    if planned is Reason.PLANNED:
        return Verdict(READY, f"placed by fabricfit: {message}") if gated else None
    if planned is not None and planned.invalid:
        return Verdict(REJECTED, f"fabricfit cannot plan this job: {message}")
    if planned is Reason.INSUFFICIENT_GPUS:
        return Verdict(RETRY, f"does not fit on the assigned flavors' nodes now: {message}")
    if planned is Reason.WAITING_FOR_BETTER_PLACEMENT:
        return Verdict(RETRY, f"fabricfit holds this job for a better placement: {message}")
    return None


def templates_gated(templates: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every pod template carries fabricfit's scheduling gate."""
    return bool(templates) and all(
        any(
            isinstance(g, Mapping) and g.get("name") == SCHEDULING_GATE
            for g in ((t.get("spec") or {}).get("schedulingGates") or [])
        )
        for t in templates
    )


def build_active_patch(admission_check: Mapping[str, Any], *, now: str) -> dict[str, Any] | None:
    """The status merge patch marking one of fabricfit's AdmissionChecks ``Active=True``
    (Kueue treats a ClusterQueue whose check is not Active as inactive); None when it is,
    or when the check is not fabricfit's. Other conditions are kept as they are."""
    if not is_ours(admission_check):
        return None
    meta = admission_check.get("metadata") or {}
    status = admission_check.get("status") or {}
    active = _condition(status, "Active")
    if active is not None and active.get("status") == "True":
        return None
    condition = {
        "type": "Active",
        "status": "True",
        "reason": ACTIVE_REASON,
        "message": "fabricfit plans the Workloads of ClusterQueues using this check",
        "lastTransitionTime": now,
        "observedGeneration": int(meta.get("generation") or 0),
    }
    others = [
        thaw(c)
        for c in status.get("conditions") or []
        if isinstance(c, Mapping) and c.get("type") != "Active"
    ]
    return {
        "metadata": {"resourceVersion": meta.get("resourceVersion")},
        "status": {"conditions": [*others, condition]},
    }
