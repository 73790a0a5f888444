"""Replay a job trace on a cluster with one placer: an event-driven simulation, FIFO queue.

Theory of operation
-------------------
Time is simulated (seconds from the trace's start; nothing here reads a clock). Two kinds of
event move it: a job arrives (it joins the back of the queue) and a job ends (its GPUs come
free). After the events of one instant, the queue is served strictly first in, first out —
Kueue's ``StrictFIFO``: the head is offered to the placer; if it is placed it starts now and the
next job is tried, if not, nobody behind it starts until something ends. Under the
``wait-if-faster`` queue policy (``holding``) a placed head may also be held when waiting for
running jobs to end would let it finish sooner, and the jobs behind a held head that do not
delay it are backfilled. A job that cannot be placed even with no other trace job running (its
shape fits no NVLink domain, or it is larger than the GPUs the cluster's own pods leave) is
dropped as unplaceable, so it cannot block the queue for ever; so is a job whose parallel layout
is invalid.

A placed job holds ``gpusPerPod`` GPUs on the node of each pod until it ends, at
``start + duration + steps × step communication`` (``trace``): a slower placement keeps its GPUs
longer, which delays the jobs behind it. The pods the cluster dump already has hold their GPUs
throughout (``cluster``).

With ``contention`` on, every placement is priced next to the running jobs' traffic and a
start slows the jobs it shares links with (``neighbourhood``): their ends move later.

After every instant the replay samples the GPUs in use and the largest job that fits inside one
rail group on whole free nodes (leaf domain: rail group, else rack, else node) — the room left
for the next big job, i.e. fragmentation.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.feasibility import max_domain_gpus
from fabricfit.placement.layout import validate_layout
from fabricfit.placement.neighbours import Neighbours, neighbours_of
from fabricfit.simulation.cluster import (
    Running,
    Sample,
    SimCluster,
    free_at,
    releases,
)
from fabricfit.simulation.holding import (
    QUEUE_POLICIES,
    STRICT_FIFO,
    Hold,
    hold_until,
    room_beside,
)
from fabricfit.simulation.neighbourhood import busiest_share, extension, started
from fabricfit.simulation.placers import Placed, Placer
from fabricfit.simulation.trace import TraceJob

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
    held: bool = False  # waited at least once for a cheaper placement (``wait-if-faster``)
    backfilled: bool = False  # started beside a held head, ahead of it (``wait-if-faster``)
    # With contention: GPU-seconds of communication lost to other jobs' traffic (its own
    # slowdown at start over all its steps, plus the later jobs' slowdown of it).
    contention_gpu_seconds: float = 0.0
    shares_links: bool = False  # with contention: its traffic loads a link other jobs can share

    @property
    def wait(self) -> float | None:
        return None if self.start is None else self.start - self.arrival


@dataclass(frozen=True, slots=True)
class Replay:
    """One placer's run over the trace."""

    placer: str
    total_gpus: int
    jobs: tuple[JobRun, ...]  # in trace order (arrival, then position)
    samples: tuple[Sample, ...]
    queue_policy: str = STRICT_FIFO
    contention: bool = False  # priced next to the running jobs' traffic (``neighbourhood``)
    busiest_link_share: float = 0.0  # the highest average load over capacity a link reached

    @property
    def held_jobs(self) -> int:
        """Jobs held at least once although they could start (``wait-if-faster``)."""
        return sum(j.held for j in self.jobs)

    @property
    def backfilled_jobs(self) -> int:
        """Jobs started beside a held head (``wait-if-faster``)."""
        return sum(j.backfilled for j in self.jobs)


#: The cluster as a placer sees it: a snapshot and, with contention, the running jobs' traffic.
View = tuple[ClusterSnapshot, Neighbours | None]


@dataclass(slots=True)
class _State:
    """One replay as it goes: the cluster, the runs, the jobs running, and how it places."""

    placer: Placer
    profile: FabricProfile
    cluster: SimCluster
    runs: dict[str, JobRun]
    running: list[Running]
    neighbours: Neighbours | None  # None: contention off
    started: int = 0
    busiest: float = 0.0  # the highest average load over capacity of any link so far

    def view(self, snapshot: ClusterSnapshot | None = None) -> View:
        return (self.cluster.snapshot if snapshot is None else snapshot, self.neighbours)

    def place(self, job: TraceJob, view: View) -> Placed | None:
        """``job`` placed on the cluster ``view`` describes."""
        return self.placer(view[0], job.request, self.profile, view[1])

    def start(self, job: TraceJob, placed: Placed, now: float) -> None:
        run = _started(self.runs[job.name], job, placed, now)
        if self.neighbours is not None:
            joined = started(self.neighbours, self.cluster.base, job, placed, self.profile)
            self._slow_down(joined.others, _run_seconds(job, placed), now)
            self.neighbours = self.neighbours.with_job(joined.traffic)
            if joined.traffic is not None:
                run = replace(run, shares_links=True)
                self.busiest = max(self.busiest, busiest_share(self.neighbours, joined.traffic))
        self.runs[job.name] = run
        self.cluster.take(placed.pods, job.request.gpus_per_pod, +1)
        heapq.heappush(self.running, (run.end or now, self.started, job, placed.pods))
        self.started += 1

    def end(self, job: TraceJob, pods: tuple[str, ...]) -> None:
        self.cluster.take(pods, job.request.gpus_per_pod, -1)
        if self.neighbours is not None:
            self.neighbours = self.neighbours.without(job.name)

    def _slow_down(self, others: Mapping[str, float], newcomer_run: float, now: float) -> None:
        """Move the ends of the running jobs a newcomer slows (``neighbourhood.extension``)."""
        if not others:
            return
        moved: list[Running] = []
        for end, order, job, pods in self.running:
            run = self.runs[job.name]
            step = job.duration / job.steps + run.step_comm_seconds
            extra = extension(others.get(job.name, 0.0), step, end - now, newcomer_run)
            if extra > 0:
                lost = job.gpus * extra
                self.runs[job.name] = replace(
                    run,
                    end=end + extra,
                    comm_gpu_seconds=run.comm_gpu_seconds + lost,
                    contention_gpu_seconds=run.contention_gpu_seconds + lost,
                )
            moved.append((end + extra, order, job, pods))
        heapq.heapify(moved)
        self.running = moved

    def hold(self, job: TraceJob, placed: Placed, now: float) -> Hold[Placed] | None:
        """Whether the head ``job``, placeable now as ``placed``, waits (``holding``)."""
        return hold_until(job.steps, placed, now, self._futures(), partial(self.place, job))

    def _futures(self) -> Iterator[tuple[float, View]]:
        """The cluster at each coming job end (``cluster.releases``), with its traffic left."""
        neighbours = self.neighbours
        for time, later, ended in releases(self.cluster, self.running):
            if neighbours is not None:
                neighbours = neighbours.without(ended.name)
            yield time, (later.snapshot, neighbours)

    def backfill(self, queue: Sequence[TraceJob], hold: Hold[Placed], now: float) -> list[TraceJob]:
        """Start the jobs behind the held head that do not delay it (``holding``); those."""
        free_then = free_at(self.cluster, self.running, hold.until)
        reserved = hold.reserved(queue[0].request.gpus_per_pod)
        started: list[TraceJob] = []
        for job in queue[1:]:
            placed = self.place(job, self.view())
            if placed is not None and now + _run_seconds(job, placed) > hold.until:
                # still running when the hold ends: only beside the held job's reservation
                room = room_beside(self.cluster.free, free_then, reserved)
                placed = self.place(job, self.view(self.cluster.with_free(room)))
                for node in placed.pods if placed else ():
                    free_then[node] -= job.request.gpus_per_pod
            if placed is not None:
                self.start(job, placed, now)
                started.append(job)
        return started


@dataclass(frozen=True, slots=True)
class Rules:
    """How a replay serves its queue (``holding``) and whether it prices contention."""

    queue_policy: str = STRICT_FIFO
    contention: bool = False


@dataclass
class _Queue:
    """The FIFO queue of one replay, and the holds of the jobs it held (queue policy)."""

    holding: bool  # hold the head when waiting lets it finish sooner (wait-if-faster)
    invalid: Mapping[str, str]  # jobs that can never run here, and why
    jobs: deque[TraceJob] = field(default_factory=deque)
    holds: dict[str, Hold[Placed]] = field(default_factory=dict)  # each held job's latest

    def serve(self, state: _State, now: float) -> None:
        """Start jobs from the head until one cannot start now; a held (or waiting) head lets
        jobs behind it backfill beside its hold. Jobs that can never run leave with a reason."""
        runs = state.runs
        while self.jobs:
            job = self.jobs[0]
            reason = self.invalid.get(job.name)
            placed = None if reason else state.place(job, state.view())
            if placed is None and (reason is not None or not state.running):
                runs[job.name] = replace(runs[job.name], reason=reason or NEVER_FITS)
                self.jobs.popleft()
                continue
            if placed is None:  # strict FIFO: wait for GPUs to come free, beside its hold if any
                hold = self.holds.get(job.name)
                hold = hold if hold is not None and hold.until > now else None
            else:
                hold = state.hold(job, placed, now) if self.holding else None
                if hold is None:
                    self.jobs.popleft()
                    state.start(job, placed, now)
                    continue
            if hold is not None:
                self.holds[job.name] = hold
                waiting = [j for j in self.jobs if j.name not in self.invalid]
                for started in state.backfill(waiting, hold, now):
                    self.jobs.remove(started)
                    runs[started.name] = replace(runs[started.name], backfilled=True)
            return  # the next event serves the queue again


def replay(
    snapshot: ClusterSnapshot,
    jobs: Sequence[TraceJob],
    profile: FabricProfile,
    *,
    placer: Placer,
    name: str,
    rules: Rules | None = None,
) -> Replay:
    """Run ``jobs`` (sorted by arrival) on ``snapshot`` with ``placer``; see the module doc.
    ``rules``: the queue policy (default strict FIFO) and whether every placement is priced
    next to the running jobs' traffic (default not)."""
    rules = rules if rules is not None else Rules()
    queue_policy, contention = rules.queue_policy, rules.contention
    if queue_policy not in QUEUE_POLICIES:
        raise ValueError(f"unknown queue policy {queue_policy!r}")
    runs = {j.name: JobRun(j.name, j.gpus, j.arrival) for j in jobs}
    neighbours = neighbours_of(snapshot, profile) if contention else None
    state = _State(placer, profile, SimCluster.of(snapshot), runs, [], neighbours)
    queue = _Queue(holding=queue_policy != STRICT_FIFO, invalid=_invalid(snapshot, jobs))
    arrivals = deque(jobs)
    samples = [state.cluster.sample(0.0)]
    # After serving, the queue is empty or something runs: the loop ends when both are done.
    while arrivals or state.running:
        now = min(
            arrivals[0].arrival if arrivals else float("inf"),
            state.running[0][0] if state.running else float("inf"),
        )
        while state.running and state.running[0][0] <= now:
            _, _, job, pods = heapq.heappop(state.running)
            state.end(job, pods)
        while arrivals and arrivals[0].arrival <= now:
            queue.jobs.append(arrivals.popleft())
        queue.serve(state, now)
        samples.append(state.cluster.sample(now))
    return Replay(
        placer=name,
        total_gpus=sum(n.gpus for n in snapshot.nodes),
        jobs=tuple(replace(runs[j.name], held=j.name in queue.holds) for j in jobs),
        samples=_deduplicated(samples),
        queue_policy=queue_policy,
        contention=contention,
        busiest_link_share=state.busiest,
    )


def _run_seconds(job: TraceJob, placed: Placed) -> float:
    """Compute plus predicted communication: how long the job holds its GPUs."""
    return job.duration + job.steps * placed.predicted.step_comm_seconds


def _started(run: JobRun, job: TraceJob, placed: Placed, now: float) -> JobRun:
    comm = placed.predicted.step_comm_seconds
    slowdown = placed.predicted.neighbour_slowdown_seconds or 0.0
    return replace(
        run,
        start=now,
        end=now + _run_seconds(job, placed),
        step_comm_seconds=comm,
        comm_gpu_seconds=job.gpus * job.steps * comm,
        contention_gpu_seconds=job.gpus * job.steps * slowdown,
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
