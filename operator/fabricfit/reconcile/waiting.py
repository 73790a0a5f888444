"""``wait-if-faster`` in the operator: hold a job through Kueue's AdmissionCheck, fence it off.

Theory of operation
-------------------
A TrainingTopology in admission-check mode whose queue policy is ``wait-if-faster`` (its
``placement.queuePolicy``, else ``fabricfit run --queue-policy``) and whose Kueue Workload
declares a run time is planned as usual; before the plan is reserved, :func:`decide_hold` asks
the shared decision (``placement.waiting.hold_until``) whether waiting for running jobs to end
lets it finish sooner. The running jobs are the TrainingTopologies with a plan whose Workloads
declare an end (``policy.waiting.declared_end``); at each end, in order, the cluster is what it
would be then — their bound pods' GPUs free, their reservations and traffic gone — and the job
is planned again there with the same planner, next to the traffic left.

A held job writes no plan and no reservation: its ``Planned`` condition says
``WaitingForBetterPlacement`` with the placement it waits for, when, and the communication it
saves, and the AdmissionCheck answers ``Retry`` with that message (``policy.kueuecheck``): Kueue
gives its quota back, requeues it, and the next admission re-checks. The hold is remembered
(:class:`~fabricfit.policy.waiting.HeldPlacement`, in memory: after a restart the next re-check
makes it again) so that meanwhile every other plan leaves the held job's waited-for GPUs alone,
unless the other job declares an end before the hold's instant (:func:`beside_holds`). The
hold ends when the job is planned, deleted, or its instant is long past.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from fabricfit.api.models import TrainingTopologySpec
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement import PlacementDecision, PlacementRequest, plan_placement
from fabricfit.placement.decision import StepTimes
from fabricfit.placement.neighbours import Neighbours, compute_seconds
from fabricfit.placement.waiting import WAIT_IF_FASTER, Hold, hold_until
from fabricfit.policy.waiting import (
    HeldPlacement,
    Saving,
    beside_hold,
    hold_message,
    job_end,
    job_run_seconds,
    queue_policy,
)
from fabricfit.reconcile.admission import ADMISSION_MODE
from fabricfit.reconcile.context import OperatorState, Run, Target, Views
from fabricfit.reconcile.inventory import TopologyKey, bound_gpus, holds_of_others
from fabricfit.reconcile.linkload import job_key


@dataclass(frozen=True, slots=True)
class Candidate:
    """A placement the planner found: its pods and prediction (``placement.waiting.Priced``)."""

    pods: tuple[str, ...]
    predicted: StepTimes


@dataclass(frozen=True, slots=True)
class Release:
    """A running job that declares its end: when, and the GPUs it frees then."""

    key: TopologyKey
    end: float
    bound: Mapping[str, int]  # GPUs its bound pods use, per node
    footprint: Mapping[str, int]  # GPUs its plan takes, per node (reservation)


@dataclass(frozen=True)
class WaitInputs:
    """What the hold decision reads, copied on the event loop (the decision runs off it)."""

    key: TopologyKey
    now: float
    run_seconds: float
    releases: tuple[Release, ...]
    reservations: Mapping[TopologyKey, Mapping[str, int]]
    pods: Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class Waiting:
    """A hold: what the operator remembers, and the message the job's condition carries."""

    held: HeldPlacement
    message: str


def _workloads(views: Views, namespace: str, kind: str, name: str) -> Sequence[Mapping[str, Any]]:
    return views.kueue.workloads.get((namespace, kind, name)) or ()


def applies(spec: TrainingTopologySpec, state: OperatorState) -> bool:
    """Whether the job's queue policy is ``wait-if-faster`` (admission-check mode only)."""
    if spec.placement.mode != ADMISSION_MODE:
        return False
    return queue_policy(spec.placement.queue_policy, state.config.queue_policy) == WAIT_IF_FASTER


def wait_inputs(run: Run, target: Target) -> WaitInputs | None:
    """The inputs of the decision; None when it does not apply (the policy is off, the job
    declares no run time, or no running job declares an end)."""
    state, views = run.state, run.views_of()
    if not applies(target.spec, state):
        return None
    ref = target.ref
    run_seconds = job_run_seconds(_workloads(views, run.namespace, ref.kind, ref.name))
    if run_seconds is None:
        return None
    now = time.time()
    reservations = state.ledger.merged(views.topologies)
    bound = bound_gpus(views.pods)
    releases: list[Release] = []
    for key, seen in views.topologies.items():
        holding = state.ledger.newest(key, seen)
        if key == run.key or holding is None or not holding.plan.pods:
            continue
        end = job_end(_workloads(views, key[0], holding.kind, holding.workload))
        if end is None:
            continue
        mine = {node: gpus for (owner, node), gpus in bound.items() if owner == key}
        footprint = dict(reservations.get(key) or {})
        releases.append(Release(key, max(end, now), mine, footprint))
    if not releases:
        return None
    releases.sort(key=lambda r: (r.end, r.key))
    return WaitInputs(run.key, now, run_seconds, tuple(releases), reservations, list(views.pods))


def decide_hold(
    inputs: WaitInputs,
    decision: PlacementDecision,
    *,
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    profile: FabricProfile,
    neighbours: Neighbours,
) -> Waiting | None:
    """Whether the job planned as ``decision`` waits, and for what (pure CPU: runs off the
    event loop, next to the plan it questions)."""
    if not decision.feasible or decision.predicted is None:
        return None
    now_placed = Candidate(decision.pods, decision.predicted)
    comm = decision.predicted.step_comm_seconds
    step_seconds = compute_seconds(request, profile) + comm
    steps = inputs.run_seconds / max(step_seconds, 1e-9)

    def place(later: tuple[ClusterSnapshot, dict[str, int], Neighbours]) -> Candidate | None:
        found = plan_placement(
            later[0], request, profile, reservations=later[1], neighbours=later[2]
        )
        if not found.feasible or found.predicted is None:
            return None
        return Candidate(found.pods, found.predicted)

    hold = hold_until(steps, now_placed, inputs.now, _futures(inputs, snapshot, neighbours), place)
    if hold is None:
        return None
    return Waiting(
        _held(inputs, hold, request.gpus_per_pod),
        hold_message(
            snapshot,
            decision.pods,
            hold.placed.pods,
            Saving(
                wait_seconds=hold.until - inputs.now,
                per_step_seconds=comm - hold.placed.predicted.step_comm_seconds,
                saved_seconds=hold.saved_seconds,
                run_seconds=inputs.run_seconds,
            ),
        ),
    )


def _futures(
    inputs: WaitInputs, snapshot: ClusterSnapshot, neighbours: Neighbours
) -> Iterator[tuple[float, tuple[ClusterSnapshot, dict[str, int], Neighbours]]]:
    """The cluster at each declared end, every job ended by then released (lazily)."""
    free = {n.name: n.free_gpus for n in snapshot.nodes}
    capacity = {n.name: n.gpus for n in snapshot.nodes}
    gone: set[TopologyKey] = set()
    for release in inputs.releases:
        gone.add(release.key)
        neighbours = neighbours.without(job_key(release.key))
        for node, gpus in release.bound.items():
            if node in free:
                free[node] = min(capacity[node], free[node] + gpus)
        nodes = tuple(replace(n, free_gpus=free[n.name]) for n in snapshot.nodes)
        later = replace(snapshot, nodes=nodes)
        left = {k: v for k, v in inputs.reservations.items() if k not in gone}
        held = holds_of_others(inputs.key, left, inputs.pods, snapshot.claimed_by_pod)
        yield release.end, (later, held, neighbours)


def _held(inputs: WaitInputs, hold: Hold[Candidate], gpus_per_pod: int) -> HeldPlacement:
    freed: Counter[str] = Counter()
    for release in inputs.releases:
        if release.end <= hold.until:
            freed.update(release.footprint)
    return HeldPlacement(hold.until, hold.reserved(gpus_per_pod), dict(freed))


def beside_holds(
    run: Run, target: Target, snapshot: ClusterSnapshot, held: Mapping[str, int]
) -> dict[str, int]:
    """GPUs per node this job must leave to the jobs held for a better placement (none of its
    own hold), on top of ``held``; stale holds and those of deleted jobs are forgotten."""
    state, views = run.state, run.views_of()
    now = time.time()
    for key in [
        k for k, h in state.holds.items() if k not in views.topologies or not h.current(now)
    ]:
        del state.holds[key]
    others = [h for k, h in state.holds.items() if k != run.key]
    if not others:
        return {}
    ref = target.ref
    run_seconds = job_run_seconds(_workloads(views, run.namespace, ref.kind, ref.name))
    ends = None if run_seconds is None else now + run_seconds
    free = {n.name: max(0, n.free_gpus - held.get(n.name, 0)) for n in snapshot.nodes}
    extra: Counter[str] = Counter()
    for hold in others:
        taken = beside_hold(hold, free, ends)
        extra.update(taken)
        for node, gpus in taken.items():
            free[node] -= gpus
    return dict(extra)


def with_extra(held: Mapping[str, int], extra: Mapping[str, int]) -> dict[str, int]:
    """``held`` plus ``extra``, per node."""
    return dict(Counter(held) + Counter(extra))
