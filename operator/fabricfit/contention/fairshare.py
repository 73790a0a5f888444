"""How much a job slows down on links it shares, and how much it slows the jobs already there.

Theory of operation
-------------------
The model is max-min fair sharing among flows (Bertsekas & Gallager, *Data Networks*, §6.5):
on a saturated link every flow gets the same rate unless it wants less. NCCL jobs of one fabric
open flows of the same kind (one per channel and queue pair, each demanding its NIC's share),
so on a link of capacity ``C`` a job demanding ``p`` bytes/s while it communicates, next to
running jobs whose flows put ``ρ`` bytes/s on it *on average*, runs at the fraction
``1 / s`` of its demand, with

    s = max(1, (p + ρ) / C)

— the neighbours' flows count with their duty cycle (a job that communicates a third of its
step is on the link a third of the time: a mean-field reading, optimistic for bursty
neighbours whose bursts coincide). A collective goes at the pace of its slowest flow, so a
dimension's slowdown factor is the largest ``s`` over the links it uses; alone it would be
the largest ``p / C`` (a job can saturate an uplink by itself). Its neighbour slowdown is

    network seconds × (s_with − s_alone)

added to the cost model's own price of the dimension (which already charges oversubscription
as if the fabric were busy; see ``docs/concepts/contention.md`` for why the two add up).

The slowdown a new job adds to a running job ``k`` is the same computation from ``k``'s side:
on each link both use, ``k``'s dimensions see the new job's *average* load added to ``ρ``;
``k``'s factor per dimension before is its largest ``s`` over all its links (computed once per
decision), after is the larger of that and the factors on the shared links.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from fabricfit.contention.links import Link, LinkCapacities
from fabricfit.contention.load import JobTraffic, LinkLoad
from fabricfit.contention.traffic import DimensionTraffic


def slowdown_factor(demand: float, others: float, capacity: float) -> float:
    """How many times slower than ``demand`` a flow set runs next to ``others`` (bytes/s)."""
    if capacity <= 0:
        return 1.0
    return max(1.0, (demand + others) / capacity)


def own_slowdown(dimension: DimensionTraffic, load: LinkLoad, capacities: LinkCapacities) -> float:
    """Seconds per step ``dimension`` loses to the running jobs on the links it shares."""
    net = dimension.net_seconds
    if net <= 0:
        return 0.0
    alone = shared = 1.0
    for link, amount in dimension.bytes_per_step.items():
        demand = amount / net
        capacity = capacities.of(link)
        alone = max(alone, demand / capacity)
        others = load.load(link)
        if others > 0:
            shared = max(shared, (demand + others) / capacity)
    return net * (max(shared, alone) - alone)


def factors_before(job: JobTraffic, load: LinkLoad, capacities: LinkCapacities) -> list[float]:
    """Per dimension of running ``job``: its slowdown factor on the load as it is."""
    factors = [1.0] * len(job.dimensions)
    for link, (average, peaks) in job.links.items():
        others = load.load(link) - average
        capacity = capacities.of(link)
        for index, peak in peaks:
            factors[index] = max(factors[index], slowdown_factor(peak, others, capacity))
    return factors


def added_slowdown(
    average: Iterable[tuple[Link, float]],
    load: LinkLoad,
    capacities: LinkCapacities,
    before: Callable[[str], list[float]],
) -> dict[str, float]:
    """Seconds per step each running job would lose if a job with these average loads
    (``(link, bytes/s)`` pairs) joined; ``before(key)`` gives that job's factors now."""
    after: dict[str, list[float]] = {}
    for link, extra in average:
        users = load.users(link)
        if not users or extra <= 0:
            continue
        capacity = capacities.of(link)
        total = load.load(link)
        for key in users:
            job = load.job(key)
            own, peaks = job.links[link]
            factors = after.get(key)
            if factors is None:
                factors = after[key] = list(before(key))
            for index, peak in peaks:
                factor = slowdown_factor(peak, total - own + extra, capacity)
                factors[index] = max(factors[index], factor)
    return {key: _seconds(load.job(key), before(key), factors) for key, factors in after.items()}


def _seconds(job: JobTraffic, before: list[float], after: list[float]) -> float:
    return sum(
        dim.net_seconds * (new - old)
        for dim, old, new in zip(job.dimensions, before, after, strict=True)
    )


def gpu_seconds(deltas: Mapping[str, float], load: LinkLoad, step_seconds: float) -> float:
    """GPU-seconds the running jobs lose during one ``step_seconds`` step of the new job:
    each job's loss per its own step × its GPUs × its steps in that time."""
    return sum(
        delta * load.job(key).gpus * step_seconds / load.job(key).step_seconds
        for key, delta in deltas.items()
    )
