"""Placement benchmark: plan time, peak memory and plan quality vs three baselines.

Run from the repository root::

    .venv/bin/python benchmarks/placement.py            # full run (a few minutes)
    .venv/bin/python benchmarks/placement.py --quick    # reduced run

Clusters: 64, 512 and 4,096 eight-GPU nodes (rail groups of 32 nodes, racks of 4, spines of 16
rail groups), empty and 30 % / 60 % fragmented by existing pods (seeded mix of 1/2/4/8-GPU pods on
random nodes). Jobs: 64, 512, 1,024 and 4,096 GPUs with Megatron-style TP/PP/DP splits plus one
MoE job with expert parallelism. Plan time is wall-clock ``time.perf_counter`` around
``plan_placement`` (snapshot construction excluded; the snapshot is what the operator keeps per
reconcile), repeated, p50/p95 reported; peak memory is ``tracemalloc`` over one extra run. Every
plan — ours and the baselines' (``baselines.py``) — is priced by the same cost model.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass

from baselines import BASELINES  # the script's own directory is sys.path[0]
from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import ClusterSnapshot, FabricPlace, NodeInfo
from fabricfit.placement.costing import StepModel
from fabricfit.placement.layout import build_layout
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.search import plan_placement
from fabricfit.placement.slots import build_leaf_domains

GPUS = 8
RAIL_GROUP_NODES = 32
RACK_NODES = 4
SPINE_RAIL_GROUPS = 16
POD_MIX = ((8, 0.55), (4, 0.2), (2, 0.15), (1, 0.1))


@dataclass(frozen=True)
class Job:
    label: str
    parallelism: Parallelism
    model: ModelShape


JOBS = (
    Job(
        "64 GPU 13B tp8 pp2 dp4",
        Parallelism(tensor=8, pipeline=2, data=4),
        ModelShape(parameters=13_000_000_000, hidden_size=5120, layers=40, micro_batches=8),
    ),
    Job(
        "512 GPU 70B tp8 pp4 dp16",
        Parallelism(tensor=8, pipeline=4, data=16),
        ModelShape(parameters=70_000_000_000, hidden_size=8192, layers=80, micro_batches=16),
    ),
    Job(
        "512 GPU MoE tp8 ep8 dp64",
        Parallelism(tensor=8, data=64, expert=8),
        ModelShape(parameters=47_000_000_000, hidden_size=4096, layers=32, experts=64, top_k=2),
    ),
    Job(
        "1024 GPU 70B tp8 pp8 dp16",
        Parallelism(tensor=8, pipeline=8, data=16),
        ModelShape(parameters=70_000_000_000, hidden_size=8192, layers=80, micro_batches=32),
    ),
    Job(
        "4096 GPU 405B tp8 pp16 dp32",
        Parallelism(tensor=8, pipeline=16, data=32),
        ModelShape(parameters=405_000_000_000, hidden_size=16384, layers=126, micro_batches=64),
    ),
)


def make_cluster(nodes: int, fragmentation: float, seed: int = 7) -> ClusterSnapshot:
    """``nodes`` eight-GPU nodes, a ``fragmentation`` share of GPUs held by random pods."""
    rng = random.Random(seed)
    free = [GPUS] * nodes
    target = int(fragmentation * nodes * GPUS)
    used = 0
    sizes = [s for s, _ in POD_MIX]
    weights = [w for _, w in POD_MIX]
    while used < target:
        size = rng.choices(sizes, weights)[0]
        node = rng.randrange(nodes)
        if free[node] >= size:
            free[node] -= size
            used += size
    infos = []
    for i in range(nodes):
        group = i // RAIL_GROUP_NODES
        spine = f"spine-{group // SPINE_RAIL_GROUPS}"
        rail_group = f"{spine}/su-{group}"
        infos.append(
            NodeInfo(
                name=f"gpu-{i:05d}",
                gpus=GPUS,
                free_gpus=free[i],
                rails=GPUS,
                place=FabricPlace(
                    spine=spine,
                    rail_group=rail_group,
                    rack=f"{rail_group}/rack-{(i % RAIL_GROUP_NODES) // RACK_NODES}",
                    nvlink_domain=f"gpu-{i:05d}",
                ),
                fabric="dgx-h100",
            )
        )
    return ClusterSnapshot(nodes=tuple(infos))


def _request(job: Job) -> PlacementRequest:
    return PlacementRequest(parallelism=job.parallelism, gpus_per_pod=GPUS, model=job.model)


@dataclass(frozen=True)
class Row:
    cluster: str
    job: str
    p50_ms: float
    p95_ms: float
    peak_mib: float
    ours_ms: float | None
    baselines_ms: dict[str, float | None]


def measure(
    snapshot: ClusterSnapshot, job: Job, repeats: int
) -> tuple[list[float], float, float | None]:
    profile = get_profile("dgx-h100")
    request = _request(job)
    times: list[float] = []
    decision = None
    for _ in range(repeats):
        start = time.perf_counter()
        decision = plan_placement(snapshot, request, profile)
        times.append((time.perf_counter() - start) * 1e3)
    tracemalloc.start()
    plan_placement(snapshot, request, profile)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    ours = decision.predicted.step_comm_seconds * 1e3 if decision and decision.predicted else None
    return times, peak / 2**20, ours


def baseline_times(snapshot: ClusterSnapshot, job: Job) -> dict[str, float | None]:
    request = _request(job)
    layout = build_layout(request.parallelism, GPUS, request.rank_order)
    domains = build_leaf_domains([n for n in snapshot.nodes if n.free_gpus >= GPUS], GPUS, {})
    model = StepModel(snapshot, layout, request, get_profile("dgx-h100"))
    out: dict[str, float | None] = {}
    for name, place in BASELINES.items():
        slots = place(domains, layout.pods, 11)
        out[name] = (
            None
            if slots is None
            else model.predict(model.rank_slots(slots)).step_comm_seconds * 1e3
        )
    return out


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def run(cases: list[tuple[int, float, Job]], repeats: int) -> list[Row]:
    rows: list[Row] = []
    snapshots: dict[tuple[int, float], ClusterSnapshot] = {}
    for nodes, frag, job in cases:
        snapshot = snapshots.setdefault((nodes, frag), make_cluster(nodes, frag))
        if job.parallelism.world_size > nodes * GPUS:
            continue
        times, peak, ours = measure(snapshot, job, repeats)
        row = Row(
            f"{nodes} nodes, {frag:.0%} used",
            job.label,
            statistics.median(times),
            _percentile(times, 0.95),
            peak,
            ours,
            baseline_times(snapshot, job),
        )
        rows.append(row)
        print_row(row)
    return rows


def print_header() -> None:
    print(
        f"{'cluster':<22} {'job':<28} {'p50 ms':>8} {'p95 ms':>8} {'peak MiB':>9} "
        f"{'ours ms':>9} {'spread':>9} {'bestfit':>9} {'random':>9} {'bestfit/ours':>12}"
    )


def print_row(row: Row) -> None:
    b = row.baselines_ms
    ratio = (b["bestfit"] / row.ours_ms) if row.ours_ms and b.get("bestfit") else None
    print(
        f"{row.cluster:<22} {row.job:<28} {row.p50_ms:>8.1f} {row.p95_ms:>8.1f} "
        f"{row.peak_mib:>9.1f} {_fmt(row.ours_ms):>9} {_fmt(b['spread']):>9} "
        f"{_fmt(b['bestfit']):>9} {_fmt(b['random']):>9} {_fmt(ratio):>12}",
        flush=True,
    )


def print_verdict(rows: list[Row]) -> None:
    fragmented = [r for r in rows if not r.cluster.endswith(" 0% used") and r.ours_ms]
    worse = [
        (r.cluster, r.job, name)
        for r in fragmented
        for name, value in r.baselines_ms.items()
        if value is not None and r.ours_ms is not None and r.ours_ms > value * 1.0001
    ]
    ratios = [
        r.baselines_ms["bestfit"] / r.ours_ms
        for r in fragmented
        if r.ours_ms and r.baselines_ms.get("bestfit")
    ]
    print()
    print(f"fragmented cases: {len(fragmented)}; worse than a baseline: {len(worse)} {worse}")
    if ratios:
        print(
            f"BestFit/ours on fragmented clusters: mean {statistics.mean(ratios):.2f}x, "
            f"geometric mean {statistics.geometric_mean(ratios):.2f}x, min {min(ratios):.2f}x"
        )
    target = [
        r
        for r in rows
        if r.cluster.startswith("4096")
        and r.job.startswith("1024")
        and not r.cluster.endswith(" 0% used")
    ]
    for r in target:
        print(f"target 1024-GPU job on {r.cluster}: p50 {r.p50_ms:.1f} ms (goal ≤ 250 ms)")


def print_growth(rows: list[Row]) -> None:
    print()
    print("plan time growth (p50 ms), 30% fragmented:")
    jobs = sorted({r.job for r in rows}, key=lambda j: int(j.split()[0]))
    clusters = [c for c in ("64 nodes", "512 nodes", "4096 nodes")]
    print(f"{'job':<28} " + " ".join(f"{c:>12}" for c in clusters))
    for job in jobs:
        cells = []
        for c in clusters:
            hit = [
                r
                for r in rows
                if r.job == job and r.cluster.startswith(c + ",") and r.cluster.endswith("30% used")
            ]
            cells.append(f"{hit[0].p50_ms:>12.1f}" if hit else f"{'-':>12}")
        print(f"{job:<28} " + " ".join(cells))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer cases and repeats")
    args = parser.parse_args(argv)
    if args.quick:
        cases = [(n, f, j) for n in (64, 4096) for f in (0.0, 0.3) for j in JOBS[:4]]
        repeats = 3
    else:
        cases = [(n, f, j) for n in (64, 512, 4096) for f in (0.0, 0.3, 0.6) for j in JOBS]
        repeats = 9
    print_header()
    rows = run(cases, repeats)
    print_verdict(rows)
    print_growth(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
