"""The operator's per-plan path at scale, in memory: the real reconcile without a control plane.

``benchmarks/operator_scale.py`` measures the operator end to end on kwok nodes, but on a
loaded machine its figures are mostly waiting. This benchmark drives the same code a
TrainingTopology's create event runs (``reconcile.service.reconcile`` with the views
``handlers.common.views_from`` builds from the node and bound-pod mirrors and kopf-like indexes)
against the in-memory API server of the shell unit tests (``fabricfit_dev.memapi``), so every cost
left is the operator's own CPU:

- ``--nodes`` DGX-H100 nodes (default 12,800; rail groups of 32 nodes under spines of 8, as
  ``operator_scale.py`` lays them out), listed into a ``kube.mirror.Mirror`` page by page;
- other tenants' pods holding about ``--held`` of the GPUs (``demo.workloads.plan_tenants``),
  listed into ``reconcile.cluster_pods.ClusterPods``;
- a 1,024-GPU and an 8,192-GPU job (suspended Indexed Jobs of 8-GPU pods, TP8 x DP), then
  ``--burst`` small jobs (1-4 pods of 4 or 8 GPUs) planned one after another, each seeing the
  reservations before it (kopf's TrainingTopology index is refreshed after every reconcile, as
  the watch would), and each job's pods bound to their planned nodes before the next plan (so
  every snapshot differs from the last); then one resync of every small job (its pods bound: the
  plan kept, its nodes' health checked).

Per reconcile it reports wall-clock (``time.perf_counter``) and CPU (``time.process_time``)
seconds (with the garbage collector tuned and the start-up listing frozen as ``fabricfit run``
does), and the process's peak RSS (``VmHWM`` of ``/proc/self/status``; it includes the
in-memory API server's copies of every object, which the operator does not hold). ``--profile``
runs the burst and the 8,192-GPU job under cProfile and prints the top entries.

    .venv/bin/python benchmarks/operator_path.py                # 12,800 nodes, 200 small jobs
    .venv/bin/python benchmarks/operator_path.py --nodes 1280 --burst 40 --profile
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import cProfile
import gc
import io
import pstats
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fabricfit.api.constants import (
    GROUP,
    JOB_COMPLETION_INDEX_LABEL,
    PLURAL,
    TOPOLOGY_LABEL,
    VERSION,
)
from fabricfit.cli import run
from fabricfit.handlers.common import views_from
from fabricfit.kube.mirror import Mirror
from fabricfit.kube.rest import path_for
from fabricfit.reconcile import planning, service
from fabricfit.reconcile.cluster_pods import ClusterPods
from fabricfit.reconcile.context import OperatorConfig, OperatorState, Views
from fabricfit.reconcile.inventory import holding_of, node_entry, slim_pod
from fabricfit_dev.cluster import fakenodes, scale
from fabricfit_dev.demo.workloads import plan_tenants, tenant_manifest
from fabricfit_dev.memapi import FakeApi
from operator_scale import burst_shapes, indexed_job, topology

ROOT = Path(__file__).resolve().parents[1]

JOBS_NS, TENANTS_NS = "jobs", "tenants"
TT_API = f"{GROUP}/{VERSION}"


class Listing:
    """The paged LIST answers a ``Mirror`` asks for, from fixed objects (no watch follows)."""

    def __init__(self, items: Sequence[dict[str, Any]]) -> None:
        self.items = items

    async def request(self, method: str, path: str) -> dict[str, Any]:
        query = parse_qs(urlsplit(path).query)
        limit = int(query.get("limit", ["500"])[0])
        start = int(query.get("continue", ["0"])[0])
        page = self.items[start : start + limit]
        more = start + limit < len(self.items)
        meta = {"resourceVersion": "1", **({"continue": str(start + limit)} if more else {})}
        return {"items": page, "metadata": meta}

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncIterator[dict[str, Any]]:
        """A watch on which nothing happens: the benchmark's cluster changes only through it."""
        await asyncio.Event().wait()
        yield {}


@dataclass
class Cluster:
    """The API server, the operator's mirrors and kopf-like indexes, and its state."""

    api: FakeApi
    nodes: Mirror
    others: ClusterPods
    state: OperatorState
    pods_index: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    tt_index: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    watches: list[asyncio.Task[None]] = field(default_factory=list)

    def views_of(self) -> Callable[[], Views]:
        return views_from(self.nodes.values, self.pods_index, self.tt_index, self.others.pods)

    def bind(self, name: str, nodes: Sequence[str], gpus: int) -> None:
        """The job's pods bound to their planned nodes, as kopf's pod index then shows them (the
        Job controller, the pins and kube-scheduler are not part of this benchmark)."""
        job = indexed_job(name, len(nodes), gpus, "path")
        for index, node in enumerate(nodes):
            meta = {"namespace": JOBS_NS, "name": f"{name}-{index}", "uid": f"uid-{name}-{index}"}
            meta["labels"] = {TOPOLOGY_LABEL: name, JOB_COMPLETION_INDEX_LABEL: str(index)}
            spec = {**job["spec"]["template"]["spec"], "nodeName": node}
            pod = slim_pod({"metadata": meta, "spec": spec, "status": {"phase": "Running"}})
            self.pods_index[(JOBS_NS, meta["name"])] = [pod]

    def watched(self, name: str) -> dict[str, Any]:
        """Refresh the TrainingTopology index from the API server, as kopf's watch would."""
        body = copy.deepcopy(self.api.objects[tt_path(name)])
        self.tt_index[(JOBS_NS, name)] = [holding_of(body)]
        return body


def tt_path(name: str) -> str:
    return path_for(TT_API, PLURAL, JOBS_NS, name)


async def build_cluster(nodes: int, held: float, seed: int) -> Cluster:
    fabric = scale.superpod_fabric(nodes, prefix="gpu", pool="path")
    manifests = [fakenodes.as_ready(m) for m in fakenodes.node_manifests(fabric)]
    tenants = plan_tenants([m["metadata"]["name"] for m in manifests], held, seed)
    pods = []
    for tenant in tenants:
        pod = tenant_manifest(tenant)
        pod["metadata"].update(namespace=TENANTS_NS, uid=f"uid-{tenant.name}")
        pods.append({**pod, "status": {"phase": "Running"}})
    api = FakeApi()
    node_mirror = Mirror(Listing(manifests), ("v1", "nodes"), node_entry)
    others = ClusterPods(Listing(pods), ())
    state = OperatorState(config=OperatorConfig(), rest=api)  # type: ignore[arg-type]
    cluster = Cluster(api, node_mirror, others, state)
    for mirror in (node_mirror, others):
        cluster.watches.append(asyncio.get_running_loop().create_task(mirror.run()))
        await mirror.synced.wait()
    gc.freeze()  # as the operator's start-up does once the mirrors are filled
    return cluster


@dataclass
class Timing:
    wall_seconds: float
    cpu_seconds: float


async def reconcile(cluster: Cluster, name: str) -> tuple[Timing, service.Outcome]:
    body = cluster.watched(name)
    wall, cpu = time.perf_counter(), time.process_time()
    outcome = await service.reconcile(body, cluster.state, cluster.views_of())
    timing = Timing(time.perf_counter() - wall, time.process_time() - cpu)
    cluster.watched(name)
    return timing, outcome


async def submit(cluster: Cluster, name: str, pods: int, gpus: int) -> Timing:
    job = indexed_job(name, pods, gpus, "path")
    job["metadata"]["namespace"] = JOBS_NS
    cluster.api.put(path_for("batch/v1", "jobs", JOBS_NS, name), job)
    tt = topology(name, pods, gpus)
    tt["metadata"].update(namespace=JOBS_NS, generation=1, uid=f"uid-{name}")
    cluster.api.put(tt_path(name), tt)
    timing, outcome = await reconcile(cluster, name)
    planned = [c for c in outcome.status.get("conditions") or [] if c["type"] == "Planned"]
    if not planned or planned[0]["status"] != "True":
        raise RuntimeError(f"{name} not planned: {planned}")
    cluster.bind(name, outcome.plan.pods, gpus)
    return timing


def self_kib(field_name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    return 0


def summary(timings: Sequence[Timing]) -> str:
    walls = sorted(t.wall_seconds * 1000 for t in timings)
    cpus = sorted(t.cpu_seconds * 1000 for t in timings)
    p95 = walls[min(len(walls) - 1, round(0.95 * (len(walls) - 1)))]
    return (
        f"{statistics.median(walls):.0f} / {p95:.0f} / {walls[-1]:.0f} ms wall, "
        f"{statistics.median(cpus):.0f} ms CPU median, {sum(cpus) / 1000:.1f} s CPU in all"
    )


@contextlib.contextmanager
def profiled(what: str, on: bool, top: int) -> Iterator[None]:
    """cProfile the block when ``on``, then print its top entries by cumulative and own time."""
    if not on:
        yield
        return
    profile = cProfile.Profile()
    profile.enable()
    yield
    profile.disable()
    for order in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats(order).print_stats(top)
        lines = out.getvalue().splitlines()
        start = next(i for i, line in enumerate(lines) if "ncalls" in line)
        print(f"\n{what}: top {top} by {order}\n")
        print("\n".join(lines[start : start + top + 1]))


def seconds(timing: Timing) -> str:
    return f"{timing.wall_seconds:.2f} s wall, {timing.cpu_seconds:.2f} s CPU"


async def measure(args: argparse.Namespace) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    wall = time.perf_counter()
    cluster = await build_cluster(args.nodes, args.held, args.seed)
    made = f"{len(cluster.nodes)} nodes, {len(cluster.others)} pods"
    rows.append(("cluster in memory", f"{made} in {time.perf_counter() - wall:.1f} s"))
    wall, cpu = time.perf_counter(), time.process_time()
    planning.fresh_snapshot(cluster.state, cluster.views_of()(), "auto")  # what the census warms
    cold = Timing(time.perf_counter() - wall, time.process_time() - cpu)
    rows.append(("first snapshot (cold facts memo)", seconds(cold)))
    set_up_mib = self_kib("VmHWM") / 1024
    for gpus in args.big:
        with profiled(f"{gpus}-GPU job", args.profile and gpus == max(args.big), args.top):
            timing = await submit(cluster, f"big-{gpus}", gpus // 8, 8)
        rows.append(
            (f"{gpus}-GPU job ({gpus // 8} pods x 8): its planning reconcile", seconds(timing))
        )
    shapes = burst_shapes(args.burst, args.seed)
    with profiled(f"burst of {len(shapes)}", args.profile, args.top):
        small = [await submit(cluster, f"b{i}", p, g) for i, (p, g) in enumerate(shapes)]
    gpus = sum(p * g for p, g in shapes)
    label = f"{len(shapes)} small jobs ({gpus} GPUs) in a row, per reconcile: p50 / p95 / max"
    rows.append((label, summary(small)))
    resync = [(await reconcile(cluster, f"b{i}"))[0] for i in range(len(shapes))]
    label = "resync of each small job (pods bound, plan kept): p50 / p95 / max"
    rows.append((label, summary(resync)))
    peak_mib = self_kib("VmHWM") / 1024
    rows.append(
        ("peak RSS (whole process) / after set-up", f"{peak_mib:.0f} / {set_up_mib:.0f} MiB")
    )
    for task in cluster.watches:
        task.cancel()
    await asyncio.gather(*cluster.watches, return_exceptions=True)
    return rows


def sizes(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part.strip())


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=12800, help="nodes (multiple of 32)")
    parser.add_argument("--held", type=float, default=0.25, help="share of GPUs tenants hold")
    parser.add_argument("--burst", type=int, default=200, help="small jobs planned in a row")
    parser.add_argument(
        "--big", type=sizes, default=(1024, 8192), help="GPUs of each big job, comma-separated"
    )
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--profile", action="store_true", help="cProfile the burst, biggest job")
    parser.add_argument("--top", type=int, default=25, help="profile entries shown")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    thresholds = gc.get_threshold()
    run.tune_gc()  # the collector thresholds ``fabricfit run`` sets
    try:
        rows = asyncio.run(measure(args))
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
    print(
        f"\nfabricfit reconcile path, in memory: {args.nodes} nodes, {args.nodes * 8} GPUs, "
        f"{args.held:.0%} held by tenants\n"
    )
    print("| measure | value |\n|---|---|")
    for measure_, value in rows:
        print(f"| {measure_} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
