"""Contention in a replay: the running jobs' link load, and what a start costs the jobs running.

Theory of operation
-------------------
With contention on, the replay keeps the link load of the trace's running jobs
(:class:`~fabricfit.placement.neighbours.Neighbours`) and hands it to every placer, so each
placement is priced next to the jobs running when it starts — fabricfit's and the peers' alike;
fabricfit's search also weighs what it would cost them, the peers do not look. When a job
starts, :func:`started` prices it once more against the load it joins to learn the seconds per
step each running job now loses (``placement.neighbours``), and records its traffic
(``placement.running``: the step time it records is its compute, ``duration ÷ steps`` of the
trace, plus its predicted communication) so that later jobs see it; its end removes it.

A running job slowed by a newcomer pays for the steps the two overlap: its remaining run, at
most the newcomer's run, divided by its step time, times the seconds it loses per step
(:func:`extension`); its end moves later by that much and its communication GPU-seconds grow
by its GPUs times that. The newcomer's own slowdown is in its predicted step communication.
What this leaves out, stated: a job already slowed is not sped up again when the newcomer
ends first (the overlap is bounded by the newcomer's run instead), and the link load keeps
each job's step time as it was when it started.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fabricfit.contention import JobTraffic
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.costing import StepModel
from fabricfit.placement.layout import build_layout
from fabricfit.placement.neighbours import Neighbours
from fabricfit.placement.running import located_traffic
from fabricfit.simulation.placers import Placed
from fabricfit.simulation.trace import TraceJob


@dataclass(frozen=True, slots=True)
class Started:
    """A job that starts next to running ones: its traffic (None: it shares no link) and the
    seconds per step each running job (by name) loses to it."""

    traffic: JobTraffic | None
    others: Mapping[str, float]


def started(
    neighbours: Neighbours,
    snapshot: ClusterSnapshot,
    job: TraceJob,
    placed: Placed,
    profile: FabricProfile,
) -> Started:
    """What ``job`` placed as ``placed`` on ``snapshot`` brings to the running ``neighbours``."""
    request = job.request
    if not placed.ranks:
        raise ValueError(f"placer did not say where the ranks of {job.name} sit")
    layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
    model = StepModel(snapshot, layout, request, profile, neighbours)
    others = model.assess(placed.ranks).others
    traffic = located_traffic(
        snapshot,
        request,
        profile,
        placed.ranks,
        key=job.name,
        comm_seconds=placed.predicted.step_comm_seconds,
    )
    return Started(traffic, others)


def extension(
    lost_per_step: float, step_seconds: float, remaining: float, newcomer_run: float
) -> float:
    """Seconds a running job's end moves when it loses ``lost_per_step`` per step of
    ``step_seconds`` for the time it overlaps the newcomer (see the module docstring)."""
    if lost_per_step <= 0 or step_seconds <= 0 or remaining <= 0:
        return 0.0
    return lost_per_step * min(remaining, newcomer_run) / step_seconds


def busiest_share(neighbours: Neighbours, job: JobTraffic) -> float:
    """The highest average load over capacity among ``job``'s links (a load only rises on
    the links of the job just added, so this tracks the busiest link of the replay)."""
    load, capacities = neighbours.load, neighbours.capacities
    return max((load.load(link) / capacities.of(link) for link in job.links), default=0.0)
