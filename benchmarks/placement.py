"""Placement benchmark: plan time, peak memory and plan quality vs three baselines.

Run from the repository root::

    .venv/bin/python benchmarks/placement.py            # full run (a few minutes)
    .venv/bin/python benchmarks/placement.py --quick    # reduced run

Clusters: 64, 512 and 4,096 eight-GPU nodes (rail groups of 32 nodes, racks of 4, spines of 16
rail groups), empty and 30 % / 60 % fragmented by existing pods (seeded mix of 1/2/4/8-GPU pods on
random nodes). Jobs: 64 to 4,096 GPUs with Megatron-style TP/PP/DP splits, an FSDP job, a job of
4-GPU pods and an MoE job with expert parallelism. Four fabrics, each a preset: ``dgx-h100``
(full bisection), ``h100-leaf-spine-2to1``, ``h100-rail-only`` and ``gb200-nvl72`` (the same node
count of 4-GPU trays, 18 trays per NVLink domain, a rack per domain). Plan time is
wall-clock ``time.perf_counter`` and CPU ``time.process_time`` (which a busy machine inflates
less) around ``plan_placement`` (snapshot construction excluded: the operator keeps one snapshot
per reconcile), repeated, p50/p95 reported; peak memory is ``tracemalloc`` over one extra run.
Every plan, ours and the baselines' (``baselines.py``: the package's peers plus a random
floor), is priced by the same cost model; ``BF/ours`` is the Kueue TAS BestFit emulation's
predicted step communication over fabricfit's (> 1: fabricfit is better).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass, replace

from baselines import BASELINES  # the script's own directory is sys.path[0]
from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.fabric.profiles import FabricProfile, get_profile
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
    gpus_per_pod: int = GPUS


JOBS = (
    Job(
        "64 GPU 13B tp8 pp2 dp4",
        Parallelism(tensor=8, pipeline=2, data=4),
        ModelShape(parameters=13_000_000_000, hidden_size=5120, layers=40, micro_batches=8),
    ),
    Job(
        "256 GPU 8B FSDP dp256",
        Parallelism(tensor=1, data=256),
        ModelShape(parameters=8_000_000_000, hidden_size=4096, layers=32, zero_stage=3),
    ),
    Job(
        "64 GPU 7B 4-GPU pods tp4 dp16",
        Parallelism(tensor=4, data=16),
        ModelShape(parameters=7_000_000_000, hidden_size=4096, layers=32),
        gpus_per_pod=4,
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


NVL72_TRAYS = 18  # 4-GPU trays per GB200 NVL72 rack (one NVLink domain)


def fabrics() -> dict[str, FabricProfile]:
    """The presets the table compares, full bisection first."""
    names = ("dgx-h100", "h100-leaf-spine-2to1", "h100-rail-only", "gb200-nvl72")
    return {name: get_profile(name) for name in names}


def make_cluster(
    nodes: int,
    fragmentation: float,
    *,
    seed: int = 7,
    profile: FabricProfile | None = None,
    rail_group_nodes: int = RAIL_GROUP_NODES,
    spine_rail_groups: int = SPINE_RAIL_GROUPS,
) -> ClusterSnapshot:
    """``nodes`` nodes of the profile's size (8-GPU nodes; 4-GPU trays in NVL72 racks), a
    ``fragmentation`` share of GPUs held by random pods."""
    gpus = profile.gpus_per_node if profile is not None else GPUS
    domain_nodes = max(1, profile.gpus_per_nvlink_domain // gpus) if profile is not None else 1
    rng = random.Random(seed)
    free = [gpus] * nodes
    target = int(fragmentation * nodes * gpus)
    used = 0
    sizes = [s for s, _ in POD_MIX if s <= gpus]
    weights = [w for s, w in POD_MIX if s <= gpus]
    while used < target:
        size = rng.choices(sizes, weights)[0]
        node = rng.randrange(nodes)
        if free[node] >= size:
            free[node] -= size
            used += size
    rack_nodes = domain_nodes if domain_nodes > 1 else RACK_NODES
    group_nodes = rail_group_nodes if domain_nodes == 1 else 2 * domain_nodes
    infos = []
    for i in range(nodes):
        group = i // group_nodes
        spine = f"spine-{group // spine_rail_groups}"
        rail_group = f"{spine}/su-{group}"
        rack = f"{rail_group}/rack-{(i % group_nodes) // rack_nodes}"
        infos.append(
            NodeInfo(
                name=f"gpu-{i:05d}",
                gpus=gpus,
                free_gpus=free[i],
                rails=gpus,
                place=FabricPlace(
                    spine=spine,
                    rail_group=rail_group,
                    rack=rack,
                    nvlink_domain=rack if domain_nodes > 1 else f"gpu-{i:05d}",
                ),
                fabric=profile.name if profile is not None else "dgx-h100",
            )
        )
    return ClusterSnapshot(nodes=tuple(infos))


def job_for(job: Job, profile: FabricProfile) -> Job:
    """The job as it runs on ``profile``: pods no larger than a node (4-GPU trays on NVL72,
    where TP8 then spans two trays of one NVLink domain)."""
    if job.gpus_per_pod <= profile.gpus_per_node:
        return job
    return replace(job, gpus_per_pod=profile.gpus_per_node)


def _request(job: Job) -> PlacementRequest:
    return PlacementRequest(
        parallelism=job.parallelism, gpus_per_pod=job.gpus_per_pod, model=job.model
    )


@dataclass(frozen=True)
class Row:
    fabric: str
    nodes: int
    fragmentation: float
    job: str
    p50_ms: float
    p95_ms: float
    cpu_p50_ms: float
    peak_mib: float
    ours_ms: float | None
    baselines_ms: dict[str, float | None]

    @property
    def cluster(self) -> str:
        return f"{self.nodes} nodes, {self.fragmentation:.0%} used"


def measure(
    snapshot: ClusterSnapshot, job: Job, profile: FabricProfile, repeats: int
) -> tuple[list[float], list[float], float, float | None]:
    """Wall and CPU plan times (ms), peak traced memory (MiB), our predicted step comm (ms)."""
    request = _request(job)
    times: list[float] = []
    cpu_times: list[float] = []
    decision = None
    for _ in range(repeats):
        start, cpu_start = time.perf_counter(), time.process_time()
        decision = plan_placement(snapshot, request, profile)
        times.append((time.perf_counter() - start) * 1e3)
        cpu_times.append((time.process_time() - cpu_start) * 1e3)
    tracemalloc.start()
    plan_placement(snapshot, request, profile)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    ours = None
    if decision is not None and decision.predicted is not None:
        ours = decision.predicted.step_comm_seconds * 1e3
    return times, cpu_times, peak / 2**20, ours


def baseline_times(
    snapshot: ClusterSnapshot, job: Job, profile: FabricProfile
) -> dict[str, float | None]:
    request = _request(job)
    g = job.gpus_per_pod
    layout = build_layout(request.parallelism, g, request.rank_order)
    domains = build_leaf_domains([n for n in snapshot.nodes if n.free_gpus >= g], g, {})
    model = StepModel(snapshot, layout, request, profile)
    out: dict[str, float | None] = {}
    for name, place in BASELINES.items():
        slots = place(domains, layout.pods, 11)
        if slots is None:
            out[name] = None
        else:
            out[name] = model.predict(model.rank_slots(slots)).step_comm_seconds * 1e3
    return out


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def run(cases: list[tuple[int, float, Job]], repeats: int) -> list[Row]:
    rows: list[Row] = []
    snapshots: dict[tuple[int, float, int, int], ClusterSnapshot] = {}
    for fabric, profile in fabrics().items():
        print(f"\nfabric {fabric}")
        print_header()
        for nodes, frag, spec in cases:
            key = (nodes, frag, profile.gpus_per_node, profile.gpus_per_nvlink_domain)
            snapshot = snapshots.get(key) or make_cluster(nodes, frag, profile=profile)
            snapshots[key] = snapshot
            job = job_for(spec, profile)
            if job.parallelism.world_size > nodes * profile.gpus_per_node:
                continue
            times, cpu_times, peak, ours = measure(snapshot, job, profile, repeats)
            row = Row(
                fabric,
                nodes,
                frag,
                job.label,
                statistics.median(times),
                _percentile(times, 0.95),
                statistics.median(cpu_times),
                peak,
                ours,
                baseline_times(snapshot, job, profile),
            )
            rows.append(row)
            print_row(row)
    return rows


def print_header() -> None:
    print(
        f"{'cluster':<20} {'job':<27} {'p50 ms':>7} {'p95 ms':>7} {'cpu p50':>7} {'MiB':>5} "
        f"{'ours ms':>8} {'spread':>8} {'bestfit':>8} {'random':>8} {'BF/ours':>7}"
    )


def print_row(row: Row) -> None:
    b = row.baselines_ms
    bestfit = b.get("bestfit")
    ratio = bestfit / row.ours_ms if row.ours_ms and bestfit else None
    print(
        f"{row.cluster:<20} {row.job:<27} {row.p50_ms:>7.1f} {row.p95_ms:>7.1f} "
        f"{row.cpu_p50_ms:>7.1f} {row.peak_mib:>5.1f} {_fmt(row.ours_ms):>8} "
        f"{_fmt(b['spread']):>8} {_fmt(bestfit):>8} {_fmt(b['random']):>8} {_fmt(ratio, 2):>7}",
        flush=True,
    )


def print_verdict(rows: list[Row]) -> None:
    print()
    for fabric in fabrics():
        fragmented = [r for r in rows if r.fabric == fabric and r.fragmentation > 0 and r.ours_ms]
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
        print(
            f"{fabric}: {len(fragmented)} placed fragmented cases; "
            f"worse than some baseline in {len(worse)} {worse}"
        )
        if ratios:
            print(
                f"  BestFit/ours: mean {statistics.mean(ratios):.2f}x, "
                f"geometric mean {statistics.geometric_mean(ratios):.2f}x, "
                f"min {min(ratios):.2f}x, max {max(ratios):.2f}x"
            )
    for r in rows:
        if r.nodes == 4096 and r.job.startswith("1024") and r.fragmentation > 0:
            print(
                f"target: 1024-GPU job, {r.cluster}, {r.fabric}: p50 {r.p50_ms:.1f} ms, "
                f"p95 {r.p95_ms:.1f} ms, CPU p50 {r.cpu_p50_ms:.1f} ms (goal p50 ≤ 250 ms)"
            )


def print_growth(rows: list[Row]) -> None:
    fabric = next(iter(fabrics()))
    print()
    print(f"plan time growth, CPU p50 ms ({fabric}; per cluster: empty / 30% / 60% used):")
    sizes = sorted({r.nodes for r in rows})
    print(f"{'job':<27} " + " ".join(f"{str(n) + ' nodes':>22}" for n in sizes))
    for job in [j.label for j in JOBS]:
        cells = []
        for n in sizes:
            hits = {
                r.fragmentation: r.cpu_p50_ms
                for r in rows
                if r.fabric == fabric and r.job == job and r.nodes == n
            }
            cells.append(" / ".join(_fmt(hits.get(f)) for f in (0.0, 0.3, 0.6)))
        print(f"{job:<27} " + " ".join(f"{c:>22}" for c in cells))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer cases and repeats")
    args = parser.parse_args(argv)
    if args.quick:
        jobs = [JOBS[0], JOBS[2], JOBS[3], JOBS[5]]
        cases = [(n, f, j) for n in (64, 4096) for f in (0.0, 0.3) for j in jobs]
        repeats = 3
    else:
        cases = [(n, f, j) for n in (64, 512, 4096) for f in (0.0, 0.3, 0.6) for j in JOBS]
        repeats = 7
    rows = run(cases, repeats)
    print_verdict(rows)
    print_growth(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
