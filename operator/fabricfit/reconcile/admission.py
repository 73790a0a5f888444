"""The reconcile's side of ``placement.mode: admission-check``: plan only inside Kueue's quota.

Theory of operation
-------------------
The TrainingTopology's reconcile stays the one place that plans, reserves and pins. In
admission-check mode it asks two things of this module (the decisions themselves are the pure
:mod:`fabricfit.policy.kueuecheck` and :mod:`fabricfit.policy.kueuejob`):

* :func:`admit`, before planning: every Kueue Workload of the job (one, or one per
  LeaderWorkerSet group, from the Kueue indexes) must have quota reserved and fabricfit's
  check ``Pending`` or ``Ready``. Then the target comes back with the rank template as Kueue
  will start it on the assigned ResourceFlavors, so the plan uses only their nodes, and says
  whether every check is ``Ready`` (only then are pods pinned: a pod pinned before Kueue
  admits it could not be moved if Kueue evicted it first). In any other stage it returns None
  and holds nothing: a plan made before (Kueue evicted or preempted a Workload, or released
  its quota) is dropped from status at once, so its GPUs are free for the next plan, and a
  requeued job is planned afresh (the "did not fit" memo is forgotten too: a new admission is
  a new question).
* :func:`answer`, after the reconcile: from the ``Planned`` condition the reconcile left, set
  every Pending check ``Ready`` (with podSetUpdates; only once the workload's templates carry
  the gate), ``Retry`` (with the planner's words and ``requeueAfterSeconds``) or ``Rejected``;
  a group that holds quota while Kueue cannot fit its siblings gets ``Retry`` after a resync
  period (:func:`fabricfit.policy.kueuejob.stalled`). The patches are guarded, so a
  Workload Kueue changed meanwhile is answered at its next event.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from fabricfit import policy
from fabricfit.api.conditions import ConditionType, Reason
from fabricfit.api.constants import SCHEDULING_GATE
from fabricfit.api.status import find_condition, rfc3339
from fabricfit.kube.kueue import patch_check_state
from fabricfit.policy.kueuecheck import (
    PENDING,
    READY,
    RETRY,
    Stage,
    admitted_template,
    build_check_patch,
    build_podset_updates,
    decide_check,
    missing_flavors,
    read_kueue_workload,
    stage_of,
    templates_gated,
)
from fabricfit.policy.kueuejob import (
    JobWorkloads,
    collect,
    job_stage,
    job_waiting_message,
    stalled,
)
from fabricfit.reconcile.context import KueueViews, Run, Target
from fabricfit.workloads import pod_spec_frozen, pod_templates

ADMISSION_MODE = "admission-check"
_REASONS = {r.value: r for r in Reason}
#: While Kueue requeues, these say more than "awaiting admission" (and a Retry cycle would
#: otherwise flip the condition, and post two Events, on every requeue).
_KEPT_WHILE_WAITING = (
    Reason.ADMISSION_RELEASED,
    Reason.INSUFFICIENT_GPUS,
    Reason.WAITING_FOR_BETTER_PLACEMENT,
)


@dataclass(frozen=True)
class Admitted:
    """The target to plan (its template as Kueue starts it) and whether every one of the
    job's checks is Ready (pods may be pinned)."""

    target: Target
    ready: bool


def wants_admission(body: Mapping[str, Any]) -> bool:
    """Whether a TrainingTopology (as written, even if invalid) asks for admission-check mode."""
    placement = (body.get("spec") or {}).get("placement") or {}
    return isinstance(placement, Mapping) and placement.get("mode") == ADMISSION_MODE


def find_job(
    kueue: KueueViews, namespace: str, kind: str, name: str, expected: int = 1
) -> JobWorkloads | None:
    """The Kueue Workloads made for the job ``kind`` ``namespace/name``, if Kueue made any."""
    bodies = kueue.workloads.get((namespace, kind, name)) or ()
    if not bodies:
        return None
    parts = [read_kueue_workload(b, kueue.checks) for b in bodies]
    return collect(kind, namespace, name, parts, expected)


def admit(run: Run, target: Target, expected: int) -> Admitted | None:
    """The target to plan; None when fabricfit must not hold a plan now (the draft says why;
    see the module doc). ``expected``: how many Workloads Kueue makes for the job."""
    ref = target.ref
    kueue = run.views_of().kueue
    job = find_job(kueue, run.namespace, ref.kind, ref.name, expected)
    if job is None:
        hold_nothing(
            run,
            f"waiting for Kueue to make a Workload for {ref.kind} {run.namespace}/{ref.name} "
            "(the job needs the kueue.x-k8s.io/queue-name label of a LocalQueue)",
        )
        return None
    stage = job_stage(job)
    if stage in (Stage.FINISHED, Stage.DECIDED):
        return None  # Kueue's turn (or nothing left to do): keep what status says
    if stage not in (Stage.PLAN, Stage.READY):
        hold_nothing(run, job_waiting_message(job))
        return None
    missing = missing_flavors(job.flavors, kueue.flavors)
    if missing:
        hold_nothing(run, f"ResourceFlavor {', '.join(missing)} not seen yet")
        return None
    ungateable = _ungateable(target, run.namespace)
    if ungateable:
        run.draft.condition(Reason.UNSUPPORTED_WORKLOAD, ungateable)
        run.draft.set(reasons=[ungateable])
        return None
    flavors = [kueue.flavors[name] for name in job.flavors]
    template = admitted_template(target.template, flavors)
    request, problem = policy.build_request(target.spec, template)
    if request is None:
        hold_nothing(run, f"the template as Kueue starts it: {problem}")
        return None
    admitted = replace(target, template=template, request=request)
    return Admitted(admitted, stage is Stage.READY)


def _ungateable(target: Target, namespace: str) -> str | None:
    """Why fabricfit cannot hold the job's pods: a kind whose queued pod spec Kueue freezes
    (LeaderWorkerSet) must be created with the gate; None when it was, or can be patched."""
    ref, workload = target.ref, target.workload
    if workload is None or not pod_spec_frozen(ref.kind, workload):
        return None
    if templates_gated([t for _, t in pod_templates(ref.kind, workload)]):
        return None
    return (
        f"{ref.kind} {namespace}/{ref.name} must be created with the scheduling "
        f"gate {SCHEDULING_GATE} in every pod template for admission-check mode: Kueue forbids "
        "changing a queued workload's pod spec, so fabricfit cannot add it"
    )


def hold_nothing(run: Run, message: str) -> None:
    """Drop any plan and reservation this TrainingTopology holds, and say why."""
    run.state.infeasible.pop(run.key, None)
    draft = run.draft
    if run.record.pods or run.record.reservation:
        draft.set(pods=[], reservation=[])
        draft.condition(Reason.ADMISSION_RELEASED, f"{message}; reservation released")
    elif _planned_reason(run) not in _KEPT_WHILE_WAITING:
        draft.condition(Reason.AWAITING_ADMISSION, message)
    draft.condition(Reason.NOT_ADMITTED, message)


def _planned_reason(run: Run) -> Reason | None:
    planned = find_condition(run.draft.conditions, ConditionType.PLANNED)
    return None if planned is None else _REASONS.get(planned.reason)


async def answer(
    run: Run, body: Mapping[str, Any], *, gated: bool, expected: int | None = None
) -> bool:
    """Set fabricfit's checks on the job's Workloads from the Planned condition (Ready, Retry
    or Rejected), or give back a stalled group's quota; True when a state was written.
    ``expected``: how many Workloads Kueue makes for the job (None: those it has made)."""
    ref = (body.get("spec") or {}).get("workloadRef") or {}
    if not isinstance(ref, Mapping):
        return False
    kueue = run.views_of().kueue
    job = find_job(kueue, run.namespace, str(ref.get("kind")), str(ref.get("name")), expected or 1)
    if job is None:
        return False
    if expected is None:
        job = replace(job, expected=len(job.components))
    now = datetime.now(UTC)
    decided = _decide(run, job, now, gated=gated)
    if decided is None:
        return False
    state, message = decided
    retry_after = math.ceil(run.state.config.resync_seconds)
    written = False
    for workload in (c for c in job.components if stage_of(c) is Stage.PLAN):
        ops = build_check_patch(
            workload,
            state,
            message,
            now=rfc3339(now),
            podset_updates=build_podset_updates(workload, run.name) if state == READY else (),
            requeue_after_seconds=retry_after if state == RETRY else None,
        )
        if ops is not None:
            sent = await patch_check_state(run.state.rest, workload.namespace, workload.name, ops)
            written = sent or written
    return written


def _decide(run: Run, job: JobWorkloads, now: datetime, *, gated: bool) -> tuple[str, str] | None:
    """The state and message for the job's Pending checks, or None when nothing is to say."""
    stage = job_stage(job)
    if stage is Stage.WAITING:  # some groups hold quota, others wait for it
        reason = stalled(job, now=now, patience_seconds=run.state.config.resync_seconds)
        return (RETRY, reason) if reason else (PENDING, job_waiting_message(job))
    if stage is not Stage.PLAN:
        return None
    planned = find_condition(run.draft.conditions, ConditionType.PLANNED)
    verdict = decide_check(_planned_reason(run), planned.message if planned else "", gated=gated)
    return None if verdict is None else (verdict.state, verdict.message)
