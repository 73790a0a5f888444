"""Planning and re-placing under the cluster-wide planning lock.

Theory of operation
-------------------
Two TrainingTopologies must never plan against the same free GPUs. Every plan therefore runs
under one lock, reads a fresh snapshot of kopf's indexes, subtracts what other plans hold (the
ledger), plans, and records its own reservation in the cluster (status) *before* it releases
the lock and before any pod is pinned. After an operator restart, kopf repopulates the indexes
(status included) before the first handler runs, so the reservations survive restarts.

A plan is priced next to the running jobs: under the same lock the running jobs' link load is
brought in step with every recorded plan (``reconcile.linkload``, incrementally) and handed to
the search without the job being planned (``plan_placement(..., neighbours=...)``), so a job
that ties alone keeps off the links other jobs load; the link capacities are kept per facts
token.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from fabricfit import policy
from fabricfit.api.conditions import Reason
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.contention import LinkCapacities, link_capacities
from fabricfit.fabric.nodes import read_node_facts
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.profiles.choice import choose_profile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.kube.topologies import patch_status
from fabricfit.placement import (
    PlacementDecision,
    PlacementRequest,
    plan_placement,
)
from fabricfit.placement.constraints import constraints_key, inputs_digest, node_rejection
from fabricfit.placement.neighbours import Neighbours
from fabricfit.placement.pairing import Partner
from fabricfit.policy.devices import settle_devices
from fabricfit.policy.pairing import partner_of
from fabricfit.reconcile import waiting
from fabricfit.reconcile.context import OperatorState, Run, Target, Views
from fabricfit.reconcile.derived import PerFacts
from fabricfit.reconcile.detected import flat_warning_of
from fabricfit.reconcile.devices import devices_still_ours
from fabricfit.reconcile.inventory import Holding, TopologyKey, holds_of_others
from fabricfit.reconcile.linkload import job_key
from fabricfit.render.status import build_plan_status, reservation_of, without_efficiency
from fabricfit.render.summary import serving_line

SNAPSHOT_MAX_AGE_SECONDS = 1.0


@dataclass(frozen=True)
class PlanResult:
    decision: PlacementDecision
    snapshot: ClusterSnapshot


def resolve_profile(
    target: Target, snapshot: ClusterSnapshot, state: OperatorState
) -> tuple[FabricProfile, str]:
    """The fabric this job is priced on and why: the policy ``fabricfit plan`` shares (a vote
    of the facts of the nodes its pods may use, taken once while they hold)."""
    config, spec, request = state.config, target.spec, target.request

    def choose() -> tuple[FabricProfile, str]:
        return policy.choose_fabric(
            spec, snapshot, config.default_fabric, catalog=config.catalog, request=request
        )

    key = ("fabric", spec.fabric, constraints_key(request))
    return state.per_facts.get(snapshot, key, choose)


def cluster_profile(snapshot: ClusterSnapshot, state: OperatorState) -> FabricProfile:
    """The fabric of a job that names none (the nodes' vote): what the link metrics use."""
    config = state.config

    def choose() -> tuple[FabricProfile, str]:
        choice = choose_profile(
            snapshot.nodes,
            spec_fabric=None,
            default=config.default_fabric,
            catalog=config.catalog,
        )
        return choice.profile, choice.reason

    return state.per_facts.get(snapshot, ("fabric", None), choose)[0]


def capacities_of(
    state: OperatorState, snapshot: ClusterSnapshot, profile: FabricProfile
) -> LinkCapacities:
    """The shared links' capacities, once per facts token and fabric."""
    return state.per_facts.get(
        snapshot, ("capacities", profile.name), lambda: link_capacities(snapshot, profile)
    )


def scheme_of(spec: TrainingTopologySpec, state: OperatorState) -> str:
    """The spec's label scheme when it names one, else the operator's default."""
    if "label_scheme" in spec.model_fields_set:
        return spec.label_scheme
    return state.config.label_scheme


def fresh_snapshot(state: OperatorState, views: Views, scheme: str) -> ClusterSnapshot:
    # Through the memo: unchanged nodes are not read again (see fabric.snapshot.FactsMemo).
    snapshot = state.node_facts.build_snapshot(
        list(views.nodes),
        list(views.pods),
        scheme=scheme,
        default_fabric=state.config.default_fabric,
        resource_slices=list(views.slices),
        resource_claims=list(views.claims),
    )
    state.snapshots[scheme] = (time.monotonic(), snapshot)
    return snapshot


def node_available(views: Views, name: str) -> bool:
    """Whether node ``name`` exists and is available (Ready, not cordoned), from its copy
    alone: pinning one pod needs one node, not a fresh snapshot of a 12,800-node cluster."""
    for raw in views.nodes:
        if (raw.get("metadata") or {}).get("name") == name:
            facts = read_node_facts(raw, 0, None, [])
            return facts is not None and facts.available
    return False


def recent_snapshot(
    state: OperatorState, views_of: Callable[[], Views], scheme: str
) -> ClusterSnapshot:
    """A snapshot at most SNAPSHOT_MAX_AGE_SECONDS old, for read-only checks: with hundreds of
    TrainingTopologies resyncing, rebuilding one per reconcile would dominate the CPU."""
    cached = state.snapshots.get(scheme)
    if cached is not None and time.monotonic() - cached[0] <= SNAPSHOT_MAX_AGE_SECONDS:
        return cached[1]
    return fresh_snapshot(state, views_of(), scheme)


def plan_still_fits(run: Run, target: Target, snapshot: ClusterSnapshot) -> bool:
    """Whether the recorded plan, whose pods have not started, still fits: every node available,
    matching the workload's constraints (which may have appeared after planning), with room for
    its pods once other plans' holds are taken out."""
    spec, request, views = target.spec, target.request, run.views_of()
    if run.record.devices:  # device-exact: its own claims count as used GPUs; ask by device
        own = {str((p.get("metadata") or {}).get("name")) for p in target.pods}
        others = run.state.ledger.device_holds(run.key, views.topologies)
        usable = all(node_available(views, n) for n in run.record.nodes)
        return usable and devices_still_ours(run.record.devices, views.claims, own, others)
    held = holds_of_others(
        run.key, run.state.ledger.merged(views.topologies), views.pods, snapshot.claimed_by_pod
    )
    for node, count in Counter(run.record.pods).items():
        if not snapshot.has_node(node):
            return False
        extra = {node: held.get(node, 0) + (count - 1) * spec.gpus_per_pod}
        if node_rejection(snapshot.node(node), request, extra) is not None:
            return False
    return True


async def write_status(run: Run) -> None:
    """Write the draft when it changes anything, and remember the write in the ledger."""
    body = run.draft.body()
    if body is None:
        return
    state = run.state
    written = await patch_status(state.rest, run.namespace, run.name, body)
    state.ledger.record(run.key, written)
    run.draft.committed(written.get("status") or {})


def capacity_fingerprint(
    snapshot: ClusterSnapshot,
    held: Mapping[str, int],
    request: object,
    *,
    per_facts: PerFacts | None = None,
) -> int:
    """A hash of everything a plan depends on: nodes (capacity, health, place, labels, taints,
    free GPUs), other plans' holds, and the request. Equal fingerprints give equal plans. The
    nodes' part but free GPUs is hashed once per facts token when ``per_facts`` is given."""
    static = (
        per_facts.get(snapshot, "fingerprint", lambda: _facts_hash(snapshot))
        if per_facts is not None
        else _facts_hash(snapshot)
    )
    free = tuple((n.free_gpus, n.held_gpus) for n in snapshot.nodes)
    return hash((static, free, tuple(sorted(held.items())), request))


def _facts_hash(snapshot: ClusterSnapshot) -> int:
    return hash(
        tuple(
            (n.name, n.gpus, n.available, n.place, n.taints, tuple(sorted(n.labels.items())))
            for n in snapshot.nodes
        )
    )


def plan_inputs(
    run: Run, target: Target
) -> tuple[ClusterSnapshot, PlacementRequest, FabricProfile, dict[str, int]]:
    """What a plan reads, taken under the lock: snapshot, request, profile, others' holds.
    Who picks the GPUs is settled here (``policy.devices``): a device-exact plan gets the
    snapshot with every device held (claims, other plans' chosen devices) marked."""
    state, views = run.state, run.views_of()
    snapshot = fresh_snapshot(state, views, target.scheme)
    held = holds_of_others(
        run.key, state.ledger.merged(views.topologies), views.pods, snapshot.claimed_by_pod
    )
    profile, why = resolve_profile(target, snapshot, state)
    run.draft.set(fabricReason=why[:512])
    request = with_partner(run, target)[0]
    devices = state.ledger.device_holds(run.key, views.topologies)
    choice = settle_devices(request, target.devices, snapshot, devices)
    run.draft.set(gpuChoice=choice.request.gpu_choice)
    return choice.snapshot, choice.request, profile, held


def with_partner(run: Run, target: Target) -> tuple[PlacementRequest, str | None]:
    """The request, with the partner of a disaggregated deployment when its plan is recorded
    (the newest status the ledger knows: a partner planned a moment ago counts), and why not
    when it has none (a reason for the status: no KV transfer is priced)."""
    request, serving = target.request, target.spec.serving
    if serving is None or serving.paired_with is None:
        return request, None
    key = (run.namespace, serving.paired_with)
    holding = run.state.ledger.newest(key, run.views_of().topologies.get(key))
    served = holding.served if holding is not None else None
    if served is None:
        found: Partner | str = (
            f"the paired TrainingTopology {serving.paired_with} is not there"
            if holding is None
            else f"the paired TrainingTopology {serving.paired_with} serves no model"
        )
    else:
        found = partner_of(serving.paired_with, served["spec"], served["status"], role=serving.role)
    if isinstance(found, Partner):
        return replace(request, partner=found), None
    return request, f"{found}: the KV-cache transfer is priced on the side planned second"


async def plan_and_reserve(run: Run, target: Target) -> PlanResult | None:
    """Plan under the lock and write the reservation; None when the job does not fit now, or
    waits for a better placement (``reconcile.waiting``)."""
    state, draft, key = run.state, run.draft, run.key
    async with state.plan_lock:
        snapshot, request, profile, held = plan_inputs(run, target)
        held = waiting.with_extra(held, waiting.beside_holds(run, target, snapshot, held))
        why = (draft.generation, repr(request), profile)
        inputs = capacity_fingerprint(snapshot, held, why, per_facts=state.per_facts)
        if state.infeasible.get(key) == inputs:
            return None  # nothing changed since this job last did not fit: don't plan again
        decision, wait = await _search(run, target, (snapshot, request, profile, held))
        if not decision.feasible:
            state.infeasible[key] = inputs
            draft.set(reservation=[], pods=[], reasons=list(decision.reasons)[:32])
            draft.condition(decision.failure or Reason.INSUFFICIENT_GPUS, _why(decision))
            await write_status(run)
            return None
        state.infeasible.pop(key, None)
        if wait is not None:
            state.holds[key] = wait.held
            draft.set(reservation=[], pods=[], reasons=[wait.message])
            draft.condition(Reason.WAITING_FOR_BETTER_PLACEMENT, wait.message)
            await write_status(run)
            return None
        state.holds.pop(key, None)
        unpaired = with_partner(run, target)[1]
        if unpaired is not None:
            decision = replace(decision, reasons=(*decision.reasons, unpaired))
        flat = flat_warning_of(snapshot, target.scheme, state.per_facts)
        fields = build_plan_status(
            decision,
            spec=target.spec,
            reservation=_reservation(decision, target.spec),
            generation=draft.generation,
            snapshot=snapshot,
            planned_at=datetime.now(UTC),
        )
        draft.set(**(fields if flat is None else without_efficiency(fields)))
        draft.set(planInputs=inputs_digest(request))  # what decide_plan re-checks it against
        draft.condition(Reason.PLANNED, _summary(decision, flat))
        await write_status(run)
        return PlanResult(decision, snapshot)


async def _search(
    run: Run,
    target: Target,
    inputs: tuple[ClusterSnapshot, PlacementRequest, FabricProfile, dict[str, int]],
) -> tuple[PlacementDecision, waiting.Waiting | None]:
    """The plan next to the running jobs' traffic, and whether it waits (under the lock).

    The search is pure CPU over frozen inputs: it runs off the event loop, so the pins, binds
    and Placed of jobs already planned go on meanwhile (a burst of plans held each for a whole
    plan otherwise). The plan lock keeps it one plan at a time, and with it the link load's
    sync (``reconcile.linkload``), which only planning and the census touch."""
    state, key = run.state, run.key
    snapshot, request, profile, held = inputs  # the request with its partner and devices
    wait_inputs = waiting.wait_inputs(run, target)
    holdings = newest_holdings(state, run.views_of())
    capacities = capacities_of(state, snapshot, profile)

    def search() -> tuple[PlacementDecision, waiting.Waiting | None]:
        load = state.traffic.sync(holdings, snapshot, state.config.catalog, profile)
        neighbours = Neighbours(load.remove(job_key(key)), capacities)
        decision = plan_placement(
            snapshot, request, profile, reservations=held, neighbours=neighbours
        )
        if wait_inputs is None:
            return decision, None
        wait = waiting.decide_hold(
            wait_inputs,
            decision,
            snapshot=snapshot,
            request=request,
            profile=profile,
            neighbours=neighbours,
        )
        return decision, wait

    return await asyncio.to_thread(search)


def _reservation(decision: PlacementDecision, spec: TrainingTopologySpec) -> dict[str, int]:
    """What the plan holds against other plans: nothing in advisory mode, whose pods the
    scheduler places wherever it likes (their GPUs count once they are bound)."""
    if spec.placement.mode == "advisory":
        return {}
    return reservation_of(decision, spec.gpus_per_pod)


def newest_holdings(state: OperatorState, views: Views) -> dict[TopologyKey, Holding]:
    """Every TrainingTopology's newest known holding (the watch's, or our later write)."""
    ledger = state.ledger
    found = {key: ledger.newest(key, seen) for key, seen in views.topologies.items()}
    return {key: holding for key, holding in found.items() if holding is not None}


def _summary(decision: PlacementDecision, flat: str | None = None) -> str:
    nodes = len(set(decision.pods))
    times = decision.predicted
    serving = times.serving if times else None
    if serving is not None:
        return f"{len(decision.pods)} pods on {nodes} nodes; {serving_line(serving)}"
    predicted = times.step_comm_seconds if times else 0.0
    text = f"{len(decision.pods)} pods on {nodes} nodes; predicted step communication "
    text += f"{predicted:.4g} s"
    if times is not None and (times.neighbour_slowdown_seconds or 0.0) > 0:
        text += (
            f" ({times.neighbour_slowdown_seconds:.4g} s of it from links shared with running jobs)"
        )
    if times is not None and (times.slowdown_added_to_others_seconds or 0.0) > 0:
        text += f", adds {times.slowdown_added_to_others_seconds:.4g} s per step to running jobs"
    efficiency = f"efficiency unknown: {flat}" if flat else f"efficiency {decision.efficiency:.0%}"
    return f"{text}, {efficiency}"


def _why(decision: PlacementDecision) -> str:
    reasons = "; ".join(decision.reasons) or "not enough free GPUs"
    largest = decision.largest_feasible
    if largest is not None:
        reasons += f" (largest job that fits now: {largest.pods} pods, {largest.world_size} GPUs)"
    return reasons
