"""``plan_placement``: from a snapshot and a request to a frozen ``PlacementDecision``.

Theory of operation
-------------------
1. Validate the parallel layout (one reason per violation) and derive the rank groups.
2. Filter nodes (availability, free GPUs after other plans' reservations, nodeSelector, node
   affinity, taints, and the spare nodes of each multi-node NVLink domain, ``spares``) and cut
   the survivors into pod slots grouped by leaf domain.
3. If the slots cannot hold the job, stop: reasons plus the largest job that fits now.
4. Generate hierarchical candidates (``candidates``) plus the placements Kueue TAS BestFit would
   make with the job preferred (or required) at each topology level (``peers.kueue_bestfit``),
   (next to running jobs, also the candidates of the ``QUIET_SPINES`` least loaded spines
   alone), run plugin filters, price survivors with the cost model (next to the running
   jobs' traffic when ``neighbours`` are given), rank them by weighted plugin score,
   and hill-climb the best (``improve``). The result never predicts more step communication
   than the cheapest Kueue candidate that passed the filters: if the best by score does (the
   small-weight plugins can outvote a few percent of communication), the best-scored candidate
   at or under that peer's time wins.
5. Break ties for the jobs running and behind: among the chosen candidate and those that
   predict no more step communication than it, take the one that slows the running jobs
   least (with ``neighbours``), then the one that sends the fewest bytes across the spine,
   then the one that leaves the most free capacity whole (least ``packing`` loss: best fit at
   the node, then the NVLink domain, rail group and spine whose entirely free nodes it
   breaks). The job's own predicted communication never grows.
6. Report pod→node, rank→(node, GPU), groups, predicted and lower-bound step times, plugin
   scores and a reason for each unmet preference.

The function never mutates its inputs and reads no clock, so the same snapshot and request give
the same decision (candidate order and tie-breaks are fixed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from fabricfit.api.conditions import Reason
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot, NodeInfo
from fabricfit.placement import kueuefloor
from fabricfit.placement.candidates import (
    Block,
    PlanCandidate,
    generate_candidates,
    job_sub_blocks,
)
from fabricfit.placement.constraints import NO_RESERVATIONS, eligible_nodes
from fabricfit.placement.costing import StepModel
from fabricfit.placement.decision import PlacementDecision, RankPlacement, bound_warnings
from fabricfit.placement.devices import device_view, enforces_devices, name_devices
from fabricfit.placement.feasibility import (
    capacity_in_units,
    capacity_reasons,
    largest_fit,
    max_domain_gpus,
)
from fabricfit.placement.improve import default_move_budget, improve
from fabricfit.placement.layout import RankLayout, build_layout, validate_layout
from fabricfit.placement.neighbours import Neighbours, quiet_candidates
from fabricfit.placement.packing import FreeCapacity, free_capacity, packing_loss
from fabricfit.placement.pairing import replica_pods
from fabricfit.placement.plugins import PlanContext, Plugin, plugins_for
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.scoring import Rejected, Scored, Scorer
from fabricfit.placement.serving import (
    SpreadGoal,
    block_ladder,
    careful_level,
    paired_candidate,
    replica_bestfit,
    spread_candidate,
)
from fabricfit.placement.slots import LeafDomain, build_leaf_domains
from fabricfit.placement.spares import SpareSet, spares_for

SATURATED_SCORE = 99.95
COMM_TIE = kueuefloor.PEER_TOLERANCE  # relative: a tie is no more communication than noise


@dataclass(frozen=True, slots=True)
class SearchTuning:
    """How the search scores and how far it climbs: the scoring plugins, and the local-move
    evaluations it may spend (None: by job size, ``improve.default_move_budget``)."""

    plugins: Sequence[Plugin] | None = None  # None: the request's (plugins.plugins_for)
    move_budget: int | None = None


@dataclass(frozen=True, slots=True)
class _Problem:
    """Everything the search needs, derived once per plan."""

    layout: RankLayout
    domains: tuple[LeafDomain, ...]
    blocks: tuple[Block, ...]
    unit_pods: int
    units_free: int
    rejected: Counter[str]
    extra: tuple[PlanCandidate, ...] = ()  # a served model's own candidates (``serving``)

    @property
    def units_needed(self) -> int:
        return sum(len(b) for b in self.blocks)


def plan_placement(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    profile: FabricProfile,
    *,
    reservations: Mapping[str, int] = NO_RESERVATIONS,
    tuning: SearchTuning | None = None,
    neighbours: Neighbours | None = None,
) -> PlacementDecision:
    """Plan where every pod and rank of ``request`` goes on ``snapshot`` (see module docstring).

    ``reservations`` maps node name → GPUs held by other plans not yet visible as pods (DRA
    devices other plans chose: pass ``placement.devices.device_view`` of the snapshot).
    ``tuning``: the plugins and the local-move budget (default: the request's plugins,
    ``plugins.plugins_for``, and by job size). ``neighbours``: the running jobs' link load;
    every candidate is then priced next to their traffic (``neighbours``). Who picks the GPUs
    is the request's ``gpu_choice``: when fabricfit does (DRA), the plan names every rank's
    device (``placement.devices``).
    """
    snapshot = device_view(snapshot, request)
    tuning = tuning if tuning is not None else SearchTuning()
    decision = _plan(snapshot, request, profile, reservations, (tuning, neighbours))
    decision = replace(decision, gpu_choice=request.gpu_choice)
    if enforces_devices(request, snapshot):
        return name_devices(decision, snapshot, request)
    return decision


def _plan(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    profile: FabricProfile,
    reservations: Mapping[str, int],
    settings: tuple[SearchTuning, Neighbours | None],
) -> PlacementDecision:
    tuning, neighbours = settings
    nodes, rejected = eligible_nodes(snapshot, request, reservations)
    spares = spares_for(snapshot, request, profile, reservations, eligible={n.name for n in nodes})
    fabric = profile_name(profile)
    reasons = validate_layout(
        request.parallelism,
        request.gpus_per_pod,
        experts=request.model.experts,
        max_domain_gpus=max_domain_gpus(snapshot.nodes),
        tensor_required=request.tensor_required,
    )
    if reasons:
        return PlacementDecision(
            feasible=False,
            fabric=fabric,
            groups={},
            reasons=reasons,
            spares=spares,
            failure=Reason.INSUFFICIENT_GPUS,  # the layout was valid; this cluster is too small
        )
    problem = _prepare(request, nodes, rejected, reservations, spares)
    if problem.units_free < problem.units_needed:
        return replace(_no_room(problem, snapshot, request, fabric), spares=spares)
    model = StepModel(snapshot, problem.layout, request, profile, neighbours)
    extra, goal = _serving_candidates(problem, snapshot, request, nodes)
    ctx = PlanContext(
        request=request,
        layout=problem.layout,
        domains=problem.domains,
        lower_bound=model.lower_bound(),
        replicas=replica_pods(problem.layout) if request.serving is not None else (),
        spread_goal=goal,
    )
    census = partial(free_capacity, snapshot, reservations)  # only when candidates tie
    busy = neighbours if neighbours is not None and len(neighbours.load) else None
    plugins = tuning.plugins if tuning.plugins is not None else plugins_for(request)
    scorer = Scorer(ctx, plugins, model)
    decision = _search(
        replace(problem, extra=tuple(extra)),
        scorer,
        census,
        fabric,
        move_budget=tuning.move_budget,
        neighbours=busy,
    )
    return replace(decision, spares=spares)


def _serving_candidates(
    problem: _Problem,
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    nodes: Sequence[NodeInfo],
) -> tuple[list[PlanCandidate], SpreadGoal | None]:
    """A served model's own candidates (``serving``): Kueue's, replica by replica (a peer:
    the plan never predicts more), spread, next to the partner."""
    serving = request.serving
    if serving is None:
        return [], None
    out: list[PlanCandidate] = []
    level = careful_level(request, nodes)
    peer = replica_bestfit(problem.blocks, problem.domains, level)
    if peer is not None:
        out.append(
            PlanCandidate(label=f"{kueuefloor.PEER_PREFIX}per replica at {level})", slots=peer)
        )
    goal = None
    if serving.spread != "None":
        spread = spread_candidate(problem.blocks, problem.domains, serving.spread)
        if spread is not None:
            out.append(spread[0])
            goal = spread[1]
    paired = paired_candidate(problem.blocks, problem.domains, snapshot, request, problem.layout)
    if paired is not None:
        out.append(paired)
    return out, goal


def _no_room(
    problem: _Problem, snapshot: ClusterSnapshot, request: PlacementRequest, fabric: str
) -> PlacementDecision:
    reasons = capacity_reasons(
        request,
        snapshot,
        units_needed=problem.units_needed,
        units_free=problem.units_free,
        unit_pods=problem.unit_pods,
        rejected=problem.rejected,
    )
    return PlacementDecision(
        feasible=False,
        fabric=fabric,
        groups=problem.layout.groups,
        reasons=reasons,
        largest_feasible=largest_fit(request, problem.units_free, problem.unit_pods),
        failure=Reason.INSUFFICIENT_GPUS,
    )


def _prepare(
    request: PlacementRequest,
    eligible: tuple[NodeInfo, ...],
    rejected: Counter[str],
    reservations: Mapping[str, int],
    spares: SpareSet,
) -> _Problem:
    """Layout, slots on the ``eligible`` nodes (spares left out) and blocks: the first cut of
    ``serving.block_ladder`` the free slots hold (with ``tensor: Preferred``, a job whose
    multi-pod tensor groups find no NVLink domain with room falls back to single-pod units; a
    served model's whole replicas step down to tensor groups first), else the last one."""
    layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
    nodes = _without_spares(eligible, spares, rejected)
    domains = build_leaf_domains(nodes, request.gpus_per_pod, reservations)
    problem: _Problem | None = None
    for blocks in block_ladder(request, layout, max_domain_gpus(nodes)):
        cut = _problem(layout, domains, blocks, rejected)
        if problem is not None and cut.unit_pods == problem.unit_pods:
            continue  # the same units: nothing new to try
        problem = cut
        if problem.units_free >= problem.units_needed:
            break
    assert problem is not None  # the ladder yields at least one cut
    return problem


def _without_spares(
    nodes: tuple[NodeInfo, ...], spares: SpareSet, rejected: Counter[str]
) -> tuple[NodeInfo, ...]:
    """``nodes`` minus the spares, each counted in ``rejected`` under one phrase."""
    held = set(spares.nodes)
    if not held:
        return nodes
    kept = tuple(n for n in nodes if n.name not in held)
    if len(kept) < len(nodes):
        phrase = f"kept free as spares ({spares.per_domain} per NVLink domain)"
        rejected[phrase] += len(nodes) - len(kept)
    return kept


def _problem(
    layout: RankLayout,
    domains: tuple[LeafDomain, ...],
    blocks: tuple[Block, ...],
    rejected: Counter[str],
) -> _Problem:
    unit_pods = max(len(u) for b in blocks for u in b)
    return _Problem(
        layout=layout,
        domains=domains,
        blocks=blocks,
        unit_pods=unit_pods,
        units_free=capacity_in_units(domains, unit_pods),
        rejected=rejected,
    )


def _search(
    problem: _Problem,
    scorer: Scorer,
    census: Callable[[], FreeCapacity],
    fabric: str,
    *,
    move_budget: int | None,
    neighbours: Neighbours | None,
) -> PlacementDecision:
    """Score every candidate (a served model's own too), hill-climb the best, build the
    decision."""
    sub_blocks = job_sub_blocks(problem.layout)
    candidates = list(generate_candidates(problem.blocks, problem.domains, sub_blocks))
    if neighbours is not None:
        candidates.extend(
            quiet_candidates(problem.blocks, problem.domains, neighbours, candidates, sub_blocks)
        )
    candidates.extend(kueuefloor.peer_candidates(problem.domains, problem.layout.pods))
    candidates.extend(problem.extra)
    results = [scorer.evaluate(c.label, c.slots) for c in candidates]
    scored = sorted((r for r in results if isinstance(r, Scored)), key=Scored.sort_key)
    if not scored:
        why = tuple(dict.fromkeys(r.reason for r in results if isinstance(r, Rejected)))
        return PlacementDecision(
            feasible=False,
            fabric=fabric,
            groups=problem.layout.groups,
            reasons=why or ("no candidate placement satisfied the hard constraints",),
            largest_feasible=largest_fit(scorer.ctx.request, problem.units_free, problem.unit_pods),
            failure=Reason.INSUFFICIENT_GPUS,
        )
    budget = default_move_budget(problem.layout.pods) if move_budget is None else move_budget
    if scored[0].scores.get("communication-time", 0.0) >= SATURATED_SCORE:
        budget = 0  # already at the lower bound: no move can shorten communication
    movable = [u[0] for b in problem.blocks for u in b if len(u) == 1]
    best, _ = improve(scorer, scored[0], problem.domains, movable, budget)
    chosen = _best_packed(
        kueuefloor.no_worse_than_peer(best, scored), scored, census, problem.layout
    )
    return _decision(chosen, scorer, problem.layout, fabric)


def _best_packed(
    chosen: Scored,
    scored: Sequence[Scored],
    census: Callable[[], FreeCapacity],
    layout: RankLayout,
) -> Scored:
    """Among ``chosen`` and the candidates that predict no more step communication (up to
    ``COMM_TIE``, never above the Kueue limit ``chosen`` met), the one that slows the running
    jobs least (GPU-seconds, ``neighbours``; 0 without them), then the one that sends the
    fewest bytes across the spine (on a full-bisection fabric crossing it costs nothing in the
    model, but it is traffic on shared links the job did not need), then the least packing loss
    (``packing``); equal keys keep the score order, ``chosen`` first. A cheaper candidate can
    be in the set: the score order weighs the small plugins too."""
    limit = min(chosen.predicted_seconds * (1.0 + COMM_TIE), kueuefloor.peer_limit(scored))
    ties = [chosen, *(s for s in scored if s is not chosen and s.predicted_seconds <= limit)]
    if len(ties) == 1:
        return chosen
    free = census()
    return min(
        ties,
        key=lambda s: (
            round(s.evaluated.predicted.added_to_others_gpu_seconds, 12),
            round(s.evaluated.predicted.spine_bytes_per_step),
            packing_loss(free, s.evaluated.slots, layout.gpus_per_pod),
        ),
    )


def profile_name(profile: FabricProfile) -> str:
    return str(getattr(profile, "name", ""))


def _decision(best: Scored, scorer: Scorer, layout: RankLayout, fabric: str) -> PlacementDecision:
    slots = best.evaluated.slots
    assignments = tuple(
        RankPlacement(
            rank=rank, node=slots[pod].node, gpu=slots[pod].gpus[local], pod=pod, local=local
        )
        for pod in range(layout.pods)
        for local, rank in enumerate(layout.pod_ranks(pod))
    )
    return PlacementDecision(
        feasible=True,
        fabric=fabric,
        groups=layout.groups,
        pods=tuple(s.node for s in slots),
        assignments=assignments,
        predicted=best.evaluated.predicted,
        lower_bound=scorer.ctx.lower_bound,
        reasons=scorer.explain(best),
        scores=best.scores,
        candidate=best.label,
        warnings=bound_warnings(best.evaluated.predicted, scorer.ctx.lower_bound),
        cross_rail=scorer.model.cross_rail(best.evaluated.ranks),
    )
