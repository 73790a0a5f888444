"""Replay a job trace on a cluster with one placer: an event-driven simulation, FIFO queue.

Theory of operation
-------------------
Time is simulated (seconds from the trace's start; nothing here reads a clock). Two kinds of
event move it: a job arrives (it joins the back of the queue) and a job ends (its GPUs come
free). After the events of one instant, the queue is served strictly first in, first out —
Kueue's ``StrictFIFO``: the head is offered to the placer; if it is placed it starts now and the
next job is tried, if not, nobody behind it starts until something ends. Under the
``wait-if-faster`` queue policy (``holding``) a placed head may also be held, as if not placed,
when waiting for running jobs to end would let it finish sooner. A job that cannot be
placed even with no other trace job running (its shape fits no NVLink domain, or it is larger
than the GPUs the cluster's own pods leave) is dropped as unplaceable, so it cannot block the
queue for ever; so is a job whose parallel layout is invalid.

A placed job holds ``gpusPerPod`` GPUs on the node of each pod until it ends, at
``start + duration + steps × step communication`` (``trace``): a slower placement keeps its GPUs
longer, which delays the jobs behind it. The pods the cluster dump already has hold their GPUs
throughout. GPU indices follow the snapshot's convention (used GPUs are a node's lowest), so a
freed window is priced as the node's highest free GPUs, as the operator would see it.

After every instant the replay samples the GPUs in use and the largest job that fits inside one
rail group on whole free nodes (leaf domain: rail group, else rack, else node) — the room left
for the next big job, i.e. fragmentation.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial

from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.feasibility import max_domain_gpus
from fabricfit.placement.layout import validate_layout
from fabricfit.placement.simulation.holding import QUEUE_POLICIES, STRICT_FIFO, worth_waiting
from fabricfit.placement.simulation.placers import Placed, Placer
from fabricfit.placement.simulation.trace import TraceJob
from fabricfit.placement.slots import leaf_key

NEVER_FITS = "does not fit the cluster even with no other job of the trace running"


@dataclass(frozen=True, slots=True)
class JobRun:
    """What happened to one job of the trace."""

    name: str
    gpus: int
    arrival: float
    start: float | None = None  # None: never placed
    end: float | None = None
    step_comm_seconds: float = 0.0
    comm_gpu_seconds: float = 0.0  # GPUs × steps × step communication
    spine_bytes: float = 0.0  # bytes crossing above the leaf over the whole run
    nodes: int = 0
    reason: str | None = None  # why it was never placed

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.arrival


@dataclass(frozen=True, slots=True)
class Sample:
    """The cluster just after the events of one instant."""

    time: float
    used_gpus: int  # by the trace's jobs and the dump's own pods
    largest_rail_group_gpus: int  # largest whole-node job inside one rail group


@dataclass(frozen=True, slots=True)
class Replay:
    """One placer's run over the trace."""

    placer: str
    total_gpus: int
    jobs: tuple[JobRun, ...]  # in trace order (arrival, then position)
    samples: tuple[Sample, ...]
    queue_policy: str = STRICT_FIFO
    held_jobs: int = 0  # jobs held at least once although they could start (``wait-if-faster``)


@dataclass(slots=True)
class _Cluster:
    """The mutable state of one replay: free GPUs per node and the snapshot they make."""

    base: ClusterSnapshot
    free: dict[str, int]
    snapshot: ClusterSnapshot

    @classmethod
    def of(cls, snapshot: ClusterSnapshot) -> _Cluster:
        return cls(snapshot, {n.name: n.free_gpus for n in snapshot.nodes}, snapshot)

    def copy(self) -> _Cluster:
        return _Cluster(self.base, dict(self.free), self.snapshot)

    def take(self, pods: Sequence[str], gpus_per_pod: int, sign: int) -> None:
        for node in pods:
            self.free[node] -= sign * gpus_per_pod
        nodes = tuple(replace(n, free_gpus=self.free[n.name]) for n in self.base.nodes)
        self.snapshot = replace(self.base, nodes=nodes)

    def sample(self, time: float) -> Sample:
        used, per_leaf = 0, dict[str, int]()
        for node in self.base.nodes:
            free = self.free[node.name]
            used += node.gpus - free if node.available else node.gpus
            if node.available and free == node.gpus and node.gpus > 0:
                key = leaf_key(node)[0]
                per_leaf[key] = per_leaf.get(key, 0) + node.gpus
        return Sample(time, used, max(per_leaf.values(), default=0))


def replay(
    snapshot: ClusterSnapshot,
    jobs: Sequence[TraceJob],
    profile: FabricProfile,
    *,
    placer: Placer,
    name: str,
    queue_policy: str = STRICT_FIFO,
) -> Replay:
    """Run ``jobs`` (sorted by arrival) on ``snapshot`` with ``placer``; see the module doc."""
    if queue_policy not in QUEUE_POLICIES:
        raise ValueError(f"unknown queue policy {queue_policy!r}")
    holding = queue_policy != STRICT_FIFO
    held: set[str] = set()
    cluster = _Cluster.of(snapshot)
    runs = {j.name: JobRun(j.name, j.gpus, j.arrival) for j in jobs}
    invalid = _invalid(snapshot, jobs)
    arrivals = deque(jobs)
    queue: deque[TraceJob] = deque()
    running: list[tuple[float, int, TraceJob, tuple[str, ...]]] = []
    samples = [cluster.sample(0.0)]
    started = 0
    # After serving, the queue is empty or something runs: the loop ends when both are done.
    while arrivals or running:
        now = min(
            arrivals[0].arrival if arrivals else float("inf"),
            running[0][0] if running else float("inf"),
        )
        while running and running[0][0] <= now:
            _, _, job, pods = heapq.heappop(running)
            cluster.take(pods, job.request.gpus_per_pod, -1)
        while arrivals and arrivals[0].arrival <= now:
            queue.append(arrivals.popleft())
        while queue:
            job = queue[0]
            reason = invalid.get(job.name)
            placed = None if reason else placer(cluster.snapshot, job.request, profile)
            if placed is None:
                if reason is None and running:
                    break  # strict FIFO: wait for GPUs to come free
                runs[job.name] = replace(runs[job.name], reason=reason or NEVER_FITS)
                queue.popleft()
                continue
            if holding and worth_waiting(
                job.steps,
                placed,
                now,
                _releases(cluster, running),
                partial(_place_on, placer, job, profile),
            ):
                held.add(job.name)
                break  # held: the next job end serves the queue again
            queue.popleft()
            run = _started(runs[job.name], job, placed, now)
            runs[job.name] = run
            cluster.take(placed.pods, job.request.gpus_per_pod, +1)
            heapq.heappush(running, (run.end or now, started, job, placed.pods))
            started += 1
        samples.append(cluster.sample(now))
    return Replay(
        placer=name,
        total_gpus=sum(n.gpus for n in snapshot.nodes),
        jobs=tuple(runs[j.name] for j in jobs),
        samples=_deduplicated(samples),
        queue_policy=queue_policy,
        held_jobs=len(held),
    )


def _place_on(
    placer: Placer, job: TraceJob, profile: FabricProfile, snapshot: ClusterSnapshot
) -> Placed | None:
    return placer(snapshot, job.request, profile)


def _releases(
    cluster: _Cluster, running: Sequence[tuple[float, int, TraceJob, tuple[str, ...]]]
) -> Iterator[tuple[float, ClusterSnapshot]]:
    """The cluster at each coming job end, every job ended by then released (lazily)."""
    later = cluster.copy()
    for end, _, job, pods in sorted(running, key=lambda entry: entry[:2]):
        later.take(pods, job.request.gpus_per_pod, -1)
        yield end, later.snapshot


def _started(run: JobRun, job: TraceJob, placed: Placed, now: float) -> JobRun:
    comm = placed.predicted.step_comm_seconds
    return replace(
        run,
        start=now,
        end=now + job.duration + job.steps * comm,
        step_comm_seconds=comm,
        comm_gpu_seconds=job.gpus * job.steps * comm,
        spine_bytes=job.steps * placed.predicted.spine_bytes_per_step,
        nodes=len(set(placed.pods)),
    )


def _invalid(snapshot: ClusterSnapshot, jobs: Sequence[TraceJob]) -> dict[str, str]:
    """Jobs no placer can ever place here: invalid layout, or more GPUs than are ever free."""
    domain = max_domain_gpus(snapshot.nodes)
    free = sum(n.free_gpus for n in snapshot.nodes if n.available)
    out: dict[str, str] = {}
    for job in jobs:
        r = job.request
        reasons = validate_layout(
            r.parallelism, r.gpus_per_pod, experts=r.model.experts, max_domain_gpus=domain
        )
        if reasons:
            out[job.name] = reasons[0]
        elif job.gpus > free:
            out[job.name] = f"needs {job.gpus} GPUs; the cluster's own pods leave {free} free"
    return out


def _deduplicated(samples: list[Sample]) -> tuple[Sample, ...]:
    """One sample per instant (the last), in time order."""
    by_time: dict[float, Sample] = {}
    for s in samples:
        by_time[s.time] = s
    return tuple(by_time[t] for t in sorted(by_time))
