"""Planning next to running jobs: price a candidate with the traffic already on its links.

Theory of operation
-------------------
:class:`Neighbours` is what a plan is priced against: the running jobs' link load
(:class:`~fabricfit.contention.LinkLoad`) and the fabric's link capacities. ``plan_placement``
takes one (``neighbours=``); the search's cost bridge (``costing.StepModel``) then hands every
candidate's cost-model estimate to a :class:`NeighbourPricer`, which

1. follows the candidate's collectives onto the shared links (``contention.traffic``; NICs
   only on nodes where a running job has NIC traffic, the only NICs it can share),
2. adds to each dimension the seconds the running jobs' average load costs it on the links it
   shares (``contention.fairshare.own_slowdown``): the candidate's predicted step
   communication is now *with neighbours*,
3. turns the candidate's traffic into an average load (bytes per step over its step time:
   compute, ``contention.duty``, plus that communication) and asks what it would cost each
   running job on the links they share (``contention.fairshare.added_slowdown``), summed in
   seconds per their step and in GPU-seconds during one step of the candidate, which the
   ``neighbour-impact`` scoring plugin weighs.

Each running job's slowdown factors before the candidate are computed once per plan (the
pricer is a per-plan helper, like ``StepModel``). With no running job the pricer is not used
and planning is exactly what it was.

The other direction — a placed job turned into the traffic a link load adds — is
``placement.running``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from fabricfit.contention import (
    LEAF,
    DimensionTraffic,
    JobTraffic,
    Link,
    LinkCapacities,
    LinkLoad,
    added_slowdown,
    compute_seconds_per_step,
    dimension_traffic,
    factors_before,
    gpu_seconds,
    link_capacities,
    own_slowdown,
)
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot, GpuSlot
from fabricfit.placement.candidates import Block, PlanCandidate, generate_candidates
from fabricfit.placement.decision import StepTimes
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.slots import LeafDomain

QUIET_SPINES = 2  # with running jobs, the least loaded spines whose candidates are added

RankGroups = Mapping[str, Sequence[Sequence[int]]]


@dataclass(frozen=True)
class Neighbours:
    """The running jobs' link load and the link capacities of the fabric they share."""

    load: LinkLoad
    capacities: LinkCapacities

    def with_job(self, job: JobTraffic | None) -> Neighbours:
        return self if job is None else replace(self, load=self.load.add(job))

    def without(self, key: str) -> Neighbours:
        return replace(self, load=self.load.remove(key))


def neighbours_of(
    snapshot: ClusterSnapshot, profile: FabricProfile, jobs: Iterable[JobTraffic] = ()
) -> Neighbours:
    """Neighbours on ``snapshot``'s fabric made of ``jobs`` (none: an empty load)."""
    load = LinkLoad()
    for job in jobs:
        load = load.add(job)
    return Neighbours(load=load, capacities=link_capacities(snapshot, profile))


def _no_deltas() -> Mapping[str, float]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Assessment:
    """One placement priced next to the running jobs: its step times (with neighbours), its
    traffic, its step time, and the seconds per step each running job would lose."""

    times: StepTimes
    dimensions: tuple[DimensionTraffic, ...] = ()
    step_seconds: float = 0.0
    others: Mapping[str, float] = field(default_factory=_no_deltas)


class NeighbourPricer:
    """Prices candidates of one job next to ``neighbours`` (a per-plan helper, never shared)."""

    def __init__(
        self,
        neighbours: Neighbours,
        groups: RankGroups,
        request: PlacementRequest,
        profile: FabricProfile,
    ) -> None:
        self._neighbours = neighbours
        self._groups = groups
        self._request = request
        self._profile = profile
        self._nic_nodes = neighbours.load.nic_nodes
        self._before: dict[str, list[float]] = {}
        self.compute_seconds = compute_seconds(request, profile)

    def _factors_before(self, key: str) -> list[float]:
        found = self._before.get(key)
        if found is None:
            load, capacities = self._neighbours.load, self._neighbours.capacities
            found = self._before[key] = factors_before(load.job(key), load, capacities)
        return found

    def assess(self, ranks: Sequence[GpuSlot], alone: StepTimes) -> Assessment:
        """``alone`` (the cost model's estimate for ``ranks``) priced next to the neighbours."""
        request, load = self._request, self._neighbours.load
        capacities = self._neighbours.capacities
        if not len(load):
            quiet = replace(
                alone, neighbour_slowdown_seconds=0.0, slowdown_added_to_others_seconds=0.0
            )
            return Assessment(quiet, step_seconds=self.compute_seconds + alone.step_comm_seconds)
        dims = dimension_traffic(
            self._groups,
            ranks,
            request.parallelism,
            request.model,
            self._profile,
            nic_nodes=self._nic_nodes,
        )
        own = {d.dimension: own_slowdown(d, load, capacities) for d in dims}
        slowdown = sum(own.values())
        comm = alone.step_comm_seconds + slowdown
        step = max(self.compute_seconds + comm, sum(d.net_seconds for d in dims), 1e-9)
        average: dict[Link, float] = {}
        for dim in dims:
            for link, amount in dim.bytes_per_step.items():
                if load.users(link):
                    average[link] = average.get(link, 0.0) + amount / step
        others = added_slowdown(average.items(), load, capacities, self._factors_before)
        by_dimension = {k: v + own.get(k, 0.0) for k, v in alone.by_dimension.items()}
        times = replace(
            alone,
            step_comm_seconds=comm,
            by_dimension=MappingProxyType(by_dimension),
            neighbour_slowdown_seconds=slowdown,
            slowdown_added_to_others_seconds=sum(others.values()),
            added_to_others_gpu_seconds=gpu_seconds(others, load, step),
        )
        return Assessment(times, dims, step, MappingProxyType(others))


def compute_seconds(request: PlacementRequest, profile: FabricProfile) -> float:
    """Seconds one step of the job computes: declared, or derived (``contention.duty``)."""
    if request.compute_seconds_per_step is not None:
        return request.compute_seconds_per_step
    return compute_seconds_per_step(request.parallelism, request.model, profile)


def quiet_spines(
    domains: Sequence[LeafDomain], neighbours: Neighbours, limit: int
) -> tuple[str, ...]:
    """Up to ``limit`` spines of ``domains``, the least loaded first: by the busiest leaf
    uplink of their rail groups (average load over capacity), then by their summed load.
    Candidate generation keeps to the tightest spine that fits a job; next to running jobs
    the search also tries these, so a job that must cross rail groups can find quiet ones."""
    places: dict[str, set[str]] = {}
    for domain in domains:
        for slot in domain.slots:
            place = slot.rail_group if slot.rail_group is not None else "node:" + slot.node
            places.setdefault(domain.spine, set()).add(place)
    owner = {place: spine for spine, found in places.items() for place in found}
    busiest: dict[str, float] = dict.fromkeys(places, 0.0)
    total: dict[str, float] = dict.fromkeys(places, 0.0)
    capacities = neighbours.capacities
    for link, average in neighbours.load.links():
        spine = owner.get(link.place) if link.kind == LEAF else None
        if spine is None:
            continue
        share = average / capacities.of(link)
        busiest[spine] = max(busiest[spine], share)
        total[spine] += share
    ranked = sorted(places, key=lambda s: (busiest[s], total[s], s))
    return tuple(ranked[:limit])


def quiet_candidates(
    blocks: Sequence[Block],
    domains: Sequence[LeafDomain],
    neighbours: Neighbours,
    found: Sequence[PlanCandidate],
    sub_blocks: Mapping[int, int],
) -> list[PlanCandidate]:
    """The candidates of the ``QUIET_SPINES`` least loaded spines (``neighbours.quiet_spines``)
    alone, those not found already: the usual scopes keep to the tightest spine."""
    seen = {c.slots for c in found}
    out: list[PlanCandidate] = []
    for spine in quiet_spines(domains, neighbours, QUIET_SPINES):
        scoped = [d for d in domains if d.spine == spine]
        for candidate in generate_candidates(blocks, scoped, sub_blocks):
            if candidate.slots not in seen:
                seen.add(candidate.slots)
                out.append(replace(candidate, label=f"quiet {candidate.label}"))
    return out
