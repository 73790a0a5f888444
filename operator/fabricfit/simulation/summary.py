"""Figures of one replay: queueing delay, utilisation, communication, fragmentation.

Theory of operation
-------------------
Waits are over placed jobs (mean and nearest-rank p95). Utilisation and the largest rail-group
job are step functions of time (each sample holds until the next), averaged over the makespan
— from 0 to the last end — so two placers that finish at different times are each averaged over
their own run. Communication GPU-seconds are ``GPUs × steps × predicted step communication``
summed over placed jobs; their share is of all GPU-seconds the jobs held. With contention they
include the time lost to other jobs' traffic (each job's own slowdown at its start, and the
slowdown later jobs added to it), which is also reported apart. Spine bytes are
``steps × bytes per step crossing above the leaf``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fabricfit.simulation.cluster import Sample
from fabricfit.simulation.replay import Replay


@dataclass(frozen=True, slots=True)
class Summary:
    placed: int
    unplaceable: int
    wait_mean_s: float
    wait_p95_s: float
    makespan_s: float
    utilisation_mean: float  # fraction of all GPUs, time-weighted over the makespan
    comm_gpu_seconds: float
    comm_share: float  # of the GPU-seconds the placed jobs held
    contention_gpu_seconds: float  # of comm_gpu_seconds, lost to other jobs' traffic
    spine_bytes: float
    largest_rail_group_gpus_mean: float  # time-weighted over the makespan
    largest_rail_group_gpus_min: int


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def time_mean(samples: Sequence[Sample], end: float, value: str) -> float:
    """Time-weighted mean of a sample field over ``[first sample, end]``."""
    if not samples:
        return 0.0
    start = samples[0].time
    if end <= start:
        return float(getattr(samples[-1], value))
    total = 0.0
    for here, after in zip(samples, [*samples[1:], None], strict=True):
        until = min(end, after.time if after is not None else end)
        total += float(getattr(here, value)) * max(0.0, until - here.time)
    return total / (end - start)


def summarize(result: Replay) -> Summary:
    placed = [j for j in result.jobs if j.start is not None and j.end is not None]
    waits = [j.wait for j in placed if j.wait is not None]
    makespan = max((j.end for j in placed if j.end is not None), default=0.0)
    held = sum(j.gpus * ((j.end or 0.0) - (j.start or 0.0)) for j in placed)
    comm = sum(j.comm_gpu_seconds for j in placed)
    in_window = [s for s in result.samples if s.time <= makespan] or list(result.samples[:1])
    utilisation = time_mean(in_window, makespan, "used_gpus") / max(1, result.total_gpus)
    return Summary(
        placed=len(placed),
        unplaceable=len(result.jobs) - len(placed),
        wait_mean_s=sum(waits) / len(waits) if waits else 0.0,
        wait_p95_s=percentile(waits, 0.95),
        makespan_s=makespan,
        utilisation_mean=utilisation,
        comm_gpu_seconds=comm,
        comm_share=comm / held if held else 0.0,
        contention_gpu_seconds=sum(j.contention_gpu_seconds for j in placed),
        spine_bytes=sum(j.spine_bytes for j in placed),
        largest_rail_group_gpus_mean=time_mean(in_window, makespan, "largest_rail_group_gpus"),
        largest_rail_group_gpus_min=min((s.largest_rail_group_gpus for s in in_window), default=0),
    )
