"""The reconcile's side of ``placement.mode: admission-check``: plan only inside Kueue's quota.

Theory of operation
-------------------
The TrainingTopology's reconcile stays the one place that plans, reserves and pins. In
admission-check mode it asks two things of this module (the decisions themselves are the pure
:mod:`fabricfit.render.admissioncheck`):

* :func:`admit`, before planning: the job's Kueue Workload (from the Kueue indexes) must have
  quota reserved and fabricfit's check ``Pending`` or ``Ready``. Then the target comes back
  with the rank template as Kueue will start it on the assigned ResourceFlavors, so the plan
  uses only their nodes. In any other stage it returns None and holds nothing: a plan made
  before (Kueue evicted or preempted the Workload, or released its quota) is dropped from
  status at once, so its GPUs are free for the next plan, and a requeued Workload is planned
  afresh (the "did not fit" memo is forgotten too: a new admission is a new question).
* :func:`answer`, after the reconcile: from the ``Planned`` condition the reconcile left, set
  the check ``Ready`` (with podSetUpdates; only once the workload's templates carry the gate),
  ``Retry`` (with the planner's words and ``requeueAfterSeconds``) or ``Rejected``. Only a
  Workload whose check is ``Pending`` with quota reserved is answered; the patch is guarded, so
  a Workload Kueue changed meanwhile is answered at its next event.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from fabricfit.api.conditions import ConditionType, Reason
from fabricfit.api.status import find_condition, rfc3339
from fabricfit.kube.kueue import patch_check_state
from fabricfit.reconcile.context import KueueViews, Run, Target
from fabricfit.render.admissioncheck import (
    READY,
    RETRY,
    KueueWorkload,
    Stage,
    admitted_template,
    build_check_patch,
    build_podset_updates,
    decide_check,
    missing_flavors,
    read_kueue_workload,
    stage_of,
    waiting_message,
)

ADMISSION_MODE = "admission-check"
_REASONS = {r.value: r for r in Reason}
#: While Kueue requeues, these say more than "awaiting admission" (and a Retry cycle would
#: otherwise flip the condition, and post two Events, on every requeue).
_KEPT_WHILE_WAITING = (Reason.ADMISSION_RELEASED, Reason.INSUFFICIENT_GPUS)


def wants_admission(body: Mapping[str, Any]) -> bool:
    """Whether a TrainingTopology (as written, even if invalid) asks for admission-check mode."""
    placement = (body.get("spec") or {}).get("placement") or {}
    return isinstance(placement, Mapping) and placement.get("mode") == ADMISSION_MODE


def find_workload(kueue: KueueViews, namespace: str, kind: str, name: str) -> KueueWorkload | None:
    """The Kueue Workload made for the job ``kind`` ``namespace/name``, if Kueue made one."""
    body = kueue.workloads.get((namespace, kind, name))
    return None if body is None else read_kueue_workload(body, kueue.checks)


def admit(run: Run, target: Target) -> Target | None:
    """The target to plan, with the template Kueue will start on the assigned flavors; None
    when fabricfit must not hold a plan now (the draft says why; see the module doc)."""
    ref = target.ref
    kueue = run.views_of().kueue
    found = find_workload(kueue, run.namespace, ref.kind, ref.name)
    if found is None:
        hold_nothing(
            run,
            f"waiting for Kueue to make a Workload for {ref.kind} {run.namespace}/{ref.name} "
            "(the job needs the kueue.x-k8s.io/queue-name label of a LocalQueue)",
        )
        return None
    stage = stage_of(found)
    if stage in (Stage.FINISHED, Stage.DECIDED):
        return None  # Kueue's turn (or nothing left to do): keep what status says
    if stage not in (Stage.PLAN, Stage.READY):
        hold_nothing(run, waiting_message(found))
        return None
    missing = missing_flavors(found, kueue.flavors)
    if missing:
        hold_nothing(run, f"ResourceFlavor {', '.join(missing)} not seen yet")
        return None
    flavors = [kueue.flavors[name] for name in found.flavors]
    return replace(target, template=admitted_template(target.template, flavors))


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


async def answer(run: Run, body: Mapping[str, Any], *, gated: bool) -> bool:
    """Set fabricfit's check on the job's Workload from the Planned condition (Ready, Retry or
    Rejected); True when a state was written."""
    ref = (body.get("spec") or {}).get("workloadRef") or {}
    if not isinstance(ref, Mapping):
        return False
    kueue = run.views_of().kueue
    found = find_workload(kueue, run.namespace, str(ref.get("kind")), str(ref.get("name")))
    if found is None or stage_of(found) is not Stage.PLAN:
        return False
    planned = find_condition(run.draft.conditions, ConditionType.PLANNED)
    verdict = decide_check(_planned_reason(run), planned.message if planned else "", gated=gated)
    if verdict is None:
        return False
    retry_after = math.ceil(run.state.config.resync_seconds)
    ops = build_check_patch(
        found,
        verdict.state,
        verdict.message,
        now=rfc3339(datetime.now(UTC)),
        podset_updates=build_podset_updates(found, run.name) if verdict.state == READY else (),
        requeue_after_seconds=retry_after if verdict.state == RETRY else None,
    )
    if ops is None:
        return False
    return await patch_check_state(run.state.rest, found.namespace, found.name, ops)
