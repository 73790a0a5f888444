"""One idempotent reconcile of a TrainingTopology, pod pinning, and release on deletion.

Theory of operation
-------------------
``reconcile`` is level-based: whatever event woke it (create, update, resume, timer, a pod of
the workload appearing), it reads the spec, the workload and kopf's indexes and drives the
cluster one step closer to the plan:

1. parse and validate the spec (invalid → ``Planned=False``, reason ``InvalidSpec``);
2. find the workload (absent → ``Placed=False``, reason ``WorkloadNotFound``; the plan is still
   made and reserved, so a workload created later finds its GPUs held);
3. plan, unless a plan for this generation exists or pods are already pinned (a running job is
   never moved); the reservation is written to status before anything else happens;
4. apply the plan to the workload for the placement mode, pin gated pods, and re-place pods
   whose planned node became unusable (recreated pods with a reused index);
5. derive ``Placed`` (every pod bound to its planned node) and ``Degraded`` (a planned node is
   NotReady, cordoned or gone) and write status when anything changed.

Each changed condition is returned as a ``Transition``; the handler posts it as an Event.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from pydantic import ValidationError

from fabricfit.api.conditions import Reason
from fabricfit.api.constants import GROUP, PLURAL, TOPOLOGY_LABEL, VERSION
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.fabric.profiles import ProfileError
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.kube.rest import ApiError, path_for
from fabricfit.kube.workloads import UnsupportedWorkloadError, patch_pod, read_workload
from fabricfit.placement import PlacementDecision, build_layout
from fabricfit.reconcile import applying, evaluation, planning
from fabricfit.reconcile.context import OperatorState, Views
from fabricfit.reconcile.detected import set_topology_condition
from fabricfit.reconcile.draft import StatusDraft, Transition
from fabricfit.reconcile.inventory import TopologyKey
from fabricfit.render import policy
from fabricfit.render.kinds import kind_named, pod_index
from fabricfit.render.kueue import build_kueue_annotations, tier_label_keys
from fabricfit.render.pods import build_pin_patch, build_ungate_patch, is_gated, planned_node_of


@dataclass(frozen=True)
class Outcome:
    """What one reconcile did: condition changes (Events), the status the object now shows,
    and how many pods it pinned."""

    transitions: tuple[Transition, ...] = ()
    status: Mapping[str, Any] = field(default_factory=dict)
    pinned: int = 0


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
        draft = StatusDraft(status, generation)
        with contextlib.suppress(_StopError):
            await _reconcile(body, status, key, state, views_of, draft)
        await planning.write_status(state, key, draft)
        return Outcome(tuple(draft.transitions), dict(draft.current), draft.pins)


def parse_spec(body: Mapping[str, Any], draft: StatusDraft) -> TrainingTopologySpec:
    spec, problems = policy.parse_spec(body.get("spec"))
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


def settle_spec(
    body: Mapping[str, Any],
    spec: TrainingTopologySpec,
    workload: Mapping[str, Any] | None,
    draft: StatusDraft,
) -> tuple[TrainingTopologySpec, Mapping[str, Any] | None]:
    """The spec with ``gpusPerPod`` settled from the workload, checked against the workload,
    and the rank template (the policy's steps 2 and 3)."""
    ref = spec.workload_ref
    assert ref is not None
    template = policy.rank_template(ref.kind, workload)
    settled, problems = policy.settle_gpus_per_pod(body.get("spec"), spec, template)
    if settled is None or problems:
        _invalid(draft, Reason.INVALID_SPEC, "; ".join(problems))
    problems = policy.workload_problems(settled, workload)
    if problems:
        _invalid(draft, Reason.INVALID_SPEC, "; ".join(problems))
    return settled, template


def workload_pods(
    key: TopologyKey, kind: str, workload: Mapping[str, Any] | None, views: Views
) -> list[Mapping[str, Any]]:
    if _selects_pods(kind):
        return list((workload or {}).get("items") or [])
    return [
        p
        for p in views.pods
        if (p.get("metadata") or {}).get("namespace") == key[0]
        and ((p.get("metadata") or {}).get("labels") or {}).get(TOPOLOGY_LABEL) == key[1]
    ]


async def _reconcile(
    body: Mapping[str, Any],
    status: Mapping[str, Any],
    key: TopologyKey,
    state: OperatorState,
    views_of: Callable[[], Views],
    draft: StatusDraft,
) -> None:
    spec = parse_spec(body, draft)
    ref = spec.workload_ref
    assert ref is not None
    workload = await _workload(state, spec, key[0], draft)
    spec, template = settle_spec(body, spec, workload, draft)
    views = views_of()
    pods = workload_pods(key, ref.kind, workload, views)
    scheme = planning.scheme_of(spec, state)
    set_topology_condition(draft, planning.recent_snapshot(state, views_of, scheme), scheme)
    plan, snapshot = await _ensure_plan(status, key, spec, template, pods, state, views_of, draft)
    if workload is None:
        draft.condition(
            Reason.WORKLOAD_NOT_FOUND,
            f"waiting for {ref.kind} {ref.name or ref.pod_selector}",
        )
        raise _StopError
    tiers = tier_label_keys(planning.scheme_of(spec, state), [n.labels for n in snapshot.nodes])
    applied = await applying.apply_to_workload(
        state.rest,
        key[0],
        key[1],
        spec,
        workload,
        rail_group_key=tiers.get("rail_group"),
        kueue_annotations=kueue_annotations(spec, plan, snapshot, planning.scheme_of(spec, state)),
    )
    if applied.blocked:
        draft.condition(Reason.WORKLOAD_NOT_SUSPENDED, applied.blocked)
        raise _StopError
    if spec.placement.mode == "pinned":
        plan = await _pin(
            key, spec, template, pods, plan, snapshot, workload, state, views_of, draft
        )
    evaluation.evaluate(draft, spec, plan, pods, snapshot, workload)


async def _ensure_plan(
    status: Mapping[str, Any],
    key: TopologyKey,
    spec: TrainingTopologySpec,
    template: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    state: OperatorState,
    views_of: Callable[[], Views],
    draft: StatusDraft,
) -> tuple[list[str], ClusterSnapshot]:
    current = evaluation.planned_nodes(status)
    scheme = planning.scheme_of(spec, state)
    if current and any(evaluation.is_pinned_or_bound(p) for p in pods):
        # A started job is never moved; lost pods are re-placed (under the lock, freshly).
        return current, planning.recent_snapshot(state, views_of, scheme)
    views = views_of()
    snapshot = planning.fresh_snapshot(state, views, scheme)
    fresh = status.get("observedGeneration") == draft.generation and len(current) == spec.pods
    if fresh and planning.plan_still_fits(state, key, spec, template, views, snapshot, current):
        return current, snapshot
    ref = spec.workload_ref
    assert ref is not None
    try:
        result = await planning.plan_and_reserve(
            state, key, spec, template, views_of, draft, f"{ref.kind}/{ref.name}"
        )
    except (ProfileError, ValueError) as err:
        _invalid(draft, Reason.INVALID_SPEC, str(err))
    if result is None:
        raise _StopError
    return list(result.decision.pods), result.snapshot


def kueue_annotations(
    spec: TrainingTopologySpec, plan: Sequence[str], snapshot: ClusterSnapshot, scheme: str
) -> dict[str, str]:
    """Kueue TAS annotations for the plan (recomputed from status when the plan is reused)."""
    if spec.placement.mode != "kueue-tas":
        return {}
    layout = build_layout(spec.parallelism, spec.gpus_per_pod, spec.rank_order)
    decision = PlacementDecision(
        feasible=True, fabric=spec.fabric or "", groups=layout.groups, pods=tuple(plan)
    )
    return build_kueue_annotations(
        decision,
        gpus_per_pod=spec.gpus_per_pod,
        tensor=spec.parallelism.tensor,
        tier_keys=tier_label_keys(scheme, [n.labels for n in snapshot.nodes]),
        node_labels={n.name: n.labels for n in snapshot.nodes if n.name in set(plan)},
    )


async def _pin(
    key: TopologyKey,
    spec: TrainingTopologySpec,
    template: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    plan: list[str],
    snapshot: ClusterSnapshot,
    workload: Mapping[str, Any],
    state: OperatorState,
    views_of: Callable[[], Views],
    draft: StatusDraft,
) -> list[str]:
    pinned = await applying.pin_pods(state.rest, spec, pods, plan, snapshot, workload)
    draft.pins += len(pinned.pinned)
    if not pinned.lost:
        return plan
    replacement = await planning.replace_and_reserve(
        state, key, spec, template, views_of, draft, plan, pinned.lost
    )
    if replacement is None:
        draft.condition(
            Reason.NO_HEALTHY_NODE,
            f"no healthy node can take pods {sorted(pinned.lost)}",
        )
        return plan
    new_plan = list(replacement.pods)
    repinned = await applying.pin_pods(state.rest, spec, pods, new_plan, snapshot, workload)
    draft.pins += len(repinned.pinned)
    return new_plan


async def release(
    body: Mapping[str, Any], state: OperatorState, views_of: Callable[[], Views]
) -> None:
    """On deletion: drop the reservation and ungate pods still gated. The workload is kept."""
    key = key_of(body)
    async with state.lock_for(key):
        state.ledger.forget(key)
        state.infeasible.pop(key, None)
        for pod in await _pods_to_release(body, key, state, views_of):
            if not is_gated(pod):
                continue
            meta = pod.get("metadata") or {}
            path = path_for("v1", "pods", key[0], meta.get("name"))
            try:
                await state.rest.patch(path, build_ungate_patch(pod), "json")
            except ApiError as err:
                if err.status not in (404, 409, 422):
                    raise
    state.object_locks.pop(key, None)


async def _pods_to_release(
    body: Mapping[str, Any], key: TopologyKey, state: OperatorState, views_of: Callable[[], Views]
) -> list[Mapping[str, Any]]:
    """Pods carrying our label, plus, for plain-Pod workloads, the pods the selector matches
    (they may never have been labelled if no plan was made)."""
    pods = workload_pods(key, "", None, views_of())
    try:
        spec = TrainingTopologySpec.model_validate(body.get("spec") or {})
    except ValidationError:
        return pods
    ref = spec.workload_ref
    if ref is not None and _selects_pods(ref.kind) and ref.pod_selector:
        group = await read_workload(state.rest, ref, key[0])
        names = {(p.get("metadata") or {}).get("name") for p in pods}
        pods += [p for p in (group or {}).get("items") or [] if p["metadata"]["name"] not in names]
    return pods


def _selects_pods(kind: str) -> bool:
    found = kind_named(kind)
    return found is not None and found.selects_pods


async def pin_from_plan(
    pod: Mapping[str, Any], state: OperatorState, views_of: Callable[[], Views]
) -> bool | None:
    """Pin one gated pod straight from its TrainingTopology's recorded plan.

    The fast path for pod events: no workload read, no planning, one patch. True when the pod
    was pinned, False when it needs nothing; None when only a full reconcile can decide (no
    current plan, a kind whose index needs the workload, a planned node that is unusable).
    """
    meta = pod.get("metadata") or {}
    key = (str(meta.get("namespace") or ""), str((meta.get("labels") or {}).get(TOPOLOGY_LABEL)))
    async with state.lock_for(key):
        holding = state.ledger.newest(key, views_of().topologies.get(key))
        if holding is None or not holding.current or holding.mode != "pinned":
            return None
        kind = kind_named(holding.kind)
        if kind is None or not kind.index_without_workload:
            return None
        index = pod_index(holding.kind, pod, index_label=holding.index_label)
        if index is None or index >= len(holding.planned_nodes):
            return None
        node = holding.planned_nodes[index]
        snapshot = planning.recent_snapshot(state, views_of, state.config.label_scheme)
        if not snapshot.has_node(node) or not snapshot.node(node).available:
            return None
        if not is_gated(pod) or planned_node_of(pod) not in (None, node):
            return False
        try:
            await patch_pod(state.rest, key[0], str(meta.get("name")), build_pin_patch(pod, node))
        except ApiError as err:
            if err.status not in (404, 409, 422):
                raise
            return False
        return True


async def read_topology(state: OperatorState, namespace: str, name: str) -> dict[str, Any] | None:
    return await state.rest.get(path_for(f"{GROUP}/{VERSION}", PLURAL, namespace, name))
