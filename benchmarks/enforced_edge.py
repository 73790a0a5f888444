"""The edge over Kueue TAS BestFit for partial-node pods, with the GPU choice enforced or not.

Run from the repository root::

    .venv/bin/python benchmarks/enforced_edge.py

A pod smaller than its node gets *some* GPUs of it. Which ones decides the rails its data- and
expert-parallel traffic runs on. Three ways of pricing the same jobs on the same snapshots
(``peer_regimes.py``'s cluster: 64 eight-GPU nodes, 2 spines x 2 rail groups x 16, empty, 24 %
or 50 % of GPUs held by seeded tenant pods of 1-8 GPUs), all by the same cost model:

* **convention** — what the earlier figures rested on: fabricfit's plan on the windows its
  search picked and the BestFit emulation on the windows it picked, neither enforced by
  anything (``gpu_choice`` enforced for both, on the synthetic snapshot);
* **not enforced** — the device plugin picks (``placement.handout``: a node's lowest free
  aligned windows, in the worse of two hand-out orders), for fabricfit's plan (made knowing it)
  and for the emulation's pods alike;
* **enforced** — fabricfit allocates the pods' DRA claims the devices it planned
  (``gpu_choice`` enforced), while the emulation's pods still get the device plugin's GPUs.

Where tenants sit on a node matters, so the cluster here has had churn: tenant pods of 1-8 GPUs
(``placement.py``'s mix) arrive on random nodes, each handed the lowest free aligned block as
the device plugin does, until 30 % more than the target is held, then random tenants leave
until the target (0, 24, 50 %) is: the free windows are wherever departures left them. The
device plugin and Kueue see counts only, so fabricfit (not enforced) and the emulation plan on
counts and are priced on the windows the plugin then really hands out on that node; enforced,
fabricfit plans on the very devices held (DRA publishes them) and gets what it planned.
``convention`` is the figure earlier documents gave: both priced on the count snapshot's
windows, as if whatever they picked were enforced.

``BF/ours`` > 1: fabricfit predicts less step communication than the emulation. Predictions, not
measurements.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import replace

import peer_regimes as regimes  # the script's own directory is sys.path[0]
import placement as bench
from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.costing import StepModel
from fabricfit.placement.handout import Handout
from fabricfit.placement.layout import build_layout
from fabricfit.placement.peers import kueue_bestfit
from fabricfit.placement.request import ENFORCED, NOT_ENFORCED, PlacementRequest
from fabricfit.placement.scoring import price_slots
from fabricfit.placement.search import plan_placement
from fabricfit.placement.slots import PodSlot, build_leaf_domains

FABRICS = ("h100-leaf-spine-2to1", "h100-rail-only")
JOBS = (
    *(j for j in regimes.JOBS if j.gpus_per_pod < bench.GPUS),
    bench.Job(
        "tp2 dp16, 2-GPU pods",
        Parallelism(tensor=2, data=16),
        ModelShape(parameters=7_000_000_000, hidden_size=4096, layers=32),
        gpus_per_pod=2,
    ),
    bench.Job(
        "moe tp2 pp2 dp8 ep8, 2-GPU pods",
        Parallelism(tensor=2, pipeline=2, data=8, expert=8),
        regimes.MOE,
        gpus_per_pod=2,
    ),
)
NODES = 64
CHURN = 0.30  # held beyond the target before tenants leave
Row = tuple[str, float, float, float]  # case, convention, not enforced, enforced (BF/ours)


def churned(
    occupancy: float, fabric: str, seed: int = 3
) -> tuple[ClusterSnapshot, ClusterSnapshot]:
    """(counts, devices): the same churned cluster as the device plugin sees it (free GPUs
    only) and as DRA publishes it (the held positions too); see the module doc."""
    base = bench.make_cluster(
        NODES, 0.0, seed=seed, profile=get_profile(fabric), rail_group_nodes=16, spine_rail_groups=2
    )
    rng = random.Random(seed)
    gpus = bench.GPUS
    tenants: list[tuple[int, frozenset[int]]] = []
    held: list[set[int]] = [set() for _ in base.nodes]
    sizes = [s for s, _ in bench.POD_MIX]
    weights = [w for _, w in bench.POD_MIX]
    while sum(map(len, held)) < min(0.95, occupancy + CHURN) * NODES * gpus and occupancy > 0:
        size, node = rng.choices(sizes, weights)[0], rng.randrange(NODES)
        start = next(
            (s for s in range(0, gpus, size) if held[node].isdisjoint(range(s, s + size))), None
        )
        if start is not None:
            held[node].update(range(start, start + size))
            tenants.append((node, frozenset(range(start, start + size))))
    rng.shuffle(tenants)
    while sum(map(len, held)) > occupancy * NODES * gpus:
        node, block = tenants.pop()
        held[node] -= block
    counts = [replace(n, free_gpus=gpus - len(h)) for n, h in zip(base.nodes, held, strict=True)]
    exact = [replace(n, held_gpus=frozenset(h)) for n, h in zip(counts, held, strict=True)]
    return replace(base, nodes=tuple(counts)), replace(base, nodes=tuple(exact))


def handed_out(
    model: StepModel, exact: ClusterSnapshot, pods: Sequence[str], gpus_per_pod: int
) -> float:
    """Step communication of pods on these nodes, on the windows the plugin hands out there."""
    domains = build_leaf_domains([exact.node(n) for n in dict.fromkeys(pods)], gpus_per_pod, {})
    free: dict[str, list[PodSlot]] = {}
    for domain in domains:
        for slot in domain.slots:
            free.setdefault(slot.node, []).append(slot)
    slots = [free[node].pop(0) for node in pods]  # any free window: the hand-out reorders
    return price_slots(model, Handout(domains), slots).predicted.step_comm_seconds


def edges(
    pair: tuple[ClusterSnapshot, ClusterSnapshot], request: PlacementRequest, fabric: str
) -> Row | None:
    """BF/ours three ways (see the module doc); None when a side cannot place the job."""
    counts, exact = pair
    profile = get_profile(fabric)
    layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
    g = request.gpus_per_pod
    peer = kueue_bestfit(
        build_leaf_domains([n for n in counts.nodes if n.free_gpus >= g], g, {}), layout.pods
    )
    convention = plan_placement(counts, replace(request, gpu_choice=ENFORCED), profile)
    handed = plan_placement(counts, replace(request, gpu_choice=NOT_ENFORCED), profile)
    enforced = plan_placement(exact, replace(request, gpu_choice=ENFORCED), profile)
    plans = (convention.predicted, handed.predicted, enforced.predicted)
    if peer is None or any(p is None for p in plans):
        return None
    counted, real = (
        StepModel(counts, layout, request, profile),
        StepModel(exact, layout, request, profile),
    )
    theirs_own = price_slots(counted, None, peer).predicted.step_comm_seconds
    theirs = handed_out(real, exact, [s.node for s in peer], g)
    ours_handed = handed_out(real, exact, handed.pods, g)
    assert convention.predicted is not None and enforced.predicted is not None
    return (
        "",
        theirs_own / convention.predicted.step_comm_seconds,
        theirs / ours_handed,
        theirs / enforced.predicted.step_comm_seconds,
    )


def rows_for(fabric: str) -> list[Row]:
    profile = get_profile(fabric)
    rows = []
    for occupancy in regimes.OCCUPANCY:
        pair = churned(occupancy, fabric)
        for spec in JOBS:
            job = bench.job_for(spec, profile)
            request = PlacementRequest(
                parallelism=job.parallelism, gpus_per_pod=job.gpus_per_pod, model=job.model
            )
            found = edges(pair, request, fabric)
            if found is not None:
                rows.append((f"{occupancy:.0%} used, {job.label}", *found[1:]))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    del argv
    print("BF/ours: the Kueue BestFit emulation's predicted step communication over fabricfit's")
    for fabric in FABRICS:
        rows = rows_for(fabric)
        print(f"\nfabric {fabric}")
        print(f"{'case':<44} {'convention':>10} {'not enforced':>12} {'enforced':>8}")
        for label, convention, handed, enforced in rows:
            print(f"{label:<44} {convention:>10.2f} {handed:>12.2f} {enforced:>8.2f}")
        for column, name in ((1, "convention"), (2, "not enforced"), (3, "enforced")):
            values = [float(r[column]) for r in rows]
            print(
                f"{fabric} {name}: geometric mean {statistics.geometric_mean(values):.2f}x, "
                f"range {min(values):.2f}-{max(values):.2f}x, >= 1.3x in "
                f"{sum(v >= 1.3 for v in values)} of {len(values)}, worse in "
                f"{sum(v < 1 - 1e-9 for v in values)}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
