"""One idempotent reconcile of a TrainingTopology.

Theory of operation
-------------------
``reconcile`` is level-based: whatever event woke it (create, update, resume, timer, a pod of
the workload appearing), it reads the spec, the workload and kopf's indexes and drives the
cluster one step closer to the plan:

1. parse and validate the spec (invalid → ``Planned=False``, reason ``InvalidSpec``);
2. find the workload (absent → ``Placed=False``, reason ``WorkloadNotFound``; the plan is still
   made and reserved, so a workload created later finds its GPUs held; finished — a Job
   ``Complete`` or ``Failed`` — → ``Placed=False``, reason ``WorkloadFinished``: the plan and
   reservation are dropped, so its GPUs and its share of the links are free again);
3. plan, unless a plan for this generation exists or pods are already pinned (a running job is
   never moved); the reservation is written to status before anything else happens;
4. create the plan's ComputeDomain when its groups span trays of one NVLink domain (GB200
   NVL72), before the workload is released (:mod:`~fabricfit.reconcile.computedomain`);
5. apply the plan to the workload for the placement mode, pin gated pods, and re-place pods
   whose planned node became unusable (recreated pods with a reused index) or is in maintenance
   (cordoned or tainted ``fabricfit.dev/maintenance``: drained from the plan at once, spares of
   the same NVLink domain first, so the pods the drain recreates are pinned there), and re-place
   pinned pods kube-scheduler calls Unschedulable because something else took their node's GPUs
   (deleted while unbound, so their controller recreates them gated for the new node);
6. derive ``Placed`` (every pod bound to its planned node) and ``Degraded`` (a planned node is
   NotReady, cordoned or gone) and write status when anything changed.

In ``admission-check`` mode, step 3 waits for Kueue: only a Workload with quota reserved is
planned, on its ResourceFlavors' nodes, and the plan is released when Kueue evicts it; after
the reconcile, fabricfit's AdmissionCheck on the Workload is answered from the ``Planned``
condition (:mod:`~fabricfit.reconcile.admission`).

Steps 3 and 5 are split into a pure *decide* (:func:`decide_plan`: keep, re-check or re-plan;
:func:`decide_intent`: what the workload's templates must say) and an *apply* (planning under
the lock, :mod:`~fabricfit.reconcile.applying`). Every step reads one frozen
:class:`~fabricfit.reconcile.context.Run` (and, once the workload is read, a
:class:`~fabricfit.reconcile.context.Target`) instead of long parameter lists.

Each changed condition is returned as a ``Transition``; the handler posts it as an Event. The
:class:`Outcome` also carries the spec as parsed and the decision when this reconcile planned,
so the metrics observer neither parses nor plans again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NoReturn

from fabricfit import policy, workloads
from fabricfit.api.conditions import Reason
from fabricfit.api.constants import TOPOLOGY_LABEL
from fabricfit.api.models import MAX_GPUS_PER_POD, TrainingTopologySpec
from fabricfit.fabric.podclaims import PodClaims, pod_claim_gpus
from fabricfit.fabric.profiles import ProfileError
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.kube.workloads import UnsupportedWorkloadError, read_workload
from fabricfit.placement import PlacementDecision, build_layout
from fabricfit.placement.constraints import inputs_digest
from fabricfit.placement.devices import PodDevices, pod_devices
from fabricfit.placement.maintenance import drained
from fabricfit.policy.kueuecheck import templates_gated
from fabricfit.policy.pairing import pairing_problems
from fabricfit.reconcile import admission, applying, computedomain, evaluation, planning, replacing
from fabricfit.reconcile.applying import Intent
from fabricfit.reconcile.claimsources import claim_sources
from fabricfit.reconcile.context import OperatorState, Run, Target, Views
from fabricfit.reconcile.detected import set_topology_condition
from fabricfit.reconcile.draft import StatusDraft, Transition
from fabricfit.reconcile.inventory import TopologyKey
from fabricfit.reconcile.latency import set_latency_condition
from fabricfit.render.devices import gpu_allocation
from fabricfit.render.kueue import build_kueue_annotations, tier_label_keys
from fabricfit.render.record import PlanRecord, read_plan
from fabricfit.render.workload import PINNING_MODES
from fabricfit.workloads import kind_named, kueue_workloads, pod_templates


@dataclass(frozen=True)
class Outcome:
    """What one reconcile did: condition changes (Events), the status the object now shows,
    how many pods it pinned, the spec as parsed (None when invalid) and the decision when this
    reconcile made a new plan."""

    transitions: tuple[Transition, ...] = ()
    status: Mapping[str, Any] = field(default_factory=dict)
    pinned: int = 0
    spec: TrainingTopologySpec | None = None
    decision: PlacementDecision | None = None

    @property
    def plan(self) -> PlanRecord:
        """The plan the status now records."""
        return read_plan(self.status)


class PlanStep(Enum):
    """What to do about the plan (see :func:`decide_plan`)."""

    KEEP = "keep"  # pods have started: never move them
    RECHECK = "recheck"  # a plan for this generation exists: keep it while it still fits
    PLAN = "plan"  # no usable plan: make one


@dataclass
class _Found:
    """What a reconcile learnt on the way, for its Outcome (filled as the steps succeed)."""

    spec: TrainingTopologySpec | None = None
    decision: PlacementDecision | None = None
    gated: bool = False  # the workload's templates carry the gate (admission-check's Ready)
    workloads: int | None = None  # Workloads Kueue makes for the job (admission-check mode)


class _StopError(Exception):
    """Reconcile cannot go further this time; the draft says why."""


def key_of(body: Mapping[str, Any]) -> TopologyKey:
    meta = body.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


async def reconcile(
    body: Mapping[str, Any], state: OperatorState, views_of: Callable[[], Views]
) -> Outcome:
    key = key_of(body)
    generation = int((body.get("metadata") or {}).get("generation") or 0)
    async with state.lock_for(key):
        # One status for the whole reconcile (the draft and the plan check must agree).
        status = state.ledger.newest_status(key, body)
        run = Run(key, state, views_of, StatusDraft(status, generation), read_plan(status))
        found = _Found()
        with contextlib.suppress(_StopError):
            await _reconcile(body, run, found)
        if admission.wants_admission(body):
            await admission.answer(run, body, gated=found.gated, expected=found.workloads)
        await planning.write_status(run)
        draft = run.draft
        return Outcome(
            tuple(draft.transitions), dict(draft.current), draft.pins, found.spec, found.decision
        )


def parse_spec(body: Mapping[str, Any], draft: StatusDraft) -> TrainingTopologySpec:
    spec, problems = policy.parse_spec(body.get("spec"))
    if spec is not None and not problems:
        problems = pairing_problems(key_of(body)[1], spec)
    if spec is None or problems:
        _invalid(draft, Reason.INVALID_SPEC, "; ".join(problems))
    return spec


def _invalid(draft: StatusDraft, reason: Reason, message: str) -> NoReturn:
    draft.condition(reason, message)
    draft.set(reasons=[message[:1024]])
    raise _StopError


async def _workload(
    state: OperatorState, spec: TrainingTopologySpec, namespace: str, draft: StatusDraft
) -> Mapping[str, Any] | None:
    ref = spec.workload_ref
    assert ref is not None
    try:
        workload = await read_workload(state.rest, ref, namespace)
    except UnsupportedWorkloadError as err:
        _invalid(draft, Reason.UNSUPPORTED_WORKLOAD, str(err))
    return workload


def admit_workload(
    body: Mapping[str, Any],
    spec: TrainingTopologySpec,
    workload: Mapping[str, Any] | None,
    draft: StatusDraft,
    claims: policy.ClaimObjects | None = None,
) -> policy.Admission:
    """The policy's steps 2–4, once: ``gpusPerPod`` settled from the workload (and the claim
    templates its pods claim GPUs through), the workload checked, the rank template and the
    request built; an InvalidSpec condition for any problem."""
    admitted = policy.admit_workload(body.get("spec"), spec, workload, claims=claims)
    if admitted.request is None or admitted.spec is None or admitted.problems:
        _invalid(draft, Reason.INVALID_SPEC, admitted.message)
    return admitted


def workload_pods(
    key: TopologyKey, kind: str, workload: Mapping[str, Any] | None, views: Views
) -> list[Mapping[str, Any]]:
    """The workload's pods: the selected group for plain Pods, else the pods labelled ours."""
    if selects_pods(kind):
        return list((workload or {}).get("items") or [])
    return [
        p
        for p in views.pods
        if (p.get("metadata") or {}).get("namespace") == key[0]
        and ((p.get("metadata") or {}).get("labels") or {}).get(TOPOLOGY_LABEL) == key[1]
    ]


async def _reconcile(body: Mapping[str, Any], run: Run, found: _Found) -> None:
    target = await _target(run, body, parse_spec(body, run.draft))
    spec = found.spec = target.spec
    release_if_finished(run, target)
    may_pin = True
    if spec.placement.mode == admission.ADMISSION_MODE:
        found.workloads = kueue_workloads(target.ref.kind, target.workload)
        admitted = admission.admit(run, target, found.workloads)
        if admitted is None:
            raise _StopError
        target, may_pin = admitted.target, admitted.ready
    state, scheme = run.state, target.scheme
    recent = planning.recent_snapshot(state, run.views_of, scheme)
    set_topology_condition(run.draft, recent, scheme, state.per_facts)
    plan, snapshot = await _ensure_plan(run, target, found, recent)
    set_latency_condition(run.draft, spec)
    if target.workload is None:
        ref = target.ref
        run.draft.condition(
            Reason.WORKLOAD_NOT_FOUND, f"waiting for {ref.kind} {ref.name or ref.pod_selector}"
        )
        raise _StopError
    uid = str((body.get("metadata") or {}).get("uid") or "")
    await computedomain.settle_compute_domain(run, target, plan, snapshot, uid)
    tiers = state.per_facts.get(snapshot, ("tiers", scheme), lambda: tier_keys(snapshot, scheme))
    intent = decide_intent(target, plan, snapshot, scheme, tiers)
    retry_after = state.config.resync_seconds * applying.REFUSAL_RETRY_FRACTION
    applied = await applying.apply_to_workload(
        state.rest,
        run.key,
        target,
        intent,
        refusals=state.refusals,
        retry_after_seconds=retry_after,
    )
    if applied.blocked:
        run.draft.condition(Reason.WORKLOAD_NOT_SUSPENDED, applied.blocked)
        raise _StopError
    if applied.rejected:
        run.draft.condition(Reason.WORKLOAD_PATCH_REJECTED, applied.rejected)
        raise _StopError
    if applied.unmet:
        run.draft.condition(Reason.KUEUE_ANNOTATIONS_MISSING, applied.unmet)
        raise _StopError
    found.gated = applied.patched_workload or templates_gated(
        [t for _, t in pod_templates(target.ref.kind, target.workload or {})]
    )
    if spec.placement.mode in PINNING_MODES and may_pin:
        fresh = found.decision
        named = pod_devices(fresh, MAX_GPUS_PER_POD) if fresh else run.record.devices
        plan = await _pin(run, target, plan, snapshot, named)
    evaluation.evaluate(run.draft, target, plan, snapshot)


async def _target(run: Run, body: Mapping[str, Any], parsed: TrainingTopologySpec) -> Target:
    workload = await _workload(run.state, parsed, run.namespace, run.draft)
    views = run.views_of()
    claims = await claim_sources(run.state.rest, run.namespace, parsed, workload, views)
    admitted = admit_workload(body, parsed, workload, run.draft, claims)
    spec, template, request = admitted.spec, admitted.template, admitted.request
    assert spec is not None and spec.workload_ref is not None and request is not None
    pods = workload_pods(run.key, spec.workload_ref.kind, workload, views)
    claimed = pod_claim_gpus(template, claims) if template is not None else PodClaims()
    run.draft.set(gpuAllocation=gpu_allocation(claimed, admitted.devices))
    scheme = planning.scheme_of(spec, run.state)
    return Target(spec, workload, template, tuple(pods), request, claimed, scheme, admitted.devices)


def release_if_finished(run: Run, target: Target) -> None:
    """Stop here when the workload finished: its plan, reservation and link traffic go (the
    GPUs are free, its pods send nothing), and it is never planned again."""
    finished = workloads.finished(target.ref.kind, target.workload)
    if finished is None:
        return
    if run.record.pods or run.record.reservation:
        run.draft.set(pods=[], reservation=[])
    ref = target.ref
    run.draft.condition(
        Reason.WORKLOAD_FINISHED,
        f"{ref.kind} {run.namespace}/{ref.name} is {finished}: its GPUs and links are released",
    )
    raise _StopError


def decide_plan(record: PlanRecord, target: Target, generation: int) -> PlanStep:
    """Keep a started plan, re-check one made for this generation and for the constraints the
    workload's template has now (a plan made while it was absent is made again), else plan
    (pure)."""
    if record.pods and any(evaluation.is_pinned_or_bound(p) for p in target.pods):
        return PlanStep.KEEP
    same_inputs = record.inputs in (None, inputs_digest(target.request))  # None: an older plan
    if record.made_for(generation) and len(record.pods) == target.spec.pods and same_inputs:
        return PlanStep.RECHECK
    return PlanStep.PLAN


async def _ensure_plan(
    run: Run, target: Target, found: _Found, recent: ClusterSnapshot
) -> tuple[tuple[str, ...], ClusterSnapshot]:
    """The plan to apply and the snapshot it is checked against. ``recent`` (at most
    ``SNAPSHOT_MAX_AGE_SECONDS`` old) serves the read-only steps; only a new plan takes a fresh
    snapshot, under the planning lock. The planner's own failures are data (an infeasible
    decision); an exception other than a refused fabric is a bug, left to kopf to retry."""
    current = run.record.pods
    step = decide_plan(run.record, target, run.draft.generation)
    if step is PlanStep.KEEP:
        # A started job is never moved; lost pods are re-placed (under the lock, freshly).
        return current, recent
    if step is PlanStep.RECHECK and planning.plan_still_fits(run, target, recent):
        return current, recent
    try:
        result = await planning.plan_and_reserve(run, target)
    except ProfileError as err:  # the fabric choice: unknown name, refused profile file
        _invalid(run.draft, Reason.INVALID_FABRIC, str(err))
    if result is None:
        raise _StopError
    found.decision = result.decision
    return result.decision.pods, result.snapshot


def tier_keys(snapshot: ClusterSnapshot, scheme: str) -> dict[str, str]:
    """The node label key of each topology tier the cluster's label scheme uses."""
    return tier_label_keys(scheme, [n.labels for n in snapshot.nodes])


def decide_intent(
    target: Target,
    plan: tuple[str, ...],
    snapshot: ClusterSnapshot,
    scheme: str,
    tiers: Mapping[str, str] | None = None,
) -> Intent:
    """What the workload's templates must carry for ``plan`` (pure): the rail-group key for
    the pod affinity and, in kueue-tas mode, Kueue's topology annotations (``tiers``: the
    ``tier_keys`` of the snapshot when the caller has them already)."""
    spec = target.spec
    tiers = tier_keys(snapshot, scheme) if tiers is None else tiers
    if spec.placement.mode != "kueue-tas":
        return Intent(plan, tiers.get("rail_group"), {})
    layout = build_layout(spec.parallelism, spec.gpus_per_pod, spec.rank_order)
    planned = set(plan)
    annotations = build_kueue_annotations(
        plan,
        tensor_groups=layout.groups.get("tensor", ()),
        gpus_per_pod=spec.gpus_per_pod,
        tensor=spec.parallelism.tensor,
        tier_keys=tiers,
        node_labels={n.name: n.labels for n in snapshot.nodes if n.name in planned},
    )
    return Intent(plan, tiers.get("rail_group"), annotations)


async def _pin(
    run: Run,
    target: Target,
    plan: tuple[str, ...],
    snapshot: ClusterSnapshot,
    devices: Sequence[PodDevices] = (),
) -> tuple[str, ...]:
    rest, draft = run.state.rest, run.draft
    pinned = await applying.pin_pods(rest, target, plan, snapshot, devices)
    draft.pins += len(pinned.pinned)
    lost = pinned.lost | set(drained(plan, snapshot))
    if lost:
        replacement = await replacing.replace_and_reserve(run, target, plan, lost)
        if replacement is None:
            draft.condition(Reason.NO_HEALTHY_NODE, f"no healthy node can take pods {sorted(lost)}")
        else:
            repinned = await applying.pin_pods(rest, target, replacement.pods, snapshot)
            draft.pins += len(repinned.pinned)
            plan = replacement.pods
    return await _unstick(run, target, plan)


async def _unstick(run: Run, target: Target, plan: tuple[str, ...]) -> tuple[str, ...]:
    """Pinned pods kube-scheduler calls Unschedulable: re-place those whose planned node can no
    longer take them (something fabricfit does not place took its GPUs, or the node), then
    delete every stuck pod the plan has moved, so its controller recreates it gated and it is
    pinned to its new node (:mod:`~fabricfit.reconcile.applying`). The rest of the job stays.
    Plain Pods have no controller to recreate them: they wait."""
    stuck = applying.stuck_pods(target)
    if not stuck or selects_pods(target.ref.kind):
        return plan
    waiting = [i for i, (node, _) in stuck.items() if i < len(plan) and plan[i] == node]
    if waiting:
        replacement = await replacing.replace_stuck(run, target, plan, waiting)
        plan = replacement.pods if replacement is not None else plan
    moved = [pod for i, (node, pod) in sorted(stuck.items()) if i < len(plan) and plan[i] != node]
    await applying.recreate_stuck(run.state.rest, moved)
    return plan


def selects_pods(kind: str) -> bool:
    """Whether the workload of ``kind`` is a group of selected pods (kind Pod)."""
    found = kind_named(kind)
    return found is not None and found.selects_pods
