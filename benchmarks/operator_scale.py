"""Scale, end to end: the real operator on a 100k-GPU simulated cluster.

Starts a private control plane tuned for size (``fabricfit_dev.cluster.controlplane.SCALE``:
more requests in flight, controller-manager and scheduler client limits raised, no audit log,
kwok node leases of 20 minutes), creates ``--nodes`` kwok DGX-H100 nodes (default 12,800 =
102,400 GPUs; rail groups of 32 nodes under spines of 8 rail groups, native topology labels) from
many threads, binds other tenants' pods straight to nodes (``spec.nodeName``; whole nodes and
slices, about ``--held`` of the GPUs, the demo's seeded layout), and runs ``fabricfit run`` as a
process of its own. Then, in pinned mode:

- a 1,024-GPU and an 8,192-GPU job (Indexed Jobs of 8-GPU pods, TP8 x DP), one after the other:
  time from TrainingTopology creation to ``Planned``, to every pod bound, and from the last
  bind to ``Placed`` (timestamps from the benchmark's own watches on the API server);
- a burst of ``--burst`` small jobs (1-4 pods of 4 or 8 GPUs) created at once: time until every
  one is Placed, the slowest Planned and Placed-after-last-bind;
- every bound pod's GPUs summed per node against the node's allocatable GPUs (no GPU
  double-booked), from the cluster.

The operator's RSS is sampled from ``/proc/<pid>/status`` (peak = ``VmHWM``), and the CPU seconds
each process (etcd, kube-apiserver, controller-manager, scheduler, kwok, operator, this script)
spent in each phase are printed, with the load average, to show which component limits the run.
Targets: RSS <= 600 MiB, Planned <= 3 s, Placed <= 2 s after the last bind, no GPU
double-booked; exit 1 when one fails.

    .venv/bin/python benchmarks/operator_scale.py                 # 12,800 nodes (make bench-scale)
    .venv/bin/python benchmarks/operator_scale.py --nodes 3200

Uses ``$KUBECONFIG`` when set (no per-component CPU then), else starts and stops its own.

Measured 2026-12-04 at 12,800 nodes on the project's two-core machine, otherwise quiet (load
average up to 6.5 during the run; docs/benchmarks/operator-scale.md): whole run 7 min 47 s;
census 11.2 s after start; 1,024-GPU job Planned 1.64 s, bound 13.6 s, Placed 0.71 s after the
last bind; 8,192-GPU job Planned 1.88 s, bound 59.5 s, Placed 1.22 s after the last bind; burst
200/200 Placed in 98.4 s; 0 GPUs double-booked; RSS 361 MiB.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabricfit.api.constants import GROUP, PLURAL, VERSION
from fabricfit_dev import paths
from fabricfit_dev.cluster import binaries, controlplane, fakenodes, jobs, scale
from fabricfit_dev.cluster.processes import free_port
from fabricfit_dev.demo.workloads import plan_tenants
from fabricfit_dev.kube import has_condition
from fabricfit_dev.operator import operator_argv, operator_env
from fabricfit_dev.waiting import WaitTimeoutError, wait_for

POOL_LABEL = "fabricfit.dev/pool"
RSS_TARGET_MIB = 600.0
PLANNED_TARGET_S = 3.0
PLACED_AFTER_BIND_TARGET_S = 2.0
BIG_JOBS_GPUS = (1024, 8192)
TT_PATH = f"/apis/{GROUP}/{VERSION}/namespaces/{{ns}}/{PLURAL}"


def indexed_job(name: str, pods: int, gpus: int, pool: str) -> dict[str, Any]:
    """The test library's suspended Indexed Job of ``pods`` pods of ``gpus`` GPUs on ``pool``."""
    return jobs.indexed_job(name, pods, pool, gpus)


def topology(name: str, pods: int, gpus: int) -> dict[str, Any]:
    """The TrainingTopology of the Job ``name``: TP ``gpus`` (one pod) x DP ``pods``."""
    return jobs.topology(name, name, {"tensor": gpus, "data": pods}, gpusPerPod=gpus)


def burst_shapes(jobs: int, seed: int) -> list[tuple[int, int]]:
    """(pods, GPUs per pod) of each small job: 1-4 pods of 4 or 8 GPUs."""
    rng = random.Random(seed)
    return [(rng.choice([1, 1, 2, 2, 4]), rng.choice([8, 8, 4])) for _ in range(jobs)]


@dataclass
class Timeline:
    """What the benchmark's watches saw, in its monotonic clock: per TrainingTopology the
    first time each condition was True, per pod the first time it was bound."""

    created: dict[str, float] = field(default_factory=dict)
    condition: dict[tuple[str, str], float] = field(default_factory=dict)
    bound: dict[str, dict[str, float]] = field(default_factory=dict)  # job -> pod -> time
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on_topology(self, _type: str, tt: dict[str, Any]) -> None:
        now, name = time.monotonic(), tt["metadata"]["name"]
        with self.lock:
            for cond in ("Planned", "Placed"):
                if has_condition(tt, cond):
                    self.condition.setdefault((name, cond), now)

    def on_pod(self, _type: str, pod: dict[str, Any]) -> None:
        now = time.monotonic()
        job = ((pod.get("metadata") or {}).get("labels") or {}).get("job-name")
        if job and (pod.get("spec") or {}).get("nodeName"):
            with self.lock:
                self.bound.setdefault(job, {}).setdefault(pod["metadata"]["name"], now)

    def figures(self, name: str, pods: int) -> dict[str, float]:
        """Seconds from creation to Planned, to the last bind, to Placed; NaN when not seen."""
        nan = float("nan")
        with self.lock:
            start = self.created.get(name, nan)
            planned = self.condition.get((name, "Planned"), nan) - start
            placed = self.condition.get((name, "Placed"), nan) - start
            binds = self.bound.get(name, {})
            last = max(binds.values()) - start if len(binds) >= pods else nan
        return {"planned": planned, "bound": last, "placed": placed, "after_bind": placed - last}


class Sampler(threading.Thread):
    """Peak RSS of the operator and the 1-minute load average, every half second."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.rss_kib, self.load = pid, 0, 0.0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.5):
            self.rss_kib = max(self.rss_kib, scale.proc_status_kib(self.pid, "VmRSS"))
            self.load = max(self.load, os.getloadavg()[0])

    @property
    def peak_mib(self) -> float:
        return max(self.rss_kib, scale.proc_status_kib(self.pid, "VmHWM")) / 1024


def wait(check: Callable[[], bool], timeout: float, what: str, every: float = 1.0) -> float:
    """Seconds until ``check()`` held: the test library's wait loop, timed."""
    started = time.monotonic()
    wait_for(check, timeout, every, what)
    return time.monotonic() - started


def metric(url: str, name: str) -> float | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            text = resp.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


@dataclass
class Run:
    api: scale.RawApi
    args: argparse.Namespace
    log_dir: Path
    pids: dict[str, int]
    say: Callable[[str], None]
    rows: list[tuple[str, str, str, bool]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pool: str = ""
    namespace: str = ""  # the jobs'
    timeline: Timeline = field(default_factory=Timeline)

    def row(self, measure: str, value: str, target: str = "", ok: bool = True) -> None:
        self.rows.append((measure, value, target, ok))


def make_nodes(run: Run, pool: str) -> list[dict[str, Any]]:
    fabric = scale.superpod_fabric(run.args.nodes, prefix=pool, pool=pool)
    manifests = fakenodes.node_manifests(fabric)
    made = scale.create_all(
        lambda body: run.api.create("/api/v1/nodes", body), manifests, run.args.workers
    )
    run.say(f"{made.count} nodes created in {made.seconds:.1f} s ({made.rate:.0f}/s)")
    if made.failures:
        raise RuntimeError(f"{made.failures} nodes not created: {'; '.join(made.errors)}")
    run.row("nodes created (rate)", f"{made.count} in {made.seconds:.0f} s", f"{made.rate:.0f}/s")

    def ready() -> bool:
        nodes = run.api.list("/api/v1/nodes", selector=f"{POOL_LABEL}={pool}")
        lifted = scale.create_all(
            lift, [n for n in nodes if scale.untaint_ops(n)], run.args.workers
        )
        return sum(1 for n in nodes if schedulable(n)) + lifted.count >= len(manifests)

    def lift(node: dict[str, Any]) -> None:
        status = run.api.patch(f"/api/v1/nodes/{node['metadata']['name']}", scale.untaint_ops(node))
        if status >= 300:
            raise RuntimeError(f"HTTP {status}")  # changed meanwhile: the next round retries

    took = wait(ready, run.args.timeout, "nodes Ready", every=2.0)
    run.say(f"nodes Ready and untainted {took:.1f} s later (the not-ready taint lifted by us)")
    run.row("nodes Ready + untainted after", f"{took:.0f} s")
    return manifests


def schedulable(node: dict[str, Any]) -> bool:
    return scale.ready(node) and scale.NOT_READY not in scale.taint_keys(node)


def make_namespace(run: Run, name: str) -> None:
    run.api.create("/api/v1/namespaces", {"metadata": {"name": name}})
    wait(
        lambda: bool(run.api.list(f"/api/v1/namespaces/{name}/serviceaccounts")),
        60,
        f"namespace {name}'s service account",
        every=0.2,
    )


def make_tenants(run: Run, names: list[str], namespace: str) -> int:
    tenants = plan_tenants(names, run.args.held, run.args.seed)
    bodies = [
        {
            "metadata": {"name": t.name, "labels": {"app": "tenant"}},
            "spec": {
                "nodeName": t.node,
                "containers": [
                    {
                        "name": "work",
                        "image": "example.invalid/tenant:1",
                        "resources": {"limits": {"nvidia.com/gpu": str(t.gpus)}},
                    }
                ],
            },
        }
        for t in tenants
    ]
    path = f"/api/v1/namespaces/{namespace}/pods"
    made = scale.create_all(lambda body: run.api.create(path, body), bodies, run.args.workers)
    if made.failures:
        raise RuntimeError(f"{made.failures} tenant pods not created: {'; '.join(made.errors)}")
    gpus = sum(t.gpus for t in tenants)
    run.say(f"{made.count} tenant pods ({gpus} GPUs) in {made.seconds:.1f} s ({made.rate:.0f}/s)")

    def running() -> bool:
        pods = run.api.list(path)
        return sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running") >= len(
            bodies
        )

    took = wait(running, run.args.timeout, "tenant pods Running", every=3.0)
    share = gpus / (len(names) * 8)
    run.row(
        "tenant pods (GPUs held)",
        f"{made.count} ({gpus}, {share:.0%})",
        f"{made.rate:.0f}/s, Running {took:.0f} s later",
    )
    return gpus


@contextlib.contextmanager
def operator_process(run: Run, kubeconfig: Path, metrics_port: int) -> Iterator[int]:
    log = (run.log_dir / "operator.log").open("wb")
    argv = operator_argv(resync_seconds=run.args.resync_seconds, metrics_port=metrics_port)
    proc = subprocess.Popen(
        argv, stdout=log, stderr=subprocess.STDOUT, env=operator_env(kubeconfig)
    )
    try:
        yield proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def start_watches(run: Run, namespace: str, timeline: Timeline, stop: threading.Event) -> None:
    for path, handler in (
        (TT_PATH.format(ns=namespace), timeline.on_topology),
        (f"/api/v1/namespaces/{namespace}/pods", timeline.on_pod),
    ):
        thread = threading.Thread(
            target=run.api.watch, args=(path, handler, stop.is_set), daemon=True
        )
        thread.start()
    time.sleep(1.0)  # let both watches open


def submit(run: Run, name: str, pods: int, gpus: int) -> None:
    namespace = run.namespace
    run.api.create(
        f"/apis/batch/v1/namespaces/{namespace}/jobs", indexed_job(name, pods, gpus, run.pool)
    )
    with run.timeline.lock:
        run.timeline.created[name] = time.monotonic()
    run.api.create(TT_PATH.format(ns=namespace), topology(name, pods, gpus))


def big_job(run: Run, gpus: int) -> None:
    name, pods, timeline = f"big-{gpus}", gpus // 8, run.timeline
    submit(run, name, pods, 8)

    def placed() -> bool:
        return (name, "Placed") in timeline.condition

    try:
        wait(placed, run.args.timeout, f"{name} Placed", every=0.2)
    except WaitTimeoutError as err:
        run.notes.append(str(err))
    f = timeline.figures(name, pods)
    run.say(
        f"{name}: Planned {f['planned']:.2f} s, all {pods} pods bound {f['bound']:.1f} s, "
        f"Placed {f['after_bind']:.2f} s after the last bind"
    )
    run.row(
        f"{gpus}-GPU job ({pods} pods): Planned",
        f"{f['planned']:.2f} s",
        f"<= {PLANNED_TARGET_S:.0f} s",
        f["planned"] <= PLANNED_TARGET_S,
    )
    run.row(f"{gpus}-GPU job: every pod bound", f"{f['bound']:.1f} s")
    run.row(
        f"{gpus}-GPU job: Placed after last bind",
        f"{f['after_bind']:.2f} s",
        f"<= {PLACED_AFTER_BIND_TARGET_S:.0f} s",
        f["after_bind"] <= PLACED_AFTER_BIND_TARGET_S,
    )


def burst(run: Run) -> None:
    timeline = run.timeline
    shapes = burst_shapes(run.args.burst, run.args.seed)
    jobs = [(f"b{i}", pods, gpus) for i, (pods, gpus) in enumerate(shapes)]
    started = time.monotonic()
    made = scale.create_all(
        lambda body: submit(run, *body["job"]),
        [{"metadata": {"name": j[0]}, "job": j} for j in jobs],
        min(run.args.workers, 16),
    )
    if made.failures:
        run.notes.append(f"{made.failures} burst jobs not created: {'; '.join(made.errors)}")
    run.say(f"{made.count} burst jobs created in {made.seconds:.1f} s")

    def drained() -> bool:
        return all((j[0], "Placed") in timeline.condition for j in jobs)

    try:
        wait(drained, run.args.timeout, "burst drained", every=0.5)
    except WaitTimeoutError as err:
        run.notes.append(str(err))
    drain = time.monotonic() - started
    figures = [timeline.figures(name, pods) for name, pods, _ in jobs]
    placed = sum(1 for name, _, _ in jobs if (name, "Placed") in timeline.condition)
    worst_planned = max(f["planned"] for f in figures)
    worst_after = max(f["after_bind"] for f in figures)
    gpus = sum(p * g for _, p, g in jobs)
    run.say(f"burst: {placed}/{len(jobs)} Placed after {drain:.1f} s")
    run.row(
        f"burst of {len(jobs)} jobs ({gpus} GPUs): all Placed",
        f"{placed}/{len(jobs)} in {drain:.1f} s",
        "all",
        placed == len(jobs),
    )
    run.row("burst: slowest Planned", f"{worst_planned:.1f} s")
    run.row("burst: slowest Placed after last bind", f"{worst_after:.2f} s")


def check_booking(run: Run) -> None:
    nodes = run.api.list("/api/v1/nodes", selector=f"{POOL_LABEL}={run.pool}")
    pods = run.api.list("/api/v1/pods")
    book = scale.booking(nodes, pods)
    over = book.overbooked
    for node, (used, cap) in list(over.items())[:5]:
        run.notes.append(f"node {node}: {used} GPUs bound, {cap} allocatable")
    run.row(
        "GPUs double-booked (nodes over capacity)",
        f"{len(over)} of {len(nodes)}",
        "0",
        not over,
    )
    run.row("GPUs held at the end", f"{book.held} of {book.total} ({book.held / book.total:.0%})")


def measure(run: Run, kubeconfig: Path) -> None:
    run.pool = f"scale{uuid.uuid4().hex[:4]}"
    meter = scale.CpuMeter(dict(run.pids, benchmark=os.getpid()))
    meter.start()
    manifests = make_nodes(run, run.pool)
    meter.mark("nodes")
    names = [m["metadata"]["name"] for m in manifests]
    tenants_ns, jobs_ns = f"tenants-{run.pool}", f"jobs-{run.pool}"
    make_namespace(run, tenants_ns)
    make_namespace(run, jobs_ns)
    make_tenants(run, names, tenants_ns)
    meter.mark("tenant pods")
    run.namespace, timeline, stop = jobs_ns, run.timeline, threading.Event()
    port = free_port()
    with operator_process(run, kubeconfig, port) as pid:
        meter.pids = {**meter.pids, "operator": pid}
        sampler = Sampler(pid)
        sampler.start()
        total = len(names) * 8
        url = f"http://127.0.0.1:{port}/metrics"
        took = wait(
            lambda: metric(url, "fabricfit_schedulable_gpus") == total,
            run.args.timeout,
            "the operator's census of every GPU",
        )
        run.say(f"operator counted all {total} GPUs {took:.1f} s after start")
        run.row("operator start -> census of every GPU", f"{took:.1f} s")
        meter.mark("operator start")
        start_watches(run, jobs_ns, timeline, stop)
        for gpus in run.args.big:
            big_job(run, gpus)
            meter.mark(f"{gpus}-GPU job")
        burst(run)
        meter.mark("burst")
        check_booking(run)
        sampler.done.set()
        peak = sampler.peak_mib
        run.row(
            "operator peak RSS",
            f"{peak:.0f} MiB",
            f"<= {RSS_TARGET_MIB:.0f} MiB",
            peak <= RSS_TARGET_MIB,
        )
        run.row("load average (1 min), peak during the run", f"{sampler.load:.1f}", "2 cores")
        stop.set()
    print_cpu(meter)


def print_cpu(meter: scale.CpuMeter) -> None:
    names = list(meter.phases[-1][2])
    print("\nCPU seconds per phase (from /proc/<pid>/stat):\n")
    print("| phase | wall s | " + " | ".join(names) + " |")
    print("|---|---:|" + "---:|" * len(names))
    for phase, wall, used in meter.phases:
        cells = " | ".join(f"{used.get(n, 0.0):.1f}" for n in names)
        print(f"| {phase} | {wall:.1f} | {cells} |")


def print_table(run: Run) -> bool:
    nodes = run.args.nodes
    print(f"\nfabricfit at scale: {nodes} kwok DGX-H100 nodes, {nodes * 8} GPUs\n")
    print("| measure | value | target | |")
    print("|---|---:|---|---|")
    for measure_, value, target, ok in run.rows:
        print(f"| {measure_} | {value} | {target} | {'' if ok else 'MISSED'} |")
    for note in run.notes:
        print(f"- {note}")
    return all(ok for *_, ok in run.rows) and not run.notes


def gpu_sizes(text: str) -> tuple[int, ...]:
    sizes = tuple(int(part) for part in text.split(",") if part.strip())
    if not sizes or any(s < 8 or s % 8 for s in sizes):
        raise argparse.ArgumentTypeError(f"expected multiples of 8 GPUs, e.g. 1024,8192: {text}")
    return sizes


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=12800, help="kwok nodes (multiple of 32)")
    parser.add_argument("--held", type=float, default=0.25, help="share of GPUs tenants hold")
    parser.add_argument("--burst", type=int, default=200, help="small jobs in the burst")
    parser.add_argument(
        "--big", type=gpu_sizes, default=BIG_JOBS_GPUS, help="GPUs of each big job, comma-separated"
    )
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--workers", type=int, default=32, help="threads creating objects")
    parser.add_argument("--resync-seconds", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per phase")
    args = parser.parse_args(argv)
    try:
        scale.superpod_fabric(args.nodes, "x", "x")
    except ValueError as err:
        parser.exit(2, f"operator_scale.py: {err}\n")
    if not 0.0 <= args.held <= 0.5:
        parser.exit(2, f"operator_scale.py: --held must be within 0-0.5: {args.held}\n")
    if args.burst < 0 or args.workers < 1:
        parser.exit(2, "operator_scale.py: --burst must be >= 0 and --workers >= 1\n")
    needed = sum(args.big) + 4 * 8 * args.burst
    if needed > args.nodes * 8 * (1 - args.held) * 0.9:
        parser.exit(2, f"operator_scale.py: --nodes {args.nodes} too small for {needed} GPUs\n")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    log_dir = Path(tempfile.mkdtemp(prefix="fabricfit-scale-"))

    def say(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)

    given = os.environ.get("KUBECONFIG")
    if given:
        run = Run(scale.RawApi(Path(given), args.workers * 2), args, log_dir, {}, say)
        apply_crd(Path(given))
        return finish(run, Path(given), clean=True)
    os.environ["FABRICFIT_STATE_DIR"] = str(log_dir / "cluster")
    state = controlplane.up(
        binaries.require(), lambda m: say(f"[cluster] {m}"), tuning=controlplane.SCALE
    )
    try:
        pids = {p.name: p.pid for p in state.processes}
        run = Run(scale.RawApi(state.kubeconfig, args.workers * 2), args, log_dir, pids, say)
        apply_crd(state.kubeconfig)
        return finish(run, state.kubeconfig)
    finally:
        controlplane.down(lambda _msg: None)


def apply_crd(kubeconfig: Path) -> None:
    kubectl = [str(binaries.locate().kubectl), f"--kubeconfig={kubeconfig}"]
    subprocess.run([*kubectl, "apply", "-f", str(paths.CRDS)], check=True, capture_output=True)


def clean_up(run: Run) -> None:
    """On a cluster we did not start: remove our namespaces and nodes."""
    if not run.pool:
        return
    for ns in (f"tenants-{run.pool}", f"jobs-{run.pool}"):
        run.api.delete(f"/api/v1/namespaces/{ns}")
    nodes = run.api.list("/api/v1/nodes", selector=f"{POOL_LABEL}={run.pool}")
    scale.create_all(
        lambda n: run.api.delete(f"/api/v1/nodes/{n['metadata']['name']}"), nodes, run.args.workers
    )


def finish(run: Run, kubeconfig: Path, *, clean: bool = False) -> int:
    try:
        measure(run, kubeconfig)
    except (WaitTimeoutError, RuntimeError) as err:
        run.notes.append(f"stopped: {err}")
    finally:
        if clean:
            clean_up(run)
    ok = print_table(run)
    print(f"\nlogs: {run.log_dir}")
    print(json.dumps({"load_average_now": os.getloadavg()}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
