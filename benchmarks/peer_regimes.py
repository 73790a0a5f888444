"""Where fabricfit beats Kueue TAS BestFit, where it ties: per fabric, job shape and occupancy.

Run from the repository root::

    .venv/bin/python benchmarks/peer_regimes.py

The cluster is the one of issue #16's measurement: 64 eight-GPU nodes, 2 spines x 2 rail groups
x 16, racks of 4 (on ``gb200-nvl72``: 128 four-GPU trays, NVL72 racks of 18 trays, 2 racks per
rail group), empty, 24 % or 50 % of GPUs held by seeded tenant pods of 1-8 GPUs. Per job,
fabricfit's plan (``plan_placement``) and the Kueue TAS BestFit emulation
(``fabricfit.placement.peers.kueue_bestfit``: preferred at the rail-group level, ranks in
lexicographic order of the pods' topology values) are priced by the same cost model on the same
snapshot, both on the GPUs the device plugin hands out (``placement.handout``: the job is not
enforced; ``enforced_edge.py`` compares with device-exact plans). ``BF/ours`` > 1 means
fabricfit predicts less step communication; ``bound`` is the
cost model's lower bound for the job on that hardware. Predictions, not measurements.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import placement as bench  # the script's own directory is sys.path[0]
from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.fabric.profiles import get_profile
from fabricfit.placement.costing import StepModel
from fabricfit.placement.handout import Handout
from fabricfit.placement.layout import build_layout
from fabricfit.placement.peers import kueue_bestfit
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.scoring import price_slots
from fabricfit.placement.search import plan_placement
from fabricfit.placement.slots import build_leaf_domains

FABRICS = ("dgx-h100", "h100-leaf-spine-2to1", "h100-rail-only", "gb200-nvl72")
OCCUPANCY = (0.0, 0.24, 0.5)
MOE = ModelShape(parameters=47_000_000_000, hidden_size=4096, layers=32, experts=64, top_k=2)
DENSE_70B = ModelShape(parameters=70_000_000_000, hidden_size=8192, layers=80, micro_batches=16)
JOBS = (
    bench.Job("dense tp8 pp4 dp4, 16 pods", Parallelism(tensor=8, pipeline=4, data=4), DENSE_70B),
    bench.Job(
        "moe tp2 pp4 dp8 ep8, 4-GPU pods",
        Parallelism(tensor=2, pipeline=4, data=8, expert=8),
        MOE,
        gpus_per_pod=4,
    ),
    bench.Job(
        "zero-3 tp4 dp4, 4-GPU pods",
        Parallelism(tensor=4, data=4),
        ModelShape(parameters=8_000_000_000, hidden_size=4096, layers=32, zero_stage=3),
        gpus_per_pod=4,
    ),
    bench.Job(
        "tp4 dp16, 4-GPU pods",
        Parallelism(tensor=4, data=16),
        ModelShape(parameters=7_000_000_000, hidden_size=4096, layers=32),
        gpus_per_pod=4,
    ),
    bench.Job(
        "dense tp8 pp2 dp16, 2 rail groups",
        Parallelism(tensor=8, pipeline=2, data=16),
        DENSE_70B,
    ),
    bench.Job("moe tp8 ep8 dp16, 16 pods", Parallelism(tensor=8, data=16, expert=8), MOE),
)


def ratios_for(fabric: str) -> list[tuple[str, float, float, float, float]]:
    profile = get_profile(fabric)
    nodes = 64 * 8 // profile.gpus_per_node
    rows = []
    for occupancy in OCCUPANCY:
        snapshot = bench.make_cluster(
            nodes, occupancy, seed=3, profile=profile, rail_group_nodes=16, spine_rail_groups=2
        )
        for spec in JOBS:
            job = bench.job_for(spec, profile)
            request = PlacementRequest(
                parallelism=job.parallelism, gpus_per_pod=job.gpus_per_pod, model=job.model
            )
            decision = plan_placement(snapshot, request, profile)
            layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
            g = request.gpus_per_pod
            domains = build_leaf_domains([n for n in snapshot.nodes if n.free_gpus >= g], g, {})
            peer = kueue_bestfit(domains, layout.pods)
            if peer is None or decision.predicted is None or decision.lower_bound is None:
                continue
            model = StepModel(snapshot, layout, request, profile)
            # The emulation's pods get the device plugin's GPUs (placement.handout), as the
            # plan, not enforced by default, is priced on them too.
            theirs = price_slots(model, Handout(domains), peer).predicted.step_comm_seconds
            ours = decision.predicted.step_comm_seconds
            bound = decision.lower_bound.step_comm_seconds
            rows.append((f"{occupancy:.0%} used, {job.label}", ours, theirs, theirs / ours, bound))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    del argv
    for fabric in FABRICS:
        rows = ratios_for(fabric)
        print(f"\nfabric {fabric}")
        print(f"{'case':<48} {'ours ms':>8} {'BestFit ms':>10} {'BF/ours':>7} {'bound ms':>8}")
        for label, ours, theirs, ratio, bound in rows:
            print(
                f"{label:<48} {ours * 1e3:>8.1f} {theirs * 1e3:>10.1f} {ratio:>7.2f} "
                f"{bound * 1e3:>8.1f}"
            )
        ratios = [r[3] for r in rows]
        wins = sum(r >= 1.3 for r in ratios)
        ties = sum(r < 1.005 for r in ratios)
        worse = sum(r < 1 - 1e-9 for r in ratios)
        print(
            f"{fabric}: {len(rows)} cases; >= 1.3x better in {wins}, tie (< 0.5 %) in {ties}, "
            f"worse in {worse}; geometric mean {statistics.geometric_mean(ratios):.2f}x"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
